"""CreatePartitions handler: growth, validate_only, assignments and error messages."""

from __future__ import annotations

import pytest

import wirebroker.handlers.create_partitions  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode

KEY = ApiKey.CREATE_PARTITIONS


@pytest.fixture
def three(services):
    return services.admin.create_topic("t", 3, 1, {}, now_ms=services.clock())


def grow(name, count, assignments=None):
    return {
        "name": name,
        "count": count,
        "assignments": None if assignments is None else [{"broker_ids": b} for b in assignments],
    }


async def run(call, *topics, version=3, validate_only=False):
    resp = await call(
        KEY, version, {"topics": list(topics), "timeout_ms": 1000, "validate_only": validate_only}
    )
    return {r.name: r for r in resp.results}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_grow(call, services, three, version):
    results = await run(call, grow("t", 5), version=version)
    assert results["t"].error_code == ErrorCode.NONE
    assert results["t"].error_message is None
    assert services.cluster.topic("t").partitions == 5
    assert len(services.replicas.partitions_of("t")) == 5
    assert services.logs.get("t", 4) is not None


async def test_validate_only_changes_nothing(call, services, three):
    results = await run(call, grow("t", 6), validate_only=True)
    assert results["t"].error_code == ErrorCode.NONE
    assert services.cluster.topic("t").partitions == 3
    assert services.logs.get("t", 3) is None


async def test_unknown_topic(call):
    results = await run(call, grow("nope", 2))
    assert results["nope"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_same_count(call, three):
    results = await run(call, grow("t", 3))
    assert results["t"].error_code == ErrorCode.INVALID_PARTITIONS
    assert results["t"].error_message == "Topic already has 3 partition(s)."


async def test_decrease(call, services, three):
    results = await run(call, grow("t", 2))
    assert results["t"].error_code == ErrorCode.INVALID_PARTITIONS
    assert results["t"].error_message == (
        "The topic t currently has 3 partition(s); 2 would not be an increase."
    )
    assert services.cluster.topic("t").partitions == 3


async def test_duplicate_topic(call, services, three):
    results = await run(call, grow("t", 4), grow("t", 5))
    assert results["t"].error_code == ErrorCode.INVALID_REQUEST
    assert results["t"].error_message == "Duplicate topic name."
    assert services.cluster.topic("t").partitions == 3


async def test_with_assignments(call, services, three):
    results = await run(call, grow("t", 5, [[0], [0]]))
    assert results["t"].error_code == ErrorCode.NONE, results["t"].error_message
    assert services.cluster.topic("t").partitions == 5


@pytest.mark.parametrize(
    ("assignments", "fragment"),
    [
        (
            [[0]],
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
        ),
        ([[0], []], "empty replica list"),
        ([[0], [3]], "includes broker 3, but no such broker is registered"),
        ([[0], [0, 0]], "includes the broker 0 more than once"),
    ],
)
async def test_bad_assignments(call, services, three, assignments, fragment):
    results = await run(call, grow("t", 5, assignments))
    assert results["t"].error_code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    assert fragment in results["t"].error_message
    assert services.cluster.topic("t").partitions == 3


async def test_one_bad_topic_does_not_block_others(call, services, three):
    services.admin.create_topic("u", 1, 1, {}, now_ms=services.clock())
    results = await run(call, grow("t", 1), grow("u", 2))
    assert results["t"].error_code == ErrorCode.INVALID_PARTITIONS
    assert results["u"].error_code == ErrorCode.NONE
    assert services.cluster.topic("u").partitions == 2


async def test_huge_count_is_refused(call, services, three):
    results = await run(call, grow("t", 2**31 - 1))
    assert results["t"].error_code == ErrorCode.POLICY_VIOLATION
    assert services.cluster.topic("t").partitions == 3
