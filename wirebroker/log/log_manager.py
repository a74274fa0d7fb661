"""`LogManager`: the broker's log directories and every partition log in them.

Each log directory holds partition directories `<topic>-<partition>` (the topic name may
contain '-': the name is split on the LAST '-') and these files::

    recovery-point-offset-checkpoint   per partition: offset below which data was fsynced
    log-start-offset-checkpoint        per partition: log start offset (DeleteRecords)
    replication-offset-checkpoint      per partition: high watermark (multi-broker mode only;
                                       written for the ReplicaManager, `write_high_watermarks`)
    cleaner-offset-checkpoint          per compacted partition: offset below which the log
                                       cleaner has cleaned (written after each round)
    .kafka_cleanshutdown               written by close() after every log of the directory
                                       was flushed and checkpointed; removed by load()
    meta.properties                    not ours (cluster metadata)

`load` opens every partition directory: with the clean-shutdown marker present no batch is
scanned (indexes are still sanity-checked); otherwise each log recovers from its checkpointed
recovery point. Anything else in a log directory is ignored, except `*-delete` directories
left by an interrupted `delete`, which are removed.

`delete` renames the partition directory to `<dir>.<uuid hex>-delete` (atomic; a crash leaves
a name that `load` cleans up), then removes it.

New partitions go to the log directory holding the fewest partitions (Kafka's rule; the
counts are kept up to date, not recounted per partition).

Creating partitions (`create_many`, `create` for one) is batched per request: every new
directory, `partition.metadata` and empty first segment first, then one fsync per new directory
and per log dir used, before the caller records the topic (the store is the commit point); a
failure rolls back what this call created. Steps and how Kafka does it: docs/log.md.

Compaction: `run_cleaner(now_ms)` runs one bounded step of the `LogCleaner` (cleaner.py) and
persists changed cleaner checkpoints. The broker calls it from a background loop: again at
once (after letting requests run) while `cleaner_busy`, else after log.cleaner.backoff.ms.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from pathlib import Path

from wirebroker.log.checkpoint import (
    CheckpointError,
    read_offset_checkpoint,
    write_offset_checkpoint,
    write_partition_metadata,
)
from wirebroker.log.cleaner import CLEANER_CHECKPOINT, LogCleaner
from wirebroker.log.config import LogConfig
from wirebroker.log.errors import LogError, StorageError
from wirebroker.log.fs import FileSystem, OsFileSystem, fsync_dirs, write_file_atomic
from wirebroker.log.partition_log import PARTITION_METADATA_FILE, PartitionLog

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "LogManager",
    "delete_dir_name",
    "parse_partition_dir",
]

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
_DIR_RE = re.compile(r"(.+)-(\d+)")
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")

Key = tuple[str, int]


def parse_partition_dir(name: str) -> Key | None:
    """`<topic>-<partition>` -> (topic, partition), or None for anything else."""
    m = _DIR_RE.fullmatch(name)
    if m is None or not _TOPIC_RE.fullmatch(m.group(1)) or m.group(1) in (".", ".."):
        return None
    return m.group(1), int(m.group(2))


#: The longest file name most file systems take (ext4, xfs, tmpfs: NAME_MAX).
NAME_MAX = 255


def delete_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>.<32 hex>-delete`, what a deleted partition's directory is renamed
    to before it is removed. The topic part is cut so the name fits NAME_MAX: a 249-character
    topic name (the longest allowed) would make it 291 bytes (Kafka's logDeleteDirName cuts it
    the same way)."""
    suffix = f"-{partition}.{uuid.uuid4().hex}-delete"
    prefix = topic.encode()[: max(0, NAME_MAX - len(suffix))].decode(errors="ignore")
    return prefix + suffix


