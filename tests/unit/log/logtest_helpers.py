"""Shared helpers for the storage tests: batch builders, an independent full scan of a
partition directory, index-vs-scan consistency checks, and a fault-injecting FileSystem."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from protocol.records import BatchHeader, RecordSpec, build_batch, iter_batches, verify_crc
from wirebroker.log import LogConfig, OsFileSystem, PartitionLog

NOW = 1_700_000_000_000
TOPIC = "orders"


def batch(
    n: int = 1,
    *,
    ts: int = NOW,
    value: bytes = b"v" * 20,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    keys: bool = True,
    compression: int = 0,
    timestamps: list[int] | None = None,
) -> bytes:
    specs = [
        RecordSpec(
            key=(b"k%d" % i) if keys else None,
            value=value,
            timestamp=(timestamps[i] if timestamps else ts + i),
        )
        for i in range(n)
    ]
    return build_batch(
        specs,
        base_timestamp=timestamps[0] if timestamps else ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        compression=compression,
    )


class NoSyncFileSystem(OsFileSystem):
    """The real file system minus fsync (tests do not survive power loss; they run faster)."""

    def fsync(self, fd: int) -> None:
        pass

    def fsync_dir(self, path: Path) -> None:
        pass


def open_log(
    path: Path, config: LogConfig | None = None, *, now_ms: int = NOW, **kwargs: object
) -> PartitionLog:
    kwargs.setdefault("fs", NoSyncFileSystem())
    return PartitionLog.open(
        path / f"{TOPIC}-0",
        TOPIC,
        0,
        config or LogConfig(),
        now_ms=now_ms,
        **kwargs,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class ScannedBatch:
    segment_base: int
    position: int
    header: BatchHeader
    crc_ok: bool


def full_scan(directory: Path) -> list[ScannedBatch]:
    """Every batch of every .log in the directory, read straight from the files (no index)."""
    out = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".log"):
            continue
        data = (directory / name).read_bytes()
        base = int(name[:20])
        for pos, h in iter_batches(data):
            out.append(ScannedBatch(base, pos, h, verify_crc(data, pos, h)))
    return out


def assert_consistent(plog: PartitionLog) -> list[ScannedBatch]:
    """Index lookups, translate_offset and read() agree with a full scan of the files."""
    scanned = full_scan(plog.directory)
    assert all(b.crc_ok for b in scanned)
    expected_end = scanned[-1].header.next_offset if scanned else plog.segments[-1].base_offset
    assert plog.log_end_offset == expected_end
    by_segment: dict[int, list[ScannedBatch]] = {}
    for b in scanned:
        by_segment.setdefault(b.segment_base, []).append(b)
    prev_next = None
    for b in scanned:  # offsets strictly increasing across the log
        if prev_next is not None:
            assert b.header.base_offset >= prev_next
        prev_next = b.header.next_offset
    for seg in plog.segments:
        batches = by_segment.get(seg.base_offset, [])
        positions = {b.position: b for b in batches}
        assert seg.size == sum(b.header.size for b in batches)
        # every offset index entry points at a batch start with that last offset
        for rel, pos in zip(seg.index.rel_offsets, seg.index.positions, strict=True):
            assert pos in positions
            assert positions[pos].header.last_offset == seg.base_offset + rel
        # time index entries: (max timestamp so far, offset of the batch carrying it)
        for ts, rel in zip(seg.time_index.timestamps, seg.time_index.rel_offsets, strict=True):
            upto = [b for b in batches if b.header.last_offset <= seg.base_offset + rel]
            assert upto and max(b.header.max_timestamp for b in upto) == ts
        if batches:
            assert seg.max_timestamp == max(b.header.max_timestamp for b in batches)
        # lookups are exactly "the last entry at or below the key"
        entries = [
            (seg.base_offset + r, p)
            for r, p in zip(seg.index.rel_offsets, seg.index.positions, strict=True)
        ]
        tentries = [
            (t, seg.base_offset + r)
            for t, r in zip(seg.time_index.timestamps, seg.time_index.rel_offsets, strict=True)
        ]
        for off in range(
            seg.base_offset, (batches[-1].header.next_offset if batches else seg.base_offset) + 1
        ):
            below = [e for e in entries if e[0] <= off]
            assert seg.index.lookup(off) == (below[-1] if below else (seg.base_offset, 0))
        for ts, _ in tentries:
            for t in (ts - 1, ts, ts + 1):
                tbelow = [e for e in tentries if e[0] <= t]
                assert seg.time_index.lookup(t) == (tbelow[-1][1] if tbelow else seg.base_offset)
        for b in batches:
            h = b.header
            for off in sorted({h.base_offset, h.last_offset, (h.base_offset + h.last_offset) // 2}):
                found = seg.translate_offset(off)
                assert found is not None and found[0] == b.position, (off, found, b)
                if off >= plog.log_start_offset:
                    data = plog.read(off, max_bytes=1)
                    assert data == _batch_bytes(plog.directory, b)
    return scanned


def _batch_bytes(directory: Path, b: ScannedBatch) -> bytes:
    data = (directory / f"{b.segment_base:020d}.log").read_bytes()
    return data[b.position : b.position + b.header.size]


def offsets_of(data: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for _, h in iter_batches(data)]


class FaultyFileSystem(NoSyncFileSystem):
    """OsFileSystem whose writes/fsyncs/truncates fail on demand.

    `fail_write_after`: the next write to a path matching `match` writes only this many bytes
    and then raises OSError(ENOSPC) on the following call (a torn write).
    """

    def __init__(self) -> None:
        self.fd_paths: dict[int, Path] = {}
        self.fail_write_after: int | None = None
        self.write_match: Callable[[Path], bool] = lambda p: p.suffix == ".log"
        self.fail_truncate = False
        self.fail_fsync = False
        self.preads = 0

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        fd = super().open(path, flags, mode)
        self.fd_paths[fd] = Path(path)
        return fd

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        path = self.fd_paths.get(fd)
        if self.fail_write_after is not None and path is not None and self.write_match(path):
            n = self.fail_write_after
            if n > 0:
                self.fail_write_after = 0
                return super().write(fd, memoryview(data)[:n])
            self.fail_write_after = None
            raise OSError(28, "No space left on device (injected)")
        return super().write(fd, data)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        self.preads += 1
        return super().pread(fd, size, offset)

    def ftruncate(self, fd: int, length: int) -> None:
        if self.fail_truncate:
            raise OSError(5, "Input/output error (injected)")
        super().ftruncate(fd, length)

    def fsync(self, fd: int) -> None:
        if self.fail_fsync:
            raise OSError(5, "Input/output error (injected)")
