"""Record batch v2: header parsing, walking, CRC, stamping, decoding, building, interop."""

from __future__ import annotations

import contextlib
import struct
import time

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from protocoltest_helpers import zigzag_varint as _varint

from protocol.compression import compress
from protocol.crc32c import crc32c
from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    CorruptBatch,
    DecompressionError,
    InvalidBatch,
    Record,
    RecordSpec,
    build_batch,
    compute_crc,
    decode_records,
    iter_batches,
    parse_header,
    stamp_batch,
    verify_crc,
)

CODECS = [0, 1, 2, 3, 4]


def _specs(n: int = 5) -> list[RecordSpec]:
    return [
        RecordSpec(
            key=None if i % 2 else f"key-{i}".encode(),
            value=None if i % 3 == 2 else (f"value-{i}-" * 20).encode(),
            headers=[("h1", b"v1"), ("none", None), ("ünï", b"")] if i % 2 else (),
            timestamp=1_700_000_000_000 + i * 7,
        )
        for i in range(n)
    ]


def _wrap(
    records: bytes,
    count: int,
    *,
    last_offset_delta: int | None = None,
    codec: int = 0,
    attributes: int | None = None,
    base_timestamp: int = 1000,
) -> bytes:
    """A batch around hand-made record bytes, with a valid CRC."""
    payload = compress(codec, records) if codec else records
    if attributes is None:
        attributes = codec
    if last_offset_delta is None:
        last_offset_delta = max(count - 1, 0)
    head = struct.pack(
        ">qiibIhiqqqhii",
        0,
        BATCH_HEADER_SIZE - 12 + len(payload),
        0,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        base_timestamp,
        -1,
        -1,
        -1,
        count,
    )
    buf = bytearray(head + payload)
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[21:]))
    return bytes(buf)


def _record(
    *,
    offset_delta: int = 0,
    ts_delta: int = 0,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    headers: bytes = _varint(0),
    extra: bytes = b"",
    length_adjust: int = 0,
) -> bytes:
    body = b"\x00" + _varint(ts_delta) + _varint(offset_delta)
    body += _varint(-1) if key is None else _varint(len(key)) + key
    body += _varint(-1) if value is None else _varint(len(value)) + value
    body += headers + extra
    return _varint(len(body) + length_adjust) + body


# -- header -------------------------------------------------------------------------------


def test_header_fields_and_properties() -> None:
    buf = build_batch(
        _specs(3),
        base_offset=100,
        compression=4,
        producer_id=42,
        producer_epoch=3,
        base_sequence=10,
        partition_leader_epoch=7,
        is_transactional=True,
    )
    h = parse_header(buf)
    assert h.base_offset == 100
    assert h.size == len(buf) == h.batch_length + 12
    assert h.partition_leader_epoch == 7
    assert h.magic == 2
    assert h.last_offset_delta == 2
    assert (h.last_offset, h.next_offset) == (102, 103)
    assert h.compression == 4
    assert h.timestamp_type == 0
    assert h.is_transactional and not h.is_control
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (42, 3, 10)
    assert h.last_sequence == 12
    assert h.records_count == 3
    assert h.base_timestamp == 1_700_000_000_000
    assert h.max_timestamp == 1_700_000_000_014
    assert h.crc == crc32c(buf[21:])


def test_header_is_parsed_from_a_memoryview_at_an_offset() -> None:
    buf = build_batch([(b"k", b"v")], base_offset=5)
    mv = memoryview(bytearray(b"\xee" * 13 + buf))
    assert parse_header(mv, 13) == parse_header(buf)


def test_control_flag() -> None:
    h = parse_header(build_batch([(b"\x00\x00\x00\x01", b"")], is_control=True))
    assert h.is_control and not h.is_transactional


@pytest.mark.parametrize(
    ("base_sequence", "delta", "expected"),
    [(-1, 4, -1), (0, 4, 4), (2**31 - 1, 0, 2**31 - 1), (2**31 - 2, 2, 0), (2**31 - 3, 5, 2)],
)
def test_last_sequence_wraps(base_sequence: int, delta: int, expected: int) -> None:
    h = BatchHeader(0, 49, 0, 2, 0, 0, delta, 0, 0, 1, 0, base_sequence, delta + 1)
    assert h.last_sequence == expected


