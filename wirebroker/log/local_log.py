"""`LocalLog`: the segment files of one partition and their health (Kafka's `LocalLog`).

`PartitionLog` (Kafka's `UnifiedLog`) decides what goes into a log: validation, producer
state, leader epochs, high watermark, retention. `LocalLog` owns where it lies: the segment set
(`LogSegments`), the log start and recovery point offsets over it, rolling a new active
segment, flushing, reading batches and the lookups over segments (timestamps, aborted
transactions), and the log's health: an OSError surfaces as `StorageError` (taking the log
offline when it could not be undone), a batch that fails its checks on a read is never served
(`corrupt`), an offline or closed log refuses every call (`check_online`).

Synchronous, no trio, no clock reads; all file access through a `FileSystem` (fs.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from protocol.records import BATCH_HEADER_SIZE, BatchHeader, parse_header
from wirebroker.log.config import LogConfig
from wirebroker.log.errors import OffsetOutOfRangeError, StorageError
from wirebroker.log.file_slice import FileSlice
from wirebroker.log.fs import FileSystem
from wirebroker.log.segment import CorruptSegment, RollbackFailed, Segment, roll_jitter_ms
from wirebroker.log.segment_search import find_max_timestamp_offset, find_offset_by_timestamp
from wirebroker.log.segments import LogSegments
from wirebroker.log.txn_index import AbortedTxn

__all__ = ["LocalLog", "NothingChanged"]

# the messages keep the logger of the log as a whole (operators and tests look for them)
log = logging.getLogger("wirebroker.log.partition_log")


class NothingChanged(Exception):
    """An I/O error that was fully undone: fail the call, keep the log online."""


class LocalLog:
    """The segments of one partition directory, their offsets and health (module doc)."""

    def __init__(
        self, fs: FileSystem, directory: Path, topic: str, partition: int, config: LogConfig
    ) -> None:
        self.fs = fs
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.name = f"{topic}-{partition}"
        self.config = config
        self.segments = LogSegments(fs, directory)
        self.log_start_offset = 0
        self.recovery_point = 0
        # batches from here on were CRC-checked in this process (appended, as leader or
        # follower, since the log was opened): only they may be sent unread (`read_to_send`)
        self.checked_from = 0
        self.offline = False
        self.closed = False
        self.last_flush_ms = 0
        #: called before the recovery point moves up: what recovery will not rebuild from
        #: the batches above it must be durable first (the owner's leader-epoch checkpoint)
        self.before_recovery_point_moves: Callable[[], None] = _nothing

    @property
    def log_end_offset(self) -> int:
        return self.segments.next_offset(self.log_start_offset)

    # -- health -------------------------------------------------------------------------------
    def check_online(self) -> None:
        if self.offline:
            raise StorageError(f"{self.name}: log is offline after an I/O error")
        if self.closed:
            raise StorageError(f"{self.name}: log is closed")

    @contextmanager
    def io(self, what: str, *, offline_on_error: bool) -> Iterator[None]:
        self.check_online()
        try:
            yield
        except (NothingChanged, CorruptSegment) as exc:
            raise StorageError(f"{self.name}: {what}: {exc}") from exc
        except OSError as exc:
            if offline_on_error:
                self.go_offline()
            raise StorageError(f"{self.name}: {what}: {exc}") from exc

    @contextmanager
    def serving(self, seg: Segment) -> Iterator[None]:
        """Around reads that serve `seg`'s batches: see `corrupt`."""
        try:
            yield
        except CorruptSegment as exc:
            self.corrupt(seg, exc)

    def corrupt(self, seg: Segment, exc: CorruptSegment) -> NoReturn:
        """A batch about to be served failed its checks: it is never served; the log goes
        offline (no clean-shutdown marker) and its recovery point moves back to the segment,
        so the next start scans and truncates it (docs/log.md, "Read")."""
        log.error(
            "%s: corrupt batch in segment %d (%s); taking the log offline until a restart "
            "recovers it",
            self.name,
            seg.base_offset,
            exc,
        )
        self.offline = True
        self.recovery_point = min(self.recovery_point, seg.base_offset)
        raise StorageError(f"{self.name}: corrupt data in segment {seg.base_offset}: {exc}")

    def go_offline(self) -> None:
        log.error("%s: taking the log offline after an I/O error", self.name)
        self.offline = True

    def append(
        self,
        seg: Segment,
        records: bytes | bytearray | memoryview,
        batches: list[tuple[int, BatchHeader]],
        now_ms: int,
    ) -> None:
        """`seg.append`, its failures as StorageError (offline when it could not be undone)."""
        try:
            seg.append(records, batches, now_ms)
        except RollbackFailed as exc:
            self.go_offline()
            raise StorageError(
                f"{self.name}: append failed and could not be undone: {exc}"
            ) from exc
        except OSError as exc:
            raise StorageError(f"{self.name}: append failed (nothing written): {exc}") from exc

    # -- roll ---------------------------------------------------------------------------------
    def maybe_roll(
        self,
        messages_size: int,
        max_timestamp: int,
        max_offset: int,
        now_ms: int,
        snapshot: Callable[[int], None],
    ) -> Segment:
        seg = self.segments.active
        jitter = roll_jitter_ms(self.topic, self.partition, seg.base_offset, self.config)
        if seg.should_roll(self.config, jitter, messages_size, max_timestamp, max_offset, now_ms):
            return self.roll(now_ms, snapshot)
        return seg

    def roll(self, now_ms: int, snapshot: Callable[[int], None]) -> Segment:
        """Start a new active segment at the log end offset; `snapshot(new_base)` first saves
        the producer state there.

        The first two steps (producer snapshot, final time-index entry) undo themselves on
        an OSError, which then surfaces as `NothingChanged` (a full disk fails the append
        that wanted the roll but leaves the log online); an OSError later propagates."""
        old = self.segments.active
        new_base = self.log_end_offset
        if old.size == 0 and old.base_offset == new_base:
            old.created_ms = now_ms
            return old
        try:
            snapshot(new_base)
            old.on_become_inactive()
        except RollbackFailed as exc:
            raise OSError(f"cannot undo a failed roll: {exc}") from exc
        except OSError as exc:
            raise NothingChanged(f"cannot roll a new segment: {exc}") from exc
        new = Segment(self.fs, self.directory, new_base, self.config, now_ms, create=True)
        self.segments.add(new)
        self.fs.fsync_dir(self.directory)
        self.flush_segments(new_base)
        return new

    # -- flush --------------------------------------------------------------------------------
    def flush_segments(self, up_to: int) -> None:
        """fsync every segment below `up_to`; the recovery point moves there."""
        self.segments.flush_below(up_to)
        self.before_recovery_point_moves()
        self.recovery_point = max(self.recovery_point, min(up_to, self.log_end_offset))

    def flush(self) -> None:
        """fsync data and indexes of every segment; the recovery point becomes the log end."""
        with self.io("flush", offline_on_error=True):
            self.segments.flush()
            self.before_recovery_point_moves()
            self.recovery_point = self.log_end_offset

    def maybe_flush(self, now_ms: int) -> None:
        """Flush when unflushed records exist and flush.ms passed since the last flush."""
        if self.offline or self.closed:
            return
        if (
            self.log_end_offset > self.recovery_point
            and now_ms - self.last_flush_ms >= self.config.flush_ms
        ):
            self.flush()
            self.last_flush_ms = now_ms

    def maybe_flush_messages(self, now_ms: int) -> None:
        """Flush when flush.messages records are not flushed yet."""
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush()
            self.last_flush_ms = now_ms

    # -- read ---------------------------------------------------------------------------------
    def read_to_send(
        self,
        offset: int,
        *,
        max_bytes: int,
        max_offset: int | None,
        min_one_batch: bool,
        zero_copy: bool,
    ) -> bytes | FileSlice:
        """See `PartitionLog.read_to_send`."""
        self.check_online()
        zero_copy = zero_copy and offset >= self.checked_from
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.name}: offset {offset} outside [{self.log_start_offset}, "
                f"{self.log_end_offset}]"
            )
        limit = self.log_end_offset if max_offset is None else max_offset
        if offset >= self.log_end_offset or offset >= limit:
            return b""
        with self.io("read", offline_on_error=False):
            return self.segments.read(
                offset, max_bytes, limit, min_one_batch, self.corrupt, zero_copy=zero_copy
            )

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """See `PartitionLog.aborted_transactions`."""
        self.check_online()
        out: list[AbortedTxn] = []
        segs = self.segments.to_list()
        i = max(self.segments.index_for(fetch_offset), 0) if segs else 0
        for seg in segs[i:]:
            found, complete = seg.txn_index.collect(fetch_offset, upper_bound)
            out.extend(found)
            if complete:
                break
        return out

    def aborted_in(
        self, fetch_offset: int, records: bytes | bytearray | memoryview
    ) -> list[AbortedTxn]:
        """See `PartitionLog.aborted_in`."""
        if not records:
            return []
        pos, end, next_offset = 0, len(records), fetch_offset
        while end - pos >= BATCH_HEADER_SIZE:
            h = parse_header(records, pos)
            next_offset = h.next_offset
            pos += h.size
        return self.aborted_transactions(fetch_offset, next_offset)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """See `PartitionLog.offset_for_timestamp`."""
        self.check_online()
        with self.io("offset lookup", offline_on_error=False):
            for seg in self.segments:
                with self.serving(seg):
                    found = find_offset_by_timestamp(seg, timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def max_timestamp(self) -> tuple[int, int]:
        """See `PartitionLog.max_timestamp`."""
        self.check_online()
        best = self.segments.with_max_timestamp()
        if best is None:
            return -1, -1
        with self.io("max timestamp", offline_on_error=False), self.serving(best):
            return best.max_timestamp, find_max_timestamp_offset(best)

    def replace_segments(self, new: Segment, old: list[Segment]) -> None:
        """See `PartitionLog.replace_segments`."""
        self.check_online()
        with self.io("swap in cleaned segment", offline_on_error=True):
            try:
                self.segments.replace(new, old)
            except ValueError as exc:
                raise ValueError(f"{self.name}: {exc}") from None


def _nothing() -> None:
    return None
