"""protocol.fastcodec equals the construct schemas (property tests).

- Produce requests, every served version: for any body the construct schema encodes, the
  fast decoder returns the same Containers (records as memoryviews with the same bytes); for
  damaged frames (truncated, bytes changed, bytes inserted, random tails) either both raise
  MalformedRequest or both return the same thing.
- Fetch responses, every served version: for any body in the fast path's domain the bytes are
  those of the construct schema; bodies outside it (tagged fields set, bad values) fall back,
  so `encode_response` still equals the construct path or raises its EncodeError.
- Fetch responses decoded, versions 12-18: the fast decoder gives the construct schema's
  Containers (records as memoryviews of the frame); answers with tagged fields, and damaged
  ones, get None from it, and `decode_response` then equals the construct path (the same
  Containers, or MalformedRequest from both).
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from construct import Container
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocoltest_helpers import plain as _plain

from protocol.codec import (
    _parse_body,
    decode_request,
    decode_request_generic,
    decode_response,
    encode_request,
    encode_response,
    encode_response_generic,
)
from protocol.exceptions import EncodeError, MalformedRequest
from protocol.fastcodec import (
    decode_fetch_response,
    decode_produce_request,
    encode_fetch_response,
    encode_metadata_response,
)
from protocol.framing import GatherFrame
from protocol.headers import parse_request_header, parse_response_header
from protocol.messages import fetch, produce
from protocol.primitives import uvarint_bytes as _uv

PRODUCE_VERSIONS = range(produce.VALID_VERSIONS[0], produce.VALID_VERSIONS[1] + 1)
FETCH_VERSIONS = range(4, fetch.VALID_VERSIONS[1] + 1)

int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(max_size=12)
uuids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
blobs = st.binary(max_size=80)


produce_bodies = st.fixed_dictionaries(
    {
        "transactional_id": st.none() | names,
        "acks": int16,
        "timeout_ms": int32,
        "topic_data": st.lists(
            st.fixed_dictionaries(
                {
                    "name": names,
                    "topic_id": uuids,
                    "partition_data": st.lists(
                        st.fixed_dictionaries({"index": int32, "records": st.none() | blobs}),
                        max_size=3,
                    ),
                }
            ),
            max_size=3,
        ),
    }
)


def _produce_frame(version: int, body: dict[str, Any], client_id: str | None = "c") -> bytes:
    return encode_request(0, version, 7, client_id, body)[4:]


def _both(frame: bytes) -> tuple[Any, Any]:
    """(construct result, fast result); each a body, or the MalformedRequest class."""
    results = []
    for decode in (decode_request_generic, decode_request):
        try:
            results.append(_plain(decode(frame)[1]))
        except MalformedRequest:
            results.append(MalformedRequest)
    return results[0], results[1]


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
@settings(max_examples=60, deadline=None)
@given(body=produce_bodies)
def test_produce_request_equal_to_construct(version: int, body: dict[str, Any]) -> None:
    frame = _produce_frame(version, body)
    generic = decode_request_generic(frame)[1]
    header, fast = decode_request(frame)
    assert header.api_key == 0
    assert _plain(fast) == _plain(generic)
    assert isinstance(fast, Container)
    for topic in fast.topic_data:
        assert isinstance(topic, Container)
        for part in topic.partition_data:
            assert part.records is None or isinstance(part.records, memoryview)


def _damage(frame: bytes, offset: int, data: Any) -> bytes:
    """`frame` with its body (from `offset`) truncated, a byte changed, bytes inserted, or
    replaced by random bytes."""
    kind = data.draw(st.sampled_from(["truncate", "change", "insert", "tail"]))
    pos = data.draw(st.integers(offset, len(frame)))
    if kind == "truncate":
        return frame[:pos]
    if kind == "change":
        if pos == len(frame):
            pos -= 1
        byte = data.draw(
            st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]) | st.integers(0, 255)
        )
        return frame[:pos] + bytes([byte]) + frame[pos + 1 :]
    if kind == "insert":
        return frame[:pos] + data.draw(st.binary(min_size=1, max_size=6)) + frame[pos:]
    return frame[:offset] + data.draw(st.binary(max_size=60))


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=produce_bodies, data=st.data())
def test_produce_damaged_frames_agree(version: int, body: dict[str, Any], data: Any) -> None:
    frame = _produce_frame(version, body)
    _header, offset = parse_request_header(frame)
    damaged = _damage(frame, offset, data)
    generic, fast = _both(damaged)
    assert fast == generic


_HEAD_V3 = _produce_frame(3, {"acks": 1, "timeout_ms": 1, "topic_data": []})[: -4 - 6 - 2]
_HEAD_V9 = _produce_frame(9, {"acks": 1, "timeout_ms": 1, "topic_data": []})[: -1 - 1 - 6 - 1]
_AT = b"\x00\x01\x00\x00\x00\x01"  # acks 1, timeout 1


@pytest.mark.parametrize(
    ("frame", "malformed"),
    [
        # v3 (classic encodings)
        (_HEAD_V3 + b"\xff\xff" + _AT + b"\x00\x00\x00\x00", False),  # null txn id, no topic
        (_HEAD_V3 + b"\xff\xfe" + _AT + b"\x00\x00\x00\x00", True),  # txn id length -2
        (_HEAD_V3 + b"\xff\xff" + _AT + b"\xff\xff\xff\xff", True),  # null topic array
        (_HEAD_V3 + b"\xff\xff" + _AT + b"\x00\x00\x00\x01\xff\xff\x00\x00\x00\x00", True),
        (  # records length -1: null records
            _HEAD_V3
            + b"\xff\xff"
            + _AT
            + b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01"
            + b"\x00\x00\x00\x05\xff\xff\xff\xff",
            False,
        ),
        (  # records length -2
            _HEAD_V3
            + b"\xff\xff"
            + _AT
            + b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01"
            + b"\x00\x00\x00\x05\xff\xff\xff\xfe",
            True,
        ),
        (  # records longer than the frame
            _HEAD_V3
            + b"\xff\xff"
            + _AT
            + b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01"
            + b"\x00\x00\x00\x05\x00\x00\x00\x09abc",
            True,
        ),
        # v9 (compact encodings, tagged fields)
        (_HEAD_V9 + b"\x00" + _AT + b"\x01\x00", False),
        (_HEAD_V9 + _uv(32769) + b"x" * 32768 + _AT + b"\x01\x00", True),  # txn id > 32767
        (_HEAD_V9 + _uv(32768) + b"x" * 32767 + _AT + b"\x01\x00", False),  # exactly 32767
        (_HEAD_V9 + b"\x00" + _AT + b"\x00\x00", True),  # null topic array
        (_HEAD_V9 + b"\x00" + _AT + b"\x02" + b"\x00" + b"\x01\x00\x00", True),  # null name
        (_HEAD_V9 + b"\x00" + _AT + b"\x02" + _uv(32769) + b"y" * 32768 + b"\x01\x00\x00", True),
        (_HEAD_V9 + b"\x00" + _AT + b"\x80\x80\x80\x80\x80\x01", True),  # 6-byte varint
        (_HEAD_V9 + b"\x00" + _AT + b"\x01\x02\x05\x01z\x07\x00abc", False),  # 2 tags
        (_HEAD_V9 + b"\x00" + _AT + b"\x01\x09\x05\x01z", True),  # tag count > bytes left
        (_HEAD_V9 + b"\x00" + _AT + b"\x01\x01\x05\x09z", True),  # tag size > bytes left
        (  # a partition with null records and a tag on every level
            _HEAD_V9
            + b"\x00"
            + _AT
            + b"\x02\x02t\x02\x00\x00\x00\x04\x00\x01\x01\x00"
            + b"\x01\x02\x00\x00",
            False,
        ),
    ],
)
def test_produce_edge_cases_agree(frame: bytes, malformed: bool) -> None:
    generic, fast = _both(frame)
    assert fast == generic
    assert (generic is MalformedRequest) == malformed


def test_produce_records_are_views_of_the_frame() -> None:
    records = bytes(range(256)) * 10
    body = {
        "acks": -1,
        "timeout_ms": 1,
        "topic_data": [{"name": "t", "partition_data": [{"index": 3, "records": records}]}],
    }
    for version in PRODUCE_VERSIONS:
        frame = _produce_frame(version, body)
        _header, offset = parse_request_header(frame)
        req = decode_produce_request(frame, offset, version)
        view = req.topic_data[0].partition_data[0].records
        assert isinstance(view, memoryview) and view.obj is frame
        assert view == records


@pytest.mark.parametrize(
    ("frame_tail", "why"),
    [
        (b"\xff\xfe", "negative string length"),
        (b"\x00\x01", "truncated"),
    ],
)
def test_produce_v3_bad_transactional_id(frame_tail: bytes, why: str) -> None:
    frame = _produce_frame(3, {"acks": 1, "timeout_ms": 1, "topic_data": []})
    _header, offset = parse_request_header(frame)
    with pytest.raises(MalformedRequest):
        decode_produce_request(frame[:offset] + frame_tail, offset, 3)


def test_produce_huge_array_count_is_rejected_before_allocating() -> None:
    frame = _produce_frame(5, {"acks": 1, "timeout_ms": 1, "topic_data": []})
    damaged = frame[:-4] + b"\x7f\xff\xff\xff"
    _header, offset = parse_request_header(damaged)
    with pytest.raises(MalformedRequest, match="array of"):
        decode_produce_request(damaged, offset, 5)


# --------------------------------------------------------------------------------------------
# Fetch responses
# --------------------------------------------------------------------------------------------


def _maybe(strategy: Any) -> Any:
    """A value, or absent (the schema default applies)."""
    return st.one_of(st.just(None), strategy)


@st.composite
def fetch_partitions(draw: Any) -> dict[str, Any]:
    values = {
        "partition_index": int32,
        "error_code": int16,
        "high_watermark": int64,
        "last_stable_offset": int64,
        "log_start_offset": int64,
        "preferred_read_replica": int32,
    }
    out: dict[str, Any] = {}
    for key, strategy in values.items():
        value = draw(_maybe(strategy))
        if value is not None:
            out[key] = value
    if draw(st.booleans()):
        out["aborted_transactions"] = draw(
            st.none()
            | st.lists(
                st.fixed_dictionaries({"producer_id": int64, "first_offset": int64}),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        out["records"] = draw(st.none() | blobs | blobs.map(memoryview) | blobs.map(bytearray))
    return out


fetch_bodies = st.fixed_dictionaries(
    {
        "responses": st.lists(
            st.fixed_dictionaries(
                {
                    "topic": names,
                    "topic_id": uuids,
                    "partitions": st.lists(fetch_partitions(), max_size=3),
                }
            ),
            max_size=3,
        ),
    },
    optional={"throttle_time_ms": int32, "error_code": int16, "session_id": int32},
)


@pytest.mark.parametrize("version", FETCH_VERSIONS)
@settings(max_examples=60, deadline=None)
@given(body=fetch_bodies, cid=int32)
def test_fetch_response_equal_to_construct(version: int, body: dict[str, Any], cid: int) -> None:
    fast = encode_fetch_response(version, cid, body)
    assert fast is not None
    assert fast == encode_response_generic(1, version, cid, body)
    assert encode_response(1, version, cid, body) == fast


class _Region:
    """A records region (`protocol.framing.GatherFrame`): bytes given only on request."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __bytes__(self) -> bytes:
        return self.data


