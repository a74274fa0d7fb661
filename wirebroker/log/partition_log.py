"""`PartitionLog`: the ordered segments of one partition directory `<topic>-<n>`.

Synchronous and deterministic: never imports trio, never reads the clock (`now_ms`
arguments). All file access goes through a `FileSystem` (`wirebroker.log.fs`).

Directory contents::

    00000000000000000000.log / .index / .timeindex   segments (see segment.py, index.py)
    00000000000000001234.producers                   producer-state snapshots (state after
                                                     every batch below 1234), taken at each
                                                     roll and at close; the newest 3 kept
    leader-epoch-checkpoint                          epoch -> start offset (Kafka's format)
    partition.metadata                               topic id (written by LogManager.create*)

Offsets: `log_start_offset` <= `high_watermark` <= `log_end_offset`. The high watermark is
set by the owner (replication); it starts at the log end offset on open (a single-replica
leader's high watermark right after it becomes leader) and is clamped into
[log start, log end] on assignment.

Append (`append_as_leader`), all or nothing per call:

1. validate every batch (see `_validate`): magic 2, lengths, base offset 0, size <=
   max.message.bytes, CRC-32C, record count == last offset delta + 1 (cheap header checks,
   no decompression), no control batches, idempotent batches carry a sequence, CreateTime
   timestamps within message.timestamp.{before,after}.max.ms of now (checked on the header:
   max timestamp for "after", base timestamp for "before"), no client LogAppendTime batches;
   records are checked only for compacted topics (keys are required there), streamed
   by `check_records` (no record objects; decompressed in a ~1 MiB window);
2. idempotence: a duplicate of one of the producer's last 5 batches returns the ORIGINAL
   offsets with `duplicate=True` and writes nothing;
3. stamp base offsets and the leader epoch (and LogAppendTime when the topic uses it) into
   a private copy, then check sequences/epochs on staged producer state (producer_state.py);
4. roll if needed (`Segment.should_roll`: size, segment.ms minus a deterministic jitter
   measured on batch timestamps like Kafka, a full index, relative offset overflow) -- one
   decision per call, the whole call goes to one segment;
5. `os.write` the bytes (then the index entries); on OSError the segment is truncated back
   and `StorageError` raised; if that fails too the log goes offline (every later call
   raises `StorageError`). A roll that fails on a full disk (the producer snapshot or the
   final time-index entry cannot be written) is undone the same way and leaves the log
   online, so appends resume once space is freed;
6. commit producer state, the leader-epoch cache (checkpointed before the write when a new
   epoch starts), the log end offset; fsync when flush.messages records are unflushed.

Read (`read`): the segment holding `offset` (by base offset), the offset index gives a
position at or before the batch, 61-byte header reads find the batch whose last offset >=
`offset`; whole batches follow up to `max_bytes` (at least one if `min_one_batch`), never
one whose base offset >= `max_offset`. A read continues into the next segment when a segment
ends with room to spare (Kafka stops at the segment end; both are valid for clients).
Every batch served (and every batch decoded for a timestamp lookup) has its CRC-32C checked
first: data below the recovery point is not scanned at start-up (Kafka's rule), so this is
where damage to it is found. A batch that fails is never served: the log goes offline and
its recovery point moves back to that segment, so the next start recovers it (`_serving`).
Kafka serves such bytes and leaves the check to consumers.

Retention (`delete_expired_segments`), Kafka's `deleteOldSegments`: walk segments from the
oldest while the predicate holds and the segment lies wholly below the high watermark; by
time (now - largest timestamp > retention.ms), by size (total - segment >= retention.bytes)
-- both only with cleanup.policy delete -- and segments wholly below the log start offset.
If every segment goes, an empty segment is rolled at the log end first. Idle producers are
expired here too (producer_id_expiration_ms).

Recovery (`open`, clean=False): see `_load`. With clean=True no batch is scanned, but every
index is sanity-checked, and a missing or bad one makes that segment recover (scan + rebuild).

Creation (`create_new`): a new partition's log in a directory its caller just made: one
empty segment at offset 0 (three empty files), nothing read, scanned, written or fsynced
(no leader-epoch checkpoint: a missing one means "no epochs", as for Kafka, whose
checkpoint file starts empty). The segment starts dirty, so the first flush (flush.messages,
flush.ms, roll, close) fsyncs its files. Making the new directory entries durable is the
caller's job, batched over all the partitions of a request (`LogManager.create_many`).

Flush: flush.messages counts records (Kafka: log end offset - recovery point), flush.ms is
applied by `maybe_flush(now_ms)`; a roll fsyncs the segments it leaves behind (Kafka does so
asynchronously) and moves the recovery point to the new segment's base.

Not done (Kafka does them): transactions (last stable offset, aborted-transaction index,
ongoing-transaction producer state), re-compression to the topic's compression.type,
record-by-record validation of batches (compressed batches are never decompressed here except
for compacted topics), delayed deletion of segment files (file.delete.delay.ms: files are
unlinked at once), index preallocation/mmap, follower appends (append_as_follower).
"""