class LogManager:
    def __init__(
        self,
        log_dirs: Sequence[Path],
        *,
        fs: FileSystem | None = None,
        cleaner: LogCleaner | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log directory is needed")
        self.fs: FileSystem = fs or OsFileSystem()
        self.cleaner = cleaner if cleaner is not None else LogCleaner()
        self.log_dirs = [Path(d) for d in log_dirs]
        self._logs: dict[Key, PartitionLog] = {}
        self._dir_of: dict[Key, Path] = {}
        self._count: dict[Path, int] = {d: 0 for d in self.log_dirs}  # logs per log dir
        for d in self.log_dirs:
            try:
                self.fs.makedirs(d)
            except OSError as exc:
                raise StorageError(f"cannot create log directory {d}: {exc}") from exc

    # -- loading ------------------------------------------------------------------------------
    def load(self, configs: Callable[[str], LogConfig | None], now_ms: int) -> None:
        """Open every partition directory of every log dir (recovering unclean ones).

        `configs(topic)` gives the topic's LogConfig (None: leave that directory alone).
        Raises StorageError on an I/O error or a partition found in two log dirs.
        """
        for d in self.log_dirs:
            try:
                self._load_dir(d, configs, now_ms)
            except OSError as exc:
                raise StorageError(f"cannot load log directory {d}: {exc}") from exc

    def _read_checkpoint(self, path: Path) -> dict[Key, int]:
        try:
            return read_offset_checkpoint(self.fs, path)
        except CheckpointError as exc:
            log.warning("%s: %s; ignoring it", path, exc)
            return {}

    def _load_dir(self, d: Path, configs: Callable[[str], LogConfig | None], now_ms: int) -> None:
        fs = self.fs
        marker = d / CLEAN_SHUTDOWN_FILE
        clean = fs.exists(marker)
        recovery = self._read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
        starts = self._read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)
        cleaned = self._read_checkpoint(d / CLEANER_CHECKPOINT)
        for name in sorted(fs.listdir(d)):
            path = d / name
            if not fs.is_dir(path):
                continue
            if name.endswith("-delete"):
                log.info("removing %s left by an interrupted delete", path)
                fs.rmtree(path)
                continue
            key = parse_partition_dir(name)
            if key is None:
                continue
            if key in self._logs:
                raise StorageError(f"partition {name} found in both {self._dir_of[key]} and {d}")
            config = configs(key[0])
            if config is None:
                continue
            part_clean = clean and key in recovery
            self._logs[key] = PartitionLog.open(
                path,
                key[0],
                key[1],
                config,
                now_ms=now_ms,
                recovery_point=recovery.get(key, 0),
                log_start_offset=starts.get(key, 0),
                clean=part_clean,
                fs=fs,
            )
            self._dir_of[key] = d
            self._count[d] += 1
            if key in cleaned:
                self.cleaner.checkpoints[key] = cleaned[key]
        if clean:
            fs.unlink(marker)
            fs.fsync_dir(d)

    # -- access -------------------------------------------------------------------------------
    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> dict[Key, PartitionLog]:
        return dict(self._logs)

    def log_dir_of(self, topic: str, partition: int) -> Path:
        """The log directory holding the partition (KeyError when unknown)."""
        return self._dir_of[(topic, partition)]

    # -- create / delete ----------------------------------------------------------------------
    def create(
        self,
        topic: str,
        partition: int,
        config: LogConfig,
        now_ms: int,
        topic_id: uuid.UUID | None = None,
    ) -> PartitionLog:
        """Create (or return the existing) log of a partition (`create_many` of one)."""
        return self.create_many(topic, [partition], config, now_ms, topic_id)[0]

    def create_many(
        self,
        topic: str,
        partitions: Iterable[int],
        config: LogConfig,
        now_ms: int,
        topic_id: uuid.UUID | None = None,
    ) -> list[PartitionLog]:
        """Create (or return the existing) logs of the topic's `partitions`, in that order;
        durable when it returns (see "Creating partitions" in the module docstring).

        Raises ValueError for an invalid topic/partition (nothing created) and StorageError
        on an I/O error (every log this call created is deleted again, best effort)."""
        return self.create_topics([(topic, partitions, config, topic_id)], now_ms)

    def create_topics(
        self,
        batch: Sequence[tuple[str, Iterable[int], LogConfig, uuid.UUID | None]],
        now_ms: int,
    ) -> list[PartitionLog]:
        """`create_many` of several topics (topic, partitions, config, topic id) with one
        round of fsyncs for all of them (a cluster member mirroring a batch of new topics);
        the logs in the order given. Same errors and rollback as `create_many`."""
        items = [
            ((topic, p), config, topic_id)
            for topic, partitions, config, topic_id in batch
            for p in partitions
        ]
        for key, _config, _topic_id in items:
            if parse_partition_dir(f"{key[0]}-{key[1]}") != key:
                raise ValueError(f"invalid topic/partition {key[0]!r} {key[1]}")
        out: list[PartitionLog] = []
        created: list[Key] = []
        new_dirs: list[Path] = []
        try:
            for key, config, topic_id in items:
                existing = self._logs.get(key)
                if existing is not None:
                    out.append(existing)
                    continue
                d = min(self.log_dirs, key=self._count.__getitem__)
                plog, is_new = self._create_one(d, key, config, now_ms, topic_id)
                self._logs[key] = plog
                self._dir_of[key] = d
                self._count[d] += 1
                created.append(key)
                out.append(plog)
                if is_new:
                    new_dirs.append(plog.directory)
            parents = sorted({p.parent for p in new_dirs})
            try:
                fsync_dirs(self.fs, new_dirs)
                fsync_dirs(self.fs, parents)
            except OSError as exc:
                names = ", ".join(sorted({key[0] for key in created}))
                raise StorageError(f"cannot fsync new partitions of {names}: {exc}") from exc
        except BaseException:
            for key in reversed(created):
                with suppress(Exception):
                    self.delete(*key)
            raise
        return out

    def _create_one(
        self, d: Path, key: Key, config: LogConfig, now_ms: int, topic_id: uuid.UUID | None
    ) -> tuple[PartitionLog, bool]:
        """(log, True) for a new directory (nothing fsynced yet); (log, False) when the
        directory was already on disk (opened and recovered as found)."""
        topic, partition = key
        path = d / f"{topic}-{partition}"
        fs = self.fs
        try:
            is_new = not fs.exists(path)
            fs.makedirs(path)
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {exc}") from exc
        if is_new:
            try:
                if topic_id is not None:
                    write_partition_metadata(
                        fs, path / PARTITION_METADATA_FILE, topic_id, durable=False
                    )
                plog = PartitionLog.open(
                    path,
                    topic,
                    partition,
                    config,
                    now_ms=now_ms,
                    fs=fs,
                    new=True,
                    topic_id=topic_id,
                )
            except (OSError, StorageError) as exc:
                with suppress(OSError):
                    fs.rmtree(path)
                if isinstance(exc, StorageError):
                    raise
                raise StorageError(f"cannot create {path}: {exc}") from exc
        else:
            log.warning("%s already exists; opening it", path)
            try:
                if topic_id is not None:
                    write_partition_metadata(fs, path / PARTITION_METADATA_FILE, topic_id)
            except OSError as exc:
                raise StorageError(f"cannot create {path}: {exc}") from exc
            plog = PartitionLog.open(
                path, topic, partition, config, now_ms=now_ms, fs=fs, topic_id=topic_id
            )
        return plog, is_new

    def repair_topic_id(self, topic: str, partition: int, topic_id: uuid.UUID) -> bool:
        """Rewrite the partition's `partition.metadata` (durably) when it does not hold
        `topic_id` (missing or unreadable after a power loss: it is written without fsync at
        creation). Returns True when it was rewritten. Raises StorageError."""
        plog = self._logs[(topic, partition)]
        if plog.topic_id == topic_id:
            return False
        try:
            write_partition_metadata(
                self.fs, plog.directory / PARTITION_METADATA_FILE, topic_id, durable=True
            )
        except OSError as exc:
            raise StorageError(f"{plog.name}: cannot write partition.metadata: {exc}") from exc
        plog.topic_id = topic_id
        return True

    def delete(self, topic: str, partition: int) -> None:
        """Close the log and remove its directory (no-op when unknown)."""
        key = (topic, partition)
        plog = self._logs.pop(key, None)
        d = self._dir_of.pop(key, None)
        if plog is None or d is None:
            return
        self._count[d] -= 1
        if self.cleaner.forget(key):
            try:
                self._write_cleaner_checkpoint(d)
            except StorageError:
                log.exception("%s-%d: cannot update the cleaner checkpoint", topic, partition)
        try:
            plog.close(snapshot=False)
        except LogError:
            log.warning("%s-%d: error closing before delete", topic, partition)
        doomed = d / delete_dir_name(topic, partition)
        try:
            self.fs.rename(plog.directory, doomed)
            self.fs.fsync_dir(d)
            self.fs.rmtree(doomed)
        except OSError as exc:
            raise StorageError(f"cannot delete {plog.directory}: {exc}") from exc

    # -- periodic work ------------------------------------------------------------------------
    def run_retention(self, now_ms: int) -> None:
        """Retention on every online log; an I/O error takes only that log offline."""
        self._on_each_online("retention", lambda plog: plog.delete_expired_segments(now_ms))

    def flush_due(self, now_ms: int) -> None:
        """flush.ms for every online log."""
        self._on_each_online("flush", lambda plog: plog.maybe_flush(now_ms))

    def _on_each_online(self, what: str, work: Callable[[PartitionLog], object]) -> None:
        """`work` on every online log; its StorageError is logged and the loop goes on."""
        for key, plog in list(self._logs.items()):
            if plog.offline:
                continue
            try:
                work(plog)
            except StorageError:
                log.exception("%s-%d: %s failed", *key, what)

    def run_cleaner(self, now_ms: int) -> int:
        """One bounded step of log compaction over the online logs; returns the bytes
        reclaimed. Writes the cleaner checkpoint of each log dir whose entries changed
        (StorageError if that fails)."""
        logs = {k: p for k, p in self._logs.items() if not p.offline}
        reclaimed = self.cleaner.run(logs, now_ms)
        changed = set(self.cleaner.changed)
        self.cleaner.changed.clear()
        try:
            for d in sorted({self._dir_of[k] for k in changed if k in self._dir_of}):
                self._write_cleaner_checkpoint(d)
        except StorageError:
            self.cleaner.changed |= changed
            raise
        return reclaimed

    @property
    def cleaner_busy(self) -> bool:
        """True when `run_cleaner` should be called again soon (a round is in progress or
        the last call did not find the cleaner idle)."""
        return self.cleaner.has_work

    def _write_cleaner_checkpoint(self, d: Path) -> None:
        offsets = {k: o for k, o in self.cleaner.checkpoints.items() if self._dir_of.get(k) == d}
        try:
            write_offset_checkpoint(self.fs, d / CLEANER_CHECKPOINT, offsets)
        except OSError as exc:
            raise StorageError(f"cannot write the cleaner checkpoint in {d}: {exc}") from exc

    def checkpoint(self) -> None:
        """Write the recovery-point and log-start-offset checkpoints of every log dir."""
        for d in self.log_dirs:
            logs = {k: p for k, p in self._logs.items() if self._dir_of.get(k) == d}
            try:
                write_offset_checkpoint(
                    self.fs,
                    d / RECOVERY_POINT_CHECKPOINT,
                    {k: p.recovery_point for k, p in logs.items()},
                )
                write_offset_checkpoint(
                    self.fs,
                    d / LOG_START_OFFSET_CHECKPOINT,
                    {k: p.log_start_offset for k, p in logs.items()},
                )
            except OSError as exc:
                raise StorageError(f"cannot write checkpoints in {d}: {exc}") from exc

    def write_high_watermarks(self, high_watermarks: dict[Key, int]) -> None:
        """Write `replication-offset-checkpoint` in every log dir: the high watermark of each
        of its partitions named in `high_watermarks`. StorageError on an I/O error."""
        for d in self.log_dirs:
            offsets = {k: hw for k, hw in high_watermarks.items() if self._dir_of.get(k) == d}
            try:
                write_offset_checkpoint(self.fs, d / REPLICATION_OFFSET_CHECKPOINT, offsets)
            except OSError as exc:
                raise StorageError(f"cannot write the HW checkpoint in {d}: {exc}") from exc

    def read_high_watermarks(self) -> dict[Key, int]:
        """Every log dir's `replication-offset-checkpoint` ({} for a missing or bad file)."""
        out: dict[Key, int] = {}
        for d in self.log_dirs:
            try:
                out.update(self._read_checkpoint(d / REPLICATION_OFFSET_CHECKPOINT))
            except OSError as exc:
                log.warning("%s: cannot read the HW checkpoint: %s", d, exc)
        return out

    def close(self) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown marker
        of each log dir whose logs all closed cleanly."""
        self.cleaner.abort()
        failed_dirs: set[Path] = set()
        for key, plog in self._logs.items():
            was_offline = plog.offline
            try:
                plog.close()
            except LogError:
                log.exception("%s-%d: close failed", *key)
                failed_dirs.add(self._dir_of[key])
            if was_offline:
                failed_dirs.add(self._dir_of[key])
        self.checkpoint()
        for d in self.log_dirs:
            if d in failed_dirs:
                continue
            try:
                write_file_atomic(
                    self.fs, d / CLEAN_SHUTDOWN_FILE, b'{"version":0,"brokerEpoch":-1}'
                )
            except OSError as exc:
                raise StorageError(f"cannot write the clean-shutdown marker in {d}: {exc}") from exc
