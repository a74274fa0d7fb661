"""Sparse offset and time indexes of one segment (Kafka's `OffsetIndex` / `TimeIndex`).

`.index` entries, 8 bytes, big-endian::

    int32 relative offset   (the batch's LAST offset - segment base offset)
    int32 file position     (where that batch starts in the .log)

`.timeindex` entries, 12 bytes, big-endian::

    int64 timestamp         (largest batch max timestamp seen so far in the segment)
    int32 relative offset   (last offset of the batch that carried that timestamp)

Entries are strictly increasing (offsets and positions; timestamps, with offsets
non-decreasing). A lookup returns the last entry at or below the key; the reader then scans
batch headers forward from the entry's position.

Differences from Kafka: no preallocation and no mmap. The file always holds exactly the
entries (appended with `os.write` on an O_APPEND fd, like the `.log`), and the entries are
also kept in memory in `array`s (4-8 bytes each) for `bisect` lookups. `max_bytes`
(segment.index.bytes) still bounds the entry count: a full index makes the segment roll.

File descriptors: lookups never touch the file, so its descriptor is opened on demand (the
first read, write or truncation) and closed again once nothing unsynced remains: after
`read_raw` when it opened it, and at `release` (the segment calls it after each fsync). A
segment thus holds one descriptor (its `.log`) unless entries were written since its last
flush, as Kafka holds one per segment (its indexes are mmapped). `dirty`: bytes written or
truncated since the last fsync; a dirty index keeps its descriptor until `flush`.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import ClassVar

from wirebroker.log.fs import APPEND_FLAGS, FileSystem, pread_exact, write_all

__all__ = ["OffsetIndex", "TimeIndex"]

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_INT32_MAX = 2**31 - 1


class _Index:
    """An index file and its entries in memory: two `array`s, one per field of `entry`,
    each named and typed by `columns` ((attribute, typecode) in entry order)."""

    entry: ClassVar[struct.Struct]
    columns: ClassVar[tuple[tuple[str, str], tuple[str, str]]]

    def __init__(self, fs: FileSystem, path: Path, base_offset: int, max_bytes: int) -> None:
        self.fs = fs
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(max_bytes // self.entry_size, 1)
        self.fd = -1
        self.dirty = False
        self._set_columns(*self._new_columns())

    @property
    def entry_size(self) -> int:
        return self.entry.size

    def _new_columns(self) -> tuple[array[int], array[int]]:
        (_, first), (_, second) = self.columns
        return array(first), array(second)

    def _set_columns(self, first: array[int], second: array[int]) -> None:
        self._first = first
        setattr(self, self.columns[0][0], first)
        setattr(self, self.columns[1][0], second)

    def __len__(self) -> int:
        return len(self._first)

    def _outside(self, first: int, second: int, limit: int | None) -> bool:
        raise NotImplementedError

    def _increasing(self, first: int, second: int, last_first: int, last_second: int) -> bool:
        raise NotImplementedError

    def load(self, limit: int | None) -> str | None:
        """Read the file into memory; a reason string if it fails the sanity check (a
        length that is not a multiple of the entry size, an entry outside the segment
        (`limit`: see the subclass), entries not increasing)."""
        raw = self.read_raw()
        if len(raw) % self.entry_size:
            return f"{self.path.name}: length {len(raw)} is not a multiple of {self.entry_size}"
        first, second = self._new_columns()
        for a, b in self.entry.iter_unpack(raw):
            if self._outside(a, b, limit):
                return f"{self.path.name}: entry ({a}, {b}) outside the segment"
            if first and not self._increasing(a, b, first[-1], second[-1]):
                return f"{self.path.name}: entries not increasing at ({a}, {b})"
            first.append(a)
            second.append(b)
        self._set_columns(first, second)
        return None

    @classmethod
    def encode(cls, entries: list[tuple[int, int]]) -> bytes:
        """Entries given as (first field, second field)."""
        pack = cls.entry.pack
        return b"".join([pack(a, b) for a, b in entries])

    def commit(self, entries: list[tuple[int, int]]) -> None:
        raise NotImplementedError

    def reset(self, entries: list[tuple[int, int]]) -> None:
        """Replace the whole index (file and memory) with `entries`."""
        self.truncate_file(0)
        self._set_columns(*self._new_columns())
        self.write_raw(self.encode(entries))
        self.commit(entries)

    def _open(self) -> int:
        if self.fd < 0:
            self.fd = self.fs.open(self.path, APPEND_FLAGS)
        return self.fd

    def create_empty(self) -> None:
        """Create the file empty (truncating a leftover), holding no descriptor afterwards:
        the caller makes the new directory entry durable (an empty file has no data)."""
        fd = self._open()
        try:
            if self.fs.fsize(fd):
                self.fs.ftruncate(fd, 0)
                self.dirty = True
        finally:
            self.release()

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    def set_max_bytes(self, max_bytes: int) -> None:
        self.max_entries = max(max_bytes // self.entry_size, 1)

    def read_raw(self) -> bytes:
        """The whole file (created empty when missing)."""
        was_open = self.fd >= 0
        fd = self._open()
        try:
            return pread_exact(self.fs, fd, self.fs.fsize(fd), 0)
        finally:
            if not was_open:
                self.release()

    def write_raw(self, data: bytes) -> None:
        """Append encoded entries to the file (in-memory arrays are updated by the caller)."""
        if data:
            fd = self._open()
            self.dirty = True
            write_all(self.fs, fd, data)

    def truncate_file(self, entries: int) -> None:
        fd = self._open()
        self.dirty = True
        self.fs.ftruncate(fd, entries * self.entry_size)

    def flush(self) -> None:
        """fsync what was written since the last flush (nothing to do when not dirty)."""
        if self.dirty:
            self.fs.fsync(self._open())
            self.dirty = False

    def release(self) -> None:
        """Close the descriptor unless unsynced writes need it (see the module docstring)."""
        if self.fd >= 0 and not self.dirty:
            fd, self.fd = self.fd, -1
            self.fs.close(fd)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            self.fs.close(fd)


class OffsetIndex(_Index):
    """Entries (relative offset, position): offsets >= 0, positions inside the log (below
    the `limit` given to `load`: the log size), both strictly increasing."""

    entry = _OFFSET_ENTRY
    columns = (("rel_offsets", "i"), ("positions", "i"))
    rel_offsets: array[int]
    positions: array[int]

    def _outside(self, first: int, second: int, limit: int | None) -> bool:
        return first < 0 or second < 0 or (limit is not None and second >= limit)

    def _increasing(self, first: int, second: int, last_first: int, last_second: int) -> bool:
        return first > last_first and second > last_second

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry whose offset <= `offset`; else (base, 0)."""
        rel = offset - self.base_offset
        if rel > _INT32_MAX:
            rel = _INT32_MAX
        i = bisect_right(self.rel_offsets, rel)
        if i == 0:
            return self.base_offset, 0
        return self.base_offset + self.rel_offsets[i - 1], self.positions[i - 1]

    def last_entry(self) -> tuple[int, int] | None:
        if not self.rel_offsets:
            return None
        return self.base_offset + self.rel_offsets[-1], self.positions[-1]

    def position_at_or_before(self, position: int) -> int:
        """The last entry's position <= `position` (a batch's start); else 0."""
        i = bisect_right(self.positions, position)
        return self.positions[i - 1] if i else 0

    def commit(self, entries: list[tuple[int, int]]) -> None:
        for r, p in entries:
            self.rel_offsets.append(r)
            self.positions.append(p)


