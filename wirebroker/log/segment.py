"""One log segment: `<base>.log` + `.index` + `.timeindex` + `.txnindex` (Kafka's `LogSegment`).

The `.txnindex` (txn_index.py) lists the transactions aborted by ABORT markers of this
segment; it is created empty with the segment, truncated, renamed and deleted with it.

File names are the segment's base offset zero-padded to 20 digits. The `.log` holds record
batches exactly as stored (broker-assigned base offset and leader epoch patched in), back to
back. It is opened O_APPEND and written with `os.write` (through the `FileSystem` seam), so
an append's bytes are in the kernel before `append` returns; `flush` fsyncs the three files.

In-memory state (rebuilt on load/recovery)::

    size                           bytes in the .log
    next_offset                    offset after the last batch (exact for the active segment;
                                   for older segments loaded without a scan: the next
                                   segment's base offset, an upper bound)
    max_timestamp, offset_of_max_timestamp
                                   largest batch max timestamp and the last offset of the
                                   batch carrying it (-1, -1 when none)
    first_batch_timestamp          max timestamp of the first batch (time-based roll)
    created_ms                     now_ms when created or loaded (roll for timestamp-less data)
    last_modified_ms               now_ms of the last append (file mtime after a load): the
                                   retention age of a segment without timestamps
    bytes_since_last_index_entry   index entry spacing (index.interval.bytes)
    recent batches                 (last offset, position, header) of the last RECENT_BATCHES
                                   batches appended since the segment was opened (none after
                                   a truncation): `translate_offset` finds an offset among them
                                   without reading the file. Fetches from followers and
                                   consumers at the log end ask for exactly these offsets;
                                   without them every such fetch walks the batch headers from
                                   the last offset-index entry (up to index.interval.bytes of
                                   61-byte preads: dozens for small batches).

Index entries follow Kafka's `LogSegment.append`: for each batch, first fold its max
timestamp into the running maximum, then, when more than `index.interval.bytes` were
appended since the last entry, add (batch last offset -> batch position) to the offset index
and (max timestamp so far -> its offset) to the time index (only if the timestamp grew).
When a segment stops being active (roll, close) and after recovery, a final time-index entry
records the segment's max timestamp, so loading an older segment does not need a scan.

Append is all-or-nothing: if writing the .log or an index fails, all three files are
truncated back to their previous lengths and the OSError propagates; if that rollback fails
too, `RollbackFailed` is raised and the owner must take the log offline.

Recovery (`recover`) walks the .log from position 0 in 1 MiB windows and stops at the first
byte that is not a sane batch: fewer than 61 bytes left, a header that does not parse (magic
!= 2, batch length < 49), a batch running past the end of the file, a base offset below the
previous batch's next offset (or the segment base), a relative offset beyond int32, or a
CRC-32C mismatch (streamed for batches larger than the window). The file is truncated there
and both indexes are rebuilt from the valid batches.

Loading without recovery (`load_indexes` + `read_next_offset` for the last segment) checks
the indexes' last entries against the log and validates (CRC included) the batches after
the last offset-index entry of the last segment. Reads (`read`, `read_batch`) check the CRC
of every batch they return and raise `CorruptSegment` instead of returning a damaged one.
"""

from __future__ import annotations

import logging
import re
import zlib
from bisect import bisect_left
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

from protocol.crc32c import crc32c
from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    InvalidBatch,
    parse_header,
    verify_crc,
)
from wirebroker.log.config import LogConfig
from wirebroker.log.file_slice import FileSlice
from wirebroker.log.fs import APPEND_FLAGS, FileSystem, OsFileSystem, pread_exact, write_all
from wirebroker.log.index import OffsetIndex, TimeIndex
from wirebroker.log.txn_index import TxnIndex

__all__ = [
    "SEGMENT_SUFFIXES",
    "CorruptSegment",
    "RollbackFailed",
    "Segment",
    "parse_segment_file_name",
    "segment_file_name",
]

log = logging.getLogger(__name__)

INT32_MAX = 2**31 - 1
#: the files of one segment, each `<20-digit base offset><suffix>`
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")
_FILE_NAME_RE = re.compile(r"(\d{20})(\..+)")
SCAN_WINDOW = 1 << 20
#: Batches whose positions a segment remembers (see "recent batches" above).
RECENT_BATCHES = 64
#: `Segment.slice` reads at most this many batch headers to bound a slice, from the offset
#: index's entry before its end (entries are `index.interval.bytes` apart, 4 KiB by default).
SLICE_SCAN_HEADERS = 64
_CRC_START = 21

