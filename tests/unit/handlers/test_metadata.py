"""Metadata handler: topic selection per version, auto-creation, ids, authorized ops."""

from __future__ import annotations

import uuid

import pytest
from groupcoordkit import running_group_coordinator

import wirebroker.handlers.metadata  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers.metadata import CLUSTER_ALL_OPERATIONS, TOPIC_ALL_OPERATIONS

KEY = ApiKey.METADATA
OMITTED = -2147483648


def names(*topics: str) -> list[dict]:
    return [{"name": t} for t in topics]


def body(topics, *, allow=True, topic_ops=False, cluster_ops=False) -> dict:
    return {
        "topics": topics,
        "allow_auto_topic_creation": allow,
        "include_cluster_authorized_operations": cluster_ops,
        "include_topic_authorized_operations": topic_ops,
    }


@pytest.mark.parametrize("version", range(0, 14))
async def test_all_topics_every_version(call, services, version):
    services.admin.create_topic("b", 2, now_ms=services.clock())
    services.admin.create_topic("a", 1, now_ms=services.clock())
    resp = await call(KEY, version, body([] if version == 0 else None))
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(0, "127.0.0.1", 9092)]
    if version >= 1:
        assert resp.controller_id == 0
        assert resp.brokers[0].rack is None
    if version >= 2:
        assert resp.cluster_id == services.cluster_id
    assert [t.name for t in resp.topics] == ["a", "b"]
    b = resp.topics[1]
    assert b.error_code == ErrorCode.NONE
    assert [p.partition_index for p in b.partitions] == [0, 1]
    for p in b.partitions:
        assert (p.error_code, p.leader_id, list(p.replica_nodes), list(p.isr_nodes)) == (
            ErrorCode.NONE,
            0,
            [0],
            [0],
        )
        if version >= 7:
            assert p.leader_epoch == 0
        if version >= 5:
            assert list(p.offline_replicas) == []
    if version >= 10:
        assert b.topic_id == services.cluster.topic("b").topic_id
    if version >= 8:
        assert b.topic_authorized_operations == OMITTED


async def test_empty_list_means_no_topics_from_v1(call, services):
    services.admin.create_topic("a", 1, now_ms=services.clock())
    assert (await call(KEY, 1, body([]))).topics == []
    assert len((await call(KEY, 0, body([]))).topics) == 1


def unknown(resp) -> list[tuple[int, str, bool, int]]:
    return [(t.error_code, t.name, t.is_internal, len(t.partitions)) for t in resp.topics]


@pytest.mark.parametrize("version", [1, 3, 4, 12, 13])
async def test_auto_create_answers_unknown_then_the_topic(make_services, call_with, version):
    """Kafka's AutoTopicCreationManager: the answer that starts the creation says
    UNKNOWN_TOPIC_OR_PARTITION with no partitions; the next one has the topic."""
    services = make_services(**{"num.partitions": "3"})
    resp = await call_with(services, KEY, version, body(names("new", "new")))
    assert unknown(resp) == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "new", False, 0)]
    if version >= 10:
        assert resp.topics[0].topic_id == uuid.UUID(int=0)
    info = services.cluster.topic("new")
    assert info is not None and info.partitions == 3
    t = (await call_with(services, KEY, version, body(names("new")))).topics[0]
    assert (t.error_code, len(t.partitions)) == (ErrorCode.NONE, 3)
    if version >= 10:
        assert t.topic_id == info.topic_id


async def test_auto_create_disabled(make_services, call_with, call, services):
    resp = await call(KEY, 12, body(names("x"), allow=False))
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert services.cluster.topic("x") is None
    off = make_services(**{"auto.create.topics.enable": "false"})
    for version in (3, 12):
        resp = await call_with(off, KEY, version, body(names("x", "__consumer_offsets")))
        assert unknown(resp) == [
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "x", False, 0),
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "__consumer_offsets", True, 0),
        ]
    assert off.cluster.topic("x") is None