class TimeIndex(_Index):
    """Entries (timestamp, relative offset): timestamps strictly increasing, offsets >= 0,
    non-decreasing and below the `limit` given to `load` (absolute) when there is one."""

    entry = _TIME_ENTRY
    columns = (("timestamps", "q"), ("rel_offsets", "i"))
    timestamps: array[int]
    rel_offsets: array[int]

    def _outside(self, first: int, second: int, limit: int | None) -> bool:
        return second < 0 or (limit is not None and self.base_offset + second >= limit)

    def _increasing(self, first: int, second: int, last_first: int, last_second: int) -> bool:
        return first > last_first and second >= last_second

    def lookup(self, timestamp: int) -> int:
        """Offset of the last entry whose timestamp <= `timestamp`; else the base offset."""
        i = bisect_right(self.timestamps, timestamp)
        if i == 0:
            return self.base_offset
        return self.base_offset + self.rel_offsets[i - 1]

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry."""
        if not self.timestamps:
            return None
        return self.timestamps[-1], self.base_offset + self.rel_offsets[-1]

    def last_timestamp(self) -> int:
        """The last entry's timestamp, -1 when empty. Kafka's maybeAppend rule: an entry is
        added only for a timestamp above this one."""
        return self.timestamps[-1] if self.timestamps else -1

    def commit(self, entries: list[tuple[int, int]]) -> None:
        for t, r in entries:
            self.timestamps.append(t)
            self.rel_offsets.append(r)
