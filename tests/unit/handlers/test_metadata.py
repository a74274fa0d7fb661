"""Metadata handler: topic selection per version, auto-creation, ids, authorized ops."""

from __future__ import annotations

import uuid

import pytest

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
        assert b.topic_id == services.topics.get("b").topic_id
    if version >= 8:
        assert b.topic_authorized_operations == OMITTED


async def test_empty_list_means_no_topics_from_v1(call, services):
    services.admin.create_topic("a", 1, now_ms=services.clock())
    assert (await call(KEY, 1, body([]))).topics == []
    assert len((await call(KEY, 0, body([]))).topics) == 1


async def test_auto_create(make_services, call_with):
    services = make_services(**{"num.partitions": "3"})
    resp = await call_with(services, KEY, 12, body(names("new", "new")))
    assert len(resp.topics) == 1
    t = resp.topics[0]
    assert (t.error_code, t.name, t.is_internal) == (ErrorCode.NONE, "new", False)
    assert len(t.partitions) == 3
    info = services.topics.get("new")
    assert info is not None and info.partitions == 3 and t.topic_id == info.topic_id


async def test_auto_create_disabled(make_services, call_with, call, services):
    resp = await call(KEY, 12, body(names("x"), allow=False))
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert services.topics.get("x") is None
    off = make_services(**{"auto.create.topics.enable": "false"})
    resp = await call_with(off, KEY, 12, body(names("x")))
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert off.topics.get("x") is None
    # v1-3 have no allow_auto_topic_creation: the broker setting decides.
    resp = await call(KEY, 3, body(names("old")))
    assert resp.topics[0].error_code == ErrorCode.NONE
    assert services.topics.get("old") is not None


@pytest.mark.parametrize("allow", [True, False])
async def test_invalid_names(call, services, allow):
    resp = await call(KEY, 12, body(names("bad name", "x" * 250), allow=allow))
    assert [t.error_code for t in resp.topics] == [ErrorCode.INVALID_TOPIC_EXCEPTION] * 2
    assert services.topics.all() == []


async def test_internal_topic_never_auto_created(call, services):
    resp = await call(KEY, 12, body(names("__consumer_offsets")))
    t = resp.topics[0]
    assert (t.error_code, t.is_internal) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True)
    assert services.topics.get("__consumer_offsets") is None
    services.admin.create_topic("__consumer_offsets", 2, now_ms=services.clock())
    t = (await call(KEY, 12, body(names("__consumer_offsets")))).topics[0]
    assert (t.error_code, t.is_internal, len(t.partitions)) == (ErrorCode.NONE, True, 2)


async def test_auto_create_collision(call, services):
    services.admin.create_topic("a.b", 1, now_ms=services.clock())
    resp = await call(KEY, 12, body(names("a_b")))
    assert resp.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert services.topics.get("a_b") is None


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
