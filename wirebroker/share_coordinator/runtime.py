"""The share coordinator's trio runtime: `ShareCoordinatorCore` on the shared coordinator runtime.

Kafka 4.4's `ShareCoordinatorService` in wirebroker's shape. The shared
`wirebroker.coordinator.runtime.CoordinatorRuntime` (`self.runtime`) owns the internal topic,
the loads on leadership, appends and replication waits; this module is the share coordinator's
part. Its typed methods (one share-partition key each: `initialize`, `write`, `read`,
`read_summary`, `delete`) run one core call with `now` from the clock; when the core returns
records, they are appended at once (acks=-1, one batch) to the key's `__share_group_state`
partition, folded into the core's state right after the append (the append is synchronous, so
the next call sees them: Kafka's runtime replays what it writes the same way), and the answer
waits until the high watermark passed them (at most share.coordinator.write.timeout.ms).
A failed append or wait answers Kafka's coordinator errors (`wirebroker.coordinator.errors`:
NOT_COORDINATOR for a lost leadership, COORDINATOR_NOT_AVAILABLE for too few replicas or a
timeout). Simplification: Kafka reverts its in-memory state when a write fails to commit;
here the record stays folded in (it is in the leader's log; a new leader's load decides).

Ownership: the broker's role listener calls `on_became_leader` / `on_resigned` for
`__share_group_state` partitions (as for `__consumer_offsets`); a load replays the partition
from its log start (`wirebroker.share_coordinator.state.ShardState.replay`, every record in
order: updates accumulate, so no compaction-style fold). `__share_group_state` is created by
the first FindCoordinator(key type 2) or persister call (`ensure_topic`): 50 partitions,
replication factor share.coordinator.state.topic.replication.factor capped by the live
brokers, min.insync.replicas share.coordinator.state.topic.min.isr, cleanup.policy=delete,
retention.ms=-1, segment.bytes share.coordinator.state.topic.segment.bytes. Every
`prune_interval_ms` (the shared runtime's timer) each loaded partition's records below its
redundant offset are deleted (`prune`; Kafka's DeleteRecords-based prune job); every
`cold_snapshot_interval_ms` states not snapshotted for that long get a snapshot
(`snapshot_cold`, appended in the background).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import trio

from protocol.errors import ErrorCode
from wirebroker.coordinator.errors import AppendErrors
from wirebroker.coordinator.log_reader import Entry
from wirebroker.coordinator.runtime import (
    Appended,
    CoordinatorRuntime,
    ReplicationWaiter,
    replicated_at_once,
)
from wirebroker.coordinator.service import CoordinatorService, topic_partitions
from wirebroker.coordinator.timers import PeriodicTimers
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.share_coordinator.config import SHARE_STATE_TOPIC, ShareCoordinatorConfig
from wirebroker.share_coordinator.core import Outcome, ShareCoordinatorCore, WriteRequest
from wirebroker.share_coordinator.keys import SharePartitionKey
from wirebroker.share_coordinator.state import ShardState

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig
    from wirebroker.metadata.topic_admin import TopicAdmin
    from wirebroker.replication.replica_manager import ReplicaManager

__all__ = ["SHARE_STATE_TOPIC", "ShareCoordinatorRuntime"]

log = logging.getLogger(__name__)

_APPEND_ERRORS = AppendErrors()


class _Fold:
    """A load's fold: every keyed record of the partition (key, value, offset), in log order."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None, int]] = []

    def add(self, entries: Iterable[Entry]) -> None:
        self.records.extend((e.key, e.value, e.offset) for e in entries if e.key is not None)


