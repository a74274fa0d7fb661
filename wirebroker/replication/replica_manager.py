"""The broker's partitions: build them from the logs, lead or follow them, wake their waiters.

`ReplicaManager` keeps the in-memory `Partition`s this broker hosts, each over its
`PartitionLog` (`LogManager`). It is pure (no trio, no clock: every call that needs the time
takes `now_ms`); trio runtimes hear of changes through listeners (`ReplicaEvents`,
replica_events.py; ISR proposals and their answers are the `IsrManager`'s, isr_manager.py):

    data listeners   (topic, index): new data, an ISR or role change, a deletion, and a
                     high watermark that moved on an append or an ISR change
                     (`FetchWaiters.notify` wakes long-poll fetches, followers' included)
    hw listeners     (topic, index): a replicated partition's HW, ISR or role changed outside
                     an append (`ProduceWaiters` re-checks parked acks=-1 produces;
                     `FetchWaiters.notify_hw` wakes consumers' fetches). The HW advance a
                     follower's fetch causes goes to these only: followers read up to the log
                     end, so it gives them nothing to read. So does a follower's fetch that
                     reports a higher log start offset (DeleteRecords waits in the
                     `ProduceWaiters` for the low watermark)
    role listeners   (Partition): a partition became leader, follower or neither
                     (`ReplicaFetcherManager` starts or stops fetching it)
    isr_listener     one `IsrChangeListener`: ISR changes the leader wants; it stores them
                     (ZooKeeper CAS, asynchronously) and answers `isr_committed` or
                     `isr_rejected`. None: a change is committed at once, locally.

Every `Broker` (a cluster member, and a single broker, which runs the cluster code over its
in-process ZooKeeper and is made leader of every partition, each with replicas = ISR =
[itself], so `single_replica` keeps its appends on the same fast path) drives it the same way:
`load` builds a partition for each log on disk of a topic the store knows (a missing log is
not created: the partition may live on other brokers), in role NONE with the high watermark of
`replication-offset-checkpoint`; they wait for the cluster layer's `make_leader` /
`make_follower` / `stop_replica` (after `ensure_partition`, which also creates a missing log).
`checkpoint_high_watermarks` writes that file (the broker runs it every
replica.high.watermark.checkpoint.interval.ms and at shutdown). Unit tests without a cluster
layer make it lead through the same calls (tests/unit/local_metadata.py).

Leader side: `record_follower_fetch` (the Fetch handler, per follower partition), then ISR
expansion when the follower may join; `maybe_shrink_isr(now_ms)` (every
replica.lag.time.max.ms / 2) proposes dropping the members out of sync; an injected ISR
shrink (`force_isr_shrink`, wirebroker.faults) proposes through the same path and keeps the
replicas in `isr_holds` from rejoining until `release_isr_hold`. Follower side:
`append_as_follower`, `truncate`, `truncate_fully_and_start_at` (the fetcher).

Topic administration (create, delete, grow, configs) is `wirebroker.metadata.TopicAdmin`'s;
the `ReplicaManager` is its `PartitionListener` and hears of each change after the store
recorded it: `on_partitions_created`, `on_topic_deleted` (stop the partitions, wake their
waiters), `on_topic_configs_changed`.

`load` (start-up) reconciles the logs with the store: logs of a topic the store does not know
are deleted, unless the store was created by this process (a missing store must never wipe
data; those logs are left and logged). A partition the store knows without a log gets its
log from `ensure_partition` once it has a role, and a
`partition.metadata` that is missing or does not hold
the store's topic id (it is written without fsync) is rewritten.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.metadata.topic_configs import min_insync_replicas, topic_log_config
from wirebroker.metadata.topic_store import TopicInfo, TopicStore, ensure_meta_properties
from wirebroker.replication.isr_manager import IsrChangeListener, IsrManager
from wirebroker.replication.partition import Partition, Role
from wirebroker.replication.quota import ReplicationQuotas
from wirebroker.replication.replica_events import DataListener, ReplicaEvents, RoleListener

if TYPE_CHECKING:
    from protocol.records import BatchHeader
    from wirebroker.config import BrokerConfig
    from wirebroker.log.config import LogConfig
    from wirebroker.log.log_manager import LogManager
    from wirebroker.log.partition_log import AppendResult, PartitionLog

__all__ = ["DataListener", "IsrChangeListener", "ReplicaManager", "RoleListener"]

log = logging.getLogger(__name__)


class ReplicaManager:
    def __init__(
        self,
        config: BrokerConfig,
        logs: LogManager,
        topics: TopicStore,
        *,
        node_id: int,
        on_data: DataListener | None = None,
    ) -> None:
        self.config = config
        self.logs = logs
        self.topics = topics
        self.node_id = node_id
        self.lag_ms = config.get_int("replica.lag.time.max.ms")
        #: a quiet session partition's caught-up time is refreshed at most this often
        #: (`touch_quiet_follower`): lag_ms / 20, at most 100 ms
        self.quiet_touch_ms = max(1, min(100, self.lag_ms // 20))
        self._partitions: dict[str, dict[int, Partition]] = {}
        #: the data, hw and role listeners (see the module doc)
        self.events = ReplicaEvents(on_data)
        #: ISR proposals and answers; its `listener` stores them (the cluster layer)
        self.isr_changes = IsrManager(
            self.events, self.partition, self.all_partitions, lambda: self._last_now_ms
        )
        self._hw_checkpoint: dict[tuple[str, int], int] = {}
        self._last_now_ms = 0
        #: replication throttles (wirebroker.replication.quota): the fetch handler asks
        #: `leader`, the replica fetcher `follower`; their partitions follow the topic configs
        self.quotas = ReplicationQuotas(config, node_id)

    # -- start-up --------------------------------------------------------------------------
    def load(self, now_ms: int) -> None:
        """Check meta.properties, open every log, build the partitions of known topics."""
        self._last_now_ms = now_ms
        log_dirs = self.log_dirs()
        ensure_meta_properties(
            log_dirs, node_id=self.node_id, cluster_id=self.topics.cluster_id, fs=self.topics.fs
        )
        self.logs.load(self.log_config, now_ms)
        self._hw_checkpoint = self.logs.read_high_watermarks()
        self._delete_stray_logs()
        self._partitions.clear()
        for info in self.topics.all():
            plogs = []
            for index in range(info.partitions):
                plog = self.logs.get(info.name, index)
                if plog is None:
                    continue  # multi-broker: hosted elsewhere (ensure_partition adds it here)
                if self.logs.repair_topic_id(info.name, index, info.topic_id):
                    log.warning("%s-%d: partition.metadata rewritten", info.name, index)
                plogs.append(plog)
            self.on_partitions_created(info, plogs)

    def _delete_stray_logs(self) -> None:
        fresh_store = self.topics.created
        for (topic, index), _plog in sorted(self.logs.all_logs().items()):
            info = self.topics.get(topic)
            if info is not None and 0 <= index < info.partitions:
                continue
            if fresh_store:
                log.warning(
                    "log %s-%d has no topic in the metadata store %s; left in place",
                    topic,
                    index,
                    self.topics.path,
                )
                continue
            log.warning("deleting stray log %s-%d (topic not in the metadata store)", topic, index)
            self.logs.delete(topic, index)

    def log_config(self, topic: str) -> LogConfig:
        """The topic's LogConfig (broker defaults for a topic the store does not know)."""
        info = self.topics.get(topic)
        return topic_log_config(self.config, info.configs if info is not None else {})

    def log_dirs(self) -> list[Path]:
        return [Path(d).expanduser() for d in self.config.log_dirs]

    def _build(self, info: TopicInfo, plog: PartitionLog, min_isr: int) -> Partition:
        """A replica waiting for its role (NONE): its HW is the checkpointed one, never its
        log end."""
        plog.high_watermark = self._hw_checkpoint.get(
            (info.name, plog.partition), plog.log_start_offset
        )
        return Partition(
            info.name,
            plog.partition,
            plog,
            node_id=self.node_id,
            topic_id=info.topic_id,
            min_insync_replicas=min_isr,
            role=Role.NONE,
            leader_epoch=-1,
            lag_ms=self.lag_ms,
        )

    # -- PartitionListener (topic administration) -------------------------------------------
    def on_partitions_created(self, info: TopicInfo, logs: Sequence[PartitionLog]) -> None:
        """Serve the new partitions of `info` (a new topic, or one that grew) over `logs`."""
        min_isr = min_insync_replicas(self.config, info.configs)
        self.quotas.on_topic(info.name, info.configs)
        parts = self._partitions.setdefault(info.name, {})
        for plog in logs:
            parts[plog.partition] = self._build(info, plog, min_isr)

    def on_topic_deleted(self, info: TopicInfo) -> None:
        """Stop serving the topic's partitions and wake their waiters."""
        self.quotas.forget_topic(info.name)
        for part in self._partitions.pop(info.name, {}).values():
            part.stop()
            self.events.role_changed(part)

    def on_topic_configs_changed(self, info: TopicInfo) -> None:
        """The live partitions take the topic's new LogConfig and min.insync.replicas, the
        replication quotas its throttled replicas."""
        self.quotas.on_topic(info.name, info.configs)
        log_config = topic_log_config(self.config, info.configs)
        min_isr = min_insync_replicas(self.config, info.configs)
        for part in self._partitions.get(info.name, {}).values():
            part.update_config(log_config, min_isr)

    # -- partitions ---------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition | None:
        parts = self._partitions.get(topic)
        if parts is None:
            return None
        return parts.get(index)

    def partitions_of(self, topic: str) -> list[Partition]:
        parts = self._partitions.get(topic, {})
        return [parts[i] for i in sorted(parts)]

    def all_partitions(self) -> list[Partition]:
        return [p for parts in self._partitions.values() for p in parts.values()]

    def missing_code(self, topic: str | None, index: int) -> ErrorCode:
        """The error for a partition this broker does not host: NOT_LEADER_OR_FOLLOWER when
        the topic has it (another broker does), else UNKNOWN_TOPIC_OR_PARTITION."""
        info = self.topics.get(topic) if topic is not None else None
        if info is not None and 0 <= index < info.partitions:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def ensure_partition(self, info: TopicInfo, index: int, *, now_ms: int) -> Partition:
        """The partition `index` of `info`, hosted from now on: built (role NONE) over
        its log, which is created empty when missing. StorageError
        when the log cannot be created."""
        self._last_now_ms = max(self._last_now_ms, now_ms)
        part = self.partition(info.name, index)
        if part is not None:
            return part
        self.quotas.on_topic(info.name, info.configs)
        plog = self.logs.get(info.name, index)
        if plog is None:
            config = topic_log_config(self.config, info.configs)
            plog = self.logs.create(info.name, index, config, now_ms, info.topic_id)
        min_isr = min_insync_replicas(self.config, info.configs)
        part = self._build(info, plog, min_isr)
        self._partitions.setdefault(info.name, {})[index] = part
        return part

    def ensure_partitions(
        self, batch: Sequence[tuple[TopicInfo, Sequence[int]]], *, now_ms: int
    ) -> None:
        """`ensure_partition` of each (topic, indexes) of the batch; the missing logs are
        created in one `LogManager.create_topics` (one round of fsyncs for all of them, the
        new directories in parallel, instead of two fsyncs per partition one after the
        other). StorageError when they cannot be created (none of them is kept)."""
        self._last_now_ms = max(self._last_now_ms, now_ms)
        missing = []
        for info, indexes in batch:
            absent = [
                i
                for i in indexes
                if self.partition(info.name, i) is None and self.logs.get(info.name, i) is None
            ]
            if absent:
                config = topic_log_config(self.config, info.configs)
                missing.append((info.name, absent, config, info.topic_id))
        if missing:
            self.logs.create_topics(missing, now_ms)
        for info, indexes in batch:
            for index in indexes:
                self.ensure_partition(info, index, now_ms=now_ms)

    def _require(self, topic: str, index: int) -> Partition:
        part = self.partition(topic, index)
        if part is None:
            raise KeyError(f"{topic}-{index} is not hosted here (call ensure_partition first)")
        return part

    # -- roles (the cluster layer) ---------------------------------------------------------
    def make_leader(
        self,
        topic: str,
        index: int,
        *,
        leader_epoch: int,
        isr: Sequence[int],
        replicas: Sequence[int],
        partition_epoch: int,
        now_ms: int,
    ) -> bool:
        """Lead the partition (KeyError when not hosted). False when the state is not newer
        than what the partition has (stale; the replica set is taken all the same); see
        `Partition.become_leader`."""
        self._last_now_ms = max(self._last_now_ms, now_ms)
        part = self._require(topic, index)
        before = (part.role, part.leader_epoch)
        changed = part.become_leader(
            leader_epoch=leader_epoch,
            partition_epoch=partition_epoch,
            isr=isr,
            replicas=replicas,
            now_ms=now_ms,
        )
        if changed:
            if before != (part.role, part.leader_epoch):
                log.info("%s-%d: leader at epoch %d, ISR %s", topic, index, leader_epoch, isr)
                self.events.role_changed(part)
            else:
                self.events.state_changed(part)
        else:
            self._take_replicas(part, replicas, now_ms)
        self.isr_changes.drop_non_replicas(part, now_ms)
        return changed

    def make_follower(
        self,
        topic: str,
        index: int,
        *,
        leader_id: int,
        leader_epoch: int,
        isr: Sequence[int],
        replicas: Sequence[int],
        partition_epoch: int,
        now_ms: int,
    ) -> bool:
        """Follow `leader_id` (KeyError when not hosted); False when stale. The role
        listeners (the fetcher) start fetching; the log is truncated by the fetcher."""
        self._last_now_ms = max(self._last_now_ms, now_ms)
        part = self._require(topic, index)
        before = (part.role, part.leader_id, part.leader_epoch)
        changed = part.become_follower(
            leader_id=leader_id,
            leader_epoch=leader_epoch,
            partition_epoch=partition_epoch,
            isr=isr,
            replicas=replicas,
        )
        if changed and before != (part.role, part.leader_id, part.leader_epoch):
            log.info("%s-%d: following %d at epoch %d", topic, index, leader_id, leader_epoch)
            self.events.role_changed(part)
        elif not changed:
            self._take_replicas(part, replicas, now_ms)
        return changed

    def _take_replicas(self, part: Partition, replicas: Sequence[int], now_ms: int) -> None:
        """A role call whose state is not newer still brings the replica set (the
        assignment's, as last read: `Partition.take_replicas`)."""
        if part.take_replicas(replicas, now_ms):
            log.info("%s-%d: replicas now %s", part.topic, part.index, list(replicas))
            self.events.state_changed(part)

    def stop_replica(self, topic: str, index: int, *, delete: bool) -> None:
        """Neither lead nor follow the partition; with `delete`, forget it and delete its log."""
        part = self.partition(topic, index)
        if part is not None:
            part.stop()
            self.events.role_changed(part)
        if delete:
            parts = self._partitions.get(topic)
            if parts is not None:
                parts.pop(index, None)
                if not parts:
                    del self._partitions[topic]
            self._hw_checkpoint.pop((topic, index), None)
            self.logs.delete(topic, index)

    # -- leader side: followers, ISR, high watermark ------------------------------------------
    def record_follower_fetch(
        self,
        part: Partition,
        replica_id: int,
        *,
        fetch_offset: int,
        log_start_offset: int,
        now_ms: int,
    ) -> None:
        """Follower `replica_id` fetched `part` at `fetch_offset` reporting its
        `log_start_offset` (raises NotLeaderOrFollowerError when it is not a follower of this
        leader): its state, the HW, and an ISR expansion when it may join. The hw listeners
        hear of an HW advance, and of a higher follower log start offset (the low watermark
        DeleteRecords waits for may have moved)."""
        self._last_now_ms = max(self._last_now_ms, now_ms)
        before = part.followers.get(replica_id)
        moved = part.record_follower_fetch(
            replica_id, fetch_offset, now_ms, log_start_offset=log_start_offset
        )
        self.isr_changes.expand_on_fetch(part, replica_id, now_ms)
        if moved or (before is not None and log_start_offset > before.log_start_offset):
            self.events.hw_advanced(part)

    def touch_quiet_follower(self, part: Partition, replica_id: int, now_ms: int) -> None:
        """Follower `replica_id` fetched `part` again at its log end and
        `Partition.quiet_follower_stamp` is unchanged: only its caught-up time moves (what
        `record_follower_fetch` would do then, without the checks that cannot fire). The Fetch
        handler calls it at most every `quiet_touch_ms` per session partition: a quiet
        follower's recorded caught-up time may be that much old, so the ISR may drop it that
        much before replica.lag.time.max.ms (lag / 20; the check itself runs every lag / 2)."""
        self._last_now_ms = max(self._last_now_ms, now_ms)
        part.touch_quiet_follower(replica_id, now_ms)

    # -- ISR changes (IsrManager's) ------------------------------------------------------
    @property
    def isr_listener(self) -> IsrChangeListener | None:
        return self.isr_changes.listener

    @isr_listener.setter
    def isr_listener(self, listener: IsrChangeListener | None) -> None:
        self.isr_changes.listener = listener

    @property
    def isr_holds(self) -> set[tuple[str, int, int]]:
        return self.isr_changes.holds

    def maybe_shrink_isr(self, now_ms: int) -> int:
        """`IsrManager.maybe_shrink` (every replica.lag.time.max.ms / 2)."""
        self._last_now_ms = max(self._last_now_ms, now_ms)
        return self.isr_changes.maybe_shrink(now_ms)

    def force_isr_shrink(self, part: Partition, remove: Sequence[int], now_ms: int) -> list[int]:
        """`IsrManager.force_shrink` (fault injection)."""
        self._last_now_ms = max(self._last_now_ms, now_ms)
        return self.isr_changes.force_shrink(part, remove, now_ms)

    def release_isr_hold(self, topic: str, index: int, replicas: Sequence[int]) -> None:
        self.isr_changes.release_hold(topic, index, replicas)

    def isr_committed(
        self,
        topic: str,
        index: int,
        *,
        isr: Sequence[int],
        partition_epoch: int,
        now_ms: int | None = None,
    ) -> None:
        """`IsrManager.committed`: the ISR is stored at `partition_epoch`."""
        self.isr_changes.committed(
            topic, index, isr=isr, partition_epoch=partition_epoch, now_ms=now_ms
        )

    def isr_rejected(
        self,
        topic: str,
        index: int,
        *,
        leader_epoch: int | None = None,
        partition_epoch: int | None = None,
    ) -> None:
        """`IsrManager.rejected`: the proposal was refused."""
        self.isr_changes.rejected(
            topic, index, leader_epoch=leader_epoch, partition_epoch=partition_epoch
        )

    # -- follower side (the fetcher) ------------------------------------------------------
    def append_as_follower(
        self,
        part: Partition,
        records: bytes | bytearray | memoryview,
        *,
        leader_high_watermark: int,
        leader_log_start_offset: int = -1,
        now_ms: int,
    ) -> AppendResult | None:
        """Append what the leader sent and take its HW (see `Partition.append_as_follower`)."""
        return part.append_as_follower(
            records,
            leader_high_watermark=leader_high_watermark,
            leader_log_start_offset=leader_log_start_offset,
            now_ms=now_ms,
        )

    def truncate(self, part: Partition, offset: int) -> None:
        """Truncate a follower's log to `offset` (KIP-101/279 divergence)."""
        if part.log_end_offset > offset:
            log.info(
                "%s-%d: truncating from %d to %d",
                part.topic,
                part.index,
                part.log_end_offset,
                offset,
            )
        part.truncate_to(offset)

    def truncate_fully_and_start_at(self, part: Partition, offset: int) -> None:
        """Empty a follower's log and restart it at `offset` (the leader's log start)."""
        log.info(
            "%s-%d: log emptied, restarting at the leader's start %d",
            part.topic,
            part.index,
            offset,
        )
        part.truncate_fully_and_start_at(offset)

    # -- appends -------------------------------------------------------------------------------
    def append(
        self,
        part: Partition,
        records: bytes | bytearray | memoryview,
        *,
        now_ms: int,
        required_acks: int = -1,
        batches: Sequence[tuple[int, BatchHeader]] | None = None,
        coordinator: bool = False,
    ) -> AppendResult:
        """Append to `part` as leader and wake its fetchers (`batches`: the records' batch
        headers when the caller parsed them; `coordinator`: a group coordinator's
        transactional offset commit, see `PartitionLog.append_as_leader`).

        Raises NotEnoughReplicasError, NotLeaderOrFollowerError or a LogError.
        """
        hw = part.high_watermark
        result = part.append_records(
            records,
            now_ms=now_ms,
            required_acks=required_acks,
            batches=batches,
            coordinator=coordinator,
        )
        self._appended(part, hw, result)
        return result

    def append_marker(
        self,
        part: Partition,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> AppendResult:
        """Write a COMMIT/ABORT marker to `part` as leader (WriteTxnMarkers) and wake its
        fetchers; the caller waits for the high watermark as for an acks=-1 Produce.
        Raises NotLeaderOrFollowerError or a LogError (TransactionCoordinatorFencedError...)."""
        hw = part.high_watermark
        result = part.append_marker(
            producer_id,
            producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            now_ms=now_ms,
        )
        self._appended(part, hw, result)
        return result

    def _appended(self, part: Partition, hw: int, result: AppendResult) -> None:
        if not part.single_replica and part.high_watermark != hw:
            self.events.state_changed(part)
        elif not result.duplicate:
            self.notify_data(part.topic, part.index)

    # -- high-watermark checkpoint ------------------------------------------------------------
    def checkpoint_high_watermarks(self) -> None:
        """Write every log dir's `replication-offset-checkpoint` (StorageError on failure)."""
        hws = dict(self._hw_checkpoint)
        for part in self.all_partitions():
            if not part.log.closed:
                hws[(part.topic, part.index)] = part.high_watermark
        self._hw_checkpoint = hws
        self.logs.write_high_watermarks(hws)

    # -- listeners (ReplicaEvents') ----------------------------------------------------------
    def add_data_listener(self, listener: DataListener) -> None:
        self.events.data_listeners.append(listener)

    def add_hw_listener(self, listener: DataListener) -> None:
        self.events.hw_listeners.append(listener)

    def add_role_listener(self, listener: RoleListener) -> None:
        self.events.role_listeners.append(listener)

    def notify_data(self, topic: str, index: int) -> None:
        """Tell listeners that the partition changed (new data, new HW, or deleted)."""
        self.events.data(topic, index)
