"""check_records: the same verdict as decode_records, without record objects or the whole
decompressed payload in memory."""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocoltest_helpers import zigzag_varint as _varint

from protocol.compression import compress
from protocol.records import (
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    CorruptBatch,
    DecompressionError,
    InvalidBatch,
    NullKeyError,
    RecordSpec,
    build_batch,
    check_records,
    decode_records,
)

MiB = 1 << 20
CAP = 4 * MiB
CODECS = [0, 1, 2, 3, 4]
WINDOWS = [1, 2, 7, 64, 1 << 20]

Outcome = tuple[str, int]  # ("ok", record count) or (exception class name, 0)


def _with_payload(batch: bytes, payload: bytes) -> bytes:
    """`batch` with its records section replaced by `payload` (batchLength fixed, CRC not:
    neither function checks it)."""
    out = bytearray(batch[:BATCH_HEADER_SIZE] + payload)
    struct.pack_into(">i", out, 8, len(out) - BATCH_OVERHEAD)
    return bytes(out)


def _records_section(batch: bytes) -> bytes:
    """The uncompressed records of an uncompressed `batch`."""
    return batch[BATCH_HEADER_SIZE:]


def _decode_outcome(buf: bytes | bytearray | memoryview, pos: int, require_keys: bool) -> Outcome:
    try:
        records = decode_records(buf, pos, max_decompressed_bytes=CAP)
    except InvalidBatch as e:
        return type(e).__name__, 0
    if require_keys and any(r.key is None for r in records):
        return NullKeyError.__name__, 0
    return "ok", len(records)


def _check_outcome(
    buf: bytes | bytearray | memoryview, pos: int, require_keys: bool, window: int
) -> Outcome:
    try:
        n = check_records(
            buf, pos, require_keys=require_keys, max_decompressed_bytes=CAP, window=window
        )
    except InvalidBatch as e:
        return type(e).__name__, 0
    return "ok", n


def _assert_same(buf: bytes, pos: int = 0, windows: list[int] = WINDOWS) -> Outcome:
    want = {rk: _decode_outcome(buf, pos, rk) for rk in (False, True)}
    for rk in (False, True):
        for window in windows:
            assert _check_outcome(buf, pos, rk, window) == want[rk], (rk, window)
    return want[True]


# -- generated batches ----------------------------------------------------------------------

_keys = st.one_of(st.none(), st.binary(max_size=20))
_values = st.one_of(st.none(), st.binary(max_size=300))
_headers = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=10))), max_size=3
)
_specs = st.lists(st.builds(RecordSpec, key=_keys, value=_values, headers=_headers), max_size=40)


@settings(max_examples=150, deadline=None)
@given(specs=_specs, codec=st.sampled_from(CODECS))
def test_valid_batches_agree_with_decode(specs: list[RecordSpec], codec: int) -> None:
    batch = build_batch(specs, compression=codec, base_timestamp=1000)
    outcome = _assert_same(batch)
    if any(s.key is None for s in specs):
        assert outcome == ("NullKeyError", 0)
    else:
        assert outcome == ("ok", len(specs))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=_specs,
    codec=st.sampled_from(CODECS),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    in_records=st.booleans(),
)
def test_mutated_batches_agree_with_decode(
    specs: list[RecordSpec],
    codec: int,
    flips: list[tuple[int, int]],
    cut: int | None,
    in_records: bool,
) -> None:
    """Bytes flipped and tails cut, in the compressed batch or in the records before
    compression (so that compressed batches also reach the record checks)."""
    plain = build_batch(specs, base_timestamp=1000)
    if in_records:
        target = bytearray(_records_section(plain))
    else:
        target = bytearray(build_batch(specs, compression=codec, base_timestamp=1000))
    for where, xor in flips:
        if target:
            target[where % len(target)] ^= xor
    if cut is not None and target:
        del target[cut % len(target) :]
    if in_records:
        attributes = bytearray(plain[:BATCH_HEADER_SIZE])
        struct.pack_into(">h", attributes, 21, codec)
        batch = _with_payload(bytes(attributes), compress(codec, target))
    else:
        if cut is not None and len(target) >= 12:  # keep batchLength consistent
            struct.pack_into(">i", target, 8, len(target) - BATCH_OVERHEAD)
        batch = bytes(target)
    _assert_same(batch, windows=[1, 7, 1 << 20])


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(
        st.tuples(st.integers(-3, 300), st.integers(-3, 40), st.binary(max_size=12)),
        max_size=12,
    ),
    count=st.integers(-2, 14),
    last_delta=st.integers(-1, 14),
    codec=st.sampled_from(CODECS),
    tail=st.binary(max_size=3),
)
def test_hand_made_records_agree_with_decode(
    records: list[tuple[int, int, bytes]],
    count: int,
    last_delta: int,
    codec: int,
    tail: bytes,
) -> None:
    """Records with arbitrary length / offset-delta varints around arbitrary bytes, and
    arbitrary header counts: the edge cases of the length checks."""
    body = bytearray()
    for length, delta, rest in records:
        body += _varint(length) + b"\x00\x00" + _varint(delta) + rest
    body += tail
    header = bytearray(build_batch([(b"k", b"v")], base_timestamp=5)[:BATCH_HEADER_SIZE])
    struct.pack_into(">h", header, 21, codec)
    struct.pack_into(">i", header, 23, last_delta)
    struct.pack_into(">i", header, 57, count)
    _assert_same(_with_payload(bytes(header), compress(codec, body)), windows=[1, 5, 1 << 20])


