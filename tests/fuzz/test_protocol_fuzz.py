"""Fuzzing the request decoder: random and mutated bytes only ever raise `ProtocolError`s,
and huge declared lengths in tiny buffers fail fast without allocating."""

from __future__ import annotations

import contextlib
import struct
import time
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import codec
from protocol.exceptions import MalformedRequest, ProtocolError
from protocol.framing import FrameDecoder
from protocol.messages import API_MODULES
from protocol.primitives import FieldInfo

REQUEST_VERSIONS = [
    (key, v)
    for key, mod in sorted(API_MODULES.items())
    for v in range(mod.VALID_VERSIONS[0], mod.VALID_VERSIONS[1] + 1)
]


def _header(key: int, version: int) -> bytes:
    """A valid request header for `key`/`version` (v2 when flexible)."""
    fmin = API_MODULES[key].FLEXIBLE_MIN
    head = struct.pack(">hhi", key, version, 1) + b"\x00\x01c"
    return head + b"\x00" if fmin is not None and version >= fmin else head


def _value(fields: tuple[FieldInfo, ...]) -> st.SearchStrategy[dict[str, Any]]:
    """Small valid message values (for seeds to mutate)."""

    def one(info: FieldInfo) -> st.SearchStrategy[Any]:
        kinds: dict[str, st.SearchStrategy[Any]] = {
            "int8": st.integers(-128, 127),
            "int16": st.integers(-(2**15), 2**15 - 1),
            "int32": st.integers(-(2**31), 2**31 - 1),
            "int64": st.integers(-(2**63), 2**63 - 1),
            "uint16": st.integers(0, 2**16 - 1),
            "float64": st.floats(allow_nan=False),
            "bool": st.booleans(),
            "uuid": st.uuids(),
            "string": st.text(st.characters(codec="utf-8"), max_size=5),
            "bytes": st.binary(max_size=8),
            "records": st.binary(max_size=8),
        }
        if info.kind == "array":
            elem = _value(info.fields) if info.element == "struct" else kinds[str(info.element)]
            base: st.SearchStrategy[Any] = st.lists(elem, max_size=2)
        elif info.kind == "struct":
            base = _value(info.fields)
        else:
            base = kinds[info.kind]
        return st.one_of(st.none(), base) if info.nullable else base

    return st.fixed_dictionaries({f.name: one(f) for f in fields})


def _decode(frame: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        codec.decode_request(frame)


_SETTINGS = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


_IDS = [f"{API_MODULES[k].NAME}-v{v}" for k, v in REQUEST_VERSIONS]
_PER_VERSION = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("target", REQUEST_VERSIONS, ids=_IDS)
@_PER_VERSION
@given(body=st.binary(max_size=64))
def test_random_bodies_behind_valid_headers(target: tuple[int, int], body: bytes) -> None:
    _decode(_header(*target) + body)


@_SETTINGS
@given(frame=st.binary(max_size=48))
def test_random_frames(frame: bytes) -> None:
    _decode(frame)


@pytest.mark.parametrize("target", REQUEST_VERSIONS, ids=_IDS)
@_PER_VERSION
@given(data=st.data())
def test_mutated_valid_requests(target: tuple[int, int], data: st.DataObject) -> None:
    key, version = target
    value = data.draw(_value(API_MODULES[key].request_fields(version)))
    frame = bytearray(codec.encode_request(key, version, 1, "c", value)[4:])
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        pos = data.draw(st.integers(0, max(len(frame) - 1, 0)))
        if op == "flip" and frame:
            frame[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "set" and frame:
            frame[pos] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        elif op == "insert":
            frame[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and frame:
            del frame[pos : pos + data.draw(st.integers(1, 4))]
        elif op == "truncate":
            del frame[pos:]
    _decode(bytes(frame))


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=32), max_size=8))
def test_frame_decoder_random_input(chunks: list[bytes]) -> None:
    decoder = FrameDecoder(64)
    try:
        for chunk in chunks:
            decoder.receive_data(chunk)
            while (f := decoder.next_frame()) is not None:
                assert len(f) <= 64
    except ProtocolError:
        pass


# Huge declared sizes in tiny buffers ------------------------------------------------------

_HUGE = [
    # Metadata v4 (non-flexible): topics array with 2**31-1 elements
    ("array", 3, 4, b"\x7f\xff\xff\xff" + b"\x00\x01a"),
    # Metadata v12 (flexible): compact array count 2**32-2 (varint 0xffffffff)
    ("compact array", 3, 12, b"\xff\xff\xff\xff\x0f" + b"\x00"),
    # Produce v8: one topic, one partition, records of 2**31-1 bytes
    (
        "bytes",
        0,
        8,
        b"\xff\xff"
        + b"\xff\xff"
        + b"\x00\x00\x00\x10"
        + b"\x00\x00\x00\x01"
        + b"\x00\x01t"
        + b"\x00\x00\x00\x01"
        + b"\x00\x00\x00\x00"
        + b"\x7f\xff\xff\xff"
        + b"abc",
    ),
    # Produce v9: compact records of 2**32-2 bytes
    (
        "compact bytes",
        0,
        9,
        b"\x00"
        + b"\xff\xff"
        + b"\x00\x00\x00\x10"
        + b"\x02"
        + b"\x02t"
        + b"\x02"
        + b"\x00\x00\x00\x00"
        + b"\xff\xff\xff\xff\x0f"
        + b"ab",
    ),
    # CreateTopics v5: string of 32767 bytes, 2 present
    ("string", 19, 5, b"\x02" + b"\xff\xff\x03\x00" + b"ab"),
    # ApiVersions v3: an unknown tagged field of 2**32-1 bytes
    ("tagged field", 18, 3, b"\x01\x01" + b"\x01" + b"\x09" + b"\xff\xff\xff\xff\x0f" + b"x"),
    # ApiVersions v3: 2**32-1 tagged fields
    ("tag count", 18, 3, b"\x01\x01" + b"\xff\xff\xff\xff\x0f"),
    # over-long varint
    ("long varint", 18, 3, b"\xff\xff\xff\xff\xff\xff\x01"),
]


@pytest.mark.parametrize(("what", "key", "version", "body"), _HUGE, ids=[h[0] for h in _HUGE])
def test_huge_declared_sizes_fail_fast(what: str, key: int, version: int, body: bytes) -> None:
    frame = _header(key, version) + body
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(MalformedRequest):
            codec.decode_request(frame)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 0.5
    assert peak < 1 << 20, f"{what}: peak allocation {peak} bytes"