@pytest.mark.parametrize("allow", [True, False])
async def test_invalid_names(call, services, allow):
    resp = await call(KEY, 12, body(names("bad name", "x" * 250), allow=allow))
    assert [t.error_code for t in resp.topics] == [ErrorCode.INVALID_TOPIC_EXCEPTION] * 2
    assert services.cluster.all_topics() == []


async def test_internal_topic_without_its_coordinator_is_not_created(call, services):
    resp = await call(KEY, 12, body(names("__consumer_offsets", "__share_group_state")))
    assert unknown(resp) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "__consumer_offsets", True, 0),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "__share_group_state", True, 0),
    ]
    assert services.cluster.topic("__consumer_offsets") is None
    assert services.cluster.topic("__share_group_state") is None
    services.admin.create_topic("__consumer_offsets", 2, now_ms=services.clock())
    t = (await call(KEY, 12, body(names("__consumer_offsets")))).topics[0]
    assert (t.error_code, t.is_internal, len(t.partitions)) == (ErrorCode.NONE, True, 2)


async def test_offsets_topic_auto_created_by_the_group_coordinator(
    make_services, call_with, nursery
):
    services = make_services(**{"offsets.topic.num.partitions": "4"})
    async with running_group_coordinator(services, nursery):
        resp = await call_with(services, KEY, 12, body(names("__consumer_offsets")))
        assert unknown(resp) == [
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "__consumer_offsets", True, 0)
        ]
        info = services.cluster.topic("__consumer_offsets")
        assert info is not None and info.partitions == 4
        assert info.configs.get("cleanup.policy") == "compact"
        t = (await call_with(services, KEY, 12, body(names("__consumer_offsets")))).topics[0]
        assert (t.error_code, t.is_internal, len(t.partitions)) == (ErrorCode.NONE, True, 4)


@pytest.mark.parametrize(
    ("overrides", "name"),
    [({}, "a_b"), ({"default.replication.factor": "3"}, "rf3")],
    ids=["collision", "replication-factor"],
)
async def test_refused_auto_creation_answers_unknown(make_services, call_with, overrides, name):
    """Kafka's controller refuses such a creation after the Metadata answer: the client only
    ever sees UNKNOWN_TOPIC_OR_PARTITION."""
    services = make_services(**overrides)
    services.admin.create_topic("a.b", 1, 1, now_ms=services.clock())
    for _ in range(2):
        resp = await call_with(services, KEY, 12, body(names(name)))
        assert unknown(resp) == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, False, 0)]
    assert services.cluster.topic(name) is None


async def test_lookup_by_topic_id(call, services):
    info = services.admin.create_topic("t", 2, now_ms=services.clock())
    unknown = uuid.uuid4()
    resp = await call(
        KEY,
        12,
        body([{"name": None, "topic_id": info.topic_id}, {"name": None, "topic_id": unknown}]),
    )
    found, missing = resp.topics
    assert (found.error_code, found.name, found.topic_id) == (ErrorCode.NONE, "t", info.topic_id)
    assert len(found.partitions) == 2
    assert (missing.error_code, missing.name, missing.topic_id) == (
        ErrorCode.UNKNOWN_TOPIC_ID,
        None,
        unknown,
    )
    assert missing.partitions == []


async def test_authorized_operations(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    resp = await call(KEY, 10, body(names("t"), topic_ops=True, cluster_ops=True))
    assert resp.topics[0].topic_authorized_operations == TOPIC_ALL_OPERATIONS
    assert resp.cluster_authorized_operations == CLUSTER_ALL_OPERATIONS
    # Apache Kafka 4.4's answers without an authorizer (tests/oracle/test_kafka_answers.py):
    # topic READ..ALTER_CONFIGS; cluster CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
    # DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE (no token operations).
    assert (TOPIC_ALL_OPERATIONS, CLUSTER_ALL_OPERATIONS) == (3576, 8096)
    resp = await call(KEY, 10, body(names("t")))
    assert resp.topics[0].topic_authorized_operations == OMITTED
    assert resp.cluster_authorized_operations == OMITTED


async def test_v13_top_level_error_code(call, services):
    resp = await call(KEY, 13, body(None))
    assert resp.error_code == ErrorCode.NONE