from __future__ import annotations

import logging
import re
import uuid
from bisect import bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    InvalidBatch,
    NullKeyError,
    Record,
    check_records,
    decode_records,
    parse_header,
    stamp_batch,
    verify_crc,
)
from wirebroker.log.checkpoint import (
    CheckpointError,
    read_epoch_checkpoint,
    read_partition_metadata,
    write_epoch_checkpoint,
)
from wirebroker.log.cleaner import complete_interrupted_swaps, swap_in
from wirebroker.log.config import LogConfig
from wirebroker.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StorageError,
)
from wirebroker.log.fs import FileSystem, OsFileSystem, read_file, write_file_atomic
from wirebroker.log.leader_epoch import LeaderEpochCache
from wirebroker.log.producer_state import (
    ProducerEntry,
    ProducerStateManager,
    SnapshotError,
)
from wirebroker.log.segment import CorruptSegment, RollbackFailed, Segment, roll_jitter_ms

__all__ = ["AppendResult", "PartitionLog"]

log = logging.getLogger(__name__)

LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
SNAPSHOT_SUFFIX = ".producers"
SNAPSHOTS_KEPT = 3  # older ones only help after a deep truncation; then the log is scanned
_SEGMENT_RE = re.compile(r"(\d{20})\.log")
_INDEX_RE = re.compile(r"(\d{20})\.(index|timeindex)")
_SNAPSHOT_RE = re.compile(r"(\d{20})\.producers")
_STRAY_SUFFIXES = (".tmp", ".deleted", ".cleaned", ".swap")
_MAGIC_POS = 16
_DECODE_CAP = 64 * 1024 * 1024


class _NothingChanged(Exception):
    """An I/O error that was fully undone: fail the call, keep the log online."""


@dataclass(frozen=True)
class AppendResult:
    first_offset: int
    last_offset: int
    log_append_time: int  # -1 for CreateTime topics
    log_start_offset: int
    duplicate: bool = False  # True: idempotent retry, nothing appended


