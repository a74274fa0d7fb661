"""`LogSegments`: the ordered segment set of one partition directory (Kafka's `LogSegments`).

Segments are kept oldest first with their base offsets strictly increasing; the last one is
the active segment (appends go there). Lookups by offset bisect the base offsets. This module
also holds the crash-safe swap of a cleaned segment (`swap_in`, Kafka's `replaceSegments`)
and its completion at load (`complete_interrupted_swaps`); see docs/log.md, "Compaction".

Invariants: never empty once the log is loaded or created; `bases` mirrors the segments;
files are deleted (`Segment.delete_files`) before a segment leaves the set. Synchronous, no
trio; OSError propagates (the owning `PartitionLog` maps it to `StorageError`).
"""

from __future__ import annotations

import functools
import logging
import os
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn

from protocol.records import BATCH_HEADER_SIZE, BatchHeader, InvalidBatch, parse_header
from wirebroker.log.config import LogConfig
from wirebroker.log.file_slice import FileSlice
from wirebroker.log.fs import FileSystem, pread_exact
from wirebroker.log.segment import (
    SEGMENT_SUFFIXES,
    CorruptSegment,
    Segment,
    parse_segment_file_name,
    segment_file_name,
)

__all__ = [
    "CLEANED_SUFFIX",
    "SWAP_SUFFIX",
    "LogSegments",
    "complete_interrupted_swaps",
    "swap_in",
]

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


