"""Controller mutation quotas (KIP-599) through the real Dispatcher and handlers, on the fake
clock: CreateTopics, CreatePartitions and DeleteTopics count the partitions they mutate
against controller_mutation_rate; strict versions (CreateTopics v6+, CreatePartitions v3+,
DeleteTopics v5+) answer a topic met by an exhausted quota THROTTLING_QUOTA_EXCEEDED with no
message, older ones accept and throttle; throttle_time_ms is answered and mutes the channel;
topics refused for another reason take nothing; validate_only takes (Kafka 4.4's controller)."""

from __future__ import annotations

import uuid
from typing import Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from tests.unit.handlers.conftest import FakeClock
from tests.unit.handlers.test_client_quota_handlers import dispatch, quota_services
from wirebroker.handlers.context import Services

QUOTA = ((("client-id", "app"),), "controller_mutation_rate", 1.0)  # bucket: 11
THROTTLED = ErrorCode.THROTTLING_QUOTA_EXCEEDED


def create(*topics: tuple[str, int], validate_only: bool = False) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": name,
                "num_partitions": n,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for name, n in topics
        ],
        "timeout_ms": 1000,
        "validate_only": validate_only,
    }


def outcome(answer: Any, key: str = "topics") -> list[tuple[str, int, str | None]]:
    return [(t.name, t.error_code, t.error_message) for t in answer[key]]


async def test_create_topics_strict(services: Services, clock: FakeClock) -> None:
    services = quota_services(QUOTA, services=services)
    reply, answer = await dispatch(services, ApiKey.CREATE_TOPICS, 7, create(("a", 12)))
    assert outcome(answer) == [("a", 0, None)]
    assert answer.throttle_time_ms == reply.throttle_ms == 0  # taken into the negative
    clock.advance(90)
    reply, answer = await dispatch(services, ApiKey.CREATE_TOPICS, 7, create(("b", 1), ("c", 1)))
    assert outcome(answer) == [("b", THROTTLED, None), ("c", THROTTLED, None)]
    assert answer.throttle_time_ms == reply.throttle_ms == 910
    assert not reply.delay_response  # v7 backs off by itself: muted after the answer
    assert services.cluster.topic("b") is None
    # another client id has no quota
    _reply, answer = await dispatch(services, ApiKey.CREATE_TOPICS, 7, create(("b", 1)), None, "x")
    assert outcome(answer) == [("b", 0, None)] and answer.throttle_time_ms == 0
    clock.advance(1000)
    # a name taken and a bad count take nothing; the rest is counted in request order
    _reply, answer = await dispatch(
        services, ApiKey.CREATE_TOPICS, 7, create(("a", 50), ("d", 0), ("e", 1), ("f", 1))
    )
    codes = [(name, code) for name, code, _m in outcome(answer)]
    assert codes == [
        ("a", ErrorCode.TOPIC_ALREADY_EXISTS),
        ("d", ErrorCode.INVALID_PARTITIONS),
        ("e", 0),
        ("f", THROTTLED),
    ]


async def test_create_topics_validate_only_takes_and_v5_is_permissive(
    services: Services, clock: FakeClock
) -> None:
    services = quota_services(QUOTA, services=services)
    _reply, answer = await dispatch(
        services, ApiKey.CREATE_TOPICS, 7, create(("a", 12), validate_only=True)
    )
    assert outcome(answer) == [("a", 0, None)] and services.cluster.topic("a") is None
    _reply, answer = await dispatch(services, ApiKey.CREATE_TOPICS, 7, create(("a", 1)))
    assert outcome(answer) == [("a", THROTTLED, None)] and answer.throttle_time_ms == 1000
    reply, answer = await dispatch(services, ApiKey.CREATE_TOPICS, 5, create(("a", 2), ("b", 2)))
    assert outcome(answer) == [("a", 0, None), ("b", 0, None)]
    assert answer.throttle_time_ms == reply.throttle_ms == 5000  # -1 - 4: 5 s to zero
    # CreateTopics v2 predates KIP-219: its answer waits instead
    reply, answer = await dispatch(services, ApiKey.CREATE_TOPICS, 2, create(("c", 1)))
    assert reply.throttle_ms == 6000 and reply.delay_response


async def test_create_partitions(services: Services, clock: FakeClock) -> None:
    services = quota_services(QUOTA, services=services)
    await dispatch(services, ApiKey.CREATE_TOPICS, 7, create(("a", 1), ("b", 1)), None, "x")

    def grow(*topics: tuple[str, int], validate_only: bool = False) -> dict[str, Any]:
        return {
            "topics": [{"name": n, "count": c, "assignments": None} for n, c in topics],
            "timeout_ms": 1000,
            "validate_only": validate_only,
        }

    _reply, answer = await dispatch(
        services, ApiKey.CREATE_PARTITIONS, 3, grow(("nope", 3), ("a", 13), ("b", 2))
    )
    assert outcome(answer, "results") == [
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
        ("a", 0, None),
        ("b", THROTTLED, None),
    ]
    assert answer.throttle_time_ms == 1000
    assert services.cluster.topic("b").partitions == 1  # type: ignore[union-attr]
    clock.advance(2000)
    reply, answer = await dispatch(
        services, ApiKey.CREATE_PARTITIONS, 2, grow(("b", 4), validate_only=True)
    )
    assert outcome(answer, "results") == [("b", 0, None)]
    assert answer.throttle_time_ms == reply.throttle_ms == 2000  # 1 - 3


async def test_delete_topics(services: Services, clock: FakeClock) -> None:
    services = quota_services(QUOTA, services=services)
    await dispatch(
        services, ApiKey.CREATE_TOPICS, 7, create(("a", 6), ("b", 6), ("c", 6)), None, "x"
    )
    nil = uuid.UUID(int=0)
    body = {"topics": [{"name": n, "topic_id": nil} for n in "abc"], "timeout_ms": 1000}
    reply, answer = await dispatch(services, ApiKey.DELETE_TOPICS, 6, body)
    assert [(r.name, r.error_code, r.error_message) for r in answer.responses] == [
        ("a", 0, None),
        ("b", 0, None),
        ("c", THROTTLED, None),
    ]
    assert answer.throttle_time_ms == reply.throttle_ms == 1000
    assert services.cluster.topic("c") is not None
    reply, answer = await dispatch(
        services, ApiKey.DELETE_TOPICS, 4, {"topic_names": ["c"], "timeout_ms": 1000}
    )
    assert [(r.name, r.error_code) for r in answer.responses] == [("c", 0)]
    assert answer.throttle_time_ms == reply.throttle_ms == 7000
