"""Injected error responses: for every API the broker serves and every served version, a
request with a topic, a partition and a group goes through the real codec, and its error
response encodes, decodes and carries the code in every error field it has."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from protocol.api import SCHEMAS, ApiKey
from protocol.codec import decode_request, decode_response, encode_request, encode_response
from protocol.errors import ErrorCode
from protocol.primitives import FieldInfo
from wirebroker.faults.responses import error_response, merge_responses, split_request
from wirebroker.handlers.registry import load_handlers

CODE = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
TOPIC_ID = uuid.UUID(int=7)


def _sample(fields: Sequence[FieldInfo]) -> dict[str, Any]:
    """A request body with one element in every array and a non-default key everywhere."""
    out: dict[str, Any] = {}
    for f in fields:
        if f.kind == "array":
            if f.element == "struct":
                out[f.name] = [_sample(f.fields)]
            elif f.element == "string":
                out[f.name] = ["g1", "g2"]
            elif f.element and f.element.startswith("int"):
                out[f.name] = [0, 1]
            else:
                out[f.name] = []
        elif f.kind == "struct":
            out[f.name] = _sample(f.fields)
        elif f.kind == "string":
            out[f.name] = "t"
        elif f.kind == "uuid":
            out[f.name] = TOPIC_ID
        elif f.name == "acks":
            out[f.name] = -1
        elif f.kind in ("records", "bytes"):
            out[f.name] = b"" if f.kind == "bytes" else None
    return out


#: Responses whose error fields are only in entries the request does not name: DescribeLogDirs
#: answers per log directory (v0-2 have no top-level error code); its answer is empty.
_NOTHING_TO_MIRROR = {(ApiKey.DESCRIBE_LOG_DIRS, v) for v in range(3)}


def _cases() -> list[tuple[int, int]]:
    cases = []
    for key, spec in sorted(load_handlers().items()):
        for version in range(spec.min_version, spec.max_version + 1):
            cases.append((key, version))
    return cases


def _error_codes(value: Any) -> list[int]:
    if isinstance(value, dict):
        codes = [int(v) for k, v in value.items() if k == "error_code"]
        for k, v in value.items():
            if k != "error_code":
                codes += _error_codes(v)
        return codes
    if isinstance(value, list):
        return [c for item in value for c in _error_codes(item)]
    return []


def _has_error_field(fields: Sequence[FieldInfo]) -> bool:
    return any(f.name == "error_code" or (f.fields and _has_error_field(f.fields)) for f in fields)


@pytest.mark.parametrize(("api_key", "version"), _cases())
def test_every_served_version_encodes_with_the_error(api_key: int, version: int) -> None:
    module = SCHEMAS[api_key]
    body = _sample(module.REQUEST.fields(version))
    frame = encode_request(api_key, version, 9, "client", body)
    _header, request = decode_request(frame[4:])
    response = error_response(api_key, version, request, CODE, "injected")
    assert response is not None
    encoded = encode_response(api_key, version, 9, response)
    correlation_id, decoded = decode_response(api_key, version, encoded[4:])
    assert correlation_id == 9
    codes = _error_codes(decoded)
    if _has_error_field(module.RESPONSE.fields(version)) and (
        (api_key, version) not in _NOTHING_TO_MIRROR
    ):
        assert codes, f"{module.NAME} v{version}: no error field carries the code: {decoded}"
    assert all(c == CODE for c in codes)


def test_produce_answers_each_partition_it_was_asked() -> None:
    request = {
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": "a", "partition_data": [{"index": 0}, {"index": 2}]},
            {"name": "b", "partition_data": [{"index": 1}]},
        ],
    }
    body = error_response(ApiKey.PRODUCE, 9, request, CODE)
    assert body is not None
    answered = [
        (t["name"], p["index"], p["error_code"], p["base_offset"])
        for t in body["responses"]
        for p in t["partition_responses"]
    ]
    assert answered == [("a", 0, CODE, -1), ("a", 2, CODE, -1), ("b", 1, CODE, -1)]


def test_acks_zero_produce_gets_no_answer() -> None:
    request = {"acks": 0, "timeout_ms": 1, "topic_data": []}
    assert error_response(ApiKey.PRODUCE, 9, request, CODE) is None


def test_group_ids_given_as_strings_are_answered_one_by_one() -> None:
    body = error_response(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g1", "g2"]}, 15)
    assert body is not None
    assert [(g["group_id"], g["error_code"]) for g in body["groups"]] == [("g1", 15), ("g2", 15)]
    coordinators = error_response(
        ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["g"]}, 15
    )
    assert coordinators is not None
    assert [(c["key"], c["error_code"], c["node_id"]) for c in coordinators["coordinators"]] == [
        ("g", 15, -1)
    ]


def test_metadata_lists_the_topics_asked_for_and_no_broker() -> None:
    body = error_response(ApiKey.METADATA, 12, {"topics": [{"name": "t", "topic_id": None}]}, 5)
    assert body is not None
    assert body["brokers"] == []
    assert [(t["name"], t["error_code"]) for t in body["topics"]] == [("t", 5)]


def test_a_partition_fault_splits_the_request_and_merges_the_answers() -> None:
    request = {
        "acks": -1,
        "topic_data": [
            {"name": "a", "partition_data": [{"index": 0}, {"index": 1}]},
            {"name": "b", "partition_data": [{"index": 0}]},
        ],
    }
    split = split_request(request, "a", 0, lambda _id: None)
    assert split is not None
    hit, rest = split
    assert hit["topic_data"] == [{"name": "a", "partition_data": [{"index": 0}]}]
    assert rest["topic_data"] == [
        {"name": "a", "partition_data": [{"index": 1}]},
        {"name": "b", "partition_data": [{"index": 0}]},
    ]
    assert request["topic_data"][0]["partition_data"] == [{"index": 0}, {"index": 1}]
    errors = error_response(ApiKey.PRODUCE, 9, hit, CODE)
    assert errors is not None
    served = {"responses": [{"name": "b", "partition_responses": [{"index": 0}]}]}
    merged = merge_responses(served, errors)
    assert [t["name"] for t in merged["responses"]] == ["b", "a"]


def test_requests_naming_only_the_fault_s_entries_do_not_split() -> None:
    only = {"topic_data": [{"name": "a", "partition_data": [{"index": 0}]}]}
    assert split_request(only, "a", 0, lambda _id: None) is None
    assert split_request({"topics": None}, "a", None, lambda _id: None) is None
    by_topic = {"topics": [{"name": "a"}, {"name": "b"}]}
    assert split_request(by_topic, "a", None, lambda _id: None) == (
        {"topics": [{"name": "a"}]},
        {"topics": [{"name": "b"}]},
    )
