"""The decode budget (memory per request): estimates against tracemalloc, refusals, agreement.

- Worst shapes (many tiny structs, ints of every width, empty and short strings, unknown tags,
  Produce partitions with null records, nested arrays): tracemalloc's peak while decoding is
  at most the charged estimate x 1.25 + 64 KiB, and the estimate is at most 4x the peak
  (unknown tags excepted: they are charged but freed as soon as read).
- Over the budget: `RequestTooComplex` (a `MalformedRequest`) before the objects exist, so the
  peak stays around the budget (flat arrays: nothing; nested arrays: up to the budget); at
  exactly the charged estimate the body decodes.
- Random valid bodies of every API/version, arrays amplified: peak <= estimate x 1.25 + the
  frame (string payloads) + 64 KiB; compiled and interpreted schemas charge the same; the
  charge never exceeds `charge_per_byte` x body bytes (what lets `decode_request` skip the
  budget for small frames).
- The Produce fast path charges exactly what the construct schema charges: for any body and
  budget, both decode the same or both raise the same exception class.
"""

from __future__ import annotations

import functools
import random
import struct
import tracemalloc
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocoltest_helpers import plain as _plain

from protocol import codec
from protocol.api import schema_module
from protocol.exceptions import MalformedRequest, RequestTooComplex
from protocol.fastcodec import decode_produce_request
from protocol.headers import parse_request_header
from protocol.messages import API_MODULES, produce
from protocol.primitives import (
    MAX_CHARGE_PER_BYTE,
    DecodeBudget,
    Field,
    FieldInfo,
    MessageSpec,
    uvarint_bytes,
)

KIB = 1024
MIB = 1 << 20
UNLIMITED = 1 << 62
SLACK = 64 * KIB


def _uv(value: int) -> bytes:
    return uvarint_bytes(value)


def _header(key: int, version: int) -> bytes:
    head = struct.pack(">hhih", key, version, 7, 1) + b"c"
    fmin = API_MODULES[key].FLEXIBLE_MIN
    return head + b"\x00" if fmin is not None and version >= fmin else head


def _decode(frame: bytes, budget: DecodeBudget, *, fast: bool = False) -> Any:
    header, offset = parse_request_header(frame)
    if fast:
        return decode_produce_request(frame, offset, header.api_version, budget)
    schema = schema_module(header.api_key).request_schema(header.api_version)
    return codec._parse_body(schema, frame, offset, budget)


def _measure(decode: Callable[[], Any]) -> tuple[int, BaseException | None]:
    """tracemalloc peak (above the level before) of `decode()`, and what it raised."""
    error: BaseException | None = None
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        try:
            body = decode()
        except MalformedRequest as exc:
            error = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del decode
    if error is None:
        del body
    return peak - before, error


# --------------------------------------------------------------------------------------
# worst shapes
# --------------------------------------------------------------------------------------

N = 20000


def _metadata_v4_empty_names() -> bytes:
    # topics: N structs {name: ""} (2 wire bytes each), allow_auto_topic_creation
    return _header(3, 4) + struct.pack(">i", N) + b"\x00\x00" * N + b"\x00"


def _metadata_v12_topic_ids() -> bytes:
    rng = random.Random(1)
    topics = b"".join(
        uuid.UUID(int=rng.getrandbits(128)).bytes + b"\x00\x00" for _ in range(N)
    )  # topic_id, null name, no tags
    return _header(3, 12) + _uv(N + 1) + topics + b"\x00\x00\x00"


def _elect_leaders_int32(value: Callable[[int], int]) -> bytes:
    parts = b"".join(struct.pack(">i", value(i)) for i in range(N))
    topic = b"\x02t" + _uv(N + 1) + parts + b"\x00"
    return _header(43, 2) + b"\x00" + _uv(2) + topic + struct.pack(">i", 1000) + b"\x00"


def _list_transactions_int64() -> bytes:
    body = {"producer_id_filters": [2**40 + i for i in range(N)]}
    return codec.encode_request(66, 1, 7, "c", body)[4:]


