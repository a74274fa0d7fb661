"""The parts PartitionLog is built from: LogSegments (segments.py), LogValidator
(validator.py), LogLoader (loader.py), and the batch helpers they use from protocol/records."""

from __future__ import annotations

from pathlib import Path

import pytest
from logtest_helpers import NOW, TOPIC, NoSyncFileSystem, batch, open_log

from protocol.records import (
    LOG_APPEND_TIME,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
    rebuild_batch,
    stamp_batch,
)
from wirebroker.log import CorruptRecordError, LogConfig
from wirebroker.log.loader import LoadedLog, LogLoader
from wirebroker.log.segment import Segment
from wirebroker.log.segments import LogSegments
from wirebroker.log.validator import LogValidator


def _segments(tmp_path: Path, bases: list[int]) -> LogSegments:
    fs = NoSyncFileSystem()
    segs = LogSegments(fs, tmp_path)
    for base in bases:
        segs.add(Segment(fs, tmp_path, base, LogConfig(), NOW, create=True))
    return segs


def test_segments_lookup_and_deletion(tmp_path: Path) -> None:
    segs = _segments(tmp_path, [0, 10, 20])
    assert [segs.index_for(o) for o in (0, 9, 10, 25)] == [0, 0, 1, 2]
    assert segs.next_offset(default=5) == 20  # the active segment is empty
    segs.delete_above(10)
    assert [s.base_offset for s in segs] == [0, 10]
    assert not (tmp_path / f"{20:020d}.log").exists()
    segs.delete([segs[0]])
    assert [s.base_offset for s in segs] == [10]
    assert segs.index_for(3) == 0
    segs.reset_at(42, LogConfig(), NOW)
    assert [s.base_offset for s in segs] == [42]
    segs.close()


def test_segments_replace_refuses_a_run_that_is_not_in_the_set(tmp_path: Path) -> None:
    segs = _segments(tmp_path, [0, 10])
    other = Segment(NoSyncFileSystem(), tmp_path, 5, LogConfig(), NOW, create=True)
    with pytest.raises(ValueError, match="not consecutive"):
        segs.replace(other, [segs[0]])  # base offsets differ
    with pytest.raises(ValueError, match="not consecutive"):
        segs.replace(other, [segs[1]])  # the active segment
    other.close()
    segs.close()


def test_validator_reuses_headers_parsed_by_the_caller() -> None:
    data = batch(3) + batch(2)
    validator = LogValidator(LogConfig())
    parsed = list(iter_batches(data))
    assert validator.validate(bytearray(data), NOW, parsed) == parsed
    assert validator.validate(bytearray(data), NOW) == parsed
    with pytest.raises(ValueError, match="do not"):
        validator.validate(bytearray(data), NOW, parsed[:1])
    bad = bytearray(data)
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        validator.validate(bad, NOW, parsed)


@pytest.mark.parametrize("log_append_time", [False, True])
def test_assign_offsets_returns_the_stamped_headers(log_append_time: bool) -> None:
    configs = {"message.timestamp.type": "LogAppendTime"} if log_append_time else {}
    validator = LogValidator(LogConfig.from_topic_configs(configs))
    buf = bytearray(batch(3) + batch(2))
    checked = validator.validate(buf, NOW)
    stamped = validator.assign_offsets(buf, checked, 100, 7, NOW + 5)
    assert stamped == list(iter_batches(buf))
    assert [h.base_offset for _, h in stamped] == [100, 103]
    assert all(h.partition_leader_epoch == 7 for _, h in stamped)
    if log_append_time:
        assert all(h.timestamp_type == LOG_APPEND_TIME for _, h in stamped)
        assert all(h.max_timestamp == NOW + 5 for _, h in stamped)


def test_stamp_batch_with_a_parsed_header_matches_a_reparse() -> None:
    buf = bytearray(batch(2))
    h = parse_header(buf)
    new = stamp_batch(
        buf, 0, base_offset=9, partition_leader_epoch=3, log_append_time=NOW, header=h
    )
    assert new == parse_header(buf)


def test_rebuild_batch_keeps_the_header_fields_and_records() -> None:
    data = build_batch([(b"a", b"1"), (b"b", None)], base_offset=50, producer_id=4, base_sequence=8)
    h = parse_header(data)
    records = decode_records(data)
    out = rebuild_batch(
        h, records[1:], attributes=h.attributes, base_timestamp=NOW, max_timestamp=NOW
    )
    assert decode_records(out) == records[1:]
    nh = parse_header(out)
    assert (nh.base_offset, nh.last_offset_delta, nh.producer_id, nh.base_sequence) == (
        50,
        1,
        4,
        8,
    )
    empty = rebuild_batch(h, (), attributes=0, base_timestamp=NOW, max_timestamp=NOW)
    assert parse_header(empty).records_count == 0
    assert decode_records(empty) == []


def test_loader_returns_the_loaded_state_without_a_log(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append_as_leader(batch(2, pid=1, epoch=0, seq=0), leader_epoch=3, now_ms=NOW)
    plog.roll(NOW)
    plog.append_as_leader(batch(1, pid=1, epoch=0, seq=2), leader_epoch=4, now_ms=NOW)
    plog.close()
    loader = LogLoader(NoSyncFileSystem(), tmp_path / f"{TOPIC}-0", f"{TOPIC}-0", LogConfig(), NOW)
    loaded = loader.load(recovery_point=0, log_start_offset=0, clean=False)
    assert isinstance(loaded, LoadedLog)
    try:
        assert [s.base_offset for s in loaded.segments] == [0, 2]
        assert (loaded.log_start_offset, loaded.recovery_point) == (0, 3)
        assert loaded.epochs.entries == [(3, 0), (4, 2)]
        entry = loaded.producers.get(1)
        assert entry is not None and entry.last_seq == 2
    finally:
        loaded.segments.close()