class PartitionLog:
    topic: str
    partition: int
    directory: Path
    config: LogConfig
    log_start_offset: int
    recovery_point: int
    topic_id: uuid.UUID | None

    def __init__(
        self, directory: Path, topic: str, partition: int, config: LogConfig, fs: FileSystem
    ) -> None:
        """Use `PartitionLog.open`."""
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.fs = fs
        self.log_start_offset = 0
        self.recovery_point = 0
        self.topic_id = None
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        self._epochs = LeaderEpochCache()
        self._producers = ProducerStateManager()
        self._hw = 0
        self._offline = False
        self._closed = False
        self._last_flush_ms = 0

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.name}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    # -- offsets ------------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset if self._segments else self.log_start_offset

    @property
    def high_watermark(self) -> int:
        return self._hw

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._hw = min(max(value, self.log_start_offset), self.log_end_offset)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs.latest_epoch

    @property
    def offline(self) -> bool:
        return self._offline

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def segments(self) -> list[Segment]:
        """The segments, oldest first (read-only view for tools and tests)."""
        return list(self._segments)

    def leader_epoch_entries(self) -> list[tuple[int, int]]:
        return self._epochs.entries

    def producer_entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def producer_last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch, for every producer in the state
        (the log cleaner keeps those batches)."""
        return {
            pid: e.batches[-1].last_offset
            for pid, e in self._producers.producers.items()
            if e.batches
        }

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        now_ms: int,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        clean: bool = False,
        fs: FileSystem | None = None,
    ) -> PartitionLog:
        """Open (creating if needed) and, unless `clean`, recover the partition directory.

        Raises StorageError on an OSError.
        """
        self = cls(Path(directory), topic, partition, config, fs or OsFileSystem())
        try:
            self._load(now_ms, recovery_point, log_start_offset, clean)
        except OSError as exc:
            self._close_files()
            raise StorageError(f"{self.name}: cannot open log in {directory}: {exc}") from exc
        except BaseException:
            self._close_files()
            raise
        return self

    @classmethod
    def create_new(
        cls,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        now_ms: int,
        fs: FileSystem | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> PartitionLog:
        """A new, empty log in `directory`, which must exist and hold no segment (the caller
        just created it): see "Creation" in the module docstring. Raises StorageError on an
        OSError (files opened so far are closed; created files are left to the caller)."""
        self = cls(Path(directory), topic, partition, config, fs or OsFileSystem())
        try:
            seg = Segment(self.fs, self.directory, 0, config, now_ms, create=True)
        except OSError as exc:
            raise StorageError(f"{self.name}: cannot create log in {directory}: {exc}") from exc
        self._segments = [seg]
        self._bases = [0]
        self._last_flush_ms = now_ms
        self.topic_id = topic_id
        return self

    def _load(self, now_ms: int, recovery_point: int, log_start_offset: int, clean: bool) -> None:
        """Load segments and rebuild state.

        0. Complete swaps of cleaned segments interrupted by a crash (cleaner.py).
        1. Delete stray files (*.tmp, *.deleted, *.cleaned, *.swap, index files without a .log).
        2. Open every `<base>.log` in offset order (an empty directory gets one segment at
           log_start_offset).
        3. Segments below the recovery point (all of them after a clean shutdown): load the
           indexes and sanity-check them; the last one also walks its tail headers to find
           the log end offset. A failing check recovers that segment instead.
        4. Segments from the one holding the recovery point (unclean only): recover each
           (CRC scan, truncate at the first bad byte, rebuild indexes); a truncation deletes
           every later segment. Their epochs are re-assigned from the batches.
        5. Log start = max(checkpointed, first base); if it lies beyond the log end, start
           over empty at the log start. Recovered segments are fsynced and the recovery
           point moves to the log end.
        6. Leader-epoch cache: the checkpoint, or a full header scan when missing/corrupt;
           truncated to [log start, log end]; rewritten when that changed it or the file was
           corrupt (a missing file whose scan finds no epoch stays missing).
        7. Producer state: the newest valid snapshot at or below the log end, then a header
           scan of the batches after it; snapshots above the log end are deleted; idle
           producers expire.
        """
        fs = self.fs
        fs.makedirs(self.directory)
        complete_interrupted_swaps(fs, self.directory)
        names = sorted(fs.listdir(self.directory))
        bases = []
        for name in names:
            if name.endswith(_STRAY_SUFFIXES):
                fs.unlink(self.directory / name)
            elif m := _SEGMENT_RE.fullmatch(name):
                bases.append(int(m.group(1)))
        base_set = set(bases)
        for name in names:
            m = _INDEX_RE.fullmatch(name)
            if m and int(m.group(1)) not in base_set:
                fs.unlink(self.directory / name)
        for base in bases:
            self._segments.append(
                Segment(fs, self.directory, base, self.config, now_ms, create=False)
            )
        if not self._segments:
            self._segments.append(
                Segment(
                    fs, self.directory, max(log_start_offset, 0), self.config, now_ms, create=True
                )
            )
        self._bases = [s.base_offset for s in self._segments]

        if clean:
            recover_from = len(self._segments)
        else:
            recover_from = max(bisect_right(self._bases, recovery_point) - 1, 0)

        epoch_file_bad = False
        try:
            entries = read_epoch_checkpoint(fs, self.directory / LEADER_EPOCH_FILE)
        except CheckpointError as exc:
            log.warning("%s: %s; rebuilding the leader epoch cache", self.name, exc)
            entries = None
            epoch_file_bad = True
        rebuild_epochs = entries is None
        self._epochs = LeaderEpochCache(entries)
        recovered: list[Segment] = []

        i = 0
        while i < len(self._segments):
            seg = self._segments[i]
            is_last = i == len(self._segments) - 1
            next_base = None if is_last else self._segments[i + 1].base_offset
            truncated = 0
            if i < recover_from:
                reason = seg.load_indexes(next_base)
                if reason is None:
                    if is_last:
                        try:
                            seg.read_next_offset()
                        except CorruptSegment as exc:
                            reason = str(exc)
                    else:
                        seg.next_offset = self._segments[i + 1].base_offset
                if reason is not None:
                    # the epoch cache already covers this segment and the later ones: a
                    # truncation is applied to it below (truncate_from_end(log end))
                    log.warning("%s: %s; recovering segment %d", self.name, reason, seg.base_offset)
                    truncated = seg.recover()
                    recovered.append(seg)
            else:
                if i == recover_from and not rebuild_epochs:
                    self._epochs.truncate_from_end(seg.base_offset)
                truncated = self._recover_segment(seg, rebuild_epochs)
                recovered.append(seg)
            if truncated and not is_last:
                for later in self._segments[i + 1 :]:
                    log.warning(
                        "%s: deleting segment %d after a truncation", self.name, later.base_offset
                    )
                    later.delete_files()
                del self._segments[i + 1 :]
            i += 1
        self._bases = [s.base_offset for s in self._segments]

        self.log_start_offset = max(log_start_offset, self._segments[0].base_offset)
        if self.log_start_offset > self.log_end_offset:
            log.warning(
                "%s: log start %d beyond log end %d; starting empty",
                self.name,
                self.log_start_offset,
                self.log_end_offset,
            )
            self._truncate_fully_and_start_at(self.log_start_offset, now_ms)
            recovered = []
        for seg in recovered:
            if seg in self._segments:
                seg.flush()
        self.recovery_point = self.log_end_offset
        self._last_flush_ms = now_ms

        snapshot_offset, producers = self._load_snapshot()
        self._producers = ProducerStateManager()
        self._producers.producers = producers
        if rebuild_epochs:
            self._epochs = LeaderEpochCache()
        scan_from = 0 if rebuild_epochs else snapshot_offset

        def on_batch(h: BatchHeader) -> None:
            if rebuild_epochs and h.partition_leader_epoch >= 0:
                self._epochs.assign(h.partition_leader_epoch, h.base_offset)
            if h.base_offset >= snapshot_offset:
                self._producers.apply(h)

        self._scan_headers(scan_from, on_batch)
        self._epochs.truncate_from_end(self.log_end_offset)
        self._epochs.truncate_from_start(self.log_start_offset)
        # a missing checkpoint rebuilt empty stays missing (a new partition has none)
        if self._epochs.changed or epoch_file_bad:
            self._write_epoch_checkpoint()
        self._producers.remove_expired(now_ms, self.config.producer_id_expiration_ms)
        self._hw = self.log_end_offset
        try:
            self.topic_id = read_partition_metadata(fs, self.directory / PARTITION_METADATA_FILE)
        except CheckpointError as exc:
            log.warning("%s: %s", self.name, exc)

    def _recover_segment(self, seg: Segment, rebuild_epochs: bool) -> int:
        def on_batch(h: BatchHeader) -> None:
            if h.partition_leader_epoch >= 0:
                self._epochs.assign(h.partition_leader_epoch, h.base_offset)

        return seg.recover(None if rebuild_epochs else on_batch)

    def _scan_headers(self, from_offset: int, on_batch: Callable[[BatchHeader], None]) -> None:
        """Header walk of every segment that may hold batches at or above from_offset."""
        for i, seg in enumerate(self._segments):
            nxt = self._segments[i + 1].base_offset if i + 1 < len(self._segments) else None
            if nxt is not None and nxt <= from_offset:
                continue
            seg.scan_headers(on_batch, from_offset)

    # -- producer snapshots -------------------------------------------------------------------
    def _snapshot_files(self) -> list[tuple[int, Path]]:
        out = []
        for name in self.fs.listdir(self.directory):
            m = _SNAPSHOT_RE.fullmatch(name)
            if m:
                out.append((int(m.group(1)), self.directory / name))
        return sorted(out)

    def _load_snapshot(self) -> tuple[int, dict[int, ProducerEntry]]:
        """Newest valid snapshot at or below the log end; deletes those above it and
        corrupt ones. (0, {}) when there is none."""
        leo = self.log_end_offset
        found: tuple[int, dict[int, ProducerEntry]] | None = None
        for offset, path in reversed(self._snapshot_files()):
            if offset > leo:
                self.fs.unlink(path)
                continue
            if found is not None:
                continue
            data = read_file(self.fs, path)
            try:
                if data is None:
                    raise SnapshotError("vanished")
                snap_offset, producers = ProducerStateManager.from_snapshot(data)
                if snap_offset != offset:
                    raise SnapshotError(f"offset {snap_offset} does not match the name")
            except SnapshotError as exc:
                log.warning("%s: dropping producer snapshot %s: %s", self.name, path.name, exc)
                self.fs.unlink(path)
                continue
            found = (offset, producers)
        return found if found is not None else (0, {})

    def _take_snapshot(self) -> None:
        """Snapshot the producer state at the log end; keep the newest SNAPSHOTS_KEPT."""
        offset = self.log_end_offset
        path = self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"
        write_file_atomic(self.fs, path, self._producers.to_snapshot(offset))
        offsets = [off for off, _ in self._snapshot_files()]
        if len(offsets) > SNAPSHOTS_KEPT:
            cutoff = offsets[-SNAPSHOTS_KEPT]
            self._delete_snapshots(lambda off: off >= cutoff)

    def _delete_snapshots(self, keep: Callable[[int], bool]) -> None:
        for offset, path in self._snapshot_files():
            if not keep(offset):
                with suppress(FileNotFoundError):
                    self.fs.unlink(path)

    # -- errors -------------------------------------------------------------------------------
    def _check_online(self) -> None:
        if self._offline:
            raise StorageError(f"{self.name}: log is offline after an I/O error")
        if self._closed:
            raise StorageError(f"{self.name}: log is closed")

    @contextmanager
    def _io(self, what: str, *, offline_on_error: bool) -> Iterator[None]:
        self._check_online()
        try:
            yield
        except _NothingChanged as exc:
            raise StorageError(f"{self.name}: {what}: {exc}") from exc
        except OSError as exc:
            if offline_on_error:
                self._go_offline()
            raise StorageError(f"{self.name}: {what}: {exc}") from exc
        except CorruptSegment as exc:
            raise StorageError(f"{self.name}: {what}: {exc}") from exc

    @contextmanager
    def _serving(self, seg: Segment) -> Iterator[None]:
        """Around reads that serve `seg`'s batches: see `_corrupt`."""
        try:
            yield
        except CorruptSegment as exc:
            self._corrupt(seg, exc)

    def _corrupt(self, seg: Segment, exc: CorruptSegment) -> NoReturn:
        """A batch about to be served failed its checks (CRC, header, length): it is never
        served. The log goes offline (every later call raises StorageError, and
        LogManager.close writes no clean-shutdown marker for its directory) and the recovery
        point moves back to the segment's base offset, so the next start scans that segment
        and truncates at the damage, as after a crash."""
        log.error(
            "%s: corrupt batch in segment %d (%s); taking the log offline until a restart "
            "recovers it",
            self.name,
            seg.base_offset,
            exc,
        )
        self._offline = True
        self.recovery_point = min(self.recovery_point, seg.base_offset)
        raise StorageError(f"{self.name}: corrupt data in segment {seg.base_offset}: {exc}")

    def _go_offline(self) -> None:
        log.error("%s: taking the log offline after an I/O error", self.name)
        self._offline = True

    def _write_epoch_checkpoint(self) -> None:
        write_epoch_checkpoint(self.fs, self.directory / LEADER_EPOCH_FILE, self._epochs.entries)
        self._epochs.changed = False

    # -- append -------------------------------------------------------------------------------
    def _validate(self, buf: bytearray, now_ms: int) -> list[tuple[int, BatchHeader]]:
        """Check every batch of a client append (Kafka's analyzeAndValidateRecords and
        LogValidator checks that need no decompression). Returns (position, header)."""
        cfg = self.config
        if not buf:
            raise InvalidRecordError("no record batch to append")
        batches = []
        pos = 0
        end = len(buf)
        while pos < end:
            if end - pos < BATCH_HEADER_SIZE:
                raise CorruptRecordError(f"truncated batch header at {pos}")
            if buf[pos + _MAGIC_POS] != 2:
                raise InvalidRecordError(f"record batch magic {buf[pos + _MAGIC_POS]} != 2")
            try:
                h = parse_header(buf, pos)
            except InvalidBatch as exc:
                raise CorruptRecordError(str(exc)) from None
            if h.size > end - pos:
                raise CorruptRecordError(f"batch at {pos} runs past the end ({h.size} bytes)")
            if h.base_offset != 0:
                raise InvalidRecordError(f"batch base offset must be 0, got {h.base_offset}")
            if h.size > cfg.max_message_bytes:
                raise RecordTooLargeError(
                    f"batch of {h.size} bytes exceeds max.message.bytes {cfg.max_message_bytes}"
                )
            if not verify_crc(buf, pos, h):
                raise CorruptRecordError(f"batch at {pos}: CRC mismatch")
            if h.records_count <= 0 or h.last_offset_delta != h.records_count - 1:
                raise InvalidRecordError(
                    f"inconsistent record count {h.records_count} / last offset delta "
                    f"{h.last_offset_delta}"
                )
            if h.compression > 4:
                raise InvalidRecordError(f"unknown compression codec {h.compression}")
            if h.is_control:
                raise InvalidRecordError("clients may not write control batches")
            if h.producer_id >= 0 and h.base_sequence < 0:
                raise InvalidRecordError(f"producer {h.producer_id} batch without a sequence")
            if h.timestamp_type == 1:
                raise InvalidTimestampError("producers may not set LogAppendTime")
            if not cfg.log_append_time:
                self._check_timestamps(h, now_ms)
            if cfg.compact:
                try:  # streamed: no record objects, about 1 MiB of decompressed bytes
                    check_records(buf, pos, require_keys=True, max_decompressed_bytes=_DECODE_CAP)
                except NullKeyError:
                    raise InvalidRecordError(
                        "compacted topic cannot accept a record without key"
                    ) from None
                except InvalidBatch as exc:
                    raise InvalidRecordError(f"undecodable batch: {exc}") from None
            batches.append((pos, h))
            pos += h.size
        return batches

    def _check_timestamps(self, h: BatchHeader, now_ms: int) -> None:
        cfg = self.config
        if h.max_timestamp >= 0 and h.max_timestamp > now_ms + cfg.message_timestamp_after_max_ms:
            raise InvalidTimestampError(
                f"timestamp {h.max_timestamp} is more than "
                f"{cfg.message_timestamp_after_max_ms} ms after now ({now_ms})"
            )
        if h.base_timestamp >= 0 and (
            h.base_timestamp < now_ms - cfg.message_timestamp_before_max_ms
        ):
            raise InvalidTimestampError(
                f"timestamp {h.base_timestamp} is more than "
                f"{cfg.message_timestamp_before_max_ms} ms before now ({now_ms})"
            )

    def append_as_leader(
        self, records: bytes | bytearray | memoryview, *, leader_epoch: int, now_ms: int
    ) -> AppendResult:
        self._check_online()
        buf = bytearray(records)
        batches = self._validate(buf, now_ms)
        log_append_time = now_ms if self.config.log_append_time else -1

        # idempotence: duplicates first, against committed state, as Kafka does (for a
        # LogAppendTime topic the original batch's append time is reported)
        for _, h in batches:
            if h.producer_id >= 0:
                dup = self._producers.find_duplicate(h)
                if dup is not None:
                    return AppendResult(
                        dup.first_offset,
                        dup.last_offset,
                        dup.timestamp if log_append_time >= 0 else -1,
                        self.log_start_offset,
                        duplicate=True,
                    )

        # stamp offsets, leader epoch, LogAppendTime (buf is our copy: nothing leaks on error)
        stamped: list[tuple[int, BatchHeader]] = []
        offset = first_offset = self.log_end_offset
        for pos, h in batches:
            stamp_batch(
                buf,
                pos,
                base_offset=offset,
                partition_leader_epoch=leader_epoch,
                log_append_time=now_ms if self.config.log_append_time else None,
            )
            stamped.append((pos, parse_header(buf, pos)))
            offset += h.last_offset_delta + 1
        last_offset = offset - 1
        max_ts = max(h.max_timestamp for _, h in stamped)

        # sequences and epochs, on staged copies (committed after the write)
        staged: dict[int, ProducerEntry] = {}
        for _, h in stamped:
            if h.producer_id >= 0:
                self._producers.validate(h, h.base_offset, h.last_offset, staged)

        with self._io("append", offline_on_error=True):
            if leader_epoch >= 0 and self._epochs.assign(leader_epoch, first_offset):
                self._write_epoch_checkpoint()
            seg = self._maybe_roll(len(buf), max_ts, last_offset, now_ms)
        try:
            seg.append(buf, stamped, now_ms)
        except RollbackFailed as exc:
            self._go_offline()
            raise StorageError(
                f"{self.name}: append failed and could not be undone: {exc}"
            ) from exc
        except OSError as exc:
            raise StorageError(f"{self.name}: append failed (nothing written): {exc}") from exc
        self._producers.commit(staged)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush()
            self._last_flush_ms = now_ms
        return AppendResult(first_offset, last_offset, log_append_time, self.log_start_offset)

    # -- roll ---------------------------------------------------------------------------------
    def _maybe_roll(
        self, messages_size: int, max_timestamp: int, max_offset: int, now_ms: int
    ) -> Segment:
        seg = self._segments[-1]
        jitter = roll_jitter_ms(self.topic, self.partition, seg.base_offset, self.config)
        if seg.should_roll(self.config, jitter, messages_size, max_timestamp, max_offset, now_ms):
            return self._roll(now_ms)
        return seg

    def _roll(self, now_ms: int) -> Segment:
        """Start a new active segment at the log end offset.

        The first two steps (producer snapshot, final time-index entry) undo themselves on
        an OSError, which then surfaces as `_NothingChanged` (a full disk fails the append
        that wanted the roll but leaves the log online); an OSError later propagates."""
        old = self._segments[-1]
        new_base = self.log_end_offset
        if old.size == 0 and old.base_offset == new_base:
            old.created_ms = now_ms
            return old
        try:
            self._take_snapshot()
            old.on_become_inactive()
        except RollbackFailed as exc:
            raise OSError(f"cannot undo a failed roll: {exc}") from exc
        except OSError as exc:
            raise _NothingChanged(f"cannot roll a new segment: {exc}") from exc
        new = Segment(self.fs, self.directory, new_base, self.config, now_ms, create=True)
        self._segments.append(new)
        self._bases.append(new_base)
        self.fs.fsync_dir(self.directory)
        self._flush_segments(new_base)
        return new

    def roll(self, now_ms: int) -> None:
        """Force a roll (tools, tests, retention)."""
        with self._io("roll", offline_on_error=True):
            self._roll(now_ms)

    # -- flush --------------------------------------------------------------------------------
    def _flush_segments(self, up_to: int) -> None:
        """fsync every segment below `up_to`; the recovery point moves there."""
        for seg in self._segments:
            if seg.base_offset < up_to:
                seg.flush()
        self.recovery_point = max(self.recovery_point, min(up_to, self.log_end_offset))

    def flush(self) -> None:
        """fsync data and indexes of every segment; the recovery point becomes the log end."""
        with self._io("flush", offline_on_error=True):
            for seg in self._segments:
                seg.flush()
            self.recovery_point = self.log_end_offset

    def maybe_flush(self, now_ms: int) -> None:
        """Flush when unflushed records exist and flush.ms passed since the last flush."""
        if self._offline or self._closed:
            return
        if (
            self.log_end_offset > self.recovery_point
            and now_ms - self._last_flush_ms >= self.config.flush_ms
        ):
            self.flush()
            self._last_flush_ms = now_ms

    # -- read ---------------------------------------------------------------------------------
    def _segment_index_for(self, offset: int) -> int:
        return max(bisect_right(self._bases, offset) - 1, 0)

    def read(
        self,
        offset: int,
        *,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        self._check_online()
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.name}: offset {offset} outside [{self.log_start_offset}, "
                f"{self.log_end_offset}]"
            )
        limit = self.log_end_offset if max_offset is None else max_offset
        if offset >= self.log_end_offset or offset >= limit:
            return b""
        out: list[bytes] = []
        total = 0
        with self._io("read", offline_on_error=False):
            i = self._segment_index_for(offset)
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
                    data, stop = seg.read(
                        pos, max_bytes - total, limit, min_one_batch and total == 0
                    )
                except CorruptSegment as exc:
                    if total:  # serve what lies before the damage; a read from it fails
                        break
                    self._corrupt(seg, exc)
                if data:
                    out.append(data)
                    total += len(data)
                if stop or total >= max_bytes:
                    break
                i += 1
        return out[0] if len(out) == 1 else b"".join(out)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `timestamp` (Kafka's
        fetchOffsetByTimestamp: time index -> offset index -> batch scan -> record decode)."""
        self._check_online()
        with self._io("offset lookup", offline_on_error=False):
            for seg in self._segments:
                if seg.largest_timestamp() < timestamp or seg.size == 0:
                    continue
                start_offset = seg.time_index.lookup(timestamp)
                _, pos = seg.index.lookup(start_offset)
                with self._serving(seg):
                    for bpos, h in seg.batches_from(pos):
                        if h.max_timestamp < timestamp or h.last_offset < self.log_start_offset:
                            continue
                        for rec in self._decode(seg, bpos, h):
                            if rec.timestamp >= timestamp and rec.offset >= self.log_start_offset:
                                return rec.offset, rec.timestamp
        return None

    def max_timestamp(self) -> tuple[int, int]:
        """(timestamp, offset) of the record with the largest timestamp (the first such
        record); (-1, -1) when the log holds none."""
        self._check_online()
        best: Segment | None = None
        for seg in self._segments:
            if (
                seg.size
                and seg.max_timestamp >= 0
                and (best is None or seg.max_timestamp > best.max_timestamp)
            ):
                best = seg
        if best is None:
            return -1, -1
        target = best.max_timestamp
        with self._io("max timestamp", offline_on_error=False), self._serving(best):
            _, pos = best.index.lookup(best.offset_of_max_timestamp)
            for pass_start in (pos, 0):
                for bpos, h in best.batches_from(pass_start):
                    if h.max_timestamp != target:
                        continue
                    if h.timestamp_type == 1:
                        return target, h.base_offset
                    for rec in self._decode(best, bpos, h):
                        if rec.timestamp == target:
                            return target, rec.offset
                    return target, h.last_offset
        return target, best.offset_of_max_timestamp

    def _decode(self, seg: Segment, pos: int, h: BatchHeader) -> list[Record]:
        data = seg.read_batch(pos, h)
        try:
            return decode_records(data, 0, max_decompressed_bytes=_DECODE_CAP)
        except InvalidBatch as exc:
            raise CorruptSegment(f"batch at {pos} of {seg.log_path.name}: {exc}") from exc

    # -- deletion -----------------------------------------------------------------------------
    def _delete_segments(self, doomed: list[Segment]) -> None:
        for seg in doomed:
            seg.delete_files()
        ids = {id(s) for s in doomed}
        self._segments = [s for s in self._segments if id(s) not in ids]
        self._bases = [s.base_offset for s in self._segments]
        first_base = self._segments[0].base_offset
        self.log_start_offset = max(self.log_start_offset, first_base)
        self._after_log_start_moved()
        self._delete_snapshots(lambda off: off >= first_base)

    def _after_log_start_moved(self) -> None:
        self._epochs.truncate_from_start(self.log_start_offset)
        if self._epochs.changed:
            self._write_epoch_checkpoint()
        if self._hw < self.log_start_offset:
            self._hw = self.log_start_offset
        self.recovery_point = max(self.recovery_point, self.log_start_offset)

    def _delete_old_segments(
        self, predicate: Callable[[Segment, Segment | None], bool], now_ms: int
    ) -> int:
        doomed: list[Segment] = []
        segs = self._segments
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            last_and_empty = nxt is None and seg.size == 0
            if self._hw >= upper and predicate(seg, nxt) and not last_and_empty:
                doomed.append(seg)
            else:
                break
        if not doomed:
            return 0
        if len(doomed) == len(segs):
            self._roll(now_ms)
        self._delete_segments(doomed)
        return len(doomed)

    def delete_expired_segments(self, now_ms: int) -> int:
        """Apply retention.ms, retention.bytes (cleanup.policy delete) and the log start
        offset; expire idle producers. Returns the number of segments deleted."""
        self._check_online()
        cfg = self.config
        deleted = 0
        with self._io("retention", offline_on_error=True):
            if cfg.delete and cfg.retention_ms >= 0:

                def expired(seg: Segment, _nxt: Segment | None) -> bool:
                    return now_ms - seg.largest_timestamp() > cfg.retention_ms

                deleted += self._delete_old_segments(expired, now_ms)
            if cfg.delete and cfg.retention_bytes >= 0:
                diff = self.size_in_bytes() - cfg.retention_bytes
                if diff > 0:

                    def too_big(seg: Segment, _nxt: Segment | None) -> bool:
                        nonlocal diff
                        if diff - seg.size >= 0:
                            diff -= seg.size
                            return True
                        return False

                    deleted += self._delete_old_segments(too_big, now_ms)

            def below_start(_seg: Segment, nxt: Segment | None) -> bool:
                return nxt is not None and nxt.base_offset <= self.log_start_offset

            deleted += self._delete_old_segments(below_start, now_ms)
        self._producers.remove_expired(now_ms, cfg.producer_id_expiration_ms)
        return deleted

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to `offset` (-1: the high watermark) and
        delete segments wholly below it. OffsetOutOfRangeError above the high watermark."""
        self._check_online()
        if offset == -1:
            offset = self._hw
        if offset < 0 or offset > self._hw:
            raise OffsetOutOfRangeError(
                f"{self.name}: cannot delete records before {offset}: high watermark is {self._hw}"
            )
        if offset <= self.log_start_offset:
            return self.log_start_offset
        with self._io("delete records", offline_on_error=True):
            self.log_start_offset = offset
            self._after_log_start_moved()
            doomed = []
            for i, seg in enumerate(self._segments[:-1]):
                if self._segments[i + 1].base_offset <= offset:
                    doomed.append(seg)
            if doomed:
                self._delete_segments(doomed)
        return self.log_start_offset

    # -- compaction ---------------------------------------------------------------------------
    def replace_segments(self, new: Segment, old: list[Segment]) -> None:
        """Swap the log cleaner's segment `new` (files `<base>.*.cleaned`, flushed) in for
        `old`: consecutive non-active segments, the first with `new`'s base offset. Crash
        safe (`cleaner.swap_in`); an OSError takes the log offline and the next load
        completes or discards the swap."""
        self._check_online()
        ids = [id(s) for s in self._segments]
        i = ids.index(id(old[0])) if id(old[0]) in ids else -1
        if (
            i < 0
            or i + len(old) >= len(self._segments)
            or ids[i : i + len(old)] != [id(s) for s in old]
            or new.base_offset != old[0].base_offset
        ):
            raise ValueError(
                f"{self.name}: segments to replace are not consecutive "
                "non-active segments of this log"
            )
        with self._io("swap in cleaned segment", offline_on_error=True):
            swap_in(self.fs, self.directory, new, old)
        new.next_offset = old[-1].next_offset
        self._segments[i : i + len(old)] = [new]
        self._bases = [s.base_offset for s in self._segments]

    # -- truncation ---------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Remove every batch at and above `offset` (a batch straddling it goes entirely, so
        the log end may land below `offset`). Below the log start: start over empty there.
        The epoch cache is truncated, producer state rebuilt."""
        self._check_online()
        if offset >= self.log_end_offset:
            return
        with self._io("truncate", offline_on_error=True):
            if offset < self.log_start_offset or offset < self._segments[0].base_offset:
                self._truncate_fully_and_start_at(offset, None)
            else:
                doomed = [s for s in self._segments if s.base_offset > offset]
                for seg in doomed:
                    seg.delete_files()
                self._segments = [s for s in self._segments if s.base_offset <= offset]
                self._bases = [s.base_offset for s in self._segments]
                self._segments[-1].truncate_to(offset)
            leo = self.log_end_offset
            self._epochs.truncate_from_end(leo)
            if self._epochs.changed:
                self._write_epoch_checkpoint()
            self._delete_snapshots(lambda off: off <= leo)
            self._hw = min(self._hw, leo)
            self.recovery_point = min(self.recovery_point, leo)
            self._rebuild_producer_state()

    def _truncate_fully_and_start_at(self, offset: int, now_ms: int | None) -> None:
        created = now_ms if now_ms is not None else self._segments[-1].created_ms
        for seg in self._segments:
            seg.delete_files()
        self._segments = [
            Segment(self.fs, self.directory, offset, self.config, created, create=True)
        ]
        self._bases = [offset]
        self.log_start_offset = offset
        self._epochs.clear()
        self._write_epoch_checkpoint()
        self._producers.clear()
        self._delete_snapshots(lambda off: False)
        self._hw = offset
        self.recovery_point = offset

    def _rebuild_producer_state(self) -> None:
        snapshot_offset, producers = self._load_snapshot()
        self._producers = ProducerStateManager()
        self._producers.producers = producers

        def on_batch(h: BatchHeader) -> None:
            if h.base_offset >= snapshot_offset:
                self._producers.apply(h)

        self._scan_headers(snapshot_offset, on_batch)

    # -- misc ---------------------------------------------------------------------------------
    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch (KIP-101/279), see leader_epoch.py."""
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    def assign_epoch_start_offset(self, epoch: int, start_offset: int | None = None) -> None:
        """Record that `epoch` starts at `start_offset` (default: the log end), as a new leader
        does when it takes over (Kafka's Partition.makeLeader)."""
        with self._io("leader epoch checkpoint", offline_on_error=True):
            start = self.log_end_offset if start_offset is None else start_offset
            if self._epochs.assign(epoch, start):
                self._write_epoch_checkpoint()

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        for seg in self._segments:
            seg.index_interval_bytes = config.index_interval_bytes
        self._segments[-1].set_index_max_bytes(config.segment_index_bytes)

    def close(self, *, snapshot: bool = True) -> None:
        """Final time-index entry, producer snapshot, flush, close the files. Idempotent.

        Raises StorageError if the final flush fails (files are closed regardless)."""
        if self._closed:
            return
        try:
            if not self._offline:
                with self._io("close", offline_on_error=True):
                    self._segments[-1].on_become_inactive()
                    if snapshot:
                        self._take_snapshot()
                    for seg in self._segments:
                        seg.flush()
                    self.recovery_point = self.log_end_offset
        finally:
            self._close_files()
            self._closed = True

    def _close_files(self) -> None:
        for seg in self._segments:
            seg.close()