class LogSegments:
    """The segments of one log, oldest first (see the module doc)."""

    def __init__(self, fs: FileSystem, directory: Path, segments: Sequence[Segment] = ()) -> None:
        self.fs = fs
        self.directory = directory
        self._segments: list[Segment] = list(segments)
        self._bases: list[int] = [s.base_offset for s in self._segments]

    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[Segment]:
        return iter(self._segments)

    def __getitem__(self, i: int) -> Segment:
        return self._segments[i]

    def to_list(self) -> list[Segment]:
        return list(self._segments)

    @property
    def active(self) -> Segment:
        return self._segments[-1]

    def next_offset(self, default: int) -> int:
        """The active segment's next offset (the log end), `default` when there is none."""
        return self._segments[-1].next_offset if self._segments else default

    def index_for(self, offset: int) -> int:
        """Index of the segment holding `offset` (the first one for offsets below it)."""
        return max(bisect_right(self._bases, offset) - 1, 0)

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def with_max_timestamp(self) -> Segment | None:
        """The first non-empty segment holding the largest batch max timestamp (None when no
        segment has a timestamp)."""
        timed = [seg for seg in self._segments if seg.size and seg.max_timestamp >= 0]
        return max(timed, key=lambda seg: seg.max_timestamp, default=None)

    # -- changes ----------------------------------------------------------------------------
    def add(self, seg: Segment) -> None:
        """A new active segment (its base is above every other)."""
        self._segments.append(seg)
        self._bases.append(seg.base_offset)

    def delete(self, doomed: Sequence[Segment]) -> None:
        """Delete the files of `doomed` and drop them from the set."""
        for seg in doomed:
            seg.delete_files()
        ids = {id(s) for s in doomed}
        self._set([s for s in self._segments if id(s) not in ids])

    def delete_after(self, i: int, why: str) -> None:
        """Delete every segment after the i-th (logged with `why`)."""
        for later in self._segments[i + 1 :]:
            log.warning("%s: deleting segment %d %s", self.directory.name, later.base_offset, why)
        self.delete(self._segments[i + 1 :])

    def delete_above(self, offset: int) -> None:
        """Delete every segment whose base offset is above `offset`."""
        self.delete([s for s in self._segments if s.base_offset > offset])

    def reset_at(self, offset: int, config: LogConfig, created_ms: int) -> None:
        """Delete every segment; one empty segment at `offset` takes their place."""
        self.delete(self._segments)
        self.add(Segment(self.fs, self.directory, offset, config, created_ms, create=True))

    def replace(self, new: Segment, old: Sequence[Segment]) -> None:
        """Swap the cleaned segment `new` in for `old` (consecutive non-active segments, the
        first with `new`'s base offset), crash safe (`swap_in`). ValueError when `old` is
        not such a run; OSError propagates (the next load completes or drops the swap)."""
        ids = [id(s) for s in self._segments]
        i = ids.index(id(old[0])) if old and id(old[0]) in ids else -1
        if (
            i < 0
            or i + len(old) >= len(self._segments)
            or ids[i : i + len(old)] != [id(s) for s in old]
            or new.base_offset != old[0].base_offset
        ):
            raise ValueError("segments to replace are not consecutive non-active segments")
        swap_in(self.fs, self.directory, new, old)
        new.next_offset = old[-1].next_offset
        self._set([*self._segments[:i], new, *self._segments[i + len(old) :]])

    def _set(self, segments: list[Segment]) -> None:
        self._segments = segments
        self._bases = [s.base_offset for s in segments]

    # -- walks ------------------------------------------------------------------------------
    def read(
        self,
        offset: int,
        max_bytes: int,
        limit: int,
        min_one_batch: bool,
        on_corrupt: Callable[[Segment, CorruptSegment], NoReturn],
        *,
        zero_copy: bool = False,
    ) -> bytes | FileSlice:
        """Whole batches from the one holding `offset` (log start <= offset < log end), up to
        `max_bytes` (at least one with `min_one_batch`), none with a base offset >= `limit`,
        continuing into the next segment when one ends with room to spare. Damage found
        after some batches ends the read before it; at the first batch, `on_corrupt`.

        `zero_copy`: a `FileSlice` of the first segment that has batches to give, when
        `Segment.slice` can make one (the read then ends with that segment, as Kafka's
        does); else bytes as without it."""
        if zero_copy:
            sliced = self._slice(offset, max_bytes, limit, min_one_batch)
            if sliced is not None:
                return sliced
        out: list[bytes] = []
        total = 0
        i = self.index_for(offset)
        first = True
        while i < len(self._segments):
            seg = self._segments[i]
            try:
                if first:
                    found = seg.translate_offset(offset)
                    if found is None:
                        i += 1
                        continue
                    pos = found[0]
                else:
                    pos = 0
                first = False
                data, stop = seg.read(pos, max_bytes - total, limit, min_one_batch and total == 0)
            except CorruptSegment as exc:
                if total:  # serve what lies before the damage; a read from it fails
                    break
                on_corrupt(seg, exc)
            if data:
                out.append(data)
                total += len(data)
            if stop or total >= max_bytes:
                break
            i += 1
        return out[0] if len(out) == 1 else b"".join(out)

    def _slice(
        self, offset: int, max_bytes: int, limit: int, min_one_batch: bool
    ) -> bytes | FileSlice | None:
        """The slice of `read(zero_copy=True)`; b"" when there is nothing to read; None: `read`."""
        for seg in self._segments[max(self.index_for(offset), 0) :]:
            try:
                found = seg.translate_offset(offset)
            except CorruptSegment:
                return None
            if found is None:
                continue
            sliced = seg.slice(found[0], max_bytes, limit, min_one_batch)
            if sliced is None:
                return None
            if sliced[0] is not None:
                return sliced[0]
            if sliced[1]:
                return b""
            offset = seg.next_offset
        return None

    def deletable(
        self,
        predicate: Callable[[Segment, Segment | None], bool],
        high_watermark: int,
        log_end_offset: int,
    ) -> list[Segment]:
        """The oldest segments, in order, while `predicate(segment, next)` holds and the
        segment lies wholly below the high watermark; never an empty active segment
        (Kafka's deletableSegments)."""
        doomed: list[Segment] = []
        segs = self._segments
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else log_end_offset
            last_and_empty = nxt is None and seg.size == 0
            if high_watermark >= upper and predicate(seg, nxt) and not last_and_empty:
                doomed.append(seg)
            else:
                break
        return doomed

    def scan_headers(self, from_offset: int, on_batch: Callable[[BatchHeader], None]) -> None:
        """Header walk of every segment that may hold batches at or above `from_offset`."""
        segs = self._segments
        for i, seg in enumerate(segs):
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
            if nxt is not None and nxt <= from_offset:
                continue
            seg.scan_headers(on_batch, from_offset)

    def scan_batches(
        self, from_offset: int, on_batch: Callable[[Segment, int, BatchHeader], None]
    ) -> None:
        """`scan_headers` with each batch's segment and position."""
        segs = self._segments
        for i, seg in enumerate(segs):
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
            if nxt is not None and nxt <= from_offset:
                continue
            seg.scan_positions(functools.partial(on_batch, seg), from_offset)

    def flush_below(self, up_to: int) -> None:
        """fsync every segment whose base offset is below `up_to`."""
        for seg in self._segments:
            if seg.base_offset < up_to:
                seg.flush()

    def flush(self) -> None:
        for seg in self._segments:
            seg.flush()

    def close(self) -> None:
        for seg in self._segments:
            seg.close()