def _with_regions(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with every non-null records made a region."""

    def part(p: dict[str, Any]) -> dict[str, Any]:
        r = p.get("records")
        return p if r is None else {**p, "records": _Region(bytes(r))}

    return {
        **body,
        "responses": [
            {**t, "partitions": [part(p) for p in t["partitions"]]} for t in body["responses"]
        ],
    }


@pytest.mark.parametrize("version", FETCH_VERSIONS)
@settings(max_examples=40, deadline=None)
@given(body=fetch_bodies, cid=int32)
def test_fetch_response_with_regions_is_a_gather_frame(
    version: int, body: dict[str, Any], cid: int
) -> None:
    """Records that are regions: a GatherFrame (regions kept as they are, the bytes around
    them joined) whose bytes are the frame built from plain bytes; none: bytes as before."""
    regions = _with_regions(body)
    fast = encode_fetch_response(version, cid, regions)
    want = encode_response_generic(1, version, cid, body)
    has_region = any(
        p.get("records") is not None for t in body["responses"] for p in t["partitions"]
    )
    if not has_region:
        assert fast == want
        return
    assert isinstance(fast, GatherFrame)
    assert bytes(fast) == want and len(fast) == len(want)
    assert sum(isinstance(p, _Region) for p in fast.parts) == sum(
        p.get("records") is not None for t in body["responses"] for p in t["partitions"]
    )
    assert not any(
        isinstance(a, bytes) and isinstance(b, bytes) for a, b in itertools.pairwise(fast.parts)
    )


def test_fetch_response_with_regions_outside_the_fast_path_reads_them() -> None:
    """construct builds it (a tagged field): the regions are read into bytes first."""
    part = {
        "partition_index": 0,
        "records": _Region(b"abc"),
        "diverging_epoch": {"epoch": 1, "end_offset": 2},
    }
    body = {"responses": [{"topic": "t", "partitions": [part]}]}
    assert encode_fetch_response(12, 1, body) is None
    plain = {"responses": [{"topic": "t", "partitions": [{**part, "records": b"abc"}]}]}
    assert encode_response(1, 12, 1, body) == encode_response_generic(1, 12, 1, plain)


FETCH_DECODE_VERSIONS = range(12, fetch.VALID_VERSIONS[1] + 1)


def _fetch_generic(version: int, frame: bytes | bytearray) -> Any:
    """(correlation id, body) through the construct schema only, or MalformedRequest."""
    try:
        cid, offset = parse_response_header(frame, 1)
        return cid, _parse_body(fetch.response_schema(version), frame, offset)
    except MalformedRequest as exc:
        return type(exc)


def _fetch_fast(version: int, frame: bytes | bytearray) -> Any:
    try:
        return decode_response(1, version, frame)
    except MalformedRequest as exc:
        return type(exc)


@pytest.mark.parametrize("version", FETCH_DECODE_VERSIONS)
@settings(max_examples=60, deadline=None)
@given(body=fetch_bodies, cid=int32, in_place=st.booleans())
def test_fetch_response_decoded_equal_to_construct(
    version: int, body: dict[str, Any], cid: int, in_place: bool
) -> None:
    wire = encode_response_generic(1, version, cid, body)[4:]
    frame = bytearray(wire) if in_place else wire  # a frame received in place is a bytearray
    _cid, offset = parse_response_header(frame, 1)
    fast = decode_fetch_response(frame, offset, version)
    assert fast is not None
    assert fast == _fetch_generic(version, frame)[1]
    assert decode_response(1, version, frame) == (cid, fast)
    for topic in fast.responses:
        for part in topic.partitions:
            assert part.records is None or isinstance(part.records, memoryview)


@pytest.mark.parametrize("version", FETCH_DECODE_VERSIONS)
@settings(max_examples=30, deadline=None)
@given(
    body=fetch_bodies,
    extra=st.sampled_from(
        [
            ("part", "diverging_epoch", {"epoch": 3, "end_offset": 10}),
            ("part", "current_leader", {"leader_id": 1, "leader_epoch": 2}),
            ("part", "snapshot_id", {"end_offset": 5, "epoch": 1}),
            ("top", "node_endpoints", [{"node_id": 1, "host": "h", "port": 9, "rack": None}]),
        ]
    ),
)
def test_fetch_response_with_tagged_fields_is_decoded_by_construct(
    version: int, body: dict[str, Any], extra: tuple[str, str, Any]
) -> None:
    where, key, value = extra
    if where == "top":
        if version < 16:
            return  # node_endpoints exists from v16
        body[key] = value
    else:
        body["responses"].append({"topic": "t", "partitions": [{key: value}]})
    frame = encode_response_generic(1, version, 5, body)[4:]
    _cid, offset = parse_response_header(frame, 1)
    assert decode_fetch_response(frame, offset, version) is None
    decoded = decode_response(1, version, frame)
    assert decoded == _fetch_generic(version, frame)
    if where == "top":
        assert decoded[1][key][0].host == "h"
    else:
        assert decoded[1].responses[-1].partitions[0][key] == value


@pytest.mark.parametrize("version", [12, 13, 16, 18])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=fetch_bodies, data=st.data())
def test_fetch_response_damaged_frames_agree(version: int, body: dict[str, Any], data: Any) -> None:
    frame = encode_response_generic(1, version, 9, body)[4:]
    offset = 5  # correlation id, empty header tag section
    damaged = _damage(frame, offset, data)
    assert _fetch_fast(version, damaged) == _fetch_generic(version, damaged)


def test_fetch_response_decode_outside_its_versions_is_not_fast() -> None:
    body = {"responses": [{"topic": "t", "partitions": [{"records": b"abc"}]}]}
    frame = encode_response_generic(1, 11, 3, body)[4:]
    assert decode_fetch_response(frame, 4, 11) is None
    cid, decoded = decode_response(1, 11, frame)
    assert cid == 3 and decoded.responses[0].partitions[0].records == b"abc"


@pytest.mark.parametrize("version", [4, 11, 12, 16, 18])
@settings(max_examples=30, deadline=None)
@given(
    body=fetch_bodies,
    extra=st.sampled_from(
        [
            ("part", "diverging_epoch", {"epoch": 3, "end_offset": 10}),
            ("part", "diverging_epoch", {"epoch": -1, "end_offset": -1}),
            ("part", "current_leader", {"leader_id": 1, "leader_epoch": 2}),
            ("part", "snapshot_id", {"end_offset": 5, "epoch": 1}),
            ("top", "node_endpoints", [{"node_id": 1, "host": "h", "port": 9, "rack": None}]),
        ]
    ),
)
def test_fetch_response_outside_fast_path_falls_back(
    version: int, body: dict[str, Any], extra: tuple[str, str, Any]
) -> None:
    where, key, value = extra
    if where == "top":
        body[key] = value
    else:
        body["responses"].append({"topic": "t", "partitions": [{key: value}]})
    assert encode_fetch_response(version, 1, body) is None
    assert encode_response(1, version, 1, body) == encode_response_generic(1, version, 1, body)


@pytest.mark.parametrize(
    "bad",
    [
        {"responses": [{"topic": "t", "partitions": [{"partition_index": 2**31}]}]},
        {"responses": [{"topic": "t", "partitions": [{"records": "text"}]}]},
        {"responses": [{"topic": 5, "partitions": []}]},
        {"responses": None},
        {"throttle_time_ms": 1.5, "responses": []},
    ],
)
def test_fetch_response_bad_values_raise_encode_error(bad: dict[str, Any]) -> None:
    assert encode_fetch_response(12, 1, bad) is None
    with pytest.raises(EncodeError):
        encode_response(1, 12, 1, bad)


# --------------------------------------------------------------------------------------------
# Metadata responses
# --------------------------------------------------------------------------------------------

META_VERSIONS = range(0, 14)
node_lists = st.lists(int32, max_size=4)


@st.composite
def meta_partitions(draw: Any) -> dict[str, Any]:
    values = {
        "error_code": int16,
        "partition_index": int32,
        "leader_id": int32,
        "leader_epoch": int32,
        "replica_nodes": node_lists,
        "isr_nodes": node_lists,
        "offline_replicas": node_lists,
    }
    out: dict[str, Any] = {}
    for key, strategy in values.items():
        if draw(st.booleans()):
            out[key] = draw(strategy)
    return out


@st.composite
def meta_topics(draw: Any, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {"partitions": draw(st.lists(meta_partitions(), max_size=4))}
    if draw(st.booleans()):
        out["error_code"] = draw(int16)
    # a null name only where the version allows it
    out["name"] = draw(names | st.none()) if version >= 12 else draw(names)
    if draw(st.booleans()):
        out["topic_id"] = draw(uuids)
    if draw(st.booleans()):
        out["is_internal"] = draw(st.booleans())
    if draw(st.booleans()):
        out["topic_authorized_operations"] = draw(int32)
    return out


@st.composite
def meta_bodies(draw: Any, version: int) -> dict[str, Any]:
    brokers = draw(
        st.lists(
            st.fixed_dictionaries(
                {"node_id": int32, "host": names, "port": int32},
                optional={"rack": st.none() | names},
            ),
            max_size=3,
        )
    )
    out: dict[str, Any] = {
        "brokers": brokers,
        "topics": draw(st.lists(meta_topics(version), max_size=3)),
    }
    optional = {
        "throttle_time_ms": int32,
        "cluster_id": st.none() | names,
        "controller_id": int32,
        "cluster_authorized_operations": int32,
        "error_code": int16,
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            out[key] = draw(strategy)
    return out


@pytest.mark.parametrize("version", META_VERSIONS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cid=int32)
def test_metadata_response_equal_to_construct(version: int, data: Any, cid: int) -> None:
    body = data.draw(meta_bodies(version))
    fast = encode_metadata_response(version, cid, body)
    assert fast is not None
    assert fast == encode_response_generic(3, version, cid, body)
    assert encode_response(3, version, cid, body) == fast


def test_metadata_thousand_partitions_and_big_node_lists() -> None:
    parts = [
        {
            "error_code": 0,
            "partition_index": i,
            "leader_id": 1,
            "leader_epoch": 0,
            "replica_nodes": list(range(i % 200)),  # some above the compact one-byte count
            "isr_nodes": [1],
            "offline_replicas": [],
        }
        for i in range(1000)
    ]
    body = {"brokers": [], "topics": [{"name": "wide", "partitions": parts}]}
    for version in META_VERSIONS:
        assert encode_response(3, version, 9, body) == encode_response_generic(3, version, 9, body)
    small = {"brokers": [], "topics": [{"name": "w", "partitions": parts[:100]}]}
    assert encode_metadata_response(12, 9, small) is not None


@pytest.mark.parametrize(
    ("version", "bad"),
    [
        (11, {"brokers": [], "topics": [{"name": None, "partitions": []}]}),  # not nullable
        (12, {"brokers": [], "topics": [{"name": "t", "partitions": [{"isr_nodes": ["1"]}]}]}),
        (12, {"brokers": [], "topics": [{"name": "t", "partitions": [{"leader_id": 2**31}]}]}),
        (12, {"brokers": None, "topics": []}),
        (12, {"brokers": [{"node_id": 1, "host": 5, "port": 1}], "topics": []}),
    ],
)
def test_metadata_bad_values_raise_encode_error(version: int, bad: dict[str, Any]) -> None:
    assert encode_metadata_response(version, 1, bad) is None
    with pytest.raises(EncodeError):
        encode_response(3, version, 1, bad)


@pytest.mark.parametrize("version", [1, 9, 12])
def test_metadata_unknown_key_falls_back(version: int) -> None:
    body = {"brokers": [], "topics": [], "unknown_future_field": 1}
    assert encode_metadata_response(version, 1, body) is None
    assert encode_response(3, version, 1, body) == encode_response_generic(3, version, 1, body)


single_replica_partitions = st.fixed_dictionaries(
    {
        "error_code": int16,
        "partition_index": int32,
        "leader_id": int32,
        "leader_epoch": int32,
        "replica_nodes": st.lists(int32, min_size=1, max_size=1),
        "isr_nodes": st.lists(int32, min_size=1, max_size=1),
        "offline_replicas": st.just([]),
    }
)


@pytest.mark.parametrize("version", [9, 12, 13])
@settings(max_examples=80, deadline=None)
@given(
    parts=st.lists(single_replica_partitions, max_size=5),
    odd=st.sampled_from([None, ("leader_id", 2**31), ("isr_nodes", ["x"]), ("extra", 1)]),
)
def test_metadata_single_replica_entries(
    version: int, parts: list[dict[str, Any]], odd: tuple[str, Any] | None
) -> None:
    """The one-replica fast path (every key present) against construct, and with one entry
    made odd: a value out of range, a non-int node, an unknown key."""
    if odd is not None and parts:
        parts[-1] = {**parts[-1], odd[0]: odd[1]}
    body = {"brokers": [], "topics": [{"name": "t", "partitions": parts}]}
    try:
        expected: bytes | type[EncodeError] = encode_response_generic(3, version, 5, body)
    except EncodeError:
        expected = EncodeError
    fast = encode_metadata_response(version, 5, body)
    if expected is EncodeError:
        assert fast is None
    else:
        assert fast is None or fast == expected
        assert encode_response(3, version, 5, body) == expected
