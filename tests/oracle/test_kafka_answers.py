"""The same assertion against Apache Kafka 4.4 (the oracle) and against wirebroker: answers
the conformance harness (compat/conformance) found different and that wirebroker now gives as
Kafka does. Each test runs twice, `side` = "kafka" and "wirebroker"; a test that passes on
Kafka and fails on wirebroker is a wirebroker bug, one that fails on Kafka is a wrong test.

Names are unique per test (the oracle is shared by the run and keeps its topics)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


@pytest.fixture(params=["kafka", "wirebroker"])
def side(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def wire(request: pytest.FixtureRequest, side: str) -> Iterator[Wire]:
    """A connection to Apache Kafka (the run's oracle) or to a wirebroker of this test."""
    fixture = "apache_kafka" if side == "kafka" else "kafka_bootstrap"
    with Wire(request.getfixturevalue(fixture)) as w:
        yield w


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def node_id(wire: Wire) -> str:
    (node,) = wire.brokers()
    return str(node)


def describe(wire: Wire, version: int, resources: list[tuple[int, str, list[str] | None]]) -> Any:
    return wire.call(
        ApiKey.DESCRIBE_CONFIGS,
        version,
        {
            "resources": [
                {"resource_type": t, "resource_name": n, "configuration_keys": keys}
                for t, n, keys in resources
            ],
            "include_synonyms": True,
            "include_documentation": False,
        },
    )


# -- DescribeConfigs ----------------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 4])
def test_describe_configs_error_message_is_empty_not_null(wire: Wire, version: int) -> None:
    topic = unique("answers-describe")
    wire.create_topic(topic, 1)
    node = node_id(wire)
    resp = describe(
        wire,
        version,
        [
            (TOPIC, topic, ["retention.ms"]),
            (TOPIC, unique("answers-never"), None),
            (BROKER, node, ["num.partitions"]),
            (BROKER_LOGGER, node, ["root"]),
        ],
    )
    assert [(r.error_code, r.error_message) for r in resp.results] == [
        (ErrorCode.NONE, ""),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""),
        (ErrorCode.NONE, ""),
        (ErrorCode.NONE, ""),
    ]
    if version >= 3:
        (root,) = resp.results[3].configs
        assert root.documentation == ""  # not asked for, and still "" (not null)


# -- FindCoordinator ----------------------------------------------------------------------------
@pytest.mark.parametrize("key_type", [0, 1, 2])
def test_find_coordinator_v4_messages_are_empty_not_null(wire: Wire, key_type: int) -> None:
    """Per key, from v4: "" whether found (a group, a transactional id), not yet available
    (Kafka's first request creates the internal topic) or refused (share, INVALID_REQUEST)."""
    resp = wire.call(
        ApiKey.FIND_COORDINATOR,
        4,
        {"key_type": key_type, "coordinator_keys": [unique("answers-key"), ""]},
    )
    assert [c.error_message for c in resp.coordinators] == ["", ""]
    if key_type == 2:
        assert {c.error_code for c in resp.coordinators} == {ErrorCode.INVALID_REQUEST}


# -- Metadata, DescribeCluster ------------------------------------------------------------------
@pytest.mark.parametrize("version", [8, 9, 10])
def test_metadata_authorized_operations(wire: Wire, version: int) -> None:
    """Without ACLs, Metadata v8-10 answers the same cluster operations as DescribeCluster
    (8096: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
    IDEMPOTENT_WRITE) and every topic operation (3576)."""
    topic = unique("answers-ops")
    wire.create_topic(topic, 1)
    meta = wire.call(
        ApiKey.METADATA,
        version,
        {
            "topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": True,
            "include_topic_authorized_operations": True,
        },
    )
    cluster = wire.call(ApiKey.DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True})
    assert meta.cluster_authorized_operations == cluster.cluster_authorized_operations == 8096
    assert [t.topic_authorized_operations for t in meta.topics] == [3576]
