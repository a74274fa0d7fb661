"""DeleteTopics handler: by name (v1-5) and by name or id (v6), and its error paths."""

from __future__ import annotations

import uuid

import pytest

import wirebroker.handlers.delete_topics  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode

KEY = ApiKey.DELETE_TOPICS
ZERO = uuid.UUID(int=0)


def make_topic(services, name, partitions=1):
    return services.admin.create_topic(name, partitions, 1, {}, now_ms=services.clock())


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
async def test_delete_by_name(call, services, version):
    make_topic(services, "gone", 2)
    resp = await call(KEY, version, {"topic_names": ["gone"], "timeout_ms": 1000})
    assert [(r.name, r.error_code) for r in resp.responses] == [("gone", ErrorCode.NONE)]
    assert services.cluster.topic("gone") is None
    assert services.logs.get("gone", 0) is None and services.logs.get("gone", 1) is None
    assert services.replicas.partition("gone", 0) is None


async def test_delete_by_id_v6(call, services):
    info = make_topic(services, "byid")
    resp = await call(KEY, 6, {"topics": [{"name": None, "topic_id": info.topic_id}]})
    (r,) = resp.responses
    assert (r.name, r.topic_id, r.error_code) == ("byid", info.topic_id, ErrorCode.NONE)
    assert services.cluster.topic("byid") is None


async def test_delete_by_name_v6_reports_id(call, services):
    info = make_topic(services, "n6")
    resp = await call(KEY, 6, {"topics": [{"name": "n6"}]})
    (r,) = resp.responses
    assert (r.name, r.topic_id, r.error_code) == ("n6", info.topic_id, ErrorCode.NONE)


async def test_unknown_name(call):
    resp = await call(KEY, 5, {"topic_names": ["nope"]})
    (r,) = resp.responses
    assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert r.error_message == "This server does not host this topic-partition."


async def test_unknown_id(call):
    tid = uuid.uuid4()
    resp = await call(KEY, 6, {"topics": [{"name": None, "topic_id": tid}]})
    (r,) = resp.responses
    assert (r.name, r.topic_id, r.error_code) == (None, tid, ErrorCode.UNKNOWN_TOPIC_ID)


async def test_neither_name_nor_id(call):
    resp = await call(KEY, 6, {"topics": [{"name": None, "topic_id": ZERO}]})
    (r,) = resp.responses
    assert r.error_code == ErrorCode.INVALID_REQUEST
    assert r.error_message == "Neither topic name nor id were specified."


async def test_both_name_and_id(call, services):
    info = make_topic(services, "both")
    resp = await call(KEY, 6, {"topics": [{"name": "both", "topic_id": info.topic_id}]})
    (r,) = resp.responses
    assert r.error_code == ErrorCode.INVALID_REQUEST
    assert services.cluster.topic("both") is not None


async def test_duplicates(call, services):
    make_topic(services, "d1")
    info = make_topic(services, "d2")
    resp = await call(
        KEY,
        6,
        {
            "topics": [
                {"name": "d1"},
                {"name": "d1"},
                {"name": None, "topic_id": info.topic_id},
                {"name": None, "topic_id": info.topic_id},
            ]
        },
    )
    errors = {(r.name, r.error_message) for r in resp.responses}
    assert errors == {("d1", "Duplicate topic name."), (None, "Duplicate topic id.")}
    assert all(r.error_code == ErrorCode.INVALID_REQUEST for r in resp.responses)
    assert services.cluster.topic("d1") is not None and services.cluster.topic("d2") is not None


async def test_name_and_its_id_both_given(call, services):
    info = make_topic(services, "twice")
    resp = await call(
        KEY, 6, {"topics": [{"name": None, "topic_id": info.topic_id}, {"name": "twice"}]}
    )
    (r,) = resp.responses
    assert r.error_code == ErrorCode.INVALID_REQUEST
    assert "maps to an ID that was already supplied" in r.error_message
    assert services.cluster.topic("twice") is not None


@pytest.mark.parametrize(
    ("version", "code"),
    [
        (1, ErrorCode.INVALID_REQUEST),
        (2, ErrorCode.INVALID_REQUEST),
        (3, ErrorCode.TOPIC_DELETION_DISABLED),
        (6, ErrorCode.TOPIC_DELETION_DISABLED),
    ],
)
async def test_deletion_disabled(make_services, call_with, version, code):
    services = make_services(**{"delete.topic.enable": "false"})
    make_topic(services, "kept")
    body = {"topics": [{"name": "kept"}]} if version >= 6 else {"topic_names": ["kept"]}
    resp = await call_with(services, KEY, version, body)
    (r,) = resp.responses
    assert (r.name, r.error_code) == ("kept", code)
    assert services.cluster.topic("kept") is not None


async def test_internal_topic_is_deletable_as_in_kafka(call, services):
    make_topic(services, "__consumer_offsets")
    resp = await call(KEY, 5, {"topic_names": ["__consumer_offsets"]})
    assert resp.responses[0].error_code == ErrorCode.NONE
    assert services.cluster.topic("__consumer_offsets") is None


async def test_mixed_batch(call, services):
    make_topic(services, "a")
    make_topic(services, "b")
    resp = await call(KEY, 4, {"topic_names": ["a", "missing", "b"]})
    codes = {r.name: r.error_code for r in resp.responses}
    assert codes == {
        "a": ErrorCode.NONE,
        "b": ErrorCode.NONE,
        "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert services.cluster.all_topics() == []