BatchCallback = Callable[[BatchHeader], None]


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_segment_file_name(name: str) -> tuple[int, str] | None:
    """(base offset, suffix) of a `segment_file_name` ("00000000000000000042.log" ->
    (42, ".log")), else None."""
    m = _FILE_NAME_RE.fullmatch(name)
    return None if m is None else (int(m.group(1)), m.group(2))


class CorruptSegment(Exception):
    """Stored bytes that do not parse as batches where they should."""


class RollbackFailed(Exception):
    """An append failed and truncating the files back failed too: the segment is unusable."""


class Segment:
    def __init__(
        self,
        fs: FileSystem,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        *,
        create: bool,
        suffix: str = "",
    ) -> None:
        """`suffix` is appended to the three file names (the log cleaner writes its output
        segment as `<base>.log.cleaned` etc., see `rename_files`)."""
        self.fs = fs
        self.base_offset = base_offset
        self.log_path = directory / (segment_file_name(base_offset, ".log") + suffix)
        self.index_interval_bytes = config.index_interval_bytes
        self.fd = -1
        closers: list[Callable[[], object]] = []
        try:
            fd = self.fd = fs.open(self.log_path, APPEND_FLAGS)
            closers.append(lambda: fs.close(fd))
            index_name = segment_file_name(base_offset, ".index") + suffix
            self.index = OffsetIndex(
                fs, directory / index_name, base_offset, config.segment_index_bytes
            )
            closers.append(self.index.close)
            time_name = segment_file_name(base_offset, ".timeindex") + suffix
            self.time_index = TimeIndex(
                fs, directory / time_name, base_offset, config.segment_index_bytes
            )
            closers.append(self.time_index.close)
            txn_name = segment_file_name(base_offset, ".txnindex") + suffix
            self.txn_index = TxnIndex(fs, directory / txn_name, create=create)
            if create:
                fs.ftruncate(self.fd, 0)
                self.index.create_empty()
                self.time_index.create_empty()
                self.size = 0
                self.last_modified_ms = now_ms
            else:
                self.size = fs.fsize(self.fd)
                self.last_modified_ms = fs.mtime_ms(self.log_path)
        except BaseException:
            for close in closers:
                _swallow(close)
            raise
        self._recent: list[tuple[int, int, BatchHeader]] = []
        #: bumped by every truncation: a `FileSlice` of an older generation is void
        self.generation = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.first_batch_timestamp: int | None = None
        self.created_ms = now_ms
        self.bytes_since_last_index_entry = 0
        self.dirty = create

    def __repr__(self) -> str:
        return f"Segment({self.base_offset}, size={self.size}, next={self.next_offset})"

    # -- loading ------------------------------------------------------------------------------
    def load_indexes(self, offset_limit: int | None) -> str | None:
        """Load both index files; a reason string when either fails its sanity check.

        Also checks that the last offset-index entry points at a batch whose last offset is
        the entry's offset, and that the time index's last entry names a batch of the log
        (that batch's last offset and max timestamp: an entry beyond the log or a zeroed one
        would hide the segment from timestamp lookups and retention), then takes the
        segment's max timestamp from that entry (written at roll/close/recovery).
        """
        reason = self.index.load(self.size) or self.time_index.load(offset_limit)
        if reason is not None:
            return reason
        last = self.index.last_entry()
        if last is not None:
            h = self._header_at(last[1])
            if h is None or h.last_offset != last[0]:
                return f"{self.index.path.name}: last entry {last} does not match the log"
        if self.size > 0:
            if len(self.time_index) == 0:
                return f"{self.time_index.path.name}: empty for a non-empty segment"
            first = self._header_at(0)
            if first is None:
                return f"{self.log_path.name}: no valid batch at position 0"
            self.first_batch_timestamp = first.max_timestamp
        te = self.time_index.last_entry()
        if te is not None:
            try:
                found = self.translate_offset(te[1])
            except CorruptSegment as exc:
                return f"{self.time_index.path.name}: last entry {te}: {exc}"
            if found is None or (found[1].last_offset, found[1].max_timestamp) != (te[1], te[0]):
                return f"{self.time_index.path.name}: last entry {te} does not match the log"
            self.max_timestamp, self.offset_of_max_timestamp = te
        return None

    def read_next_offset(self) -> int:
        """Validate the batches from the last offset-index entry to the end (headers and
        CRCs: the tail is where a crash or a lying clean-shutdown marker leaves damage);
        sets and returns next_offset and folds the tail's timestamps into max_timestamp
        (the time index only covers batches up to its last entry).

        Raises CorruptSegment when a batch there is torn, unparsable or fails its CRC.
        """
        last = self.index.last_entry()
        pos = last[1] if last is not None else 0
        next_offset = self.base_offset
        scanner = _Scanner(self, verify=True, start=pos)
        for _, h in scanner:
            next_offset = h.next_offset
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.last_offset
        if scanner.end != self.size:
            raise CorruptSegment(f"{self.log_path.name}: bad batch at position {scanner.end}")
        self.next_offset = next_offset
        return next_offset

    def recover(self, on_batch: BatchCallback | None = None) -> int:
        """Validate every batch, truncate at the first bad byte, rebuild both indexes.

        Calls `on_batch` with each valid batch's header in order. Returns the bytes removed.
        """
        scanner = _Scanner(self, verify=True)
        builder = _IndexBuilder(self)
        for pos, h in scanner:
            builder.add(pos, h)
            if on_batch is not None:
                on_batch(h)
        truncated = self.size - scanner.end
        if truncated:
            log.warning(
                "%s: truncating %d invalid bytes at position %d",
                self.log_path,
                truncated,
                scanner.end,
            )
            self._recent.clear()
            self.generation += 1
            self.fs.ftruncate(self.fd, scanner.end)
            self.size = scanner.end
        builder.finish(final_time_entry=True)
        self.txn_index.needs_rebuild = True  # the loader rebuilds it from the batches
        self.dirty = True
        return truncated

    def scan_headers(self, on_batch: BatchCallback, from_offset: int | None = None) -> None:
        """Call `on_batch` with every batch header (no CRC checks, no changes), starting at
        the batch holding `from_offset` when given (found through the offset index). A
        header that does not parse ends the walk (logged)."""
        self.scan_positions(lambda _pos, h: on_batch(h), from_offset)

    def scan_positions(
        self, on_batch: Callable[[int, BatchHeader], None], from_offset: int | None = None
    ) -> None:
        """`scan_headers` with each batch's position too (`on_batch(pos, header)`)."""
        start = 0
        if from_offset is not None and from_offset > self.base_offset:
            try:
                found = self.translate_offset(from_offset)
                if found is None:
                    return
                start = found[0]
            except CorruptSegment:
                start = 0
        scanner = _Scanner(self, verify=False, start=start)
        for pos, h in scanner:
            on_batch(pos, h)
        if scanner.end != self.size:
            log.warning("%s: unreadable batch at position %d", self.log_path, scanner.end)

    # -- appending ----------------------------------------------------------------------------
    def should_roll(
        self,
        config: LogConfig,
        jitter_ms: int,
        messages_size: int,
        max_timestamp: int,
        max_offset: int,
        now_ms: int,
    ) -> bool:
        """Kafka's `LogSegment.shouldRoll`."""
        reached_roll_ms = self.time_waited_for_roll(now_ms, max_timestamp) > (
            config.segment_ms - jitter_ms
        )
        return (
            self.size > config.segment_bytes - messages_size
            or (self.size > 0 and reached_roll_ms)
            or self.index.is_full
            or self.time_index.is_full
            or max_offset - self.base_offset > INT32_MAX
        )

    def time_waited_for_roll(self, now_ms: int, max_timestamp: int) -> int:
        """Since the first batch, by batch timestamps when it had one; else wall time since
        the segment was created (Kafka's rule)."""
        if self.first_batch_timestamp is not None and self.first_batch_timestamp >= 0:
            return max_timestamp - self.first_batch_timestamp
        return now_ms - self.created_ms

    def append(
        self,
        buf: bytes | bytearray | memoryview,
        batches: list[tuple[int, BatchHeader]],
        now_ms: int,
    ) -> None:
        """Append `buf` (the batches, already stamped) and their index entries.

        `batches` lists (position in buf, header). All-or-nothing: see the module doc.
        """
        old_size = self.size
        old_index, old_time = len(self.index), len(self.time_index)
        builder = _IndexBuilder(self, start=True)
        for rel_pos, h in batches:
            builder.add(old_size + rel_pos, h)
        try:
            write_all(self.fs, self.fd, buf)
            self.index.write_raw(OffsetIndex.encode(builder.index_entries))
            self.time_index.write_raw(TimeIndex.encode(builder.time_entries))
        except OSError:
            try:
                self.fs.ftruncate(self.fd, old_size)
                self.index.truncate_file(old_index)
                self.time_index.truncate_file(old_time)
            except OSError as exc:
                raise RollbackFailed(str(exc)) from exc
            raise
        if old_size == 0 and batches:
            self.first_batch_timestamp = batches[0][1].max_timestamp
        builder.commit()
        recent = self._recent
        recent.extend((h.last_offset, old_size + rel_pos, h) for rel_pos, h in batches)
        if len(recent) > 2 * RECENT_BATCHES:
            del recent[:-RECENT_BATCHES]
        self.size = old_size + len(buf)
        self.last_modified_ms = now_ms
        self.dirty = True

    def on_become_inactive(self) -> None:
        """Record the max timestamp as a final time-index entry (roll and close).

        All or nothing: on OSError the time index is truncated back and the OSError
        propagates (`RollbackFailed` if the truncation fails too)."""
        self._recent.clear()  # fetches at the log end read the next segment now
        if (
            self.max_timestamp > self.time_index.last_timestamp()
            and self.offset_of_max_timestamp >= self.base_offset
        ):
            entry = [(self.max_timestamp, self.offset_of_max_timestamp - self.base_offset)]
            try:
                self.time_index.write_raw(TimeIndex.encode(entry))
            except OSError:
                try:
                    self.time_index.truncate_file(len(self.time_index))
                except OSError as exc:
                    raise RollbackFailed(str(exc)) from exc
                raise
            self.time_index.commit(entry)
            self.dirty = True

    # -- reading ------------------------------------------------------------------------------
    def _header_at(self, pos: int) -> BatchHeader | None:
        if pos < 0 or self.size - pos < BATCH_HEADER_SIZE:
            return None
        data = pread_exact(self.fs, self.fd, BATCH_HEADER_SIZE, pos)
        try:
            return parse_header(data)
        except InvalidBatch:
            return None

    def header_at(self, pos: int) -> BatchHeader:
        h = self._header_at(pos)
        if h is None:
            raise CorruptSegment(f"{self.log_path.name}: no valid batch header at {pos}")
        return h

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch whose last offset >= `offset`, or None.

        Among the recent batches when the first of them starts at or below `offset`; else
        starts at the offset index's entry and scans headers forward (61-byte preads). If
        what the index points at does not look right, scans again from position 0.
        """
        recent = self._recent
        if recent and recent[0][2].base_offset <= offset <= recent[-1][0]:
            _last, pos, h = recent[bisect_left(recent, offset, key=_last_offset)]
            return pos, h
        _, start = self.index.lookup(offset)
        try:
            found = self._scan_for(offset, start)
            if start == 0 or found is None or found[1].base_offset <= offset:
                return found
        except CorruptSegment:
            if start == 0:
                raise
        log.warning("%s: offset index disagrees with the log near offset %d", self.log_path, offset)
        return self._scan_for(offset, 0)

    def _scan_for(self, offset: int, pos: int) -> tuple[int, BatchHeader] | None:
        while pos < self.size:
            h = self.header_at(pos)
            if h.last_offset >= offset:
                return pos, h
            pos += h.size
        return None

    def batches_from(self, pos: int) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `pos` (61-byte preads)."""
        while pos < self.size:
            h = self.header_at(pos)
            yield pos, h
            pos += h.size

    def read_batch(self, pos: int, h: BatchHeader) -> bytes:
        """The whole batch at `pos`; CorruptSegment when it is short or fails its CRC."""
        data = pread_exact(self.fs, self.fd, h.size, pos)
        if len(data) != h.size:
            raise CorruptSegment(f"{self.log_path.name}: short batch at {pos}")
        if not verify_crc(data, 0, h):
            raise CorruptSegment(f"{self.log_path.name}: CRC mismatch in the batch at {pos}")
        return data

    def read(
        self, pos: int, max_bytes: int, max_offset: int, min_one_batch: bool
    ) -> tuple[bytes, bool]:
        """Whole batches from `pos` within `max_bytes`, none with base offset >= max_offset.

        With `min_one_batch`, the first batch is returned even when larger than max_bytes.
        Returns (data, stop): stop is False only when the segment's end was reached with
        room to spare, i.e. the caller may continue in the next segment. Every batch
        returned passes its CRC check: a damaged batch ends the read before it (stop), and
        raises CorruptSegment when it is the first one.
        """
        avail = self.size - pos
        if avail <= 0:
            return b"", False
        want = min(avail, max_bytes)
        data = pread_exact(self.fs, self.fd, want, pos) if want >= BATCH_HEADER_SIZE else b""
        p = 0
        while len(data) - p >= BATCH_HEADER_SIZE:
            try:
                h = parse_header(data, p)
            except InvalidBatch as exc:
                if p:  # serve the good batches before it; the next read starts here
                    return data[:p], True
                raise CorruptSegment(f"{self.log_path.name}: {exc}") from exc
            if h.base_offset >= max_offset:
                return data[:p], True
            if h.size > len(data) - p:
                break
            if not verify_crc(data, p, h):
                if p:
                    return data[:p], True
                raise CorruptSegment(
                    f"{self.log_path.name}: CRC mismatch in the batch at {pos + p}"
                )
            p += h.size
        if p == 0:
            if not min_one_batch:
                return b"", True
            h = self.header_at(pos)
            if h.base_offset >= max_offset:
                return b"", True
            return self.read_batch(pos, h), True
        return (data if p == len(data) else data[:p]), p < avail

    def slice(
        self, pos: int, max_bytes: int, max_offset: int, min_one_batch: bool
    ) -> tuple[FileSlice | None, bool] | None:
        """`read` as a `FileSlice` (no bytes read, no CRC checked: see file_slice.py), or
        None when that is not cheap -- the file system is not the real one (a test's, whose
        faults sendfile would bypass) or the batch at `pos` does not parse -- and the caller
        should `read`.

        Returns (slice, stop) with read's `stop`; (None, stop) when nothing is to be sent.
        The slice ends at a batch boundary found without walking every batch from `pos`: the
        offset index's last entry at or before the byte limit (and before `max_offset`)
        is a batch's start, so only the headers from there on are read (none at all when
        they are among the recent batches); at most SLICE_SCAN_HEADERS of them, the slice
        ending where the walk stopped (a shorter answer: the client asks again)."""
        if not isinstance(self.fs, OsFileSystem):
            return None
        if self.size - pos <= 0:
            return None, False
        end = _slice_end(self, pos, min(pos + max_bytes, self.size), max_offset)
        if end is None:
            return None
        if end == pos:
            if not min_one_batch:
                return None, True
            h = next(self._headers_from(pos))[0]
            if h is None or h.size > self.size - pos:
                return None
            if h.base_offset >= max_offset:
                return None, True
            end = pos + h.size
        return FileSlice(self, pos, end - pos), end < self.size

    def _headers_from(self, pos: int) -> Iterator[tuple[BatchHeader | None, bool]]:
        """(header, read from the file) of each batch from `pos` on: from the recent batches
        when `pos` is one of theirs, then read (None for one that does not parse)."""
        recent = self._recent
        if recent and recent[0][1] <= pos:
            i = bisect_left(recent, pos, key=_position)
            if i < len(recent) and recent[i][1] == pos:
                for _last, _pos, h in recent[i:]:
                    yield h, False
                pos = recent[-1][1] + recent[-1][2].size
        while True:
            found = self._header_at(pos)
            yield found, True
            if found is None:
                return
            pos += found.size

    def largest_timestamp(self) -> int:
        """Retention age reference: the max timestamp, else the last modification time."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    # -- truncation, flush, close -------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset >= `offset` (a batch straddling `offset` goes
        entirely); rebuild the indexes. Returns the bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        pos = found[0]
        removed = self.size - pos
        self._recent.clear()
        self.generation += 1
        self.fs.ftruncate(self.fd, pos)
        self.size = pos
        self.rebuild_indexes()
        self.txn_index.truncate_to(found[1].base_offset)
        return removed

    def rebuild_indexes(self) -> None:
        """Rebuild both indexes from a header walk (no CRC checks, nothing truncated)."""
        scanner = _Scanner(self, verify=False)
        builder = _IndexBuilder(self)
        for pos, h in scanner:
            builder.add(pos, h)
        if scanner.end != self.size:
            raise CorruptSegment(f"{self.log_path.name}: unreadable batch at {scanner.end}")
        builder.finish(final_time_entry=False)
        self.dirty = True

    def flush(self) -> None:
        """fsync the three files when written since the last flush, then let the indexes
        close their descriptors (reopened by the next index write: see `index.py`)."""
        if self.dirty:
            self.fs.fsync(self.fd)
            self.index.flush()
            self.time_index.flush()
            self.dirty = False
        self.txn_index.flush()
        self.index.release()
        self.time_index.release()

    def set_index_max_bytes(self, max_bytes: int) -> None:
        self.index.set_max_bytes(max_bytes)
        self.time_index.set_max_bytes(max_bytes)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            _swallow(lambda: self.fs.close(fd))
        _swallow(self.index.close)
        _swallow(self.time_index.close)

    def rename_files(self, suffix: str) -> None:
        """Rename the three files to `<base>.<ext><suffix>` ("" gives the live names); open
        descriptors stay valid. Index files first, the .log last: crash recovery keys on the
        .log's name (see cleaner.py)."""
        directory = self.log_path.parent
        for idx, ext in ((self.index, ".index"), (self.time_index, ".timeindex")):
            target = directory / (segment_file_name(self.base_offset, ext) + suffix)
            self.fs.rename(idx.path, target)
            idx.path = target
        txn_target = directory / (segment_file_name(self.base_offset, ".txnindex") + suffix)
        self.txn_index.rename(txn_target)
        target = directory / (segment_file_name(self.base_offset, ".log") + suffix)
        self.fs.rename(self.log_path, target)
        self.log_path = target

    def delete_files(self) -> None:
        """Close and unlink the three files (missing files are fine)."""
        self.close()
        for path in (self.log_path, self.index.path, self.time_index.path, self.txn_index.path):
            with suppress(FileNotFoundError):
                self.fs.unlink(path)