def _list_config_resources_int8() -> bytes:
    body = {"resource_types": [-100 - (i % 28) for i in range(N)]}  # not cached small ints
    return codec.encode_request(74, 1, 7, "c", body)[4:]


def _describe_groups(name: bytes) -> bytes:
    item = _uv(len(name) + 1) + name
    return _header(15, 5) + _uv(N + 1) + item * N + b"\x00\x00"


def _delete_groups_v0_empty() -> bytes:
    return _header(42, 0) + struct.pack(">i", N) + b"\x00\x00" * N


def _api_versions_unknown_tags() -> bytes:
    tags = b"".join(_uv(100 + i) + b"\x00" for i in range(N))
    return _header(18, 3) + b"\x02a\x021" + _uv(N) + tags


def _metadata_v12_tags_per_topic() -> bytes:
    tags = b"\x0a" + b"".join(_uv(100 + j) + b"\x00" for j in range(10))
    topic = bytes(16) + b"\x00" + tags
    return _header(3, 12) + _uv(N // 10 + 1) + topic * (N // 10) + b"\x00\x00\x00"


def _produce_null_partitions(version: int, topics: int, parts: int) -> bytes:
    """Produce with `topics` topics of `parts` partitions each, all records null."""
    if version >= 9:
        part = b"".join(struct.pack(">i", 1000 + i) + b"\x00\x00" for i in range(parts))
        topic = b"\x02t" + _uv(parts + 1) + part + b"\x00"
        body = b"\x00" + struct.pack(">hi", -1, 5000) + _uv(topics + 1) + topic * topics + b"\x00"
    else:
        part = b"".join(struct.pack(">ii", 1000 + i, -1) for i in range(parts))
        topic = b"\x00\x01t" + struct.pack(">i", parts) + part
        body = b"\xff\xff" + struct.pack(">hii", -1, 5000, topics) + topic * topics
    return _header(0, version) + body


SHAPES: dict[str, Callable[[], bytes]] = {
    "Metadata v4, empty topic names": _metadata_v4_empty_names,
    "Metadata v12, topic ids": _metadata_v12_topic_ids,
    "ElectLeaders v2, int32 partitions": lambda: _elect_leaders_int32(lambda i: 1000 + i),
    "ElectLeaders v2, int32 zeros": lambda: _elect_leaders_int32(lambda i: 0),
    "ListTransactions v1, int64 producer ids": _list_transactions_int64,
    "ListConfigResources v1, int8 types": _list_config_resources_int8,
    "DescribeGroups v5, empty names": lambda: _describe_groups(b""),
    "DescribeGroups v5, 2-byte names": lambda: _describe_groups(b"ab"),
    "DescribeGroups v5, 1-char non-latin-1 names": lambda: _describe_groups("ā".encode()),
    "DeleteGroups v0, empty names": _delete_groups_v0_empty,
    "ApiVersions v3, unknown tags": _api_versions_unknown_tags,
    "Metadata v12, unknown tags per topic": _metadata_v12_tags_per_topic,
    "Produce v9, partitions with null records": lambda: _produce_null_partitions(9, 1, N),
    "Produce v3, partitions with null records": lambda: _produce_null_partitions(3, 1, N),
    "Produce v9, nested topics and partitions": lambda: _produce_null_partitions(9, 200, 100),
}
#: Shapes whose objects are transient (read then dropped): charged, but measure ~nothing.
TRANSIENT = {"ApiVersions v3, unknown tags", "Metadata v12, unknown tags per topic"}

_FRAMES: dict[str, bytes] = {}


def _frame(kind: str) -> bytes:
    if kind not in _FRAMES:
        _FRAMES[kind] = SHAPES[kind]()
    return _FRAMES[kind]


def _paths(kind: str) -> list[bool]:
    """fast=True (the Produce fast path) and/or False (construct)."""
    return [True, False] if kind.startswith("Produce") else [False]


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_estimate_bounds_the_measured_memory(kind: str) -> None:
    frame = _frame(kind)
    for fast in _paths(kind):
        budget = DecodeBudget(UNLIMITED)
        peak, error = _measure(functools.partial(_decode, frame, budget, fast=fast))
        assert error is None
        charged = budget.charged
        assert peak <= charged * 1.25 + SLACK, f"{kind}: measured {peak}, charged {charged}"
        if kind not in TRANSIENT:
            assert charged <= 4 * peak, f"{kind}: charged {charged}, measured {peak}"
        # the skip in decode_request is sound: never more than charge_per_byte per body byte
        header, offset = parse_request_header(frame)
        ratio = schema_module(header.api_key).REQUEST.charge_per_byte(header.api_version)
        assert charged <= (len(frame) - offset) * ratio


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_over_budget_is_refused_before_the_objects_exist(kind: str) -> None:
    frame = _frame(kind)
    for fast in _paths(kind):
        full = DecodeBudget(UNLIMITED)
        _decode(frame, full, fast=fast)
        limit = full.charged // 2
        budget = DecodeBudget(limit)
        peak, error = _measure(functools.partial(_decode, frame, budget, fast=fast))
        assert isinstance(error, RequestTooComplex), error
        assert isinstance(error, MalformedRequest)
        assert error.limit == limit and error.charged > limit
        assert peak <= limit * 1.25 + SLACK
        # at exactly the estimate the same body decodes, to the same value
        exact = DecodeBudget(full.charged)
        assert _decode(frame, exact, fast=fast) == _decode(frame, DecodeBudget(UNLIMITED))
        assert exact.charged == full.charged


def test_flat_array_of_tiny_structs_is_refused_at_its_count() -> None:
    """One count charges the whole array: refused with (almost) nothing allocated."""
    frame = _frame("Metadata v4, empty topic names")
    peak, error = _measure(lambda: codec.decode_request(frame, max_decoded_bytes=MIB))
    assert isinstance(error, RequestTooComplex)
    assert peak < 64 * KIB


def test_nested_arrays_are_refused_around_the_budget() -> None:
    """Inner counts charge as they come: the decode allocates up to ~the budget, not beyond."""
    frame = _frame("Produce v9, nested topics and partitions")
    full = DecodeBudget(UNLIMITED)
    _decode(frame, full, fast=True)
    limit = full.charged // 3
    for fast in (True, False):
        peak, error = _measure(functools.partial(_decode, frame, DecodeBudget(limit), fast=fast))
        assert isinstance(error, RequestTooComplex)
        assert limit / 4 <= peak <= limit * 1.25 + SLACK


def test_decode_request_passes_the_budget() -> None:
    for kind in SHAPES:
        frame = _frame(kind)
        full = DecodeBudget(UNLIMITED)
        _decode(frame, full, fast=kind.startswith("Produce"))
        with pytest.raises(RequestTooComplex):
            codec.decode_request(frame, max_decoded_bytes=full.charged - 1)
        with pytest.raises(RequestTooComplex):
            codec.decode_request_generic(frame, max_decoded_bytes=full.charged - 1)
        _header, body = codec.decode_request(frame, max_decoded_bytes=full.charged)
        assert body == codec.decode_request(frame)[1]
        assert codec.decode_request_generic(frame, max_decoded_bytes=full.charged)[1] == body


def test_every_request_schema_is_under_the_global_charge_bound() -> None:
    """decode_request skips the budget for frames under budget / MAX_CHARGE_PER_BYTE."""
    ratios = [API_MODULES[key].REQUEST.charge_per_byte(v) for key, v in REQUESTS]
    assert 100 < max(ratios) <= MAX_CHARGE_PER_BYTE


def test_small_frames_skip_the_budget_but_still_fit_it() -> None:
    """decode_request attaches no budget when charge_per_byte x body bytes fits the limit."""
    body = {"topics": [{"name": f"t{i}"} for i in range(50)], "allow_auto_topic_creation": False}
    frame = codec.encode_request(3, 4, 1, "c", body)[4:]
    _, offset = parse_request_header(frame)
    ratio = API_MODULES[3].REQUEST.charge_per_byte(4)
    charged = DecodeBudget(UNLIMITED)
    _decode(frame, charged)
    assert 0 < charged.charged <= (len(frame) - offset) * ratio
    # a limit above the bound: skipped; a limit below the real charge: refused
    assert codec.decode_request(frame, max_decoded_bytes=(len(frame) - offset) * ratio)[1]
    with pytest.raises(RequestTooComplex):
        codec.decode_request(frame, max_decoded_bytes=charged.charged - 1)


# --------------------------------------------------------------------------------------
# tagged fields read from a sub-stream carry the budget
# --------------------------------------------------------------------------------------

TAGGED = MessageSpec(
    "Tagged",
    (0, 0),
    0,
    (
        Field("x", "int32", "0+"),
        Field("items", "[]int32", "0+", tag=0, tagged="0+"),
        Field(
            "nested",
            "Nested",
            "0+",
            tag=1,
            tagged="0+",
            fields=(Field("names", "[]string", "0+"),),
        ),
    ),
)


@pytest.mark.parametrize("compiled", [True, False])
def test_known_tagged_fields_charge_the_same_budget(compiled: bool) -> None:
    schema = TAGGED.schema(0) if compiled else TAGGED.interpreted(0)
    if compiled:
        assert not TAGGED.compile_failures
    value = {"x": 1, "items": list(range(1000, 6000)), "nested": {"names": ["ab"] * 3000}}
    data = TAGGED.interpreted(0).build(value)
    full = DecodeBudget(UNLIMITED)
    parsed = codec._parse_body(schema, data, 0, full)
    assert parsed["items"] == value["items"] and parsed["nested"]["names"] == ["ab"] * 3000
    assert full.charged >= 5000 * 40 + 3000 * 80  # both tagged arrays were charged
    with pytest.raises(RequestTooComplex):
        codec._parse_body(schema, data, 0, DecodeBudget(5000 * 40))
    with pytest.raises(RequestTooComplex):
        codec._parse_body(schema, data, 0, DecodeBudget(full.charged - 1))
    assert codec._parse_body(schema, data, 0, DecodeBudget(full.charged)) == parsed


# --------------------------------------------------------------------------------------
# random valid bodies of every API/version
# --------------------------------------------------------------------------------------

_INTS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def _scalar(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INTS:
        bits = _INTS[kind]
        return st.integers(-(2**bits), 2**bits - 1)
    if kind == "uint16":
        return st.integers(0, 2**16 - 1)
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "bool":
        return st.booleans()
    if kind == "uuid":
        return st.uuids()
    if kind == "string":
        return st.text(max_size=12)
    return st.binary(max_size=24)


def _field(info: FieldInfo) -> st.SearchStrategy[Any]:
    if info.kind == "array":
        element = _struct(info.fields) if info.element == "struct" else _scalar(str(info.element))
        base: st.SearchStrategy[Any] = st.lists(element, max_size=3)
    elif info.kind == "struct":
        base = _struct(info.fields)
    else:
        base = _scalar(info.kind)
    return st.one_of(st.none(), base) if info.nullable else base


def _struct(fields: tuple[FieldInfo, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {f.name: _field(f) for f in fields if f.tag is None},
        optional={f.name: _field(f) for f in fields if f.tag is not None},
    )


def _amplify(value: Any, depth: int = 0) -> Any:
    """Arrays repeated: top-level ones to 300 elements, nested ones to 6."""
    if isinstance(value, dict):
        return {k: _amplify(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list) and value:
        size = 300 if depth <= 1 else 6
        return [_amplify(value[i % len(value)], depth + 1) for i in range(size)]
    return value


REQUESTS = [
    (key, v)
    for key, mod in sorted(API_MODULES.items())
    for v in range(mod.VALID_VERSIONS[0], mod.VALID_VERSIONS[1] + 1)
]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_valid_bodies_are_within_the_estimate(data: Any) -> None:
    key, version = data.draw(st.sampled_from(REQUESTS))
    spec = API_MODULES[key].REQUEST
    value = _amplify(data.draw(_struct(spec.fields(version))))
    frame = codec.encode_request(key, version, 7, "c", value)[4:]
    _h, offset = parse_request_header(frame)
    fast = key == produce.API_KEY
    budget = DecodeBudget(UNLIMITED)
    peak, error = _measure(lambda: _decode(frame, budget, fast=fast))
    assert error is None
    # string/bytes payloads beyond their charged headers are bounded by the frame
    assert peak <= budget.charged * 1.25 + len(frame) + SLACK
    assert budget.charged <= (len(frame) - offset) * spec.charge_per_byte(version)
    # interpreted and compiled schemas (and the fast path) charge the same
    interpreted = DecodeBudget(UNLIMITED)
    codec._parse_body(spec.interpreted(version), frame, offset, interpreted)
    assert interpreted.charged == budget.charged
    if fast:
        generic = DecodeBudget(UNLIMITED)
        _decode(frame, generic)
        assert generic.charged == budget.charged


# --------------------------------------------------------------------------------------
# the Produce fast path and construct agree under any budget
# --------------------------------------------------------------------------------------

names = st.text(max_size=6)
produce_bodies = st.fixed_dictionaries(
    {
        "transactional_id": st.none() | names,
        "acks": st.integers(-1, 1),
        "timeout_ms": st.integers(0, 2**31 - 1),
        "topic_data": st.lists(
            st.fixed_dictionaries(
                {
                    "name": names,
                    "topic_id": st.uuids(),
                    "partition_data": st.lists(
                        st.fixed_dictionaries(
                            {
                                "index": st.integers(-(2**31), 2**31 - 1),
                                "records": st.none() | st.binary(max_size=20),
                            }
                        ),
                        max_size=40,
                    ),
                }
            ),
            max_size=5,
        ),
    }
)


def _outcome(frame: bytes, limit: int, fast: bool) -> tuple[Any, int]:
    budget = DecodeBudget(limit)
    try:
        body = _decode(frame, budget, fast=fast)
    except MalformedRequest as exc:
        return type(exc), budget.charged
    return _plain(body), budget.charged


@pytest.mark.parametrize("version", range(produce.VALID_VERSIONS[0], produce.VALID_VERSIONS[1] + 1))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=produce_bodies, data=st.data())
def test_produce_fast_path_and_construct_agree_under_a_budget(
    version: int, body: dict[str, Any], data: Any
) -> None:
    frame = codec.encode_request(0, version, 7, "c", body)[4:]
    if data.draw(st.booleans()):  # damaged: extra unknown tags, truncation, changed bytes
        _h, offset = parse_request_header(frame)
        pos = data.draw(st.integers(offset, len(frame) - 1))
        tail = data.draw(st.binary(max_size=8) | st.just(b"\x7f" + b"\x01\x00" * 60))
        frame = frame[:pos] + tail + frame[pos + data.draw(st.integers(0, 2)) :]
    full = _outcome(frame, UNLIMITED, fast=False)
    charged = full[1]
    limits = [UNLIMITED, charged, max(charged - 1, 0), data.draw(st.integers(0, charged + 1))]
    for limit in limits:
        fast = _outcome(frame, limit, fast=True)
        generic = _outcome(frame, limit, fast=False)
        assert fast == generic, (limit, charged)


def test_produce_budget_refusal_is_the_same_exception() -> None:
    frame = _frame("Produce v9, partitions with null records")
    for decode in (codec.decode_request, codec.decode_request_generic):
        with pytest.raises(RequestTooComplex):
            decode(frame, max_decoded_bytes=16 * MIB // 16)
