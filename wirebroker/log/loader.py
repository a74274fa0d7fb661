"""`LogLoader`: opening and recovering one partition directory (Kafka's `LogLoader`).

`LogLoader.load` reads the directory and returns a `LoadedLog` (segments, log start offset,
recovery point, leader-epoch cache, producer state, topic id); it never touches a
`PartitionLog`. Steps (details in docs/log.md, "Recovery"): complete interrupted cleaner
swaps, delete stray files, open the segments, sanity-check the ones below the recovery point
(all of them after a clean shutdown), CRC-scan and truncate the ones from it (a torn tail is
cut, later segments deleted), rebuild the leader-epoch cache when its checkpoint is missing or
corrupt, and rebuild producer state from the newest snapshot plus a header scan (ongoing
transactions included: they survive a restart, clean or not). The `.txnindex` of every
segment from the first one that was recovered (unclean shutdown), lost its file (old data
directory, completed cleaner swap) or has a torn one is rebuilt by that same scan, started
from a snapshot at or below that segment.

Invariants of the result: at least one segment; log start <= log end; recovery point == log
end (recovered segments are fsynced); the epoch cache lies within [log start, log end] and is
checkpointed when it changed. OSError propagates (files opened so far are closed).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

from protocol.records import BatchHeader
from wirebroker.log.checkpoint import (
    CheckpointError,
    read_epoch_checkpoint,
    read_partition_metadata,
    write_epoch_checkpoint,
)
from wirebroker.log.config import LogConfig
from wirebroker.log.control import ControlError, parse_marker
from wirebroker.log.fs import FileSystem
from wirebroker.log.leader_epoch import LeaderEpochCache
from wirebroker.log.producer_state import ProducerStateManager, SnapshotFiles
from wirebroker.log.segment import (
    SEGMENT_SUFFIXES,
    CorruptSegment,
    Segment,
    parse_segment_file_name,
)
from wirebroker.log.segments import (
    CLEANED_SUFFIX,
    SWAP_SUFFIX,
    LogSegments,
    complete_interrupted_swaps,
)
from wirebroker.log.txn_index import AbortedTxn

__all__ = [
    "LEADER_EPOCH_FILE",
    "PARTITION_METADATA_FILE",
    "LoadedLog",
    "LogLoader",
    "read_marker",
    "replay_producers",
    "save_epochs",
]

log = logging.getLogger(__name__)

LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
_STRAY_SUFFIXES = (".tmp", ".deleted", CLEANED_SUFFIX, SWAP_SUFFIX)


@dataclass
class LoadedLog:
    """The state of a partition directory after `LogLoader.load`."""

    segments: LogSegments
    log_start_offset: int
    recovery_point: int
    epochs: LeaderEpochCache
    producers: ProducerStateManager
    topic_id: uuid.UUID | None


def save_epochs(
    fs: FileSystem, directory: Path, epochs: LeaderEpochCache, *, durable: bool = True
) -> None:
    """Write the leader-epoch checkpoint (`durable`: fsynced); the cache is no longer
    `changed`."""
    write_epoch_checkpoint(fs, directory / LEADER_EPOCH_FILE, epochs.entries, durable=durable)
    epochs.changed = False


def replay_producers(
    segments: LogSegments,
    snapshots: SnapshotFiles,
    log_end_offset: int,
    rebuild_epochs: LeaderEpochCache | None = None,
    rebuild_txn_from: int | None = None,
) -> ProducerStateManager:
    """Producer state: the newest snapshot at or below the log end, then the batches after
    it (a marker's record is read to tell COMMIT from ABORT). `rebuild_epochs`: also fill
    this cache from every batch's epoch. `rebuild_txn_from`: rewrite the `.txnindex` of
    every segment from that base offset on from the ABORT markers the replay meets (the
    snapshot used is then at or below it, so the state at those segments is known)."""
    snapshot_offset, entries = snapshots.load(log_end_offset, rebuild_txn_from)
    producers = ProducerStateManager()
    producers.set_producers(entries)
    aborted: dict[int, list[AbortedTxn]] = {}

    def on_batch(seg: Segment, pos: int, h: BatchHeader) -> None:
        if rebuild_epochs is not None and h.partition_leader_epoch >= 0:
            rebuild_epochs.assign(h.partition_leader_epoch, h.base_offset)
        if h.base_offset < snapshot_offset:
            return
        marker = None
        if h.is_control and h.is_transactional and h.producer_id >= 0:
            marker = read_marker(seg, pos, h)
        txn = producers.apply(h, marker)
        if (
            txn is not None
            and txn.aborted
            and rebuild_txn_from is not None
            and seg.base_offset >= rebuild_txn_from
        ):
            entry = AbortedTxn(
                txn.producer_id, txn.first_offset, txn.last_offset, producers.lso_after(txn)
            )
            aborted.setdefault(seg.base_offset, []).append(entry)

    start = 0 if rebuild_epochs is not None else snapshot_offset
    segments.scan_batches(start, on_batch)
    if rebuild_txn_from is not None:
        for seg in segments:
            if seg.base_offset >= rebuild_txn_from:
                seg.txn_index.reset(aborted.get(seg.base_offset, []))
    producers.on_high_watermark(log_end_offset)
    return producers


def read_marker(seg: Segment, pos: int, h: BatchHeader) -> tuple[int, int] | None:
    """(type, coordinator epoch) of the control batch at `pos`, None when unreadable."""
    try:
        return parse_marker(seg.read_batch(pos, h))
    except (CorruptSegment, ControlError) as exc:
        log.warning("%s: unreadable control batch at %d: %s", seg.log_path.name, pos, exc)
        return None


class LogLoader:
    """Loads one partition directory (see the module doc)."""

    def __init__(
        self, fs: FileSystem, directory: Path, name: str, config: LogConfig, now_ms: int
    ) -> None:
        self.fs = fs
        self.directory = directory
        self.name = name
        self.config = config
        self.now_ms = now_ms
        self.snapshots = SnapshotFiles(fs, directory)

    def load(self, recovery_point: int, log_start_offset: int, clean: bool) -> LoadedLog:
        """Open and (unless `clean`) recover the directory; see the module doc."""
        segments = LogSegments(self.fs, self.directory)
        try:
            return self._load(segments, recovery_point, log_start_offset, clean)
        except BaseException:
            segments.close()
            raise

    def _load(
        self, segments: LogSegments, recovery_point: int, log_start_offset: int, clean: bool
    ) -> LoadedLog:
        self._open_segments(segments, log_start_offset)
        recover_from = len(segments) if clean else segments.index_for(recovery_point)
        epochs, epoch_file_bad = self._read_epochs()
        rebuild_epochs = epochs is None
        cache = epochs if epochs is not None else LeaderEpochCache()
        recovered = self._recover(segments, recover_from, cache, rebuild_epochs)
        log_start = max(log_start_offset, segments[0].base_offset)
        if log_start > segments.next_offset(log_start):
            log.warning(
                "%s: log start %d beyond log end %d; starting empty",
                self.name,
                log_start,
                segments.next_offset(log_start),
            )
            segments.reset_at(log_start, self.config, self.now_ms)
            cache.clear()
            save_epochs(self.fs, self.directory, cache)
            self.snapshots.delete(lambda off: False)
            recovered = []
        live = {id(s) for s in segments}
        for seg in recovered:
            if id(seg) in live:
                seg.flush()
        log_end = segments.next_offset(log_start)
        if rebuild_epochs:
            cache = LeaderEpochCache()
        stale_txn = [seg.base_offset for seg in segments if seg.txn_index.needs_rebuild]
        producers = replay_producers(
            segments,
            self.snapshots,
            log_end,
            cache if rebuild_epochs else None,
            min(stale_txn) if stale_txn else None,
        )
        cache.truncate_from_end(log_end)
        cache.truncate_from_start(log_start)
        # a missing checkpoint rebuilt empty stays missing (a new partition has none)
        if cache.changed or epoch_file_bad:
            save_epochs(self.fs, self.directory, cache)
        producers.remove_expired(self.now_ms, self.config.producer_id_expiration_ms)
        return LoadedLog(segments, log_start, log_end, cache, producers, self._topic_id())

    def _open_segments(self, segments: LogSegments, log_start_offset: int) -> None:
        """Complete interrupted swaps, delete stray files, open every `<base>.log` in offset
        order (an empty directory gets one segment at the log start offset)."""
        fs, directory = self.fs, self.directory
        fs.makedirs(directory)
        complete_interrupted_swaps(fs, directory)
        names = sorted(fs.listdir(directory))
        bases = []
        indexes: list[tuple[int, str]] = []
        for name in names:
            parsed = parse_segment_file_name(name)
            if name.endswith(_STRAY_SUFFIXES):
                fs.unlink(directory / name)
            elif parsed is not None and parsed[1] == ".log":
                bases.append(parsed[0])
            elif parsed is not None and parsed[1] in SEGMENT_SUFFIXES:
                indexes.append((parsed[0], name))
        base_set = set(bases)
        for base, name in indexes:  # an index without its .log
            if base not in base_set:
                fs.unlink(directory / name)
        for base in bases:
            segments.add(Segment(fs, directory, base, self.config, self.now_ms, create=False))
        if not len(segments):
            start = max(log_start_offset, 0)
            segments.add(Segment(fs, directory, start, self.config, self.now_ms, create=True))

    def _read_epochs(self) -> tuple[LeaderEpochCache | None, bool]:
        """(the checkpointed cache or None when missing/corrupt, whether it was corrupt)."""
        try:
            entries = read_epoch_checkpoint(self.fs, self.directory / LEADER_EPOCH_FILE)
        except CheckpointError as exc:
            log.warning("%s: %s; rebuilding the leader epoch cache", self.name, exc)
            return None, True
        return (LeaderEpochCache(entries) if entries is not None else None), False

    def _recover(
        self,
        segments: LogSegments,
        recover_from: int,
        epochs: LeaderEpochCache,
        rebuild_epochs: bool,
    ) -> list[Segment]:
        """Check segments below `recover_from`, CRC-scan the others; a truncation deletes
        every later segment. Returns the segments recovered."""
        recovered: list[Segment] = []
        i = 0
        while i < len(segments):
            seg = segments[i]
            is_last = i == len(segments) - 1
            if i < recover_from:
                reason = self._check(seg, None if is_last else segments[i + 1].base_offset)
                truncated = 0
                if reason is not None:
                    # the epoch cache already covers this segment and the later ones: a
                    # truncation is applied to it later (truncate_from_end(log end))
                    log.warning("%s: %s; recovering segment %d", self.name, reason, seg.base_offset)
                    truncated = seg.recover()
                    recovered.append(seg)
            else:
                if i == recover_from and not rebuild_epochs:
                    epochs.truncate_from_end(seg.base_offset)
                truncated = _recover_segment(seg, None if rebuild_epochs else epochs)
                recovered.append(seg)
            if truncated and not is_last:
                segments.delete_after(i, "after a truncation")
            i += 1
        return recovered

    @staticmethod
    def _check(seg: Segment, next_base: int | None) -> str | None:
        """Sanity-check a segment below the recovery point: its indexes (the last segment
        also walks its tail headers); -> why it must be recovered, or None."""
        reason = seg.load_indexes(next_base)
        if reason is not None:
            return reason
        if next_base is not None:
            seg.next_offset = next_base
            return None
        try:
            seg.read_next_offset()
        except CorruptSegment as exc:
            return str(exc)
        return None

    def _topic_id(self) -> uuid.UUID | None:
        try:
            return read_partition_metadata(self.fs, self.directory / PARTITION_METADATA_FILE)
        except CheckpointError as exc:
            log.warning("%s: %s", self.name, exc)
            return None


def _recover_segment(seg: Segment, epochs: LeaderEpochCache | None) -> int:
    """CRC-scan and truncate `seg`; its batches' epochs go into `epochs` when given."""
    if epochs is None:
        return seg.recover(None)

    def on_batch(h: BatchHeader) -> None:
        if h.partition_leader_epoch >= 0:
            epochs.assign(h.partition_leader_epoch, h.base_offset)

    return seg.recover(on_batch)