class _IndexBuilder:
    """Computes index entries for a run of batches (Kafka's LogSegment.append rules)."""

    def __init__(self, seg: Segment, *, start: bool = False) -> None:
        self.seg = seg
        self.index_entries: list[tuple[int, int]] = []
        self.time_entries: list[tuple[int, int]] = []
        if start:  # continue from the segment's current state
            self.max_ts = seg.max_timestamp
            self.max_ts_offset = seg.offset_of_max_timestamp
            self.since = seg.bytes_since_last_index_entry
            self.index_room = seg.index.max_entries - len(seg.index)
            self.time_room = seg.time_index.max_entries - len(seg.time_index)
            self.last_time_ts = seg.time_index.last_timestamp()
        else:  # from scratch
            self.max_ts = -1
            self.max_ts_offset = -1
            self.since = 0
            self.index_room = seg.index.max_entries
            self.time_room = seg.time_index.max_entries
            self.last_time_ts = -1
        self.next_offset = seg.next_offset if start else seg.base_offset
        self.first_ts: int | None = None

    def add(self, pos: int, h: BatchHeader) -> None:
        base = self.seg.base_offset
        if self.first_ts is None:
            self.first_ts = h.max_timestamp
        if h.max_timestamp > self.max_ts:
            self.max_ts, self.max_ts_offset = h.max_timestamp, h.last_offset
        if self.since > self.seg.index_interval_bytes:
            if self.index_room > 0:
                self.index_entries.append((h.last_offset - base, pos))
                self.index_room -= 1
            if self.time_room > 0 and self.max_ts > self.last_time_ts:
                self.time_entries.append((self.max_ts, self.max_ts_offset - base))
                self.time_room -= 1
                self.last_time_ts = self.max_ts
            self.since = 0
        self.since += h.size
        self.next_offset = h.next_offset

    def commit(self) -> None:
        """Apply computed entries (already written to the files) to the segment's state."""
        seg = self.seg
        seg.index.commit(self.index_entries)
        seg.time_index.commit(self.time_entries)
        seg.max_timestamp = self.max_ts
        seg.offset_of_max_timestamp = self.max_ts_offset
        seg.bytes_since_last_index_entry = self.since
        seg.next_offset = self.next_offset

    def finish(self, *, final_time_entry: bool) -> None:
        """Replace both index files with the computed entries (rebuild from scratch)."""
        if final_time_entry and self.max_ts > self.last_time_ts:
            self.time_entries.append((self.max_ts, self.max_ts_offset - self.seg.base_offset))
            self.last_time_ts = self.max_ts
        seg = self.seg
        seg.index.reset(self.index_entries)
        seg.time_index.reset(self.time_entries)
        self.index_entries = []
        self.time_entries = []
        self.commit()
        seg.first_batch_timestamp = self.first_ts


