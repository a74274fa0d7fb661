"""Append validation, offsets, rolling, reads and timestamp lookups of PartitionLog."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from logtest_helpers import NOW, assert_consistent, batch, full_scan, offsets_of, open_log

from protocol.errors import ErrorCode
from protocol.records import RecordSpec, build_batch, decode_records, iter_batches, parse_header
from wirebroker.log import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    LogConfig,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from wirebroker.log.errors import LogError


def test_offsets_assigned_and_batches_stamped(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    r1 = plog.append_as_leader(batch(3), leader_epoch=5, now_ms=NOW)
    r2 = plog.append_as_leader(batch(2), leader_epoch=5, now_ms=NOW)
    assert (r1.first_offset, r1.last_offset) == (0, 2)
    assert (r2.first_offset, r2.last_offset) == (3, 4)
    assert r2.log_append_time == -1 and r2.log_start_offset == 0 and not r2.duplicate
    assert plog.log_end_offset == 5
    data = plog.read(0, max_bytes=1 << 20)
    headers = [h for _, h in iter_batches(data)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 5), (3, 5)]
    assert [r.offset for r in decode_records(data, 0)] == [0, 1, 2]
    assert plog.latest_epoch == 5
    assert_consistent(plog)


def test_log_append_time_is_stamped(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(message_timestamp_type="LogAppendTime"))
    r = plog.append_as_leader(batch(2, ts=NOW - 10_000_000_000), leader_epoch=0, now_ms=NOW)
    assert r.log_append_time == NOW
    data = plog.read(0, max_bytes=1 << 20)
    h = parse_header(data)
    assert h.timestamp_type == 1 and h.max_timestamp == NOW
    assert all(rec.timestamp == NOW for rec in decode_records(data))
    assert full_scan(plog.directory)[0].crc_ok


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda b: b[:-1], CorruptRecordError),  # truncated
        (lambda b: b[:30] + bytes([b[30] ^ 1]) + b[31:], CorruptRecordError),  # CRC mismatch
        (lambda b: b[:16] + b"\x01" + b[17:], InvalidRecordError),  # magic 1
        (lambda b: struct.pack(">q", 7) + b[8:], InvalidRecordError),  # base offset 7
        (lambda b: b + b"\x00" * 10, CorruptRecordError),  # trailing junk
        (lambda b: b"", InvalidRecordError),  # nothing
    ],
)
def test_invalid_batches_rejected(
    tmp_path: Path, mutate: Callable[[bytes], bytes], error: type[Exception]
) -> None:
    plog = open_log(tmp_path)
    with pytest.raises(error):
        plog.append_as_leader(mutate(batch(2)), leader_epoch=0, now_ms=NOW)
    assert plog.log_end_offset == 0 and plog.size_in_bytes() == 0


def test_error_codes_are_kafkas() -> None:
    assert CorruptRecordError.error_code == ErrorCode.CORRUPT_MESSAGE
    assert RecordTooLargeError.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert issubclass(InvalidRecordError, LogError)
    assert InvalidRecordError.error_code == ErrorCode.INVALID_RECORD


def test_record_count_must_match_offset_delta(tmp_path: Path) -> None:
    raw = bytearray(batch(3))
    struct.pack_into(">i", raw, 57, 2)  # records count 2, last offset delta 2
    from protocol.crc32c import crc32c

    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    plog = open_log(tmp_path)
    with pytest.raises(InvalidRecordError):
        plog.append_as_leader(bytes(raw), leader_epoch=0, now_ms=NOW)


def test_control_batches_and_client_log_append_time_rejected(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    control = build_batch(
        [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")],
        is_control=True,
        producer_id=1,
        producer_epoch=0,
        base_sequence=0,
        base_timestamp=NOW,
    )
    with pytest.raises(InvalidRecordError):
        plog.append_as_leader(control, leader_epoch=0, now_ms=NOW)
    # a client's LogAppendTime batch: refused record by record by a LogAppendTime topic, and
    # by a CreateTime one when it has no timestamp; else stored as CreateTime (Kafka's rules)
    lat = build_batch([(b"k", b"v")], timestamp_type=1, base_timestamp=NOW - 5)
    lat_log = open_log(tmp_path / "lat", LogConfig(message_timestamp_type="LogAppendTime"))
    with pytest.raises(InvalidTimestampError) as refused:
        lat_log.append_as_leader(lat, leader_epoch=0, now_ms=NOW)
    assert [i for i, _ in refused.value.record_errors] == [0]
    untimed = build_batch([(b"k", b"v")], timestamp_type=1, base_timestamp=-1)
    with pytest.raises(InvalidTimestampError):
        plog.append_as_leader(untimed, leader_epoch=0, now_ms=NOW)
    assert plog.append_as_leader(lat, leader_epoch=0, now_ms=NOW).first_offset == 0
    [(_pos, stored)] = list(iter_batches(plog.read(0, max_bytes=1 << 20)))
    assert (stored.timestamp_type, stored.max_timestamp) == (0, NOW - 5)


def test_too_large_batch(tmp_path: Path) -> None:
    b = batch(5, value=b"x" * 100)
    plog = open_log(tmp_path, LogConfig(max_message_bytes=len(b) - 1))
    with pytest.raises(RecordTooLargeError):
        plog.append_as_leader(b, leader_epoch=0, now_ms=NOW)
    plog2 = open_log(tmp_path / "ok", LogConfig(max_message_bytes=len(b)))
    assert plog2.append_as_leader(b, leader_epoch=0, now_ms=NOW).last_offset == 4


def test_timestamp_bounds(tmp_path: Path) -> None:
    cfg = LogConfig(message_timestamp_after_max_ms=1000, message_timestamp_before_max_ms=5000)
    plog = open_log(tmp_path, cfg)
    with pytest.raises(InvalidTimestampError):
        plog.append_as_leader(batch(1, ts=NOW + 1001), leader_epoch=0, now_ms=NOW)
    with pytest.raises(InvalidTimestampError):
        plog.append_as_leader(batch(1, ts=NOW - 5001), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(1, ts=NOW + 1000), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(1, ts=NOW - 5000), leader_epoch=0, now_ms=NOW)
    assert plog.log_end_offset == 2
    # each record is checked: one older than the batch's first (a negative timestamp delta)
    older = build_batch(
        [RecordSpec(b"k", b"v", timestamp=NOW), RecordSpec(b"k", b"v", timestamp=NOW - 5001)]
    )
    with pytest.raises(InvalidTimestampError) as refused:
        plog.append_as_leader(older, leader_epoch=0, now_ms=NOW)
    assert [i for i, _ in refused.value.record_errors] == [1]
    assert plog.log_end_offset == 2


def test_multi_batch_append_is_all_or_nothing(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(message_timestamp_after_max_ms=0))
    good = batch(2, ts=NOW - 1)  # timestamps NOW-1, NOW
    bad = batch(1, ts=NOW + 1)
    with pytest.raises(InvalidTimestampError):
        plog.append_as_leader(good + bad, leader_epoch=0, now_ms=NOW)
    assert plog.log_end_offset == 0 and plog.size_in_bytes() == 0
    r = plog.append_as_leader(good + batch(3, ts=NOW - 5), leader_epoch=0, now_ms=NOW)
    assert (r.first_offset, r.last_offset) == (0, 4)
    assert offsets_of(plog.read(0, max_bytes=1 << 20)) == [(0, 1), (2, 4)]


def test_compacted_topic_requires_keys(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(cleanup_policy=("compact",)))
    with pytest.raises(InvalidRecordError):
        plog.append_as_leader(batch(2, keys=False), leader_epoch=0, now_ms=NOW)
    assert (
        plog.append_as_leader(batch(2, compression=1), leader_epoch=0, now_ms=NOW).last_offset == 1
    )


def test_roll_by_size(tmp_path: Path) -> None:
    size = len(batch(1))
    plog = open_log(tmp_path, LogConfig(segment_bytes=size * 3))
    for _ in range(10):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    assert [s.base_offset for s in plog.segments] == [0, 3, 6, 9]
    assert all(s.size <= size * 3 for s in plog.segments)
    # rolled segments were flushed: the recovery point reached the active segment's base
    assert plog.recovery_point == 9
    assert_consistent(plog)


def test_oversized_append_goes_to_a_fresh_segment(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(segment_bytes=200))
    plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(10), leader_epoch=0, now_ms=NOW)  # > segment.bytes alone
    assert [s.base_offset for s in plog.segments] == [0, 1]
    assert plog.segments[1].size > 200
    assert_consistent(plog)


def test_roll_by_time_uses_batch_timestamps(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(segment_ms=1000))
    plog.append_as_leader(batch(1, ts=NOW), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(1, ts=NOW + 1000), leader_epoch=0, now_ms=NOW + 1000)
    assert len(plog.segments) == 1  # exactly segment.ms: not yet
    plog.append_as_leader(batch(1, ts=NOW + 1001), leader_epoch=0, now_ms=NOW + 1001)
    assert [s.base_offset for s in plog.segments] == [0, 2]
    # wall-clock time alone does not roll when batches carry timestamps
    plog.append_as_leader(batch(1, ts=NOW + 1001), leader_epoch=0, now_ms=NOW + 10**9)
    assert len(plog.segments) == 2
    assert_consistent(plog)


def test_roll_jitter_is_deterministic_and_bounded(tmp_path: Path) -> None:
    from wirebroker.log.segment import roll_jitter_ms

    cfg = LogConfig(segment_ms=1000, segment_jitter_ms=400)
    values = {roll_jitter_ms("t", p, 0, cfg) for p in range(50)}
    assert all(0 <= v < 400 for v in values) and len(values) > 1
    assert roll_jitter_ms("t", 3, 0, cfg) == roll_jitter_ms("t", 3, 0, cfg)


def test_roll_when_index_full(tmp_path: Path) -> None:
    # 24 bytes: 3 offset-index entries, 2 time-index entries; an entry per batch after the
    # first (interval 0): the time index is full after the third batch
    plog = open_log(tmp_path, LogConfig(segment_index_bytes=24, index_interval_bytes=0))
    for i in range(7):
        plog.append_as_leader(batch(1, ts=NOW + i), leader_epoch=0, now_ms=NOW)
    assert [s.base_offset for s in plog.segments] == [0, 3, 6]
    assert [len(s.index) for s in plog.segments] == [2, 2, 0]
    assert all(len(s.time_index) <= 2 for s in plog.segments)
    assert_consistent(plog)


def test_sparse_index_lookup_agrees_with_scan(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(index_interval_bytes=300, segment_bytes=2000))
    for i in range(60):
        plog.append_as_leader(batch(1 + i % 4, ts=NOW + i), leader_epoch=0, now_ms=NOW)
    assert len(plog.segments) > 2
    assert any(len(s.index) > 1 for s in plog.segments)
    assert_consistent(plog)


def test_read_from_mid_batch_returns_whole_batch(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append_as_leader(batch(5), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(5), leader_epoch=0, now_ms=NOW)
    assert offsets_of(plog.read(7, max_bytes=1 << 20)) == [(5, 9)]
    assert offsets_of(plog.read(3, max_bytes=1 << 20)) == [(0, 4), (5, 9)]
    assert plog.read(10, max_bytes=1 << 20) == b""


def test_read_bounds(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    for _ in range(4):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    size = len(batch(2))
    assert offsets_of(plog.read(0, max_bytes=size * 2)) == [(0, 1), (2, 3)]
    assert offsets_of(plog.read(0, max_bytes=size * 2 + size - 1)) == [(0, 1), (2, 3)]
    # one batch larger than max_bytes: returned whole with min_one_batch, else nothing
    assert offsets_of(plog.read(2, max_bytes=10)) == [(2, 3)]
    assert plog.read(2, max_bytes=10, min_one_batch=False) == b""
    # max_offset: never a batch whose base offset >= max_offset
    assert offsets_of(plog.read(0, max_bytes=1 << 20, max_offset=4)) == [(0, 1), (2, 3)]
    assert offsets_of(plog.read(0, max_bytes=1 << 20, max_offset=5)) == [(0, 1), (2, 3), (4, 5)]
    assert plog.read(4, max_bytes=1 << 20, max_offset=4) == b""
    assert plog.read(4, max_bytes=10, max_offset=4) == b""
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(9, max_bytes=100)
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(-1, max_bytes=100)


def test_read_spans_segments(tmp_path: Path) -> None:
    size = len(batch(1))
    plog = open_log(tmp_path, LogConfig(segment_bytes=size * 2))
    for _ in range(6):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    assert len(plog.segments) == 3
    assert offsets_of(plog.read(1, max_bytes=1 << 20)) == [(i, i) for i in range(1, 6)]
    assert offsets_of(plog.read(1, max_bytes=size * 3)) == [(1, 1), (2, 2), (3, 3)]


def test_offset_for_timestamp(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(segment_bytes=400, index_interval_bytes=50))
    # batch i holds records with timestamps NOW + 10*i + {0, 2, 4}
    for i in range(30):
        plog.append_as_leader(
            batch(3, timestamps=[NOW + 10 * i, NOW + 10 * i + 2, NOW + 10 * i + 4]),
            leader_epoch=0,
            now_ms=NOW,
        )
    assert len(plog.segments) > 3
    assert plog.offset_for_timestamp(NOW) == (0, NOW)
    assert plog.offset_for_timestamp(NOW - 5) == (0, NOW)
    assert plog.offset_for_timestamp(NOW + 3) == (2, NOW + 4)
    assert plog.offset_for_timestamp(NOW + 5) == (3, NOW + 10)
    assert plog.offset_for_timestamp(NOW + 10 * 17 + 1) == (17 * 3 + 1, NOW + 172)
    assert plog.offset_for_timestamp(NOW + 294) == (89, NOW + 294)
    assert plog.offset_for_timestamp(NOW + 295) is None
    # brute force agrees for every timestamp
    data = plog.read(0, max_bytes=1 << 24)
    records = [r for pos, _ in iter_batches(data) for r in decode_records(data, pos)]
    for t in range(NOW - 1, NOW + 300, 7):
        expect = next(((r.offset, r.timestamp) for r in records if r.timestamp >= t), None)
        assert plog.offset_for_timestamp(t) == expect


def test_offset_for_timestamp_out_of_order_timestamps(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append_as_leader(
        batch(3, timestamps=[NOW + 50, NOW + 10, NOW + 30]), leader_epoch=0, now_ms=NOW
    )
    assert plog.offset_for_timestamp(NOW + 20) == (0, NOW + 50)
    assert plog.max_timestamp() == (NOW + 50, 0)


def test_max_timestamp(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(segment_bytes=300))
    assert plog.max_timestamp() == (-1, -1)
    stamps = [5, 9, 3, 9, 7]
    for i, s in enumerate(stamps):
        plog.append_as_leader(
            batch(2, timestamps=[NOW + s - 1, NOW + s])
            if i != 3
            else batch(2, timestamps=[NOW + s, NOW]),
            leader_epoch=0,
            now_ms=NOW,
        )
    # first record carrying the max timestamp NOW+9 is offset 3 (batch 1, second record)
    assert plog.max_timestamp() == (NOW + 9, 3)


def test_records_with_specs_keep_headers(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    b = build_batch([RecordSpec(b"k", b"v", headers=[("h", b"x")], timestamp=NOW)])
    plog.append_as_leader(b, leader_epoch=0, now_ms=NOW)
    rec = decode_records(plog.read(0, max_bytes=1000))[0]
    assert rec.headers == (("h", b"x"),) and rec.key == b"k"


def test_reads_at_the_log_end_need_no_header_walk(tmp_path: Path) -> None:
    """The positions of the recent batches are remembered: a fetch at the log end reads its
    batch at once instead of walking the headers from the last index entry."""
    from logtest_helpers import FaultyFileSystem

    fs = FaultyFileSystem()
    plog = open_log(tmp_path, LogConfig(index_interval_bytes=1 << 20), fs=fs)
    for _ in range(300):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    assert len(plog.segments[0].index.rel_offsets) == 0  # no index entry: all is a walk
    for offset in (599, 598, 520, 473):  # the last 64 batches (at least): one pread each
        fs.preads = 0
        assert offsets_of(plog.read(offset, max_bytes=1 << 20))[0][1] >= offset
        assert fs.preads == 1
    fs.preads = 0
    assert offsets_of(plog.read(10, max_bytes=1 << 20))[0] == (10, 11)  # older: walked
    assert fs.preads > 1
    plog.truncate_to(550)
    plog.append_as_leader(batch(3), leader_epoch=0, now_ms=NOW)
    assert offsets_of(plog.read(551, max_bytes=1)) == [(550, 552)]
    assert_consistent(plog)


def test_a_writable_view_is_stamped_in_place_and_bytes_are_copied(tmp_path: Path) -> None:
    """A large request arrives in its own bytearray (protocol/framing.py): its records, a
    writable view of it, are stamped where they lie; read-only records are copied first."""
    plog = open_log(tmp_path)
    plog.append_as_leader(batch(2), leader_epoch=3, now_ms=NOW)
    frame = bytearray(b"head") + batch(3)
    view = memoryview(frame)[4:]
    plog.append_as_leader(view, leader_epoch=3, now_ms=NOW)
    stamped = parse_header(frame, 4)
    assert (stamped.base_offset, stamped.partition_leader_epoch) == (2, 3)
    assert plog.read(2, max_bytes=1 << 20) == bytes(frame[4:])
    original = batch(2)
    readonly = memoryview(original)
    plog.append_as_leader(readonly, leader_epoch=3, now_ms=NOW)
    assert readonly.tobytes() == original and parse_header(original).base_offset == 0
    assert offsets_of(plog.read(5, max_bytes=1 << 20)) == [(5, 6)]
    assert_consistent(plog)


def test_lz4_frames_kafka_cannot_read_are_refused_as_kafka(tmp_path: Path) -> None:
    """An LZ4 batch whose frame has dependent blocks (kafkajs's lz4js wrote them): Kafka's
    reader fails it, UNKNOWN_SERVER_ERROR; nothing is written. Independent blocks pass."""
    import lz4.frame

    from protocol.crc32c import crc32c
    from wirebroker.log.errors import UnreadableRecordsError

    plain = batch(3000)  # about 100 KiB of records: more than one 64 KiB block
    records = plain[61:]
    payloads = {
        False: lz4.frame.compress(records, block_linked=False, store_size=False),
        True: lz4.frame.compress(records, block_linked=True, store_size=False),
    }
    plog = open_log(tmp_path)
    for dependent, payload in payloads.items():
        raw = bytearray(plain[:61]) + payload
        struct.pack_into(">i", raw, 8, len(raw) - 12)
        struct.pack_into(">h", raw, 21, 3)  # lz4
        struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
        if dependent:
            with pytest.raises(UnreadableRecordsError, match="Dependent block stream"):
                plog.append_as_leader(bytes(raw), leader_epoch=0, now_ms=NOW)
            assert UnreadableRecordsError.error_code == ErrorCode.UNKNOWN
        else:  # its records are not read here: only the frame's layout is checked
            plog.append_as_leader(bytes(raw), leader_epoch=0, now_ms=NOW)
    assert plog.log_end_offset == 3000