def test_parse_header_rejections() -> None:
    buf = bytearray(build_batch([(b"k", b"v")]))
    with pytest.raises(InvalidBatch):
        parse_header(buf[:60])
    with pytest.raises(InvalidBatch):
        parse_header(buf, 1)
    with pytest.raises(InvalidBatch):
        parse_header(buf, -1)
    bad_magic = bytearray(buf)
    bad_magic[16] = 1
    with pytest.raises(InvalidBatch, match="magic"):
        parse_header(bad_magic)
    short_len = bytearray(buf)
    struct.pack_into(">i", short_len, 8, 48)
    with pytest.raises(InvalidBatch):
        parse_header(short_len)
    struct.pack_into(">i", short_len, 8, 49)
    assert parse_header(short_len).batch_length == 49


# -- iter_batches ---------------------------------------------------------------------------


def test_iter_batches_walks_a_concatenation() -> None:
    batches = [build_batch(_specs(i + 1), base_offset=10 * i, compression=i) for i in range(5)]
    buf = b"".join(batches)
    got = list(iter_batches(buf))
    positions = [sum(len(b) for b in batches[:i]) for i in range(5)]
    assert [p for p, _ in got] == positions
    assert [h.base_offset for _, h in got] == [0, 10, 20, 30, 40]
    # a sub-range
    sub = list(iter_batches(buf, positions[1], positions[3]))
    assert [p for p, _ in sub] == positions[1:3]
    assert list(iter_batches(b"")) == []


def test_iter_batches_rejects_truncation_everywhere() -> None:
    buf = build_batch(_specs(2)) + build_batch(_specs(3))
    first = parse_header(buf).size
    for cut in range(1, len(buf)):
        if cut == first:
            assert len(list(iter_batches(buf, 0, cut))) == 1
            continue
        with pytest.raises(InvalidBatch):
            list(iter_batches(buf[:cut]))


def test_iter_batches_bad_range() -> None:
    buf = build_batch(_specs(1))
    for pos, end in ((-1, None), (0, len(buf) + 1), (5, 4)):
        with pytest.raises(InvalidBatch):
            list(iter_batches(buf, pos, end))


def test_iter_batches_huge_declared_length_does_not_allocate() -> None:
    buf = bytearray(build_batch(_specs(1)))
    struct.pack_into(">i", buf, 8, 2**31 - 1)
    with pytest.raises(InvalidBatch, match="truncated"):
        list(iter_batches(buf))


