"""`PartitionLog`: one partition directory `<topic>-<n>` (Kafka's `UnifiedLog`).

Append, read, roll, flush, retention, DeleteRecords, truncation and the leader-epoch cache of
one partition, on top of its parts: `LocalLog` (local_log.py: the segment set, log start and
recovery point, roll, flush, reads and the log's health), `LogAppender` (appender.py: the
append path, with the `LogValidator`), `LogLoader` (loader.py, recovery at open, returns a
`LoadedLog`), `ProducerStateManager` and its `SnapshotFiles` (producer_state.py). Design
notes: docs/log.md.

Invariants: `log_start_offset` <= `high_watermark` <= `log_end_offset` (the high watermark is
set by replication and clamped into that range); an append is all or nothing and its bytes
reach the kernel (`os.write`) before it returns; a batch that fails its CRC on a read is never
served (the log goes offline, its recovery point moves back); every OSError surfaces as
`StorageError` (a failure that could not be undone takes the log offline). Synchronous and
deterministic: no trio, no clock reads (`now_ms` arguments), all file access through a
`FileSystem` (fs.py).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from protocol.records import BatchHeader
from wirebroker.log.appender import AppendResult, LogAppender
from wirebroker.log.config import LogConfig
from wirebroker.log.errors import (
    OffsetOutOfRangeError,
    StorageError,
)
from wirebroker.log.file_slice import FileSlice
from wirebroker.log.fs import FileSystem, OsFileSystem
from wirebroker.log.leader_epoch import LeaderEpochCache
from wirebroker.log.loader import (
    LEADER_EPOCH_FILE,
    PARTITION_METADATA_FILE,
    LogLoader,
    replay_producers,
    save_epochs,
)
from wirebroker.log.local_log import LocalLog
from wirebroker.log.producer_state import (
    ProducerEntry,
    ProducerStateManager,
    SnapshotFiles,
)
from wirebroker.log.segment import Segment
from wirebroker.log.segments import LogSegments
from wirebroker.log.txn_index import AbortedTxn

__all__ = ["LEADER_EPOCH_FILE", "PARTITION_METADATA_FILE", "AppendResult", "PartitionLog"]

log = logging.getLogger(__name__)


class PartitionLog:
    topic: str
    partition: int
    directory: Path
    config: LogConfig
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
        self._local = LocalLog(fs, directory, topic, partition, config)
        self._local.before_recovery_point_moves = self.sync_epoch_checkpoint
        # the leader-epoch checkpoint was last written without an fsync (an append's new
        # epoch): `sync_epoch_checkpoint` makes it durable before the recovery point passes it
        self._epochs_unsynced = False
        self.topic_id = None
        self._appender = LogAppender(self)
        self._snapshots = SnapshotFiles(fs, directory)
        self._epochs = LeaderEpochCache()
        self._producers = ProducerStateManager()
        self._hw = 0

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
    def _segments(self) -> LogSegments:
        return self._local.segments

    @property
    def log_start_offset(self) -> int:
        return self._local.log_start_offset

    @log_start_offset.setter
    def log_start_offset(self, value: int) -> None:
        self._local.log_start_offset = value

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @recovery_point.setter
    def recovery_point(self, value: int) -> None:
        self._local.recovery_point = value

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._hw

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._hw = min(max(value, self.log_start_offset), self.log_end_offset)
        self._producers.on_high_watermark(self._hw)

    @property
    def last_stable_offset(self) -> int:
        """min(first offset of the oldest ongoing or unreplicated transaction, high
        watermark), never below the log start (an open transaction whose start was deleted by
        retention or DeleteRecords, as Kafka): read_committed readers stop here (see
        producer_state.py)."""
        return max(self._producers.last_stable_offset(self._hw), self.log_start_offset)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest ongoing (or unreplicated) transaction."""
        return self._producers.first_unstable_offset(self._hw)

    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of each ongoing transaction."""
        return dict(self._producers.ongoing)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs.latest_epoch

    @property
    def offline(self) -> bool:
        return self._local.offline

    @property
    def closed(self) -> bool:
        return self._local.closed

    @property
    def segments(self) -> list[Segment]:
        """The segments, oldest first (read-only view for tools and tests)."""
        return self._segments.to_list()

    def leader_epoch_entries(self) -> list[tuple[int, int]]:
        return self._epochs.entries

    def producer_entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def start_txn_verification(
        self, producer_id: int, sequence: int, epoch: int, *, adds: bool, now_ms: int
    ) -> bool:
        """Before a leader checks a transactional batch with the transaction coordinator
        (KIP-890): False when the producer's transaction is ongoing here at `epoch`, else
        True, its sequence recorded (`ProducerStateManager.start_verification`)."""
        return self._producers.start_verification(
            producer_id, sequence, epoch, adds=adds, now_ms=now_ms
        )

    def producer_entries(self) -> list[ProducerEntry]:
        """Every producer in the state (DescribeProducers)."""
        return list(self._producers.producers.values())

    def producer_last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch, for every producer in the state
        (the log cleaner keeps those batches)."""
        return self._producers.last_offsets()

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
        new: bool = False,
        topic_id: uuid.UUID | None = None,
    ) -> PartitionLog:
        """Open (creating if needed) and, unless `clean`, recover the partition directory
        (`LogLoader`); or, when `new` (the caller just made `directory`, without segments),
        start it with one empty segment at offset 0 (docs/log.md, "Creation"). `topic_id`,
        when given, replaces the one in partition.metadata. StorageError on an OSError."""
        self = cls(Path(directory), topic, partition, config, fs or OsFileSystem())
        try:
            if new:
                self._segments.add(Segment(self.fs, self.directory, 0, config, now_ms, create=True))
            else:
                self._load(now_ms, recovery_point, log_start_offset, clean)
        except OSError as exc:
            verb = "create" if new else "open"
            raise StorageError(f"{self.name}: cannot {verb} log in {directory}: {exc}") from exc
        self._local.last_flush_ms = now_ms
        if topic_id is not None:
            self.topic_id = topic_id
        return self

    def _load(self, now_ms: int, recovery_point: int, log_start_offset: int, clean: bool) -> None:
        loader = LogLoader(self.fs, self.directory, self.name, self.config, now_ms)
        loaded = loader.load(recovery_point, log_start_offset, clean)
        self._local.segments = loaded.segments
        self.log_start_offset = loaded.log_start_offset
        self.recovery_point = loaded.recovery_point
        self._epochs = loaded.epochs
        self._producers = loaded.producers
        self.topic_id = loaded.topic_id
        self._hw = self.log_end_offset
        self._local.checked_from = self.log_end_offset

    # -- errors (LocalLog's) --------------------------------------------------------------------
    def _check_online(self) -> None:
        self._local.check_online()

    def _io(self, what: str, *, offline_on_error: bool) -> AbstractContextManager[None]:
        return self._local.io(what, offline_on_error=offline_on_error)

    def _write_epoch_checkpoint(self, *, durable: bool = True) -> None:
        save_epochs(self.fs, self.directory, self._epochs, durable=durable)
        self._epochs_unsynced = not durable

    def sync_epoch_checkpoint(self) -> None:
        """Make the leader-epoch checkpoint durable if an append wrote it without an fsync.

        An append that starts a leader epoch writes the checkpoint unsynced (one fsync per
        partition and epoch saved on the produce path: a first write to each partition of a
        new 1,000-partition topic paid 1,000): after a crash, recovery CRC-scans every
        segment from the recovery point and assigns the epochs of their batches again
        (`LogLoader._recover`), and a missing or malformed checkpoint is rebuilt from the
        whole log. What recovery does not rescan, below the recovery point, must be in a
        durable checkpoint: so this runs before the recovery point moves (flush, roll,
        close), as Kafka flushes its leader-epoch checkpoint with the log (KAFKA-15046)."""
        if self._epochs_unsynced:
            self._write_epoch_checkpoint()

    # -- append (LogAppender's) ---------------------------------------------------------------
    def append_as_leader(
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_epoch: int,
        now_ms: int,
        batches: Sequence[tuple[int, BatchHeader]] | None = None,
        coordinator: bool = False,
    ) -> AppendResult:
        """A client append as leader, all or nothing (`LogAppender.as_leader`)."""
        return self._appender.as_leader(
            records,
            leader_epoch=leader_epoch,
            now_ms=now_ms,
            batches=batches,
            coordinator=coordinator,
        )

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        leader_epoch: int,
        now_ms: int,
    ) -> AppendResult:
        """A COMMIT or ABORT marker ending a transaction (`LogAppender.marker`)."""
        return self._appender.marker(
            producer_id,
            producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            leader_epoch=leader_epoch,
            now_ms=now_ms,
        )

    def append_as_follower(
        self, records: bytes | bytearray | memoryview, *, now_ms: int
    ) -> AppendResult:
        """Replicated batches as the leader wrote them (`LogAppender.as_follower`)."""
        return self._appender.as_follower(records, now_ms=now_ms)

    # -- roll and flush (LocalLog's) -----------------------------------------------------------
    def _take_snapshot(self, offset: int) -> None:
        self._snapshots.take(self._producers, offset)

    def _roll(self, now_ms: int) -> Segment:
        return self._local.roll(now_ms, self._take_snapshot)

    def roll(self, now_ms: int) -> None:
        """Force a roll (tools, tests, retention)."""
        with self._io("roll", offline_on_error=True):
            self._roll(now_ms)

    def flush(self) -> None:
        """fsync data and indexes of every segment; the recovery point becomes the log end."""
        self._local.flush()

    def maybe_flush(self, now_ms: int) -> None:
        """Flush when unflushed records exist and flush.ms passed since the last flush."""
        self._local.maybe_flush(now_ms)

    # -- read ---------------------------------------------------------------------------------
    def read(
        self,
        offset: int,
        *,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        """Whole batches from `offset` (`LogSegments.read`)."""
        data = self.read_to_send(
            offset, max_bytes=max_bytes, max_offset=max_offset, min_one_batch=min_one_batch
        )
        assert isinstance(data, bytes)
        return data

    def read_to_send(
        self,
        offset: int,
        *,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        zero_copy: bool = False,
    ) -> bytes | FileSlice:
        """`read`; with `zero_copy` a `FileSlice` to send with sendfile where one can be made
        (file_slice.py: a leader serving a follower), else bytes. Only batches appended since
        the log was opened go unread: their CRCs were checked on the way in. Older ones (not
        all scanned at start-up: docs/log.md, "Read") are read and checked as always, so
        damage in them is still found by the leader, which takes the log offline."""
        return self._local.read_to_send(
            offset,
            max_bytes=max_bytes,
            max_offset=max_offset,
            min_one_batch=min_one_batch,
            zero_copy=zero_copy,
        )

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound) (Kafka's
        collectAbortedTransactions): the `.txnindex` entries with marker >= fetch_offset and
        first offset < upper_bound, from the segment holding fetch_offset on, until an
        entry's last stable offset reaches the bound."""
        return self._local.aborted_transactions(fetch_offset, upper_bound)

    def aborted_in(
        self, fetch_offset: int, records: bytes | bytearray | memoryview
    ) -> list[AbortedTxn]:
        """`aborted_transactions` for the batches `records` a read from `fetch_offset`
        returned (the bound is the offset after its last batch); [] when empty."""
        return self._local.aborted_in(fetch_offset, records)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `timestamp` (Kafka's
        fetchOffsetByTimestamp, per segment: `segment_search.find_offset_by_timestamp`)."""
        return self._local.offset_for_timestamp(timestamp)

    def max_timestamp(self) -> tuple[int, int]:
        """(timestamp, offset) of the record with the largest timestamp (the first such
        record); (-1, -1) when the log holds none."""
        return self._local.max_timestamp()

    # -- deletion -----------------------------------------------------------------------------
    def _delete_segments(self, doomed: list[Segment]) -> None:
        self._segments.delete(doomed)
        first_base = self._segments[0].base_offset
        self.log_start_offset = max(self.log_start_offset, first_base)
        self._after_log_start_moved()
        self._snapshots.delete(lambda off: off >= first_base)

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
        doomed = self._segments.deletable(predicate, self._hw, self.log_end_offset)
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
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
                deleted += self._delete_old_segments(_expired(now_ms, cfg.retention_ms), now_ms)
            if cfg.delete and cfg.retention_bytes >= 0:
                diff = self.size_in_bytes() - cfg.retention_bytes
                if diff > 0:
                    deleted += self._delete_old_segments(_over_size(diff), now_ms)
            deleted += self._delete_old_segments(_below(self.log_start_offset), now_ms)
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
            segs = self._segments.to_list()
            doomed = [seg for seg, nxt in itertools.pairwise(segs) if nxt.base_offset <= offset]
            if doomed:
                self._delete_segments(doomed)
        return self.log_start_offset

    # -- compaction ---------------------------------------------------------------------------
    def replace_segments(self, new: Segment, old: list[Segment]) -> None:
        """Swap the log cleaner's segment `new` (files `<base>.*.cleaned`, flushed) in for
        `old`: consecutive non-active segments, the first with `new`'s base offset. Crash
        safe (`segments.swap_in`); an OSError takes the log offline and the next load
        completes or discards the swap."""
        self._local.replace_segments(new, old)

    # -- truncation ---------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Remove every batch at and above `offset` (a batch straddling it goes entirely, so
        the log end may land below `offset`). Below the log start: start over empty there.
        The epoch cache is truncated, producer state rebuilt. At or above the log end nothing
        is removed, but epoch entries starting at the log end still go (as Kafka: a leader that
        took an epoch and lost it before appending must not keep claiming it)."""
        self._check_online()
        if offset >= self.log_end_offset:
            self._epochs.truncate_from_end(self.log_end_offset)
            if self._epochs.changed:
                with self._io("leader epoch checkpoint", offline_on_error=True):
                    self._write_epoch_checkpoint()
            return
        with self._io("truncate", offline_on_error=True):
            if offset < self.log_start_offset or offset < self._segments[0].base_offset:
                self._truncate_fully_and_start_at(offset)
            else:
                self._segments.delete_above(offset)
                self._segments.active.truncate_to(offset)
            leo = self.log_end_offset
            self._epochs.truncate_from_end(leo)
            if self._epochs.changed:
                self._write_epoch_checkpoint()
            self._snapshots.delete(lambda off: off <= leo)
            self._hw = min(self._hw, leo)
            self.recovery_point = min(self.recovery_point, leo)
            self._local.checked_from = min(self._local.checked_from, leo)
            self._producers = replay_producers(self._segments, self._snapshots, leo)
            self._producers.on_high_watermark(self._hw)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every batch and start the log over, empty, at `offset` (a follower whose log
        end is below its leader's log start: Kafka's truncateFullyAndStartAt)."""
        self._check_online()
        with self._io("truncate", offline_on_error=True):
            self._truncate_fully_and_start_at(offset)

    def advance_log_start_offset(self, offset: int) -> int:
        """A follower follows its leader's log start offset (retention, DeleteRecords), up to
        its own log end; whole segments below it are deleted. Returns the log start."""
        self._check_online()
        target = min(offset, self.log_end_offset)
        if target <= self.log_start_offset:
            return self.log_start_offset
        with self._io("advance log start", offline_on_error=True):
            self.log_start_offset = target
            self._after_log_start_moved()
            segs = self._segments.to_list()
            doomed = [seg for seg, nxt in itertools.pairwise(segs) if nxt.base_offset <= target]
            if doomed:
                self._delete_segments(doomed)
        return self.log_start_offset

    def _truncate_fully_and_start_at(self, offset: int) -> None:
        self._segments.reset_at(offset, self.config, self._segments.active.created_ms)
        self.log_start_offset = offset
        self._epochs.clear()
        self._write_epoch_checkpoint()
        self._producers.clear()
        self._snapshots.delete(lambda off: False)
        self._hw = offset
        self.recovery_point = offset
        self._local.checked_from = offset

    # -- misc ---------------------------------------------------------------------------------
    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch (KIP-101/279), see leader_epoch.py."""
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    def assign_epoch_start_offset(self, epoch: int, start_offset: int | None = None) -> None:
        """Record that `epoch` starts at `start_offset` (default: the log end), as a new leader
        does when it takes over (Kafka's Partition.makeLeader).

        On an empty log the checkpoint is written with the first append (or the next change),
        not now: until then the entry protects no record, and a leader assigns it again after
        a restart. So a new partition's first leadership costs no fsync."""
        with self._io("leader epoch checkpoint", offline_on_error=True):
            start = self.log_end_offset if start_offset is None else start_offset
            if self._epochs.assign(epoch, start) and self.log_end_offset > self.log_start_offset:
                self._write_epoch_checkpoint()

    def size_in_bytes(self) -> int:
        return self._segments.size_in_bytes()

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        self._appender.update_config(config)
        for seg in self._segments:
            seg.index_interval_bytes = config.index_interval_bytes
        self._segments.active.set_index_max_bytes(config.segment_index_bytes)
        self._local.config = config

    def close(self, *, snapshot: bool = True) -> None:
        """Final time-index entry, producer snapshot, flush, close the files. Idempotent.

        Raises StorageError if the final flush fails (files are closed regardless)."""
        if self._local.closed:
            return
        try:
            if not self._local.offline:
                with self._io("close", offline_on_error=True):
                    self._segments.active.on_become_inactive()
                    if snapshot:
                        self._snapshots.take(self._producers, self.log_end_offset)
                    self._segments.flush()
                    self.sync_epoch_checkpoint()
                    self.recovery_point = self.log_end_offset
        finally:
            self._close_files()
            self._local.closed = True

    def _close_files(self) -> None:
        self._segments.close()


# -- retention predicates (segment, next segment) -> delete? ------------------------------------
def _expired(now_ms: int, retention_ms: int) -> Callable[[Segment, Segment | None], bool]:
    return lambda seg, _nxt: now_ms - seg.largest_timestamp() > retention_ms


def _over_size(diff: int) -> Callable[[Segment, Segment | None], bool]:
    """Deletes segments while the log stays at least `diff` bytes above retention.bytes."""

    def too_big(seg: Segment, _nxt: Segment | None) -> bool:
        nonlocal diff
        if diff - seg.size >= 0:
            diff -= seg.size
            return True
        return False

    return too_big


def _below(log_start_offset: int) -> Callable[[Segment, Segment | None], bool]:
    return lambda _seg, nxt: nxt is not None and nxt.base_offset <= log_start_offset
