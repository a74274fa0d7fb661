"""The leader's side of the replication throttle in the Fetch handler (KIP-73, Kafka's
ReplicaManager/KafkaApis rules): a follower out of the ISR gets no records of a throttled
partition while the leader quota is exceeded; what is sent of throttled partitions is
recorded; a follower in the ISR is never throttled. The rate and the throttled replicas are
set as Kafka's tools set them: a dynamic broker config and the topic config."""

from __future__ import annotations

from typing import Any

import pytest

import wirebroker.handlers.fetch
import wirebroker.handlers.incremental_alter_configs  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch

RATE = 300  # bytes/s: one fetch (~390 bytes) exceeds it within the first window
SET, BROKER = 0, 4


async def set_rate(call: Any, rate: int) -> None:
    body = {
        "resources": [
            {
                "resource_type": BROKER,
                "resource_name": "0",
                "configs": [
                    {
                        "name": "leader.replication.throttled.rate",
                        "config_operation": SET,
                        "value": str(rate),
                    }
                ],
            }
        ],
        "validate_only": False,
    }
    resp = await call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert resp.responses[0].error_code == ErrorCode.NONE


def follower_fetch(topic: str, partitions: list[int], **extra: Any) -> dict[str, Any]:
    return {
        "replica_id": 1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": i,
                        "fetch_offset": 0,
                        "partition_max_bytes": 1 << 20,
                        "current_leader_epoch": 1,
                        "log_start_offset": -1,
                        "last_fetched_epoch": -1,
                    }
                    for i in partitions
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
        **extra,
    }


async def sizes(call: Any, topic: str, partitions: list[int], **extra: Any) -> dict[int, int]:
    resp = await call(ApiKey.FETCH, 12, follower_fetch(topic, partitions, **extra))
    out = {}
    for p in resp.responses[0].partitions:
        assert p.error_code == ErrorCode.NONE
        assert p.high_watermark >= 0
        out[p.partition_index] = len(p.records or b"")
    return out


@pytest.fixture
def topic(services: Any) -> str:
    """Partitions 0 and 1 led here, each with a batch; broker 1 a follower out of the ISR;
    partition 0 (only) in the leader's throttled replicas."""
    services.admin.create_topic("t", 2, now_ms=services.clock())
    for index in (0, 1):
        part = services.replicas.partition("t", index)
        batch = build_batch([(None, b"x" * 100)] * 3, base_timestamp=services.clock())
        services.replicas.append(part, batch, now_ms=services.clock())
        services.replicas.make_leader(
            "t", index, leader_epoch=1, isr=[0], replicas=[0, 1], partition_epoch=1, now_ms=0
        )
    services.admin.alter_topic_configs("t", {"leader.replication.throttled.replicas": "0:0"})
    return "t"


async def test_a_throttled_partition_gets_no_records_over_the_leader_quota(
    call: Any, services: Any, clock: Any, topic: str
) -> None:
    quota = services.replicas.quotas.leader
    await set_rate(call, RATE)
    assert quota.bound == RATE and quota.is_throttled(topic, 0) and not quota.is_throttled(topic, 1)
    first = await sizes(call, topic, [0, 1])
    assert first[0] > RATE and first[1] > 0  # under the quota: served whole
    assert quota.rate(clock()) == first[0]  # only the throttled partition counts (per 1 s)
    clock.advance(100)
    assert await sizes(call, topic, [0, 1]) == {0: 0, 1: first[1]}  # over it: none of p0
    assert await sizes(call, topic, [0], max_wait_ms=0, min_bytes=1) == {0: 0}
    clock.advance(first[0] * 1000 // RATE)  # the rate is back at the bound
    assert await sizes(call, topic, [0, 1]) == first


async def test_a_follower_in_the_isr_is_never_throttled(
    call: Any, services: Any, clock: Any, topic: str
) -> None:
    await set_rate(call, 1)
    first = await sizes(call, topic, [0])
    assert first[0] > 0
    assert await sizes(call, topic, [0]) == {0: 0}
    services.replicas.make_leader(
        topic, 0, leader_epoch=1, isr=[0, 1], replicas=[0, 1], partition_epoch=2, now_ms=0
    )
    assert await sizes(call, topic, [0]) == first
    assert services.replicas.quotas.leader.rate(clock()) == 2 * first[0]  # counted still


async def test_no_rate_set_throttles_nothing(call: Any, services: Any, topic: str) -> None:
    first = await sizes(call, topic, [0, 1])
    assert services.replicas.quotas.leader.unlimited
    for _ in range(3):
        assert await sizes(call, topic, [0, 1]) == first