# -- CRC ------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_crc_detects_every_single_bit_flip_after_offset_21(codec: int) -> None:
    buf = bytearray(build_batch(_specs(2), compression=codec))
    h = parse_header(buf)
    assert verify_crc(buf, 0, h)
    assert compute_crc(buf, 0, h) == h.crc
    for bit in range(21 * 8, len(buf) * 8):
        buf[bit // 8] ^= 1 << (bit % 8)
        assert not verify_crc(buf, 0, parse_header(buf)), bit
        buf[bit // 8] ^= 1 << (bit % 8)


def test_crc_ignores_base_offset_and_leader_epoch_but_covers_itself() -> None:
    buf = bytearray(build_batch(_specs(2)))
    struct.pack_into(">q", buf, 0, 123456)
    struct.pack_into(">i", buf, 12, 99)
    assert verify_crc(buf, 0, parse_header(buf))
    buf[17] ^= 0x01  # the stored CRC itself
    assert not verify_crc(buf, 0, parse_header(buf))


def test_verify_crc_on_truncated_buffer_raises() -> None:
    buf = build_batch(_specs(2))
    h = parse_header(buf)
    with pytest.raises(InvalidBatch):
        verify_crc(buf[:-1], 0, h)


def test_corrupt_batch_is_an_invalid_batch() -> None:
    assert issubclass(CorruptBatch, InvalidBatch)
    assert issubclass(DecompressionError, InvalidBatch)


# -- stamp_batch ----------------------------------------------------------------------------


def test_stamp_batch_patches_offset_and_epoch_keeping_crc() -> None:
    original = build_batch(_specs(3), compression=1)
    buf = bytearray(b"pad" + original + original)
    pos = 3 + len(original)
    stamp_batch(memoryview(buf), pos, base_offset=5000, partition_leader_epoch=12)
    h = parse_header(buf, pos)
    assert (h.base_offset, h.partition_leader_epoch) == (5000, 12)
    assert h.crc == parse_header(original).crc
    assert verify_crc(buf, pos, h)
    assert bytes(buf[3 : 3 + len(original)]) == original  # neighbour untouched
    assert [r.offset for r in decode_records(buf, pos)] == [5000, 5001, 5002]
    assert h.timestamp_type == 0


@pytest.mark.parametrize("codec", CODECS)
def test_stamp_batch_log_append_time(codec: int) -> None:
    buf = bytearray(build_batch(_specs(4), compression=codec))
    stamp_batch(buf, 0, base_offset=7, partition_leader_epoch=1, log_append_time=1_800_000_000_123)
    h = parse_header(buf)
    assert h.timestamp_type == 1
    assert h.compression == codec
    assert h.max_timestamp == 1_800_000_000_123
    assert h.base_timestamp == 1_700_000_000_000  # untouched
    assert verify_crc(buf, 0, h)
    records = decode_records(buf)
    assert {r.timestamp for r in records} == {1_800_000_000_123}
    kb = DefaultRecordBatch(bytes(buf))
    assert kb.validate_crc()
    assert kb.timestamp_type == 1
    assert {r.timestamp for r in kb} == {1_800_000_000_123}


def test_stamp_batch_rejects_truncated() -> None:
    buf = bytearray(build_batch(_specs(2)))[:-1]
    with pytest.raises(InvalidBatch):
        stamp_batch(buf, 0, base_offset=1, partition_leader_epoch=1)


# -- build + decode round trips -------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_every_codec(codec: int) -> None:
    specs = _specs(20)
    buf = build_batch(specs, base_offset=1000, compression=codec)
    h = parse_header(buf)
    assert h.compression == codec
    assert verify_crc(buf, 0, h)
    records = decode_records(buf)
    assert records == [
        Record(1000 + i, s.timestamp or 0, s.key, s.value, tuple(s.headers))
        for i, s in enumerate(specs)
    ]


def test_round_trip_pairs_and_timestamps() -> None:
    buf = build_batch([(b"a", b"1"), (None, None), (b"", b"")], base_timestamp=5000)
    records = decode_records(buf)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in records] == [
        (b"a", b"1", 5000, ()),
        (None, None, 5000, ()),
        (b"", b"", 5000, ()),
    ]


def test_timestamps_default_to_now() -> None:
    before = time.time_ns() // 1_000_000
    buf = build_batch([(b"a", b"b")])
    after = time.time_ns() // 1_000_000
    h = parse_header(buf)
    assert before <= h.base_timestamp <= after
    assert decode_records(buf)[0].timestamp == h.base_timestamp


def test_max_timestamp_and_negative_deltas() -> None:
    specs = [RecordSpec(b"k", b"v", timestamp=t) for t in (500, 100, 900, 700)]
    buf = build_batch(specs)
    h = parse_header(buf)
    assert h.base_timestamp == 500
    assert h.max_timestamp == 900
    assert [r.timestamp for r in decode_records(buf)] == [500, 100, 900, 700]


def test_empty_batch_builds_and_decodes() -> None:
    buf = build_batch([], base_timestamp=10)
    h = parse_header(buf)
    assert h.records_count == 0
    assert h.size == BATCH_HEADER_SIZE
    assert verify_crc(buf, 0, h)
    assert decode_records(buf) == []


def test_build_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        build_batch([(b"k", b"v")], compression=5)
    with pytest.raises(ValueError):
        build_batch([(b"k", b"v")], timestamp_type=2)


def test_large_values_and_many_headers() -> None:
    headers = [(f"h{i}", bytes([i % 256]) * i) for i in range(300)]
    spec = RecordSpec(b"k" * 70_000, bytes(range(256)) * 4000, headers, 1)
    for codec in CODECS:
        (record,) = decode_records(build_batch([spec], compression=codec))
        assert record.key == spec.key
        assert record.value == spec.value
        assert record.headers == tuple(headers)


def test_decode_at_offset_in_concatenation() -> None:
    a = build_batch([(b"a", b"1")], base_offset=0)
    b = build_batch([(b"b", b"2")], base_offset=1, compression=3)
    assert decode_records(a + b, len(a))[0].key == b"b"


def test_raw_snappy_batch_as_librdkafka_sends() -> None:
    plain = build_batch(_specs(6))
    records = plain[BATCH_HEADER_SIZE:]
    raw = bytes(cramjam.snappy.compress_raw(records))
    buf = bytearray(_wrap(raw, 6, attributes=2))
    struct.pack_into(">q", buf, 27, 1_700_000_000_000)
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[21:]))
    assert decode_records(buf) == decode_records(plain)


# -- decode_records rejections --------------------------------------------------------------


