"""Recovery after unclean shutdowns and damaged files.

Every test asserts that the log end offset is the next offset of the last valid batch and
that index lookups and reads agree with an independent full scan of the files."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from logtest_helpers import (
    NOW,
    TOPIC,
    FaultyFileSystem,
    assert_consistent,
    batch,
    full_scan,
    offsets_of,
    open_log,
)

from wirebroker.log import LogConfig, PartitionLog

SIZE = len(batch(2))
CFG = LogConfig(segment_bytes=SIZE * 4, index_interval_bytes=SIZE - 1)


def build(tmp_path: Path, batches: int = 12) -> tuple[PartitionLog, Path]:
    """12 batches of 2 records, 4 batches per segment, leader epoch = segment number."""
    plog = open_log(tmp_path, CFG)
    for i in range(batches):
        plog.append_as_leader(batch(2, ts=NOW + i), leader_epoch=i // 4, now_ms=NOW)
    assert [s.base_offset for s in plog.segments] == [0, 8, 16]
    return plog, plog.directory


def crash(plog: PartitionLog) -> None:
    """Drop the log like a killed process: no flush, snapshot, final index entry or marker."""
    plog._close_files()


def seg_path(d: Path, base: int, suffix: str = ".log") -> Path:
    return d / f"{base:020d}{suffix}"


def reopen(tmp_path: Path, **kwargs: object) -> PartitionLog:
    return open_log(tmp_path, CFG, **kwargs)  # type: ignore[arg-type]


def test_torn_tail(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    crash(plog)
    last = seg_path(d, 16)
    os.truncate(last, last.stat().st_size - 7)  # inside the last batch
    plog = reopen(tmp_path, recovery_point=16)
    assert plog.log_end_offset == 22
    assert last.stat().st_size == SIZE * 3
    assert_consistent(plog)
    assert plog.append_as_leader(batch(1), leader_epoch=2, now_ms=NOW).first_offset == 22
    assert_consistent(plog)


def test_torn_header(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    crash(plog)
    with open(seg_path(d, 16), "ab") as f:
        f.write(batch(1)[:30])  # fewer than 61 bytes of a next header
    plog = reopen(tmp_path, recovery_point=16)
    assert plog.log_end_offset == 24
    assert_consistent(plog)


def test_appended_garbage(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    crash(plog)
    with open(seg_path(d, 16), "ab") as f:
        f.write(os.urandom(500))
    plog = reopen(tmp_path, recovery_point=0)
    assert plog.log_end_offset == 24
    assert seg_path(d, 16).stat().st_size == SIZE * 4
    assert_consistent(plog)


def test_zeroed_tail_like_a_power_loss(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    crash(plog)
    with open(seg_path(d, 16), "r+b") as f:
        f.seek(SIZE * 2)
        f.write(b"\x00" * (SIZE * 2))
    plog = reopen(tmp_path, recovery_point=8)
    assert plog.log_end_offset == 20
    assert_consistent(plog)


@pytest.mark.parametrize("where", ["payload", "header-length", "offset-goes-back"])
def test_damage_in_the_middle_of_an_older_segment(tmp_path: Path, where: str) -> None:
    plog, d = build(tmp_path)
    crash(plog)
    path = seg_path(d, 8)
    data = bytearray(path.read_bytes())
    third = SIZE * 2  # the third batch of segment 8 (offsets 12-13)
    if where == "payload":
        data[third + 70] ^= 0x10
    elif where == "header-length":
        struct.pack_into(">i", data, third + 8, 10**6)
    else:
        struct.pack_into(">q", data, third, 3)  # base offset below the previous batch's
    path.write_bytes(bytes(data))
    plog = reopen(tmp_path, recovery_point=0)
    assert plog.log_end_offset == 12  # the last valid batch before the damage ends at 11
    assert [s.base_offset for s in plog.segments] == [0, 8]
    assert not seg_path(d, 16).exists() and not seg_path(d, 16, ".index").exists()
    assert plog.leader_epoch_entries() == [(0, 0), (1, 8)]  # epoch 2 started at 16: gone
    assert_consistent(plog)
    r = plog.append_as_leader(batch(1), leader_epoch=3, now_ms=NOW)
    assert r.first_offset == 12
    assert plog.leader_epoch_entries() == [(0, 0), (1, 8), (3, 12)]


def test_missing_indexes_are_rebuilt_even_after_clean_shutdown(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    plog.close()
    before = {
        b: (seg_path(d, b, ".index").read_bytes(), seg_path(d, b, ".timeindex").read_bytes())
        for b in (0, 8, 16)
    }
    for b in (0, 16):
        seg_path(d, b, ".index").unlink()
        seg_path(d, b, ".timeindex").unlink()
    seg_path(d, 8, ".timeindex").unlink()
    plog = reopen(tmp_path, clean=True)
    assert plog.log_end_offset == 24
    assert_consistent(plog)
    for b in (0, 8, 16):
        assert seg_path(d, b, ".index").read_bytes() == before[b][0]
        assert seg_path(d, b, ".timeindex").read_bytes() == before[b][1]
    assert plog.offset_for_timestamp(NOW + 5) == (9, NOW + 5)  # batch 4: NOW+4, NOW+5


@pytest.mark.parametrize(
    "damage", ["odd-length", "not-monotonic", "past-the-log", "wrong-offset", "time-not-monotonic"]
)
def test_corrupt_index_is_rebuilt(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    plog, d = build(tmp_path)
    plog.close()
    index = seg_path(d, 8, ".index")
    raw = bytearray(index.read_bytes())
    assert len(raw) >= 16
    if damage == "odd-length":
        raw += b"\x01\x02\x03"
    elif damage == "not-monotonic":
        raw[:16] = struct.pack(">iiii", 5, SIZE * 2, 3, SIZE * 3)
    elif damage == "past-the-log":
        struct.pack_into(">ii", raw, len(raw) - 8, 7, 10**6)
    elif damage == "wrong-offset":
        rel, pos = struct.unpack_from(">ii", raw, len(raw) - 8)
        struct.pack_into(">ii", raw, len(raw) - 8, rel + 1, pos)
    else:
        index = seg_path(d, 8, ".timeindex")
        raw = bytearray(index.read_bytes()) + struct.pack(">qi", 5, 0)
    index.write_bytes(bytes(raw))
    caplog.set_level("WARNING", logger="wirebroker.log")
    plog = reopen(tmp_path, clean=True)
    assert [r.getMessage().endswith("recovering segment 8") for r in caplog.records] == [True]
    assert plog.log_end_offset == 24
    assert plog.leader_epoch_entries() == [(0, 0), (1, 8), (2, 16)]
    assert_consistent(plog)


def test_stale_recovery_checkpoint(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    plog.flush()
    for i in range(3):  # unflushed appends after the checkpoint
        plog.append_as_leader(batch(2, ts=NOW + 20 + i), leader_epoch=2, now_ms=NOW)
    crash(plog)
    # the recovery point checkpoint is older than the flushed data (it lags the flush):
    # everything from its segment on is scanned, and the torn last batch is found
    os.truncate(seg_path(d, 24), seg_path(d, 24).stat().st_size - 1)
    plog = reopen(tmp_path, recovery_point=5)
    assert plog.log_end_offset == 28
    assert plog.recovery_point == 28
    assert_consistent(plog)


def test_recovery_point_beyond_the_log(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    crash(plog)
    os.truncate(seg_path(d, 16), SIZE * 2 + 5)
    plog = reopen(tmp_path, recovery_point=10**9)  # the last segment is always recovered
    assert plog.log_end_offset == 20
    assert_consistent(plog)


def test_clean_marker_skips_the_scan(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    plog.close()
    path = seg_path(d, 0)
    data = bytearray(path.read_bytes())
    data[SIZE + 70] ^= 0x01  # payload of the second batch: only a CRC check notices
    path.write_bytes(bytes(data))
    fs = FaultyFileSystem()
    plog = reopen(tmp_path, clean=True, fs=fs)
    assert plog.log_end_offset == 24  # not scanned: nothing truncated
    clean_preads = fs.preads
    plog.close()
    fs = FaultyFileSystem()
    plog = reopen(tmp_path, recovery_point=0, fs=fs)  # unclean: the CRC check truncates
    assert plog.log_end_offset == 2
    assert [s.base_offset for s in plog.segments] == [0]
    assert fs.preads > 0 and clean_preads > 0
    assert_consistent(plog)


def test_every_truncation_point(tmp_path: Path) -> None:
    """Tear the single segment at every byte: the log ends at the last whole batch."""
    plog = open_log(tmp_path, LogConfig(index_interval_bytes=0))
    sizes = []
    for i in range(4):
        plog.append_as_leader(batch(1 + i, ts=NOW + i), leader_epoch=0, now_ms=NOW)
        sizes.append(plog.size_in_bytes())
    crash(plog)
    path = seg_path(plog.directory, 0)
    full = path.read_bytes()
    ends = [0, 1, 3, 6, 10]  # next offsets after 0..4 batches
    for cut in range(0, len(full) + 1, 7):
        path.write_bytes(full[:cut])
        whole = sum(1 for s in sizes if s <= cut)
        plog = open_log(tmp_path, LogConfig(index_interval_bytes=0), recovery_point=0)
        assert plog.log_end_offset == ends[whole], cut
        assert_consistent(plog)
        crash(plog)


def test_recovery_via_log_manager_style_reopen_keeps_reads_working(tmp_path: Path) -> None:
    plog, d = build(tmp_path)
    crash(plog)
    plog = reopen(tmp_path, recovery_point=0)
    assert offsets_of(plog.read(9, max_bytes=SIZE * 2)) == [(8, 9), (10, 11)]
    assert [b.header.base_offset for b in full_scan(d)] == list(range(0, 24, 2))
    plog.close()
    assert (d.parent / f"{TOPIC}-0").is_dir()


def test_batch_larger_than_the_scan_window(tmp_path: Path) -> None:
    from wirebroker.log.segment import SCAN_WINDOW

    cfg = LogConfig(max_message_bytes=4 * SCAN_WINDOW)
    plog = open_log(tmp_path, cfg)
    big = batch(3, value=b"z" * (SCAN_WINDOW // 2))
    assert len(big) > SCAN_WINDOW
    for _ in range(3):
        plog.append_as_leader(big, leader_epoch=0, now_ms=NOW)
    crash(plog)
    plog = open_log(tmp_path, cfg, recovery_point=0)
    assert plog.log_end_offset == 9
    assert_consistent(plog)
    crash(plog)
    path = seg_path(plog.directory, 0)
    with open(path, "r+b") as f:  # flip a byte near the end of the second big batch
        f.seek(len(big) * 2 - 3)
        byte = f.read(1)
        f.seek(len(big) * 2 - 3)
        f.write(bytes([byte[0] ^ 0xFF]))
    plog = open_log(tmp_path, cfg, recovery_point=0)
    assert plog.log_end_offset == 3
    assert path.stat().st_size == len(big)
    assert_consistent(plog)
