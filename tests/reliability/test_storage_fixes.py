"""The storage fixes found by the torn-file and disk-full runs; each test fails without its fix.

1. Reads CRC-check every batch they serve: damage below the recovery point (not scanned at
   start-up) is never served; a read stops before it (also across segments), a read that
   starts at it takes the log offline, and the next start truncates it.
2. A clean load validates (CRC included) the active segment's tail after its last index
   entry, and folds the tail's timestamps into the segment's max timestamp.
3. A clean load checks the time index's last entry against the log.
4. A roll that cannot write its producer snapshot or final time-index entry (a full disk)
   is undone and leaves the log online; `write_file_atomic` removes its temporary file.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from logscan import check_consistency, scan_partition
from torn import NoSyncFileSystem

from protocol.errors import ErrorCode
from protocol.records import RecordSpec, build_batch, iter_batches, verify_crc
from wirebroker.log import LogConfig, LogManager, PartitionLog, StorageError
from wirebroker.log.fs import write_file_atomic
from wirebroker.log.log_manager import CLEAN_SHUTDOWN_FILE

NOW = 1_700_000_000_000
TOPIC = "t"


class FaultFileSystem(NoSyncFileSystem):
    """Writes to paths matching `fail` write `partial` bytes once, then raise ENOSPC."""

    def __init__(self) -> None:
        self.fd_paths: dict[int, Path] = {}
        self.fail: Callable[[Path], bool] = lambda p: False
        self.partial = 0

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        fd = super().open(path, flags, mode)
        self.fd_paths[fd] = Path(path)
        return fd

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        if self.fail(self.fd_paths.get(fd, Path())):
            if self.partial:
                n, self.partial = self.partial, 0
                return super().write(fd, memoryview(data)[:n])
            raise OSError(errno.ENOSPC, "No space left on device (injected)")
        return super().write(fd, data)


def _batch(i: int) -> bytes:
    return build_batch([RecordSpec(key=b"k%d" % i, value=b"v" * 100, timestamp=NOW + i)])


def _manager(root: Path, config: LogConfig, fs: NoSyncFileSystem | None = None) -> LogManager:
    lm = LogManager([root], fs=fs or NoSyncFileSystem())
    lm.load(lambda t: config if t == TOPIC else None, NOW)
    return lm


def _get(lm: LogManager) -> PartitionLog:
    plog = lm.get(TOPIC, 0)
    assert plog is not None
    return plog


def _build(root: Path, config: LogConfig, n: int = 30) -> tuple[LogManager, PartitionLog]:
    lm = _manager(root, config)
    plog = lm.create(TOPIC, 0, config, NOW)
    for i in range(n):
        plog.append_as_leader(_batch(i), leader_epoch=0, now_ms=NOW)
    return lm, plog


def _segment_batches(path: Path) -> list[tuple[int, int, int]]:
    """(position, base offset, size) of each batch of a .log file."""
    return [(p, h.base_offset, h.size) for p, h in iter_batches(path.read_bytes())]


def _flip(path: Path, pos: int) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= 0x20
    path.write_bytes(bytes(data))


SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=200)


def test_corrupt_batch_below_the_recovery_point_is_never_served(tmp_path: Path) -> None:
    lm, plog = _build(tmp_path, SMALL)
    lm.close()
    pdir = tmp_path / f"{TOPIC}-0"
    logs = sorted(pdir.glob("*.log"))
    assert len(logs) >= 3
    batches = _segment_batches(logs[1])
    pos, damaged, _ = batches[2]
    _flip(logs[1], pos + 70)  # a payload byte: only the CRC shows it

    lm = _manager(tmp_path, SMALL)  # clean shutdown: nothing is scanned
    plog = _get(lm)
    assert plog.log_end_offset == 30
    start = batches[0][1]
    served = plog.read(start, max_bytes=1 << 20)  # stops before the damaged batch
    got = list(iter_batches(served))
    assert [h.base_offset for _, h in got] == [b for _, b, _ in batches[:2]]
    assert all(verify_crc(served, p, h) for p, h in got)
    with pytest.raises(StorageError) as exc_info:
        plog.read(damaged, max_bytes=1 << 20)
    assert exc_info.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert plog.offline and plog.recovery_point <= start
    lm.close()
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()

    lm = _manager(tmp_path, SMALL)  # unclean: the damaged segment is scanned and truncated
    plog = _get(lm)
    assert plog.log_end_offset == damaged
    assert [s.base_offset for s in plog.segments] == [int(p.name[:20]) for p in logs[:2]]
    check_consistency(plog, scan_partition(pdir))
    lm.close()


def test_read_spanning_segments_serves_what_lies_before_the_damage(tmp_path: Path) -> None:
    lm, _ = _build(tmp_path, SMALL)
    lm.close()
    logs = sorted((tmp_path / f"{TOPIC}-0").glob("*.log"))
    pos, damaged, _ = _segment_batches(logs[1])[0]  # the first batch of the second segment
    _flip(logs[1], pos + 70)
    lm = _manager(tmp_path, SMALL)
    plog = _get(lm)
    served = plog.read(0, max_bytes=1 << 20)  # a consumer's fetch from the start
    assert [h.next_offset for _, h in iter_batches(served)][-1] == damaged
    assert not plog.offline
    with pytest.raises(StorageError):
        plog.read(damaged, max_bytes=1 << 20)
    assert plog.offline
    lm.close()


def test_clean_load_checks_the_active_segment_tail(tmp_path: Path) -> None:
    lm, _ = _build(tmp_path, SMALL)
    lm.close()
    last = sorted((tmp_path / f"{TOPIC}-0").glob("*.log"))[-1]
    pos, base, _ = _segment_batches(last)[-1]
    _flip(last, pos + 70)
    lm = _manager(tmp_path, SMALL)
    plog = _get(lm)
    assert plog.log_end_offset == base == 29
    check_consistency(plog, scan_partition(plog.directory))
    lm.close()


def test_lying_clean_marker_keeps_timestamp_lookups_right(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=2000, index_interval_bytes=300)
    lm, plog = _build(tmp_path / "live", config, n=25)
    n = 25
    while True:  # the newest batch must lie after the active segment's last time entry
        seg = plog.segments[-1]
        entry = seg.time_index.last_entry()
        if entry is not None and entry[1] < plog.log_end_offset - 1:
            break
        plog.append_as_leader(_batch(n), leader_epoch=0, now_ms=NOW)
        n += 1
    lm.checkpoint()
    shutil.copytree(tmp_path / "live", tmp_path / "copy")  # a crash image...
    (tmp_path / "copy" / CLEAN_SHUTDOWN_FILE).write_bytes(b"{}")  # ...claiming a clean stop
    lm2 = _manager(tmp_path / "copy", config)
    copy = lm2.get(TOPIC, 0)
    assert copy is not None and copy.log_end_offset == n
    assert copy.offset_for_timestamp(NOW + n - 1) == (n - 1, NOW + n - 1)
    assert copy.max_timestamp() == (NOW + n - 1, n - 1)
    lm2.close()
    lm.close()


def test_zeroed_time_index_is_found_at_clean_load(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=2000, index_interval_bytes=1 << 20)  # one entry per segment
    lm, _ = _build(tmp_path, config)
    lm.close()
    first = tmp_path / f"{TOPIC}-0" / f"{0:020d}.timeindex"
    assert first.stat().st_size == 12
    first.write_bytes(b"\0" * 12)  # (timestamp 0, offset 0): monotonic and in range
    lm = _manager(tmp_path, config)
    plog = _get(lm)
    assert plog.segments[0].max_timestamp > 0
    assert plog.offset_for_timestamp(NOW + 3) == (3, NOW + 3)
    check_consistency(plog, scan_partition(plog.directory))
    lm.close()


def _append_until_failure(plog: PartitionLog, start: int) -> int:
    for i in range(start, start + 40):
        try:
            plog.append_as_leader(_batch(i), leader_epoch=0, now_ms=NOW)
        except StorageError:
            return i
    raise AssertionError("no append failed: the roll was never attempted")


def test_roll_that_cannot_write_its_snapshot_keeps_the_log_online(tmp_path: Path) -> None:
    fs = FaultFileSystem()
    lm = _manager(tmp_path, SMALL, fs)
    plog = lm.create(TOPIC, 0, SMALL, NOW)
    fs.fail = lambda p: p.name.endswith(".producers.tmp")
    fs.partial = 7
    failed_at = _append_until_failure(plog, 0)
    assert not plog.offline
    assert plog.log_end_offset == failed_at and len(plog.segments) == 1
    assert not [p for p in os.listdir(plog.directory) if p.endswith(".tmp")]
    fs.fail = lambda p: False  # space again
    r = plog.append_as_leader(_batch(failed_at), leader_epoch=0, now_ms=NOW)
    assert r.first_offset == failed_at and len(plog.segments) == 2
    check_consistency(plog, scan_partition(plog.directory))
    lm.close()


def test_roll_that_cannot_write_its_time_index_entry_is_undone(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=2000, index_interval_bytes=1 << 20)  # roll writes only
    fs = FaultFileSystem()
    lm = _manager(tmp_path, config, fs)
    plog = lm.create(TOPIC, 0, config, NOW)
    fs.fail = lambda p: p.suffix == ".timeindex"
    fs.partial = 5
    failed_at = _append_until_failure(plog, 0)
    assert not plog.offline and len(plog.segments) == 1
    assert (plog.directory / f"{0:020d}.timeindex").stat().st_size == 0
    fs.fail = lambda p: False
    plog.append_as_leader(_batch(failed_at), leader_epoch=0, now_ms=NOW)
    assert len(plog.segments) == 2
    lm.close()
    lm = _manager(tmp_path, config)
    plog2 = lm.get(TOPIC, 0)
    assert plog2 is not None and plog2.log_end_offset == failed_at + 1
    check_consistency(plog2, scan_partition(plog2.directory))
    lm.close()


def test_write_file_atomic_removes_its_temporary_file(tmp_path: Path) -> None:
    fs = FaultFileSystem()
    target = tmp_path / "checkpoint"
    write_file_atomic(fs, target, b"old")
    fs.fail = lambda p: p.name.endswith(".tmp")
    fs.partial = 2
    with pytest.raises(OSError):
        write_file_atomic(fs, target, b"new contents")
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]
    assert target.read_bytes() == b"old"
