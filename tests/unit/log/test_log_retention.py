"""Retention by time and size, DeleteRecords, truncation."""

from __future__ import annotations

from pathlib import Path

import pytest
from logtest_helpers import NOW, assert_consistent, batch, offsets_of, open_log

from wirebroker.log import LogConfig, OffsetOutOfRangeError, PartitionLog

SIZE = len(batch(1))


def filled(tmp_path: Path, n: int, config: LogConfig, *, step_ms: int = 1000) -> PartitionLog:
    """n single-record batches, timestamps NOW, NOW+step, ...; 2 batches per segment."""
    plog = open_log(tmp_path, config)
    for i in range(n):
        plog.append_as_leader(
            batch(1, ts=NOW + i * step_ms), leader_epoch=0, now_ms=NOW + i * step_ms
        )
    plog.high_watermark = plog.log_end_offset
    return plog


def test_retention_by_time(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=SIZE * 2, retention_ms=10_000)
    plog = filled(tmp_path, 10, cfg)  # segments [0,1] [2,3] ... [8,9]; max ts NOW+1000*last
    assert [s.base_offset for s in plog.segments] == [0, 2, 4, 6, 8]
    # at NOW+13_000: segments whose max ts < NOW+3000 are older than 10 s: [0,1] only
    # (max NOW+1000: 12 s old); [2,3] has max NOW+3000: exactly 10 s -> kept (strict >)
    assert plog.delete_expired_segments(NOW + 13_000) == 1
    assert plog.log_start_offset == 2
    assert [s.base_offset for s in plog.segments] == [2, 4, 6, 8]
    assert plog.delete_expired_segments(NOW + 13_001) == 1
    assert plog.log_start_offset == 4
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(3, max_bytes=1000)
    assert offsets_of(plog.read(4, max_bytes=1 << 20))[0] == (4, 4)
    assert not (plog.directory / f"{0:020d}.log").exists()
    assert_consistent(plog)


def test_retention_deletes_active_segment_by_rolling_first(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=SIZE * 2, retention_ms=1000)
    plog = filled(tmp_path, 5, cfg)
    assert plog.delete_expired_segments(NOW + 10**7) == 3
    assert [s.base_offset for s in plog.segments] == [5]
    assert plog.log_start_offset == plog.log_end_offset == 5
    assert plog.read(5, max_bytes=100) == b""
    # an empty active segment is never deleted
    assert plog.delete_expired_segments(NOW + 10**8) == 0
    r = plog.append_as_leader(batch(1, ts=NOW + 10**8), leader_epoch=0, now_ms=NOW + 10**8)
    assert r.first_offset == 5 and r.log_start_offset == 5


def test_retention_never_passes_the_high_watermark(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=SIZE * 2, retention_ms=1000)
    plog = filled(tmp_path, 6, cfg)
    plog.high_watermark = 3
    # only segment [0,1] lies wholly below the high watermark
    assert plog.delete_expired_segments(NOW + 10**7) == 1
    assert plog.log_start_offset == 2


def test_retention_disabled_and_compact_only(tmp_path: Path) -> None:
    plog = filled(tmp_path / "a", 6, LogConfig(segment_bytes=SIZE * 2, retention_ms=-1))
    assert plog.delete_expired_segments(NOW + 10**12) == 0
    plog = filled(
        tmp_path / "b",
        6,
        LogConfig(segment_bytes=SIZE * 2, retention_ms=1, cleanup_policy=("compact",)),
    )
    assert plog.delete_expired_segments(NOW + 10**12) == 0


def test_retention_by_size(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=SIZE * 2, retention_bytes=SIZE * 5)
    plog = filled(tmp_path, 10, cfg)  # 5 segments of 2 batches, 10 batches in all
    # total 10 - 5 allowed = 5 too many: whole segments while (diff - size >= 0): 2 segments
    assert plog.delete_expired_segments(NOW) == 2
    assert plog.log_start_offset == 4
    assert plog.size_in_bytes() == SIZE * 6
    assert plog.delete_expired_segments(NOW) == 0  # 6 - 5 = 1 < a segment of 2
    assert_consistent(plog)


def test_delete_records_before(tmp_path: Path) -> None:
    plog = filled(tmp_path, 10, LogConfig(segment_bytes=SIZE * 2))
    plog.high_watermark = 8
    with pytest.raises(OffsetOutOfRangeError):
        plog.delete_records_before(9)
    assert plog.delete_records_before(5) == 5
    assert plog.log_start_offset == 5
    # segments wholly below 5 are gone, the one holding 5 stays (offset 4 still on disk)
    assert [s.base_offset for s in plog.segments] == [4, 6, 8]
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(4, max_bytes=1000)
    assert offsets_of(plog.read(5, max_bytes=1 << 20))[0] == (5, 5)
    assert plog.delete_records_before(3) == 5  # below the start: no-op
    assert plog.delete_records_before(-1) == 8  # -1: the high watermark
    assert [s.base_offset for s in plog.segments] == [8]
    # retention's log-start rule does not delete the segment holding the start offset
    assert plog.delete_expired_segments(NOW) == 0


def test_truncate_to(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(segment_bytes=len(batch(3)) * 2))
    for e in range(6):
        plog.append_as_leader(batch(3, ts=NOW + e), leader_epoch=e, now_ms=NOW)
    # batches [0-2] [3-5] | [6-8] [9-11] | [12-14] [15-17]
    plog.flush()
    plog.high_watermark = 18
    assert plog.high_watermark == 18
    plog.truncate_to(9)
    assert plog.log_end_offset == 9
    assert [s.base_offset for s in plog.segments] == [0, 6]
    assert plog.leader_epoch_entries() == [(0, 0), (1, 3), (2, 6)]
    assert plog.recovery_point == 9 and plog.high_watermark == 9
    assert_consistent(plog)
    # a straddling batch goes entirely: truncating to 7 removes [6-8]
    plog.truncate_to(7)
    assert plog.log_end_offset == 6
    assert [s.base_offset for s in plog.segments] == [0, 6]
    assert plog.segments[-1].size == 0
    assert plog.latest_epoch == 1
    r = plog.append_as_leader(batch(1, ts=NOW), leader_epoch=9, now_ms=NOW)
    assert r.first_offset == 6
    assert plog.leader_epoch_entries() == [(0, 0), (1, 3), (9, 6)]
    assert_consistent(plog)


def test_truncate_below_log_start_starts_over(tmp_path: Path) -> None:
    plog = filled(tmp_path, 6, LogConfig(segment_bytes=SIZE * 2))
    plog.delete_records_before(4)
    plog.truncate_to(2)
    assert plog.log_start_offset == plog.log_end_offset == 2
    assert [s.base_offset for s in plog.segments] == [2]
    assert plog.leader_epoch_entries() == []
    assert plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW).first_offset == 2


def test_truncate_survives_reopen(tmp_path: Path) -> None:
    plog = filled(tmp_path, 8, LogConfig(segment_bytes=SIZE * 3))
    plog.truncate_to(4)
    plog.close()
    plog = open_log(tmp_path, LogConfig(segment_bytes=SIZE * 3), clean=True)
    assert plog.log_end_offset == 4
    assert_consistent(plog)