@settings(max_examples=200, deadline=None)
@given(
    deltas=st.lists(st.integers(-2, 12), max_size=10),
    keys=st.lists(st.one_of(st.none(), st.binary(max_size=3)), min_size=10, max_size=10),
    last_delta=st.integers(-1, 12),
    codec=st.sampled_from(CODECS),
)
def test_offset_deltas_agree_with_decode(
    deltas: list[int], keys: list[bytes | None], last_delta: int, codec: int
) -> None:
    """Well-formed records with arbitrary offset deltas (repeated, decreasing, too big)."""
    body = bytearray()
    for delta, key in zip(deltas, keys, strict=False):
        rec = b"\x00\x00" + _varint(delta)
        rec += _varint(-1) if key is None else _varint(len(key)) + key
        rec += _varint(1) + b"v" + b"\x00"
        body += _varint(len(rec)) + rec
    header = bytearray(build_batch([(b"k", b"v")], base_timestamp=5)[:BATCH_HEADER_SIZE])
    struct.pack_into(">h", header, 21, codec)
    struct.pack_into(">i", header, 23, last_delta)
    struct.pack_into(">i", header, 57, len(deltas))
    _assert_same(_with_payload(bytes(header), compress(codec, body)), windows=[1, 1 << 20])


# -- specific cases -------------------------------------------------------------------------


def test_count_and_buffer_kinds_and_position() -> None:
    batch = build_batch([(b"a", b"1"), (b"b", None), (b"c", b"3" * 1000)], compression=0)
    prefix = b"\xff" * 13
    for buf in (prefix + batch, bytearray(prefix + batch), memoryview(prefix + batch)):
        assert check_records(buf, 13, require_keys=True, max_decompressed_bytes=CAP) == 3


@pytest.mark.parametrize("codec", CODECS)
def test_null_key(codec: int) -> None:
    batch = build_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3")], compression=codec)
    with pytest.raises(NullKeyError):
        check_records(batch, require_keys=True, max_decompressed_bytes=CAP)
    assert check_records(batch, require_keys=False, max_decompressed_bytes=CAP) == 3
    assert issubclass(NullKeyError, InvalidBatch)


@pytest.mark.parametrize("codec", CODECS)
def test_malformed_batch_with_null_key_is_malformed(codec: int) -> None:
    records = _records_section(build_batch([(None, b"1"), (b"b", b"2")]))
    payload = compress(codec, records + b"\x00")  # a trailing byte
    batch = _with_payload(build_batch([(None, b"1"), (b"b", b"2")]), payload)
    batch = batch[:21] + struct.pack(">h", codec) + batch[23:]
    with pytest.raises(InvalidBatch) as info:
        check_records(batch, require_keys=True, max_decompressed_bytes=CAP)
    assert type(info.value) is InvalidBatch


