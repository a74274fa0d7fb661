"""The fault store: matching, counts, filters, expiry, listing and removal."""

from __future__ import annotations

import uuid

import pytest

from protocol.api import ApiKey
from wirebroker.faults.core import FaultRules, RequestFault, request_targets

PRODUCE = {
    "acks": -1,
    "topic_data": [{"name": "orders", "partition_data": [{"index": 0}, {"index": 1}]}],
}


def test_a_counted_fault_hits_that_many_requests_then_is_gone() -> None:
    rules = FaultRules()
    assert not rules.active
    fault = rules.add_request_fault("error", now_ms=0, api_key=ApiKey.PRODUCE, count=3)
    assert rules.active
    hits = [rules.match(ApiKey.PRODUCE, "c", PRODUCE, now_ms=1) for _ in range(4)]
    assert hits == [fault, fault, fault, None]
    assert fault.hits == 3
    assert not rules.active
    assert rules.list(now_ms=2) == []


def test_other_apis_and_clients_are_not_hit() -> None:
    rules = FaultRules()
    rules.add_request_fault("close", now_ms=0, api_key=ApiKey.FETCH, client_id="me", count=None)
    assert rules.match(ApiKey.PRODUCE, "me", PRODUCE, now_ms=0) is None
    assert rules.match(ApiKey.FETCH, "other", {}, now_ms=0) is None
    hit = rules.match(ApiKey.FETCH, "me", {}, now_ms=0)
    assert hit is not None and hit.count is None
    assert rules.active  # unlimited: never consumed


def test_topic_and_partition_filters() -> None:
    rules = FaultRules()
    fault = rules.add_request_fault("delay", now_ms=0, topic="orders", partition=1, delay_ms=5)
    assert rules.match(ApiKey.PRODUCE, None, {"topic_data": [{"name": "x"}]}, now_ms=0) is None
    only_zero = {"topic_data": [{"name": "orders", "partition_data": [{"index": 0}]}]}
    assert rules.match(ApiKey.PRODUCE, None, only_zero, now_ms=0) is None
    assert rules.match(ApiKey.PRODUCE, None, PRODUCE, now_ms=0) is fault


def test_topic_ids_are_resolved_by_the_caller() -> None:
    rules = FaultRules()
    tid = uuid.uuid4()
    rules.add_request_fault("error", now_ms=0, topic="orders", error_code=6)
    fetch = {"topics": [{"topic_id": tid, "partitions": [{"partition": 0}]}]}
    assert rules.match(ApiKey.FETCH, None, fetch, now_ms=0) is None
    assert rules.match(ApiKey.FETCH, None, fetch, now_ms=0, resolve_topic_id={tid: "orders"}.get)


def test_faults_expire_after_their_duration() -> None:
    rules = FaultRules()
    rules.add_request_fault("error", now_ms=100, count=None, duration_ms=50, error_code=7)
    assert rules.match(ApiKey.METADATA, None, {}, now_ms=149) is not None
    assert rules.match(ApiKey.METADATA, None, {}, now_ms=150) is None
    assert not rules.active


def test_list_remove_and_clear_share_one_id_sequence() -> None:
    rules = FaultRules()
    a = rules.add_request_fault("error", now_ms=0, error_code=6)
    b = rules.add_broker_fault("unreachable")
    c = rules.add_request_fault("close", now_ms=0)
    assert [f.id for f in rules.list(now_ms=0)] == [a.id, b.id, c.id]
    assert rules.remove(b.id) is b
    assert rules.remove(b.id) is None
    assert rules.clear() == [a, c]
    assert not rules.active and rules.list(now_ms=0) == []


def test_bad_faults_are_refused() -> None:
    rules = FaultRules()
    with pytest.raises(ValueError, match="kind"):
        rules.add_request_fault("explode", now_ms=0)
    with pytest.raises(ValueError, match="count"):
        rules.add_request_fault("error", now_ms=0, count=0)
    with pytest.raises(ValueError, match="topic"):
        rules.add_request_fault("error", now_ms=0, partition=1)


def test_request_targets_reads_names_indexes_and_index_lists() -> None:
    elect = {"topic_partitions": [{"topic": "a", "partitions": [2, 3]}]}
    assert list(request_targets(elect, lambda _i: None)) == [("a", 2), ("a", 3)]
    metadata = {"topics": [{"name": "m", "topic_id": None}]}
    assert list(request_targets(metadata, lambda _i: None)) == [("m", None)]


def test_describe_names_what_is_injected() -> None:
    fault = RequestFault(4, "error", api_key=0, count=2, topic="t", partition=0, error_code=6)
    assert fault.describe() == "fault 4 (error NOT_LEADER_OR_FOLLOWER, Produce on t-0, 2 left)"
    assert fault.to_json()["error"] == "NOT_LEADER_OR_FOLLOWER"
