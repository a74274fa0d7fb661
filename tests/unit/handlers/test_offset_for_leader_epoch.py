"""OffsetForLeaderEpoch handler: end offsets per epoch (KIP-101), fencing, errors."""

from __future__ import annotations

import pytest

import wirebroker.handlers.offset_for_leader_epoch  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch

KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH


def body(topic, queries, *, current=-1, replica_id=-2):
    return {
        "replica_id": replica_id,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": i, "current_leader_epoch": current, "leader_epoch": e}
                    for i, e in queries
                ],
            }
        ],
    }


async def one(call, version, b):
    return (await call(KEY, version, b)).topics[0].partitions[0]


@pytest.mark.parametrize("version", [2, 3, 4])
async def test_end_offset_for_current_epoch(call, services, version):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    for _ in range(2):
        services.replicas.append(
            services.replicas.partition("t", 0),
            build_batch([(None, b"x")] * 3, base_timestamp=services.clock()),
            now_ms=services.clock(),
        )
    p = await one(call, version, body("t", [(0, 0)], replica_id=1))
    assert (p.error_code, p.partition, p.leader_epoch, p.end_offset) == (ErrorCode.NONE, 0, 0, 6)


async def test_unknown_epochs(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    # an empty log whose leader recorded epoch 0 from offset 0 (as Kafka's makeLeader)
    p = await one(call, 4, body("t", [(0, 0)]))
    assert (p.error_code, p.leader_epoch, p.end_offset) == (ErrorCode.NONE, 0, 0)
    services.replicas.partition("t", 0).log.truncate_fully_and_start_at(0)  # epochs forgotten
    p = await one(call, 4, body("t", [(0, 0)]))  # no epoch known
    assert (p.error_code, p.leader_epoch, p.end_offset) == (ErrorCode.NONE, -1, -1)


async def test_errors(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    p = await one(call, 4, body("nope", [(0, 0)]))
    assert (p.error_code, p.leader_epoch, p.end_offset) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        -1,
        -1,
    )
    p = await one(call, 4, body("t", [(3, 0)]))
    assert p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    p = await one(call, 4, body("t", [(0, 0)], current=1))
    assert p.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    services.replicas.partition("t", 0).leader_epoch = 2
    p = await one(call, 4, body("t", [(0, 0)], current=1))
    assert p.error_code == ErrorCode.FENCED_LEADER_EPOCH