def test_unknown_codec_and_bad_header() -> None:
    batch = bytearray(build_batch([(b"a", b"1")]))
    batch[22] |= 7
    with pytest.raises(InvalidBatch):
        check_records(batch, require_keys=False, max_decompressed_bytes=CAP)
    with pytest.raises(InvalidBatch):
        check_records(b"\x00" * 20, require_keys=False, max_decompressed_bytes=CAP)
    with pytest.raises(InvalidBatch):
        check_records(
            build_batch([(b"a", b"1")])[:-1], require_keys=False, max_decompressed_bytes=CAP
        )
    assert not issubclass(InvalidBatch, CorruptBatch)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompressed_size_cap(codec: int) -> None:
    batch = build_batch([(b"k", bytes(10_000))] * 10, compression=codec)
    assert check_records(batch, require_keys=True, max_decompressed_bytes=200_000) == 10
    with pytest.raises(DecompressionError):
        check_records(batch, require_keys=True, max_decompressed_bytes=50_000)


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_corrupt_stream_wins_over_a_record_error(codec: int) -> None:
    """A record error early in a stream that is cut short: decode_records reports the
    stream (it decompresses first), so does check_records (it drains the stream)."""
    records = b"\x00" + bytes(200_000)  # record length 0 at once, then many bytes
    packed = compress(codec, records)
    batch = build_batch([(b"k", b"v")])
    batch = _with_payload(batch[:21] + struct.pack(">h", codec) + batch[23:], packed[:-8])
    with pytest.raises(DecompressionError):
        decode_records(batch, max_decompressed_bytes=CAP)
    with pytest.raises(DecompressionError):
        check_records(batch, require_keys=True, max_decompressed_bytes=CAP, window=1024)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_corrupt_stream_wins_over_a_negative_records_count(codec: int) -> None:
    """recordsCount < 0 and a stream cut short: a DecompressionError from both."""
    packed = compress(codec, bytes(200_000))
    batch = build_batch([(b"k", b"v")])
    head = bytearray(batch[:BATCH_HEADER_SIZE])
    struct.pack_into(">h", head, 21, codec)
    struct.pack_into(">i", head, 57, -4)
    batch = _with_payload(bytes(head), packed[: len(packed) // 2])
    with pytest.raises(DecompressionError):
        decode_records(batch, max_decompressed_bytes=CAP)
    for window in (1, 1 << 20):
        with pytest.raises(DecompressionError):
            check_records(batch, require_keys=True, max_decompressed_bytes=CAP, window=window)
    # the same count with an intact stream: a plain InvalidBatch from both
    batch = _with_payload(bytes(head), packed)
    with pytest.raises(InvalidBatch) as decoded:
        decode_records(batch, max_decompressed_bytes=CAP)
    with pytest.raises(InvalidBatch) as checked:
        check_records(batch, require_keys=True, max_decompressed_bytes=CAP)
    assert type(decoded.value) is type(checked.value) is InvalidBatch


@pytest.mark.parametrize("codec", CODECS)
def test_record_larger_than_the_window(codec: int) -> None:
    specs = [(b"a", bytes(300_000)), (b"b", b"x"), (b"c", bytes(70_000))]
    batch = build_batch(specs, compression=codec)
    assert check_records(batch, require_keys=True, max_decompressed_bytes=CAP, window=4096) == 3
    with pytest.raises(InvalidBatch):
        check_records(batch[:-1], require_keys=True, max_decompressed_bytes=CAP, window=4096)


# -- memory ---------------------------------------------------------------------------------


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def _tiny_zstd_batch(count: int, value_size: int = -1) -> tuple[bytes, int]:
    """A zstd batch of `count` records (key b"k", a value of `value_size` zero bytes, null
    when -1); -> (batch, decompressed size)."""
    parts = []
    value = _varint(value_size) + bytes(max(value_size, 0))
    for i in range(count):
        body = b"\x00\x00" + _varint(i) + b"\x02k" + value + b"\x00"
        parts.append(_varint(len(body)) + body)
    records = b"".join(parts)
    header = bytearray(build_batch([(b"k", None)])[:BATCH_HEADER_SIZE])
    struct.pack_into(">h", header, 21, 4)
    struct.pack_into(">i", header, 23, count - 1)
    struct.pack_into(">i", header, 57, count)
    return _with_payload(bytes(header), compress(4, records)), len(records)


@pytest.fixture(scope="module")
def tiny_zstd() -> tuple[bytes, int]:
    """~11 MiB of 100k small keyed records (tracemalloc makes every record slow: 100k, not
    the 500k of a full-size hostile frame, keep this test fast)."""
    return _tiny_zstd_batch(100_000, 100)


def test_zstd_batch_of_tiny_records_is_checked_in_a_small_window(
    tiny_zstd: tuple[bytes, int],
) -> None:
    batch, size = tiny_zstd
    assert size > 10 * MiB
    peak = _peak(lambda: check_records(batch, require_keys=True, max_decompressed_bytes=64 * MiB))
    assert peak < 4 * MiB + 2 * len(batch), (peak, size, len(batch))
    assert peak < size / 2


def test_the_memory_measurement_can_fail() -> None:
    """Control: decode_records, which materializes everything, is seen above the bound."""
    batch, size = _tiny_zstd_batch(20_000)
    peak = _peak(lambda: decode_records(batch, max_decompressed_bytes=64 * MiB))
    assert peak > size


def test_uncompressed_records_are_walked_in_place() -> None:
    batch = build_batch([(b"key", bytes(100))] * 10_000)
    assert len(batch) > MiB
    peak = _peak(lambda: check_records(batch, require_keys=True, max_decompressed_bytes=CAP))
    assert peak < 64 * 1024


def test_a_lying_record_length_does_not_fill_the_window() -> None:
    """A record declaring more bytes than the cap leaves: rejected at once, the rest of the
    stream drained piece by piece (a decompression bomb of zeros behind it)."""
    records = _varint(40 * MiB) + bytes(30 * MiB)
    batch = build_batch([(b"k", b"v")])
    batch = _with_payload(batch[:21] + struct.pack(">h", 4) + batch[23:], compress(4, records))

    def run() -> None:
        with pytest.raises(InvalidBatch):
            check_records(batch, require_keys=True, max_decompressed_bytes=32 * MiB)

    peak = _peak(run)
    assert peak < 4 * MiB
