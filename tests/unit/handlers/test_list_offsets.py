"""ListOffsets handler: special timestamps, timestamp search, errors, versions."""

from __future__ import annotations

from typing import Any

import pytest

import wirebroker.handlers.list_offsets  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import RecordSpec, build_batch

KEY = ApiKey.LIST_OFFSETS


def req(
    topic: str,
    queries: list[tuple[int, int]],
    *,
    replica_id: int = -1,
    isolation_level: int = 0,
    current_leader_epoch: int = -1,
) -> dict[str, Any]:
    return {
        "replica_id": replica_id,
        "isolation_level": isolation_level,
        "timeout_ms": 1000,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": i,
                        "timestamp": ts,
                        "current_leader_epoch": current_leader_epoch,
                    }
                    for i, ts in queries
                ],
            }
        ],
    }


async def one(call: Any, version: int, body: dict[str, Any]) -> Any:
    resp = await call(KEY, version, body)
    return resp.topics[0].partitions[0]


@pytest.fixture
def filled(services):
    """Topic t: offsets 0-1 at T and T+5 (one batch), 2 at T+20, 3 at T-100 (out of order)."""
    now = services.clock()
    services.admin.create_topic("t", 1, now_ms=now)
    for records in (
        [RecordSpec(value=b"a", timestamp=now), RecordSpec(value=b"b", timestamp=now + 5)],
        [RecordSpec(value=b"c", timestamp=now + 20)],
        [RecordSpec(value=b"d", timestamp=now - 100)],
    ):
        services.replicas.append(
            services.replicas.partition("t", 0), build_batch(records), now_ms=now
        )
    return now


@pytest.mark.parametrize("version", range(1, 12))
async def test_earliest_latest_every_version(call, services, filled, version):
    p = await one(call, version, req("t", [(0, -2)]))
    assert (p.error_code, p.offset, p.timestamp) == (ErrorCode.NONE, 0, -1)
    p = await one(call, version, req("t", [(0, -1)]))
    assert (p.error_code, p.offset, p.timestamp) == (ErrorCode.NONE, 4, -1)
    if version >= 4:
        assert p.leader_epoch == 0


async def test_timestamp_search(call, services, filled):
    t = filled
    p = await one(call, 9, req("t", [(0, t + 1)]))
    assert (p.offset, p.timestamp, p.leader_epoch) == (1, t + 5, 0)
    p = await one(call, 9, req("t", [(0, t - 1000)]))
    assert (p.offset, p.timestamp) == (0, t)
    p = await one(call, 9, req("t", [(0, t + 6)]))
    assert (p.offset, p.timestamp) == (2, t + 20)
    p = await one(call, 9, req("t", [(0, t + 21)]))
    assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (ErrorCode.NONE, -1, -1, -1)


async def test_max_timestamp_and_tiered(call, services, filled):
    t = filled
    p = await one(call, 7, req("t", [(0, -3)]))
    assert (p.offset, p.timestamp) == (2, t + 20)
    p = await one(call, 9, req("t", [(0, -4)]))
    assert (p.offset, p.timestamp) == (0, -1)
    p = await one(call, 9, req("t", [(0, -5)]))
    assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (ErrorCode.NONE, -1, -1, -1)


async def test_empty_partition(call, services):
    services.admin.create_topic("e", 1, now_ms=services.clock())
    p = await one(call, 9, req("e", [(0, -2)]))
    # the leader recorded epoch 0 from offset 0 when it became leader (as Kafka's makeLeader)
    assert (p.offset, p.leader_epoch) == (0, 0)
    p = await one(call, 9, req("e", [(0, -1)]))
    assert (p.offset, p.leader_epoch) == (0, 0)
    p = await one(call, 9, req("e", [(0, -3)]))
    assert (p.offset, p.timestamp) == (-1, -1)
    p = await one(call, 9, req("e", [(0, 12345)]))
    assert (p.offset, p.timestamp) == (-1, -1)


async def test_log_start_after_delete_records(call, services, filled):
    services.replicas.partition("t", 0).log.delete_records_before(2)
    p = await one(call, 9, req("t", [(0, -2)]))
    assert p.offset == 2


async def test_latest_uses_high_watermark_for_consumers(call, services, filled):
    services.replicas.partition("t", 0).log.high_watermark = 2
    assert (await one(call, 9, req("t", [(0, -1)]))).offset == 2
    assert (await one(call, 9, req("t", [(0, -1)], isolation_level=1))).offset == 2
    assert (await one(call, 9, req("t", [(0, -1)], replica_id=1))).offset == 4
    # A timestamp whose first offset is not below the HW is not visible to consumers.
    assert (await one(call, 9, req("t", [(0, filled + 6)]))).offset == -1


async def test_errors(call, services, filled):
    p = await one(call, 9, req("nope", [(0, -1)]))
    assert (p.error_code, p.offset, p.timestamp) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    p = await one(call, 9, req("t", [(4, -1)]))
    assert p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    p = await one(call, 9, req("t", [(0, -1)], current_leader_epoch=1))
    assert p.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    services.replicas.partition("t", 0).leader_epoch = 2
    p = await one(call, 9, req("t", [(0, -1)], current_leader_epoch=1))
    assert p.error_code == ErrorCode.FENCED_LEADER_EPOCH
    resp = await call(KEY, 9, req("t", [(0, -1), (0, -2)], current_leader_epoch=-1))
    # Kafka answers a partition asked for twice once, INVALID_REQUEST.
    assert [q.error_code for q in resp.topics[0].partitions] == [ErrorCode.INVALID_REQUEST]


async def test_a_topic_named_twice_is_one_answer(call, services, filled):
    body = req("t", [(0, -1)])
    body["topics"].append({"name": "t", "partitions": [{"partition_index": 1, "timestamp": -1}]})
    body["topics"].append({"name": "nope", "partitions": [{"partition_index": 0, "timestamp": -1}]})
    resp = await call(KEY, 9, body)
    assert [
        (t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in resp.topics
    ] == [
        ("t", [(0, ErrorCode.NONE), (1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("nope", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
    ]


#: The request version from which Kafka 4.4 knows each special timestamp (asked of it:
#: tests/oracle/test_kafka_answers.py): UNSUPPORTED_VERSION below it, and for -7, -8, -100.
SPEC_FROM = {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11, -7: 99, -8: 99, -100: 99}


@pytest.mark.parametrize("version", range(1, 12))
async def test_special_timestamps_the_version_does_not_know(call, services, filled, version):
    for ts, first in SPEC_FROM.items():
        p = await one(call, version, req("t", [(0, ts)]))
        code = ErrorCode.NONE if version >= first else ErrorCode.UNSUPPORTED_VERSION
        assert p.error_code == code, (ts, version)
        if code is ErrorCode.UNSUPPORTED_VERSION:
            assert (p.offset, p.timestamp) == (-1, -1)
    # Checked before the topic, as Kafka does.
    p = await one(call, version, req("nope", [(0, -7)]))
    assert p.error_code == ErrorCode.UNSUPPORTED_VERSION