# -- crash-safe swap of a cleaned segment -------------------------------------------------------


def swap_in(fs: FileSystem, directory: Path, new: Segment, old: Sequence[Segment]) -> None:
    """Replace the files of `old` by those of `new` (named `<base>.*.cleaned`, flushed).

    .cleaned -> .swap (commit point: the .log's rename), delete the old files, .swap -> live
    names; a directory fsync after each step. OSError propagates (the caller takes the log
    offline; `complete_interrupted_swaps` finishes the job at the next load).
    """
    new.rename_files(SWAP_SUFFIX)
    fs.fsync_dir(directory)
    for seg in old:
        seg.delete_files()
    fs.fsync_dir(directory)
    new.rename_files("")
    fs.fsync_dir(directory)


def _next_offset_of_file(fs: FileSystem, path: Path, base_offset: int) -> int:
    """Next offset after the last well-formed batch of a .log file (header walk, no CRC)."""
    fd = fs.open(path, os.O_RDONLY)
    try:
        size = fs.fsize(fd)
        pos = 0
        next_offset = base_offset
        while size - pos >= BATCH_HEADER_SIZE:
            try:
                h = parse_header(pread_exact(fs, fd, BATCH_HEADER_SIZE, pos))
            except InvalidBatch:
                break
            if h.base_offset < next_offset or h.size > size - pos or h.last_offset_delta < 0:
                break
            next_offset = h.next_offset
            pos += h.size
        return next_offset
    finally:
        fs.close(fd)


def complete_interrupted_swaps(fs: FileSystem, directory: Path) -> list[int]:
    """Finish swaps a crash interrupted after their commit point: for each `<B>.log.swap`,
    delete every segment file with a base offset in [B, max(N, B + 1)) (N: the swap's next
    offset) and rename the swap to `<B>.log` (its indexes are rebuilt by the load).

    Returns the base offsets of the swaps completed. OSError propagates.
    """
    done: list[int] = []
    for name in sorted(fs.listdir(directory)):
        parsed = parse_segment_file_name(name)
        if parsed is None or parsed[1] != ".log" + SWAP_SUFFIX:
            continue
        base = parsed[0]
        swap = directory / name
        end = max(_next_offset_of_file(fs, swap, base), base + 1)
        for other in sorted(fs.listdir(directory)):
            found = parse_segment_file_name(other)
            if found and found[1] in SEGMENT_SUFFIXES and base <= found[0] < end:
                fs.unlink(directory / other)
        fs.rename(swap, directory / segment_file_name(base, ".log"))
        log.warning(
            "%s: completed an interrupted swap of cleaned segment %d (offsets below %d)",
            directory.name,
            base,
            end,
        )
        done.append(base)
    if done:
        fs.fsync_dir(directory)
    return done