def test_decode_rejects_count_mismatch() -> None:
    two = _record(offset_delta=0) + _record(offset_delta=1)
    assert len(decode_records(_wrap(two, 2))) == 2
    with pytest.raises(InvalidBatch):
        decode_records(_wrap(two, 3, last_offset_delta=2))  # fewer records than declared
    with pytest.raises(InvalidBatch, match="after the last record"):
        decode_records(_wrap(two, 1, last_offset_delta=1))  # more bytes than declared records
    with pytest.raises(InvalidBatch):
        decode_records(_wrap(two, -1))
    with pytest.raises(InvalidBatch, match="impossible"):
        decode_records(_wrap(two, 2**31 - 1))


def test_decode_rejects_bad_offset_deltas() -> None:
    for deltas in ((0, 0), (1, 0), (-1, 0), (0, 5)):
        recs = b"".join(_record(offset_delta=d) for d in deltas)
        with pytest.raises(InvalidBatch, match="offset delta"):
            decode_records(_wrap(recs, 2, last_offset_delta=1))
    # gaps (after compaction) are fine while within lastOffsetDelta
    recs = _record(offset_delta=0) + _record(offset_delta=3)
    assert [r.offset for r in decode_records(_wrap(recs, 2, last_offset_delta=5))] == [0, 3]


@pytest.mark.parametrize(
    "record",
    [
        _record(length_adjust=1),  # record claims more bytes than its fields
        _record(length_adjust=-1),  # fields run past the record
        _record(extra=b"\x00"),  # a stray byte inside the record
        _record(key=None, value=None, headers=_varint(-1)),  # negative header count
        _record(headers=_varint(1) + _varint(-1)),  # negative header key length
        _record(headers=_varint(1) + _varint(2) + b"\xff\xfe" + _varint(-1)),  # non-utf-8
        _record(headers=_varint(1) + _varint(1) + b"a" + _varint(-2)),  # bad header value len
        _record(headers=_varint(1) + _varint(1) + b"a" + _varint(50) + b"xx"),
        _record(headers=_varint(1000)),
        b"\x00" * 7,  # zero record length
        _varint(-3) + b"\x00" * 8,
    ],
)
def test_decode_rejects_malformed_records(record: bytes) -> None:
    with pytest.raises(InvalidBatch):
        decode_records(_wrap(record, 1))


@pytest.mark.parametrize(
    ("key_len", "value_len"), [(-2, 1), (100, 1), (1, -2), (1, 100), (2**31 - 1, 1)]
)
def test_decode_rejects_bad_key_and_value_lengths(key_len: int, value_len: int) -> None:
    body = b"\x00" + _varint(0) + _varint(0) + _varint(key_len) + b"k" + _varint(value_len)
    body += b"v" + _varint(0)
    with pytest.raises(InvalidBatch):
        decode_records(_wrap(_varint(len(body)) + body, 1))


def test_decode_rejects_overlong_and_overflowing_varints() -> None:
    good = _record()
    assert decode_records(_wrap(good, 1))
    overlong = b"\x80" * 5 + b"\x00"  # 6-byte varint for the record length
    with pytest.raises(InvalidBatch, match="too long"):
        decode_records(_wrap(overlong + good[1:], 1))
    overflow = b"\xff\xff\xff\xff\x7f"  # 5 bytes but 35 bits
    with pytest.raises(InvalidBatch, match="overflow"):
        decode_records(_wrap(overflow + good[1:], 1))
    # a 10-byte timestampDelta is legal, an 11-byte one is not
    body = b"\x00" + b"\x80" * 9 + b"\x02" + _varint(0) + _varint(-1) + _varint(-1) + _varint(0)
    with pytest.raises(InvalidBatch, match="overflow"):
        decode_records(_wrap(_varint(len(body)) + body, 1))
    body = b"\x00" + b"\x80" * 10 + b"\x00" + _varint(0) + _varint(-1) + _varint(-1) + _varint(0)
    with pytest.raises(InvalidBatch, match="too long"):
        decode_records(_wrap(_varint(len(body)) + body, 1))
    body = b"\x00" + _varint(-(2**63)) + _varint(0) + _varint(-1) + _varint(-1) + _varint(0)
    (rec,) = decode_records(_wrap(_varint(len(body)) + body, 1, base_timestamp=0))
    assert rec.timestamp == -(2**63)


def test_decode_rejects_truncated_batch_and_unknown_codec() -> None:
    buf = build_batch(_specs(2))
    with pytest.raises(InvalidBatch):
        decode_records(buf[:-1])
    with pytest.raises(InvalidBatch, match="codec"):
        decode_records(_wrap(_record(), 1, attributes=5))