class ShareCoordinatorRuntime(CoordinatorService):
    """Runs a `ShareCoordinatorCore` for the broker (see the module docstring); the
    `CoordinatorShard` of its `CoordinatorRuntime`. `partition_count(topic_id)`: a topic's
    partition count (None: unknown topic id)."""

    core: ShareCoordinatorCore

    def __init__(
        self,
        config: BrokerConfig,
        replicas: ReplicaManager,
        *,
        admin: TopicAdmin,
        clock: Callable[[], int],
        partition_count: Callable[[uuid.UUID], int | None],
        live_brokers: Callable[[], int] = lambda: 1,
        replication_waiter: ReplicationWaiter = replicated_at_once,
    ) -> None:
        cfg = ShareCoordinatorConfig.from_broker_config(config)
        partitions = topic_partitions(admin, SHARE_STATE_TOPIC, cfg.num_partitions)
        cfg = dataclasses.replace(cfg, num_partitions=partitions)
        self.config = cfg
        self.clock = clock
        self.live_brokers = live_brokers
        self.core = ShareCoordinatorCore(
            cfg.num_partitions, cfg.updates_per_snapshot, partition_count
        )
        self.runtime = CoordinatorRuntime(
            topic=SHARE_STATE_TOPIC,
            partitions=cfg.num_partitions,
            shard=self,
            replicas=replicas,
            admin=admin,
            clock=clock,
            new_topic=self._new_topic,
            replication_waiter=replication_waiter,
            role="share coordinator",
        )
        #: the cold snapshots' and the prune job's rounds
        self.timers = PeriodicTimers(
            cold=cfg.cold_snapshot_interval_ms, prune=cfg.prune_interval_ms
        )

    # -- the CoordinatorShard side (called by the runtime) -----------------------------------
    def new_fold(self, partition: int) -> _Fold:
        del partition
        return _Fold()

    def replay(self, partition: int, fold: _Fold) -> ShardState:
        del partition
        shard = self.core.new_shard()
        for key, value, offset in fold.records:
            shard.replay(key, value, offset)
        return shard

    def complete_loading(
        self, partition: int, epoch: int, replayed: ShardState, started_ms: int
    ) -> None:
        self.core.complete_loading(partition, replayed)
        if replayed.states:
            log.info(
                "loaded %s-%d (epoch %d) in %d ms: %d share partition state(s)",
                SHARE_STATE_TOPIC,
                partition,
                epoch,
                self.clock() - started_ms,
                len(replayed.states),
            )

    def fire_timers(self, now_ms: int) -> None:
        due = self.timers.due(now_ms)
        if "cold" in due:
            self.snapshot_cold(now_ms)
        if "prune" in due:
            self.prune()

    def snapshot_cold(self, now_ms: int) -> None:
        """Append the core's cold snapshots (background appends, one per partition)."""
        cold = self.core.cold_snapshots(now_ms, self.config.cold_snapshot_interval_ms)
        for partition, records in cold.items():
            outcome = Outcome(records=tuple(records), partition=partition)
            self.runtime.spawn(self._commit, outcome)

    def on_topics_deleted(self, topic_ids: set[uuid.UUID]) -> None:
        """Topics deleted: tombstones of their share states (Kafka's on-topics-deleted;
        background appends, one per partition)."""
        for partition, records in self.core.topics_deleted(topic_ids).items():
            self.runtime.spawn(self._commit, Outcome(records=tuple(records), partition=partition))

    def prune(self) -> None:
        """Delete the records of each loaded partition below its redundant offset (Kafka's
        prune job), up to the high watermark."""
        for partition, shard in list(self.core.partitions.items()):
            offset = shard.redundant_offset()
            part = self.runtime.replicas.partition(SHARE_STATE_TOPIC, partition)
            if offset is None or part is None or not part.is_leader:
                continue
            target = min(offset, part.high_watermark)
            if target <= part.log_start_offset:
                continue
            try:
                part.delete_records_before(target)
            except Exception:
                log.exception("pruning %s-%d below %d failed", SHARE_STATE_TOPIC, partition, target)
                continue
            log.info("pruned %s-%d below offset %d", SHARE_STATE_TOPIC, partition, target)

    # == topic =============================================================================
    def partition_for(self, key: SharePartitionKey) -> int:
        return self.core.partition_for(key)

    def _new_topic(self) -> NewTopic:
        factor = max(1, min(self.config.replication_factor, self.live_brokers()))
        configs = {
            "cleanup.policy": "delete",
            "retention.ms": "-1",
            "segment.bytes": str(self.config.segment_bytes),
            "min.insync.replicas": str(min(self.config.min_isr, factor)),
            "compression.type": "uncompressed",
        }
        return NewTopic(SHARE_STATE_TOPIC, self.config.num_partitions, factor, configs)

    # == requests ==========================================================================
    async def initialize(
        self, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> Outcome:
        if not self.active:
            return Outcome.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return await self._commit(
            self.core.initialize(key, state_epoch, start_offset, self.clock())
        )

    async def write(self, key: SharePartitionKey, request: WriteRequest) -> Outcome:
        if not self.active:
            return Outcome.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return await self._commit(self.core.write(key, request, self.clock()))

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> Outcome:
        if not self.active:
            return Outcome.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return await self._commit(self.core.read(key, leader_epoch, self.clock()))

    async def read_summary(self, key: SharePartitionKey) -> Outcome:
        if not self.active:
            return Outcome.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        await trio.lowlevel.checkpoint()
        return self.core.read_summary(key)

    async def delete(self, key: SharePartitionKey) -> Outcome:
        if not self.active:
            return Outcome.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return await self._commit(self.core.delete(key))

    async def _commit(self, outcome: Outcome) -> Outcome:
        """Append `outcome`'s records, fold them in, wait for their replication: the outcome
        without its records, or the mapped error."""
        if outcome.error is not ErrorCode.NONE or not outcome.records:
            await trio.lowlevel.checkpoint()
            return outcome
        partition = outcome.partition
        elected = self.runtime.elected_epoch(partition)
        records = list(outcome.records)
        appended = self.runtime.append_records(
            partition, records, self.clock(), elected_epoch=elected
        )
        if not isinstance(appended, Appended):
            return Outcome.failed(_APPEND_ERRORS(appended))
        self.core.apply(partition, outcome.records, appended.end_offset - len(outcome.records))
        error = await self.runtime.wait_replicated(appended, self.config.write_timeout_ms / 1000)
        if error is not ErrorCode.NONE:
            return Outcome.failed(_APPEND_ERRORS(error))
        return dataclasses.replace(outcome, records=())
