"""The aborted transaction index of one segment: `<base>.txnindex` (Kafka's `TransactionIndex`).

Byte layout (Kafka's, big endian), one 34-byte entry per ABORT marker written to the
segment, in marker offset order, back to back, no header::

    offset  size  field
     0       2    version            int16, 0
     2       8    producer_id        int64
    10       8    first_offset       int64  first offset of the aborted transaction (may lie
                                            in an earlier segment)
    18       8    last_offset        int64  offset of the ABORT marker (in this segment)
    26       8    last_stable_offset int64  the LSO just after the marker: the first offset
                                            of the oldest other ongoing transaction, else
                                            last_offset + 1

As in Kafka the file is created lazily, by the first entry (creating a partition costs no
extra file): a missing file is an empty index. A torn file (a trailing partial entry, an
unknown version) is flagged `needs_rebuild` on open and the loader rebuilds it from the log,
as it does for every segment it recovers after an unclean shutdown.

The entries are small and rare (one per aborted transaction): they are kept in memory; an
append writes the 34 bytes with `os.write` to the end of the file (opened per write, O_APPEND),
a truncation rewrites the file. `flush` fsyncs when written since the last flush.
All file access through the `FileSystem` seam; OSError propagates.

`collect(fetch_offset, upper_bound)` is Kafka's `collectAbortedTxns`: the entries with
last_offset >= fetch_offset and first_offset < upper_bound, and whether the search is
complete (some entry's last_stable_offset >= upper_bound: no later segment can hold an
aborted transaction that started below the bound).
"""

from __future__ import annotations

import os
import struct
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from wirebroker.log.fs import FileSystem, read_file, write_all, write_file

__all__ = ["ENTRY_SIZE", "AbortedTxn", "TxnIndex"]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )

    @staticmethod
    def decode_all(data: bytes) -> tuple[list[AbortedTxn], bool]:
        """(entries, whether the bytes were well formed: whole entries of version 0)."""
        whole = len(data) - len(data) % ENTRY_SIZE
        out: list[AbortedTxn] = []
        for pos in range(0, whole, ENTRY_SIZE):
            version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
            if version != VERSION:
                return out, False
            out.append(AbortedTxn(pid, first, last, lso))
        return out, whole == len(data)


class TxnIndex:
    """One segment's aborted transactions (see the module doc)."""

    def __init__(self, fs: FileSystem, path: Path, *, create: bool) -> None:
        self.fs = fs
        self.path = path
        self.entries: list[AbortedTxn] = []
        self.needs_rebuild = False
        self.dirty = False
        if create:
            return
        data = read_file(fs, path)
        if data is None:
            return
        self.entries, ok = AbortedTxn.decode_all(data)
        if not ok:
            self.needs_rebuild = True

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, entry: AbortedTxn) -> None:
        """Add an entry (its last offset must not be below the previous one's)."""
        if self.entries and entry.last_offset < self.entries[-1].last_offset:
            raise ValueError(
                f"{self.path.name}: aborted txn at {entry.last_offset} before "
                f"{self.entries[-1].last_offset}"
            )
        fd = self.fs.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            write_all(self.fs, fd, entry.encode())
        finally:
            self.fs.close(fd)
        self.entries.append(entry)
        self.dirty = True

    def reset(self, entries: list[AbortedTxn] | None = None) -> None:
        """Replace every entry (rebuild, truncation, cleaner copy) and rewrite the file."""
        self.entries = list(entries or [])
        self.needs_rebuild = False
        if not self.entries:
            self.delete()
            self.dirty = False
            return
        write_file(self.fs, self.path, b"".join(e.encode() for e in self.entries))
        self.dirty = True

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or above `offset`."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) != len(self.entries):
            self.reset(keep)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Kafka's collectAbortedTxns (see the module doc): (entries, complete)."""
        out = []
        for e in self.entries:
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
                out.append(e)
            if e.last_stable_offset >= upper_bound:
                return out, True
        return out, False

    def rename(self, target: Path) -> None:
        """Rename the file (when there is one) to `target`."""
        with suppress(FileNotFoundError):
            self.fs.rename(self.path, target)
        self.path = target

    def flush(self) -> None:
        if not self.dirty:
            return
        fd = self.fs.open(self.path, os.O_WRONLY | os.O_CREAT)
        try:
            self.fs.fsync(fd)
        finally:
            self.fs.close(fd)
        self.dirty = False

    def delete(self) -> None:
        with suppress(FileNotFoundError):
            self.fs.unlink(self.path)