def test_decode_rejects_corrupt_compressed_payload() -> None:
    buf = bytearray(build_batch(_specs(10), compression=1))
    buf[BATCH_HEADER_SIZE + 20] ^= 0xFF
    with pytest.raises(DecompressionError):
        decode_records(buf)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decode_respects_decompression_cap(codec: int) -> None:
    buf = build_batch([(b"k", bytes(100_000))], compression=codec)
    assert decode_records(buf, max_decompressed_bytes=200_000)[0].value == bytes(100_000)
    with pytest.raises(DecompressionError):
        decode_records(buf, max_decompressed_bytes=50_000)


# -- interop with kafka-python (test-only import) -------------------------------------------


def _kafka_python_batch(codec: int, n: int = 30, *, transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=77 if transactional else -1,
        producer_epoch=2 if transactional else -1,
        base_sequence=5 if transactional else -1,
        batch_size=10**7,
    )
    for i in range(n):
        builder.append(
            i,
            timestamp=1_600_000_000_000 + i,
            key=None if i % 4 == 0 else f"k{i}".encode(),
            value=None if i % 5 == 1 else b"value " * 30,
            headers=[("a", b"1"), ("b", None)] if i % 2 else [],
        )
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS)
def test_decode_kafka_python_batches(codec: int) -> None:
    buf = _kafka_python_batch(codec, transactional=codec == 4)
    h = parse_header(buf)
    assert h.compression == codec  # compressible values: kafka-python keeps the codec
    assert verify_crc(buf, 0, h)
    assert h.is_transactional == (codec == 4)
    records = decode_records(buf)
    expected = [
        (r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in DefaultRecordBatch(buf)
    ]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == expected
    assert len(records) == 30


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    specs = _specs(25)
    buf = build_batch(
        specs,
        base_offset=300,
        compression=codec,
        producer_id=9,
        producer_epoch=1,
        base_sequence=2**31 - 10,
        is_transactional=True,
    )
    kb = DefaultRecordBatch(buf)
    assert kb.validate_crc()
    assert kb.compression_type == codec
    assert kb.base_offset == 300
    assert kb.last_offset == 324
    assert kb.max_timestamp == max(s.timestamp or 0 for s in specs)
    assert kb.is_transactional
    assert kb.last_sequence == parse_header(buf).last_sequence == 14
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in kb]
    assert got == [
        (300 + i, s.timestamp, s.key, s.value, list(s.headers)) for i, s in enumerate(specs)
    ]


# -- fuzzing ---------------------------------------------------------------------------------

_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_only_raise_invalid_batch(data: bytes) -> None:
    try:
        for pos, h in iter_batches(data):
            verify_crc(data, pos, h)
            decode_records(data, pos)
    except InvalidBatch:
        pass
    with contextlib.suppress(InvalidBatch):
        decode_records(data)


@_FUZZ
@given(
    st.sampled_from(CODECS),
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 255)), min_size=1, max_size=8),
    st.integers(0, 300),
)
def test_mutated_batches_only_raise_invalid_batch(
    codec: int, flips: list[tuple[int, int]], cut: int
) -> None:
    buf = bytearray(build_batch(_specs(4), compression=codec))
    for index, value in flips:
        buf[index % len(buf)] = value
    data = bytes(buf[: len(buf) - cut])
    try:
        for pos, _ in iter_batches(data):
            decode_records(data, pos, max_decompressed_bytes=1 << 20)
    except InvalidBatch:
        pass


@_FUZZ
@given(st.sampled_from([1, 2, 3, 4]), st.binary(max_size=300), st.integers(0, 10))
def test_random_compressed_payloads_only_raise_invalid_batch(
    codec: int, payload: bytes, count: int
) -> None:
    head = _wrap(b"", 0)
    buf = bytearray(head + payload)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, codec)
    struct.pack_into(">i", buf, 57, count)
    with contextlib.suppress(InvalidBatch):
        decode_records(buf, max_decompressed_bytes=1 << 20)


@_FUZZ
@given(
    st.lists(
        st.tuples(
            st.none() | st.binary(max_size=50),
            st.none() | st.binary(max_size=200),
            st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20))),
            st.integers(-(2**40), 2**41),
        ),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from(CODECS),
)
def test_build_decode_round_trip_property(
    rows: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]],
    codec: int,
) -> None:
    specs = [RecordSpec(k, v, h, t) for k, v, h, t in rows]
    buf = build_batch(specs, compression=codec, base_offset=2**40)
    assert verify_crc(buf, 0, parse_header(buf))
    got = decode_records(buf)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (2**40 + i, s.timestamp, s.key, s.value, tuple(s.headers)) for i, s in enumerate(specs)
    ]
