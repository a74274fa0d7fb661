"""Log compaction (cleaner.py): what is kept, offsets, tombstones, lags, dirty ratio, producer
state, crash safety of the swap, bounded steps, and the LogManager hook."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from logtest_helpers import (
    NOW,
    TOPIC,
    NoSyncFileSystem,
    assert_consistent,
    full_scan,
    open_log,
)

from protocol.records import (
    BatchHeader,
    RecordSpec,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
)
from wirebroker.log import LogConfig, LogManager, OutOfOrderSequenceError, PartitionLog
from wirebroker.log.checkpoint import read_offset_checkpoint
from wirebroker.log.cleaner import (
    CLEANER_CHECKPOINT,
    DELETE_HORIZON_BIT,
    LogCleaner,
    filter_batch,
    group_segments,
    key_digest,
    log_to_clean,
)

KEY = (TOPIC, 0)
CFG = LogConfig(
    cleanup_policy=("compact",),
    min_cleanable_dirty_ratio=0.0,
    delete_retention_ms=10_000,
    index_interval_bytes=0,
)
Pair = tuple[bytes | None, bytes | None]


def put(
    plog: PartitionLog,
    *pairs: Pair,
    ts: int = NOW,
    now: int = NOW,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    compression: int = 0,
    headers: tuple[tuple[str, bytes | None], ...] = (),
) -> int:
    """Append one batch (record i gets timestamp ts + i); returns its first offset."""
    specs = [
        RecordSpec(key=k, value=v, timestamp=ts + i, headers=headers)
        for i, (k, v) in enumerate(pairs)
    ]
    data = build_batch(
        specs,
        base_timestamp=ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        compression=compression,
    )
    first = plog.append_as_leader(data, leader_epoch=0, now_ms=now).first_offset
    plog.high_watermark = plog.log_end_offset
    return first


def records(plog: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    data = plog.read(plog.log_start_offset, max_bytes=1 << 30)
    out = []
    for pos, _ in iter_batches(data):
        out += [(r.offset, r.key, r.value) for r in decode_records(data, pos)]
    return out


def headers(plog: PartitionLog) -> list[BatchHeader]:
    data = plog.read(plog.log_start_offset, max_bytes=1 << 30)
    return [h for _, h in iter_batches(data)]


def clean(plog: PartitionLog, now: int = NOW, cleaner: LogCleaner | None = None) -> LogCleaner:
    cleaner = cleaner or LogCleaner()
    cleaner.run({KEY: plog}, now, max_bytes=1 << 40)
    assert cleaner.in_progress is None
    return cleaner


def leftovers(d: Path) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.endswith((".cleaned", ".swap")))


def build_history(plog: PartitionLog) -> None:
    """Three segments of k1..k3 updates, then an active segment with one more batch."""
    put(plog, (b"k1", b"a0"), (b"k2", b"a1"))  # 0-1
    put(plog, (b"k3", b"a2"))  # 2
    plog.roll(NOW)
    put(plog, (b"k1", b"b3"))  # 3
    put(plog, (b"k2", b"b4"), (b"k2", b"b5"))  # 4-5
    plog.roll(NOW)
    put(plog, (b"k1", b"c6"))  # 6
    plog.roll(NOW)
    put(plog, (b"k3", b"d7"), (b"k1", b"d8"))  # 7-8: active segment


# -- what is kept ---------------------------------------------------------------------------------


def test_latest_value_per_key_kept_offsets_preserved(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    build_history(plog)
    assert [s.base_offset for s in plog.segments] == [0, 3, 6, 7]
    leo = plog.log_end_offset
    size_before = plog.size_in_bytes()
    cleaner = clean(plog)
    # k1: latest below the active segment is 6; k2: 5; k3: 2 (its 7 is in the active segment)
    assert records(plog) == [
        (2, b"k3", b"a2"),
        (5, b"k2", b"b5"),
        (6, b"k1", b"c6"),
        (7, b"k3", b"d7"),
        (8, b"k1", b"d8"),
    ]
    assert plog.log_end_offset == leo == 9
    assert [s.base_offset for s in plog.segments] == [0, 7]  # one group (1 GiB segments)
    assert cleaner.checkpoints[KEY] == 7
    assert cleaner.rounds_completed == 1
    assert plog.size_in_bytes() < size_before
    assert leftovers(plog.directory) == []
    assert_consistent(plog)
    # batch 4-5 was re-encoded: base offset and last offset delta kept, one record left
    h45 = next(h for h in headers(plog) if h.base_offset == 4)
    assert (h45.last_offset_delta, h45.records_count) == (1, 1)


def test_nothing_to_do_twice(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    build_history(plog)
    cleaner = clean(plog)
    files = {n: (plog.directory / n).read_bytes() for n in os.listdir(plog.directory)}
    assert cleaner.run({KEY: plog}, NOW) == 0
    assert not cleaner.has_work and cleaner.rounds_completed == 1
    assert {n: (plog.directory / n).read_bytes() for n in os.listdir(plog.directory)} == files


def test_read_from_an_offset_in_a_gap_returns_the_next_batch(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    for i in range(10):
        put(plog, (b"k%d" % (i % 3), b"v%d" % i))
    plog.roll(NOW)
    put(plog, (b"x", b"y"))
    clean(plog)
    kept = [o for o, _, _ in records(plog)]
    assert kept == [7, 8, 9, 10]  # k1@7, k2@8, k0@9, x@10
    for gap in range(0, 7):
        data = plog.read(gap, max_bytes=1)
        (h,) = [h for _, h in iter_batches(data)]
        assert h.base_offset == 7
    assert_consistent(plog)


def test_keyless_records_are_dropped(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(index_interval_bytes=0))  # delete policy: keyless ok
    put(plog, (None, b"n0"), (b"k", b"v1"), (None, b"n2"))
    put(plog, (None, b"n3"))
    plog.roll(NOW)
    put(plog, (b"k", b"v5"))
    plog.update_config(CFG)
    clean(plog)
    assert records(plog) == [(1, b"k", b"v1"), (4, b"k", b"v5")]
    # the batch ending at the round's upper bound stays, empty, so offsets 3..3 are known
    hs = headers(plog)
    assert [(h.base_offset, h.records_count) for h in hs] == [(0, 1), (3, 0), (4, 1)]
    assert_consistent(plog)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compression_codec_timestamps_and_headers_preserved(tmp_path: Path, codec: int) -> None:
    plog = open_log(tmp_path, CFG)
    put(
        plog,
        (b"a", b"1"),
        (b"b", b"2"),
        (b"a", b"3"),
        (b"c", b"4"),
        ts=NOW + 100,
        compression=codec,
        headers=(("h", b"x"), ("n", None)),
    )
    put(plog, (b"b", b"5"))
    plog.roll(NOW)
    put(plog, (b"z", b"z"))
    clean(plog)
    data = plog.read(0, max_bytes=1 << 20)
    (pos0, h0), (_, h1), _ = list(iter_batches(data))
    assert h0.compression == codec and h0.records_count == 2 and h0.last_offset_delta == 3
    recs = decode_records(data, pos0)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in recs] == [
        (2, b"a", b"3", NOW + 102),
        (3, b"c", b"4", NOW + 103),
    ]
    assert all(r.headers == (("h", b"x"), ("n", None)) for r in recs)
    assert h0.max_timestamp == NOW + 103 and h0.base_timestamp == NOW + 102
    assert h1.records_count == 1  # untouched batch, copied as is
    assert_consistent(plog)


def test_log_append_time_batches_keep_their_timestamp(tmp_path: Path) -> None:
    cfg = LogConfig(
        cleanup_policy=("compact",),
        min_cleanable_dirty_ratio=0.0,
        message_timestamp_type="LogAppendTime",
    )
    plog = open_log(tmp_path, cfg)
    put(plog, (b"a", b"1"), (b"b", b"2"), now=NOW + 5)
    put(plog, (b"a", b"3"), now=NOW + 9)
    plog.roll(NOW)
    clean(plog)
    data = plog.read(0, max_bytes=1 << 20)
    (pos0, h0), _ = list(iter_batches(data))
    assert h0.timestamp_type == 1 and h0.max_timestamp == NOW + 5
    assert [(r.offset, r.timestamp) for r in decode_records(data, pos0)] == [(1, NOW + 5)]


def test_filter_batch_unit() -> None:
    raw = bytearray(
        build_batch(
            [RecordSpec(b"k", b"1", timestamp=NOW), RecordSpec(b"k", None, timestamp=NOW + 1)],
            base_timestamp=NOW,
        )
    )
    raw[0:8] = (100).to_bytes(8, "big")  # stored at base offset 100 (outside the CRC)
    data = bytes(raw)
    h = parse_header(data)
    offsets = {key_digest(b"k"): 101}
    out = filter_batch(data, h, offsets, NOW + 50, 1000, retain_empty=False)
    assert out is not None
    oh = parse_header(out)
    assert oh.attributes & DELETE_HORIZON_BIT and oh.base_timestamp == NOW + 1050
    assert (oh.base_offset, oh.last_offset_delta, oh.records_count) == (100, 1, 1)
    assert [(r.offset, r.value, r.timestamp) for r in decode_records(out)] == [(101, None, NOW + 1)]
    # the same bytes again before the horizon: unchanged; at the horizon: gone
    assert filter_batch(out, oh, offsets, NOW + 1049, 1000, retain_empty=False) == out
    assert filter_batch(out, oh, offsets, NOW + 1050, 1000, retain_empty=False) is None
    empty = filter_batch(out, oh, offsets, NOW + 1050, 1000, retain_empty=True)
    assert empty is not None
    eh = parse_header(empty)
    assert (eh.base_offset, eh.last_offset_delta, eh.records_count, len(empty)) == (100, 1, 0, 61)
    assert decode_records(empty) == []


# -- tombstones -----------------------------------------------------------------------------------


def test_tombstones_kept_until_delete_retention_then_removed(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)  # delete.retention.ms = 10 s
    put(plog, (b"k1", b"v"), (b"k2", b"v"))  # 0-1
    plog.roll(NOW)
    put(plog, (b"k1", None))  # 2: tombstone
    plog.roll(NOW)
    t0 = NOW + 1000
    cleaner = clean(plog, t0)
    assert records(plog) == [(1, b"k2", b"v"), (2, b"k1", None)]
    tomb = next(h for h in headers(plog) if h.base_offset == 2)
    assert tomb.attributes & DELETE_HORIZON_BIT
    assert tomb.base_timestamp == t0 + 10_000  # the delete horizon
    data = plog.read(2, max_bytes=1 << 20)
    assert decode_records(data)[0].timestamp == NOW  # record timestamp unchanged
    # a later clean before the horizon keeps it (more dirty data makes the log cleanable)
    put(plog, (b"k3", b"v"))
    plog.roll(NOW)
    clean(plog, t0 + 9_999, cleaner)
    assert (2, b"k1", None) in records(plog)
    # at the horizon, the next clean removes it
    put(plog, (b"k3", b"w"))
    plog.roll(NOW)
    clean(plog, t0 + 10_000, cleaner)
    assert records(plog) == [(1, b"k2", b"v"), (4, b"k3", b"w")]
    assert plog.log_end_offset == 5
    assert cleaner.rounds_completed == 3
    assert_consistent(plog)


def test_tombstone_in_the_active_segment_is_never_touched(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    put(plog, (b"k1", b"v"))
    plog.roll(NOW)
    put(plog, (b"k1", None))
    clean(plog, NOW + 10**9)
    assert records(plog) == [(0, b"k1", b"v"), (1, b"k1", None)]


# -- what is cleanable ----------------------------------------------------------------------------


def test_active_segment_untouched(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    put(plog, (b"a", b"1"))
    plog.roll(NOW)
    for i in range(5):
        put(plog, (b"a", b"%d" % i), (b"b", b"%d" % i))
    active = plog.segments[-1]
    before = active.log_path.read_bytes()
    index_before = active.index.path.read_bytes()
    clean(plog)
    assert plog.segments[-1] is active
    assert active.log_path.read_bytes() == before
    assert active.index.path.read_bytes() == index_before
    # duplicates in the active segment stay, and it supersedes nothing (it is not mapped)
    assert len(records(plog)) == 11
    # with only the active segment, there is nothing to clean at all
    plog2 = open_log(tmp_path / "b", CFG)
    for i in range(5):
        put(plog2, (b"a", b"%d" % i))
    cleaner = clean(plog2)
    assert cleaner.rounds_completed == 0 and not cleaner.has_work
    assert len(records(plog2)) == 5


def test_never_beyond_the_high_watermark(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    put(plog, (b"a", b"1"))
    plog.roll(NOW)
    put(plog, (b"a", b"2"))
    plog.roll(NOW)
    put(plog, (b"a", b"3"))
    plog.high_watermark = 1  # inside segment 1: only segment 0 is below it
    ltc = log_to_clean(KEY, plog, None, NOW)
    assert ltc.first_uncleanable_offset == 1
    clean(plog)
    assert [o for o, _, _ in records(plog)] == [0, 1, 2]  # nothing newer was mapped


def test_min_compaction_lag_respected(tmp_path: Path) -> None:
    cfg = LogConfig(
        cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.0, min_compaction_lag_ms=50_000
    )
    plog = open_log(tmp_path, cfg)
    put(plog, (b"k1", b"a1"), (b"k1", b"a2"), (b"k2", b"a3"), ts=NOW)  # 0-2
    plog.roll(NOW)
    put(plog, (b"k2", b"b1"), (b"k1", b"b2"), ts=NOW + 100_000)  # 3-4
    plog.roll(NOW)
    put(plog, (b"x", b"x"), ts=NOW + 200_000)  # 5, active
    # at NOW+120_000 segment 3 (largest ts NOW+100_001) is within the 50 s lag
    cleaner = clean(plog, NOW + 120_000)
    assert cleaner.checkpoints[KEY] == 3
    assert [o for o, _, _ in records(plog)] == [1, 2, 3, 4, 5]
    # once the lag has passed, segment 3 is cleaned and supersedes 1 and 2
    clean(plog, NOW + 150_002, cleaner)
    assert cleaner.checkpoints[KEY] == 5
    assert records(plog) == [(3, b"k2", b"b1"), (4, b"k1", b"b2"), (5, b"x", b"x")]
    assert_consistent(plog)


def test_dirty_ratio_threshold(tmp_path: Path) -> None:
    cfg = LogConfig(cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.5)
    plog = open_log(tmp_path, cfg)
    for i in range(20):
        put(plog, (b"k%d" % i, b"v" * 50))
    plog.roll(NOW)
    cleaner = clean(plog)  # everything dirty: ratio 1
    assert cleaner.checkpoints[KEY] == 20
    clean_size = plog.segments[0].size
    # a small dirty segment: ratio below 0.5 -> nothing happens
    for i in range(5):
        put(plog, (b"k%d" % i, b"w" * 50))
    plog.roll(NOW)
    ltc = log_to_clean(KEY, plog, cleaner.checkpoints[KEY], NOW)
    dirty = plog.segments[1].size
    assert (ltc.clean_bytes, ltc.cleanable_bytes) == (clean_size, dirty)
    assert ltc.cleanable_ratio == pytest.approx(dirty / (clean_size + dirty))
    assert ltc.cleanable_ratio < 0.5 and not ltc.cleanable
    scan = full_scan(plog.directory)
    assert cleaner.run({KEY: plog}, NOW) == 0
    assert full_scan(plog.directory) == scan and not cleaner.has_work
    # more dirty data: ratio above 0.5 -> cleaned
    for j in range(4):
        for i in range(5):
            put(plog, (b"k%d" % i, b"x%d" % j * 25))
        plog.roll(NOW)
    assert log_to_clean(KEY, plog, cleaner.checkpoints[KEY], NOW).cleanable_ratio > 0.5
    assert cleaner.run({KEY: plog}, NOW) > 0
    assert cleaner.checkpoints[KEY] == 45
    assert len(records(plog)) == 20


def test_max_compaction_lag_forces_a_clean(tmp_path: Path) -> None:
    cfg = LogConfig(
        cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=60_000
    )
    plog = open_log(tmp_path, cfg)
    for i in range(10):
        put(plog, (b"k%d" % i, b"v" * 50), ts=NOW)
    plog.roll(NOW)
    cleaner = clean(plog, NOW + 60_001)  # ratio 1 > 0.9 anyway
    put(plog, (b"k1", b"new"), ts=NOW + 100_000)
    plog.roll(NOW)
    ltc = log_to_clean(KEY, plog, cleaner.checkpoints[KEY], NOW + 100_000)
    assert not ltc.cleanable  # ratio far below 0.9, lag not reached
    assert cleaner.run({KEY: plog}, NOW + 100_000) == 0
    assert cleaner.run({KEY: plog}, NOW + 160_001) > 0  # first batch older than 60 s
    assert cleaner.checkpoints[KEY] == 11
    assert len(records(plog)) == 10


def test_only_compacted_logs_are_cleaned(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(min_cleanable_dirty_ratio=0.0))
    put(plog, (b"a", b"1"))
    put(plog, (b"a", b"2"))
    plog.roll(NOW)
    cleaner = clean(plog)
    assert cleaner.rounds_completed == 0 and len(records(plog)) == 2


# -- idempotent producers -------------------------------------------------------------------------


def test_idempotent_producer_state_survives_clean_and_reopen(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    put(plog, (b"a", b"1"), pid=7, epoch=0, seq=0)  # 0
    put(plog, (b"b", b"1"), (b"a", b"2"), pid=7, epoch=0, seq=1)  # 1-2, pid 7's last
    put(plog, (b"c", b"1"), pid=8, epoch=3, seq=0)  # 3
    put(plog, (b"c", b"2"), pid=8, epoch=3, seq=1)  # 4, pid 8's last
    plog.roll(NOW)
    put(plog, (b"a", b"3"), (b"b", b"3"), (b"c", b"3"))  # 5-7 supersede everything
    plog.roll(NOW)
    put(plog, (b"z", b"z"))  # 8, active
    clean(plog)
    hs = headers(plog)
    # pid 7's first batch and pid 8's first batch are gone; their last batches stay empty
    assert [(h.base_offset, h.last_offset, h.producer_id, h.records_count) for h in hs] == [
        (1, 2, 7, 0),
        (4, 4, 8, 0),
        (5, 7, -1, 3),
        (8, 8, -1, 1),
    ]
    assert hs[0].base_sequence == 1 and hs[0].last_sequence == 2 and hs[0].producer_epoch == 0
    assert_consistent(plog)
    # reopen without snapshots: the state is rebuilt from the log alone
    plog.close(snapshot=False)
    for name in os.listdir(plog.directory):
        if name.endswith(".producers"):
            os.unlink(plog.directory / name)
    plog = open_log(tmp_path, CFG, recovery_point=0)
    e7, e8 = plog.producer_entry(7), plog.producer_entry(8)
    assert e7 is not None and (e7.epoch, e7.last_seq) == (0, 2)
    assert e8 is not None and (e8.epoch, e8.last_seq) == (3, 1)
    with pytest.raises(OutOfOrderSequenceError):
        put(plog, (b"a", b"4"), pid=7, epoch=0, seq=4)
    assert put(plog, (b"a", b"4"), pid=7, epoch=0, seq=3) == 9


# -- crash safety ---------------------------------------------------------------------------------


def crash(plog: PartitionLog) -> None:
    plog._close_files()


def scan_bytes(d: Path) -> list[tuple[int, bytes]]:
    """(segment base, .log bytes) of every segment."""
    return [
        (int(n[:20]), (d / n).read_bytes()) for n in sorted(os.listdir(d)) if n.endswith(".log")
    ]


def twin_logs(tmp_path: Path) -> tuple[PartitionLog, PartitionLog]:
    """Two identical logs; the first one gets cleaned (the reference result)."""
    logs = []
    for name in ("ref", "crash"):
        plog = open_log(tmp_path / name, CFG)
        build_history(plog)
        logs.append(plog)
    clean(logs[0])
    assert [s.base_offset for s in logs[0].segments] == [0, 7]
    return logs[0], logs[1]


def test_leftover_cleaned_files_are_discarded(tmp_path: Path) -> None:
    _, plog = twin_logs(tmp_path)
    d = plog.directory
    before = scan_bytes(d)
    crash(plog)
    (d / "00000000000000000000.log.cleaned").write_bytes(b"garbage" * 20)
    (d / "00000000000000000000.index.cleaned").write_bytes(b"\x00" * 16)
    (d / "00000000000000000003.timeindex.cleaned").write_bytes(b"")
    plog = open_log(tmp_path / "crash", CFG, recovery_point=0)
    assert leftovers(d) == [] and scan_bytes(d) == before
    assert plog.log_end_offset == 9
    assert_consistent(plog)


@pytest.mark.parametrize("deleted", [(), (3,), (0, 3), (0, 3, 6)])
def test_swap_file_left_by_a_crash_completes_the_swap(
    tmp_path: Path, deleted: tuple[int, ...]
) -> None:
    ref, plog = twin_logs(tmp_path)
    d = plog.directory
    crash(plog)
    # the cleaned segment, committed as .swap; the old segments partly deleted
    shutil.copy(ref.directory / "00000000000000000000.log", d / "00000000000000000000.log.swap")
    shutil.copy(ref.directory / "00000000000000000000.index", d / "00000000000000000000.index.swap")
    for base in deleted:
        for ext in (".log", ".index", ".timeindex"):
            (d / f"{base:020d}{ext}").unlink()
    plog = open_log(tmp_path / "crash", CFG, recovery_point=0)
    assert leftovers(d) == []
    assert scan_bytes(d) == scan_bytes(ref.directory)
    assert plog.log_end_offset == ref.log_end_offset == 9
    assert records(plog) == records(ref)
    assert_consistent(plog)
    # also after a clean shutdown and a reopen that scans nothing
    plog.close()
    plog = open_log(tmp_path / "crash", CFG, clean=True)
    assert_consistent(plog)


class Crash(BaseException):
    """A simulated process death (not caught by anything)."""


class CrashingFileSystem(NoSyncFileSystem):
    """Dies at the n-th call of `op` whose path name ends with `suffix`."""

    def __init__(self, op: str, suffix: str, nth: int = 1) -> None:
        self.op, self.suffix, self.left = op, suffix, nth

    def _maybe_die(self, op: str, path: Path) -> None:
        if op == self.op and str(path).endswith(self.suffix):
            self.left -= 1
            if self.left == 0:
                raise Crash(f"{op} {path}")

    def rename(self, src: Path, dst: Path) -> None:
        self._maybe_die("rename", src)
        super().rename(src, dst)

    def unlink(self, path: Path) -> None:
        self._maybe_die("unlink", path)
        super().unlink(path)


@pytest.mark.parametrize(
    ("op", "suffix", "nth"),
    [
        ("unlink", ".log", 1),  # right after the commit point, nothing deleted yet
        ("unlink", ".timeindex", 2),  # part of the old segments deleted
        ("rename", ".index.swap", 1),  # everything deleted, nothing renamed back
        ("rename", ".log.swap", 1),  # the indexes already renamed, the .log not yet
    ],
)
def test_crash_during_the_swap_recovers(tmp_path: Path, op: str, suffix: str, nth: int) -> None:
    ref, _ = twin_logs(tmp_path)
    plog = open_log(tmp_path / "crash2", CFG, fs=CrashingFileSystem(op, suffix, nth))
    build_history(plog)
    with pytest.raises(Crash):
        clean(plog)
    crash(plog)
    assert any(n.endswith(".log.swap") for n in os.listdir(plog.directory))
    plog = open_log(tmp_path / "crash2", CFG, recovery_point=0)
    assert leftovers(plog.directory) == []
    assert scan_bytes(plog.directory) == scan_bytes(ref.directory)
    assert records(plog) == records(ref)
    assert plog.log_end_offset == 9
    assert_consistent(plog)


def test_crash_before_the_commit_point_keeps_the_old_segments(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG, fs=CrashingFileSystem("rename", ".log.cleaned"))
    build_history(plog)
    before = scan_bytes(plog.directory)
    with pytest.raises(Crash):
        clean(plog)
    crash(plog)
    plog = open_log(tmp_path, CFG, recovery_point=0)
    assert leftovers(plog.directory) == []
    assert scan_bytes(plog.directory) == before
    assert_consistent(plog)


# -- indexes, log end offset, grouping ------------------------------------------------------------


def test_index_lookups_agree_with_a_full_scan_after_cleaning(tmp_path: Path) -> None:
    size = len(build_batch([RecordSpec(b"k00", b"v" * 30, timestamp=NOW)]))
    cfg = LogConfig(
        cleanup_policy=("compact",),
        min_cleanable_dirty_ratio=0.0,
        segment_bytes=size * 6,
        index_interval_bytes=size,
    )
    plog = open_log(tmp_path, cfg)
    for i in range(60):
        put(plog, (b"k%02d" % (i % 13), b"v" * 30), ts=NOW + i)
    put(plog, (b"k%02d" % 99, b"v" * 30), ts=NOW + 99)
    assert len(plog.segments) == 11
    clean(plog)
    segs = plog.segments
    assert all(s.size <= cfg.segment_bytes for s in segs)
    assert any(len(s.index) for s in segs[:-1])
    assert_consistent(plog)
    assert len(records(plog)) == 14
    # every kept record is found by its offset and by its timestamp
    for off, _, _ in records(plog):
        assert [r.offset for r in decode_records(plog.read(off, max_bytes=1))].count(off) == 1
    for ts, (off, _, _) in zip(range(NOW + 47, NOW + 60), records(plog), strict=False):
        assert plog.offset_for_timestamp(ts) == (off, ts)
    plog.close()
    plog = open_log(tmp_path, cfg, clean=True)
    assert_consistent(plog)


def test_log_end_offset_never_changes(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(index_interval_bytes=0))
    put(plog, (b"a", b"1"))
    put(plog, (None, b"x"), (None, b"y"))  # 1-2: the last batch below the active segment
    plog.roll(NOW)  # the active segment is empty
    plog.update_config(CFG)
    assert plog.log_end_offset == 3
    clean(plog)
    assert plog.log_end_offset == 3
    assert [(h.base_offset, h.last_offset, h.records_count) for h in headers(plog)] == [
        (0, 0, 1),
        (1, 2, 0),
    ]
    crash(plog)
    plog = open_log(tmp_path, CFG, recovery_point=0)  # full recovery scan
    assert plog.log_end_offset == 3
    assert put(plog, (b"b", b"2")) == 3
    assert_consistent(plog)


def test_group_segments_respects_sizes(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    for i in range(6):
        put(plog, (b"k%d" % i, b"v" * 10))
        plog.roll(NOW)
    segs = plog.segments[:-1]
    one = segs[0].size
    groups = group_segments(segs, one * 2, 1 << 20, plog.log_end_offset)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 1], [2, 3], [4, 5]]
    groups = group_segments(segs, one * 2 - 1, 1 << 20, plog.log_end_offset)
    assert [len(g) for g in groups] == [1] * 6
    assert len(group_segments(segs, 1 << 30, 1 << 20, plog.log_end_offset)) == 1


# -- bounded steps, aborts, errors ----------------------------------------------------------------


def test_bounded_steps_give_the_same_result(tmp_path: Path) -> None:
    ref, _ = twin_logs(tmp_path)
    plog = open_log(tmp_path / "steps", CFG)
    build_history(plog)
    cleaner = LogCleaner(max_bytes_per_run=1)
    calls = 0
    while cleaner.has_work:
        cleaner.run({KEY: plog}, NOW)
        calls += 1
        assert calls < 100
    assert calls > 5  # one batch per step
    assert scan_bytes(plog.directory) == scan_bytes(ref.directory)
    assert cleaner.checkpoints[KEY] == 7


def test_map_limit_splits_the_round(tmp_path: Path) -> None:
    ref, _ = twin_logs(tmp_path)
    plog = open_log(tmp_path / "split", CFG)
    build_history(plog)
    cleaner = LogCleaner(max_map_entries=1)
    ltc = log_to_clean(KEY, plog, None, NOW)
    assert ltc.first_uncleanable_offset == 7
    seen: list[int] = []
    while cleaner.has_work:
        cleaner.run({KEY: plog}, NOW, max_bytes=1)
        cp = cleaner.checkpoints.get(KEY)
        if cp is not None and (not seen or seen[-1] != cp):
            seen.append(cp)
    # one segment mapped per round: rounds ending at 3, 6 and 7
    assert seen == [3, 6, 7] and cleaner.rounds_completed == 3
    assert records(plog) == records(ref)
    assert_consistent(plog)


def test_round_abandoned_when_the_log_changes(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    build_history(plog)
    cleaner = LogCleaner(max_bytes_per_run=1)
    for _ in range(6):  # mapping done (5 batches), the group is being written
        cleaner.run({KEY: plog}, NOW)
    assert cleaner.in_progress == KEY
    plog.truncate_to(5)  # segment 3 shrinks, segments 6.. go
    plog.high_watermark = plog.log_end_offset
    before = scan_bytes(plog.directory)
    cleaner.run({KEY: plog}, NOW, max_bytes=0)
    assert cleaner.in_progress is None and leftovers(plog.directory) == []
    assert scan_bytes(plog.directory) == before
    # a closed log is abandoned too
    plog2 = open_log(tmp_path / "b", CFG)
    build_history(plog2)
    cleaner = LogCleaner(max_bytes_per_run=1)
    for _ in range(8):
        cleaner.run({KEY: plog2}, NOW)
    assert cleaner.in_progress == KEY and leftovers(plog2.directory)
    plog2.close()
    cleaner.run({KEY: plog2}, NOW)
    assert cleaner.in_progress is None and leftovers(plog2.directory) == []


def test_corrupt_batch_marks_the_partition_uncleanable(tmp_path: Path) -> None:
    plog = open_log(tmp_path, CFG)
    build_history(plog)
    path = plog.segments[1].log_path
    data = bytearray(path.read_bytes())
    data[70] ^= 0x01  # payload of the first batch of segment 3: a CRC mismatch
    path.write_bytes(bytes(data))
    before = scan_bytes(plog.directory)
    cleaner = clean(plog)
    assert cleaner.uncleanable == {KEY} and cleaner.rounds_completed == 0
    assert leftovers(plog.directory) == [] and scan_bytes(plog.directory) == before
    assert cleaner.run({KEY: plog}, NOW) == 0 and not cleaner.has_work


# -- LogManager -----------------------------------------------------------------------------------


def test_log_manager_runs_the_cleaner_and_keeps_its_checkpoint(tmp_path: Path) -> None:
    fs = NoSyncFileSystem()
    mgr = LogManager([tmp_path], fs=fs, cleaner=LogCleaner(max_bytes_per_run=1 << 30))
    plog = mgr.create("offsets", 0, CFG, NOW)
    other = mgr.create("plain", 0, LogConfig(), NOW)
    for p in (plog, other):
        build_history(p)
    assert mgr.cleaner_busy
    reclaimed = mgr.run_cleaner(NOW)
    assert reclaimed > 0
    assert read_offset_checkpoint(fs, tmp_path / CLEANER_CHECKPOINT) == {("offsets", 0): 7}
    assert mgr.run_cleaner(NOW) == 0 and not mgr.cleaner_busy
    assert len(records(other)) == 9  # delete policy: untouched
    mgr.close()
    mgr = LogManager([tmp_path], fs=fs)
    mgr.load(lambda topic: CFG if topic == "offsets" else LogConfig(), NOW)
    assert mgr.cleaner.checkpoints == {("offsets", 0): 7}
    assert mgr.run_cleaner(NOW) == 0
    mgr.delete("offsets", 0)
    assert read_offset_checkpoint(fs, tmp_path / CLEANER_CHECKPOINT) == {}
    mgr.close()