class _Scanner:
    """Iterate (position, header) over a segment's .log in SCAN_WINDOW reads.

    Stops (without raising) at the first position that is not a sane batch; `end` is then the
    number of valid bytes. With `verify`, CRCs are checked too.
    """

    def __init__(self, seg: Segment, *, verify: bool, start: int = 0) -> None:
        self.seg = seg
        self.verify = verify
        self.start = start
        self.end = start
        self._window = b""
        self._wstart = 0

    def _ensure(self, pos: int, length: int) -> bool:
        """Make [pos, pos+length) available in the window (length <= SCAN_WINDOW)."""
        if pos >= self._wstart and pos + length <= self._wstart + len(self._window):
            return True
        want = min(max(SCAN_WINDOW, length), self.seg.size - pos)
        self._window = pread_exact(self.seg.fs, self.seg.fd, want, pos)
        self._wstart = pos
        return len(self._window) >= length

    def _stream_crc(self, pos: int, h: BatchHeader) -> bool:
        crc = 0
        p = pos + _CRC_START
        end = pos + h.size
        while p < end:
            chunk = pread_exact(self.seg.fs, self.seg.fd, min(SCAN_WINDOW, end - p), p)
            if not chunk:
                return False
            crc = crc32c(chunk, crc)
            p += len(chunk)
        return crc == h.crc

    def __iter__(self) -> Iterator[tuple[int, BatchHeader]]:
        seg = self.seg
        size = seg.size
        pos = self.start
        expected = seg.base_offset
        while size - pos >= BATCH_HEADER_SIZE:
            if not self._ensure(pos, BATCH_HEADER_SIZE):
                break
            try:
                h = parse_header(self._window, pos - self._wstart)
            except InvalidBatch:
                break
            if (
                h.base_offset < expected
                or h.last_offset_delta < 0
                or h.last_offset - seg.base_offset > INT32_MAX
                or h.size > size - pos
            ):
                break
            if self.verify:
                if h.size <= SCAN_WINDOW:
                    if not self._ensure(pos, h.size):
                        break
                    if not verify_crc(self._window, pos - self._wstart, h):
                        break
                elif not self._stream_crc(pos, h):
                    break
            self.end = pos + h.size
            yield pos, h
            expected = h.next_offset
            pos += h.size
        self.end = pos


def _swallow(fn: Callable[[], object]) -> None:
    with suppress(OSError):
        fn()


def roll_jitter_ms(topic: str, partition: int, base_offset: int, config: LogConfig) -> int:
    """Kafka draws a random jitter in [0, min(segment.jitter.ms, segment.ms)) per segment; this
    derives it from a hash of the segment's identity instead, so runs are deterministic."""
    bound = min(config.segment_jitter_ms, config.segment_ms)
    if bound <= 0:
        return 0
    return zlib.crc32(f"{topic}-{partition}@{base_offset}".encode()) % bound


def _position(entry: tuple[int, int, BatchHeader]) -> int:
    return entry[1]


def _last_offset(entry: tuple[int, int, BatchHeader]) -> int:
    return entry[0]


def _slice_end(seg: Segment, pos: int, target: int, max_offset: int) -> int | None:
    """`Segment.slice`'s end: the last batch boundary in [pos, target] with no batch from
    `pos` to it starting at or past `max_offset`; None when the batch at `pos` does not
    parse."""
    start = seg.index.position_at_or_before(target)
    if max_offset < seg.next_offset:
        start = min(start, seg.index.lookup(max_offset - 1)[1])
    q = max(pos, start)
    if q >= target:
        return q
    reads = 0
    for h, read in seg._headers_from(q):
        reads += read
        if h is None:
            return None if q == pos else q
        if q + h.size > target or h.base_offset >= max_offset:
            return q
        q += h.size
        if q >= target or reads >= SLICE_SCAN_HEADERS:
            return q
    return q  # pragma: no cover  # _headers_from ends only with None
