"""The group coordinator's trio runtime: drives the pure `GroupCoordinatorCore`.

The only module of `wirebroker.group` that imports trio. What every coordinator needs (the
internal topic, loads on leadership, appends through the log, replication waits, timers) is
the shared `wirebroker.coordinator.runtime.CoordinatorRuntime` (`self.runtime`); this module
is the group coordinator's own part: its request entry points, parked JoinGroup/SyncGroup
requests, and how a core `Result` is applied. Handlers call its typed methods; each runs one
core call with `now_ms` from the clock, appends the returned `__consumer_offsets` records
(acks=-1), waits until they are replicated (the partition's high watermark past them, the
`ReplicationWaiter`) BEFORE the response or a completion is released, wakes parked
JoinGroup/SyncGroup requests and runs timers already due; the runtime's timer task handles
later deadlines. Invariants:
- core calls never interleave (each method is synchronous up to its awaits, which come after
  the core call and its append);
- an acknowledged commit or assignment is in the kernel (the append returned) and replicated
  (high watermark >= last offset + 1; at once for a single replica) first;
- an append that fails turns the call's results into `result.failed(error)` and reloads the
  failed partitions from the log, dropping the core's optimistic change; a replication wait
  that fails (offsets.commit.timeout.ms, NOT_ENOUGH_REPLICAS_AFTER_APPEND, leadership lost)
  only fails the answers: the records are in the leader's log, so the state already matches it.

Ownership (`wirebroker.coordinator.ownership`, its table): the coordinator serves the groups of the
`__consumer_offsets` partitions this broker leads. `on_became_leader(p, epoch)` schedules a load
of `p` (its groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile), `on_resigned(p)` unloads it
(parked requests NOT_COORDINATOR, later requests NOT_COORDINATOR). Loads run one at a time in
the shared runtime's task, in the order they were scheduled; a stale load is discarded. Every
broker (a single one too) follows the leaderships its cluster layer reports.
`__consumer_offsets` is created on the first FindCoordinator (or append). Details, limits and
Kafka differences: docs/groups.md.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from protocol.errors import ErrorCode
from protocol.group_records import GroupRecordError
from protocol.records import build_batch
from wirebroker.coordinator.runtime import (
    Appended,
    CoordinatorRuntime,
    ReplicationWaiter,
    replicated_at_once,
)
from wirebroker.group.config import GroupConfig
from wirebroker.group.consumer.messages import (
    ConsumerHeartbeatRequest,
    ConsumerHeartbeatResult,
    DescribedConsumerGroup,
    TopicLookup,
    TopicNames,
    TopicResolver,
)
from wirebroker.group.coordinator import GroupCoordinatorCore
from wirebroker.group.effects import (
    Completion,
    Record,
    Result,
    append_error_to_commit_error,
    append_error_to_response_error,
)
from wirebroker.group.messages import (
    CommitRequest,
    CommitResult,
    DeleteGroupsResult,
    DeleteOffsetsResult,
    DescribedGroup,
    Failable,
    HeartbeatRequest,
    JoinRequest,
    JoinResult,
    LeaveMember,
    LeaveResult,
    ListGroupsResult,
    OffsetFetchResult,
    ParkedResult,
    SyncRequest,
    SyncResult,
    TopicPartitions,
    TxnCommitRequest,
)
from wirebroker.group.offsets_log import OffsetsFold, record_chunks
from wirebroker.group.share.messages import (
    DescribedShareGroup,
    ShareHeartbeatRequest,
    ShareHeartbeatResult,
)
from wirebroker.group.share.persister import Persister
from wirebroker.group.share.service import ShareGroupService
from wirebroker.group.state import GroupOverrides
from wirebroker.metadata.group_configs import GROUP_CONFIGS, GroupConfigError, parse_value
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.share.persister import InMemoryPersister

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig
    from wirebroker.coordinator.ownership import Ownership
    from wirebroker.metadata.group_config_store import GroupConfigs
    from wirebroker.metadata.topic_admin import TopicAdmin
    from wirebroker.metadata.view import ClusterView
    from wirebroker.replication.replica_manager import ReplicaManager

__all__ = ["OFFSETS_TOPIC", "GroupCoordinatorRuntime", "ReplicationWaiter", "replicated_at_once"]

log = logging.getLogger(__name__)

R = TypeVar("R")
OFFSETS_TOPIC = "__consumer_offsets"

#: __consumer_offsets partition -> what an answer waits for there.
_Pending = dict[int, Appended]


@dataclasses.dataclass
class _Waiter:
    """A parked JoinGroup/SyncGroup: its group's partition, the event and the answer (which
    waits for `replication` first, when its call appended records there)."""

    partition: int
    event: trio.Event = dataclasses.field(default_factory=trio.Event)
    response: ParkedResult | None = None
    replication: Appended | None = None


class GroupCoordinatorRuntime:
    """Runs a `GroupCoordinatorCore` for the broker (see the module docstring); the
    `CoordinatorShard` of its `CoordinatorRuntime`.

    The broker's cluster layer reports the leaderships (`on_became_leader`, `on_resigned`).
    `offsets_replication_factor`: of `__consumer_offsets` when this broker creates it (a
    cluster passes offsets.topic.replication.factor). `replication_waiter`: see
    `ReplicationWaiter` (default `replicated_at_once`).
    """

    def __init__(
        self,
        config: BrokerConfig,
        replicas: ReplicaManager,
        *,
        admin: TopicAdmin,
        clock: Callable[[], int],
        member_id_suffix: Callable[[], str] | None = None,
        offsets_replication_factor: int = 1,
        replication_waiter: ReplicationWaiter = replicated_at_once,
        share_persister: Persister | None = None,
    ) -> None:
        self.replicas = replicas
        self.admin = admin
        self.clock = clock
        group_config = GroupConfig.from_broker_config(config)
        existing = admin.describe(OFFSETS_TOPIC)
        if existing is not None and existing.partitions != group_config.num_partitions:
            log.info(
                "%s has %d partitions (offsets.topic.num.partitions is %d); using %d",
                OFFSETS_TOPIC,
                existing.partitions,
                group_config.num_partitions,
                existing.partitions,
            )
            group_config = dataclasses.replace(group_config, num_partitions=existing.partitions)
        self.core = GroupCoordinatorCore(group_config, member_id_suffix=member_id_suffix)
        self.segment_bytes = config.get_int("offsets.topic.segment.bytes")
        self.commit_timeout_ms = config.get_int("offsets.commit.timeout.ms")
        self.offsets_replication_factor = offsets_replication_factor
        self.runtime = CoordinatorRuntime(
            topic=OFFSETS_TOPIC,
            partitions=group_config.num_partitions,
            shard=self,
            replicas=replicas,
            admin=admin,
            clock=clock,
            new_topic=self._new_topic,
            replication_waiter=replication_waiter,
            role="group coordinator",
        )
        #: share groups' persister calls (KIP-932; `share_persister`: the share-state
        #: persister, in memory when none is given)
        self.share = ShareGroupService(
            self.core, share_persister or InMemoryPersister(), self._call
        )
        self._waiters: dict[Hashable, _Waiter] = {}
        self._keys = itertools.count(1)
        self._recovering = False
        #: markers written to a partition while its load runs (the load may not read them)
        self._markers_while_loading: dict[int, list[tuple[int, bool]]] = {}

    def follow_topics(self, view: ClusterView) -> None:
        """Name <-> id lookups of the cluster's topics for the core (the classic members of
        consumer groups and the migrations between group types need them)."""

        def lookup(name: str) -> tuple[uuid.UUID, int] | None:
            info = view.topic(name)
            return None if info is None else (info.topic_id, info.partitions)

        def name_of(topic_id: uuid.UUID) -> str | None:
            info = view.topic_by_id(topic_id)
            return None if info is None else info.name

        def names() -> list[str]:
            return [t.name for t in view.all_topics()]

        self.core.set_topics(TopicResolver(lookup, name_of, names))

    def follow_group_configs(self, configs: GroupConfigs) -> None:
        """Apply the GROUP config resource's overrides to the groups coordinated here: those
        held now, then every change this broker applies (`GroupConfigs.add_listener`)."""

        def apply(group: str, overrides: Mapping[str, str]) -> None:
            self.core.set_group_configs(group, group_overrides(overrides))

        for group, overrides in configs.all().items():
            apply(group, overrides)
        configs.add_listener(apply)

    @property
    def ownership(self) -> Ownership:
        """Which `__consumer_offsets` partitions this coordinator owns (the runtime's)."""
        return self.runtime.ownership

    # == lifetime ==========================================================================
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Become active, report started, then run the timers and the loads scheduled by
        `on_became_leader` until cancelled."""
        await self.runtime.run(self._start, task_status=task_status)

    async def _start(self) -> None:
        self._activate()

    def shutdown(self) -> None:
        """Unload everything: parked requests get NOT_COORDINATOR, later ones
        COORDINATOR_NOT_AVAILABLE; later leadership changes are ignored."""
        self.runtime.shutdown()
        self._process(self.core.shutdown())

    def _activate(self) -> None:
        """Make the core active with whatever it owns (completing no partition does that)."""
        self._process(self.core.complete_loading(self.clock(), ()))

    # == leadership of __consumer_offsets partitions (the shared runtime's ownership) ======
    def on_became_leader(self, partition: int, leader_epoch: int) -> None:
        """This broker now leads `__consumer_offsets` partition `partition` at
        `leader_epoch`: schedule its load (its groups answer COORDINATOR_LOAD_IN_PROGRESS until
        it is done). Stale or repeated notifications change nothing."""
        self.runtime.on_became_leader(partition, leader_epoch)

    def on_resigned(self, partition: int, leader_epoch: int | None = None) -> None:
        """This broker no longer leads `partition` (`leader_epoch`: the partition's new epoch,
        when known; a stale one is ignored): its groups are dropped, parked JoinGroup/SyncGroup
        requests answered NOT_COORDINATOR, later requests NOT_COORDINATOR."""
        self.runtime.on_resigned(partition, leader_epoch)

    # -- the CoordinatorShard side (called by the runtime) -----------------------------------
    def begin_loading(self, partition: int) -> None:
        self._markers_while_loading[partition] = []
        self._process(self.core.begin_loading([partition]))

    def new_fold(self, partition: int) -> OffsetsFold:
        del partition
        return OffsetsFold()

    def replay(self, partition: int, fold: OffsetsFold) -> int:
        """Replay a loaded partition into the core, then the markers written meanwhile."""
        total = self._replay(partition, fold)
        for pid, commit in self._markers_while_loading.pop(partition, []):
            self.core.complete_txn(pid, partition, commit=commit)
        return total

    def complete_loading(self, partition: int, epoch: int, replayed: Any, started_ms: int) -> None:
        del epoch, replayed, started_ms
        self._process(self.core.complete_loading(self.clock(), [partition]))

    def unload(self, partitions: list[int]) -> None:
        for p in partitions:
            self._markers_while_loading.pop(p, None)
        self._process(self.core.unload(partitions))

    def next_deadline(self) -> int | None:
        return self.core.next_deadline()

    def fire_timers(self, now_ms: int) -> None:
        self._apply(self.core.tick(now_ms))

    # == request entry points (typed: `wirebroker.group.messages`) =========================
    def partition_for(self, group_id: str) -> int:
        return self.core.partition_for(group_id)

    def find_coordinator(self, group_id: str) -> ErrorCode:
        """FindCoordinator for a group, this broker's part: NONE (the offsets topic exists
        now; the coordinator is the leader of `partition_for(group_id)`, the handler asks who)
        or COORDINATOR_NOT_AVAILABLE (not active yet / shut down, or the topic cannot be
        made)."""
        if self.core.coordinator_error(group_id) is ErrorCode.COORDINATOR_NOT_AVAILABLE:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return self.ensure_offsets_topic()

    def ensure_offsets_topic(self) -> ErrorCode:
        """Create `__consumer_offsets` unless it exists; NONE or COORDINATOR_NOT_AVAILABLE."""
        return self.runtime.ensure_topic()

    def _new_topic(self) -> NewTopic:
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": str(self.segment_bytes),
            "compression.type": "producer",
        }
        return NewTopic(
            OFFSETS_TOPIC,
            self.core.config.num_partitions,
            self.offsets_replication_factor,
            configs,
        )

    async def join_group(self, req: JoinRequest) -> JoinResult:
        """JoinGroup (see `GroupMembership.join_group`); waits until the group answers."""
        result = await self._parked(
            req.group_id, lambda key, now: self.core.join_group(key, now, req)
        )
        assert isinstance(result, JoinResult)
        return result

    async def sync_group(self, req: SyncRequest) -> SyncResult:
        """SyncGroup (see `GroupMembership.sync_group`); waits until the group answers."""
        result = await self._parked(
            req.group_id, lambda key, now: self.core.sync_group(key, now, req)
        )
        assert isinstance(result, SyncResult)
        return result

    def heartbeat(self, req: HeartbeatRequest) -> ErrorCode:
        """Heartbeat (never writes records, so it never waits)."""
        applied = self._process(self.core.heartbeat(self.clock(), req))
        assert applied[0] is not None
        return applied[0]

    async def leave_group(self, *, group_id: str, members: Sequence[LeaveMember]) -> LeaveResult:
        return await self._call(
            lambda now: self.core.leave_group(now, group_id=group_id, members=members)
        )

    async def commit_offsets(self, req: CommitRequest) -> CommitResult:
        return await self._call(lambda now: self.core.commit_offsets(now, req))

    async def txn_commit_offsets(self, req: TxnCommitRequest) -> CommitResult:
        """TxnOffsetCommit: transactional records, pending until `complete_txn`."""
        return await self._call(lambda now: self.core.txn_commit_offsets(now, req))

    def complete_txn(self, producer_id: int, partition: int, *, commit: bool) -> None:
        """WriteTxnMarkers wrote `producer_id`'s marker to `__consumer_offsets` partition
        `partition` (Kafka's onTransactionCompleted). While `partition` loads, also applied
        once the load has replayed (it may have read the log before the marker)."""
        late = self._markers_while_loading.get(partition)
        if late is not None:
            late.append((producer_id, commit))
        self._process(self.core.complete_txn(producer_id, partition, commit=commit))

    def has_pending_txn_offset(self, group_id: str, topic: str, partition: int) -> bool:
        """OffsetFetch require_stable: an open transaction holds an offset of this partition."""
        return self.core.has_pending_txn_offset(group_id, topic, partition)

    async def delete_offsets(
        self, *, group_id: str, topics: Sequence[TopicPartitions]
    ) -> DeleteOffsetsResult:
        return await self._call(
            lambda now: self.core.delete_offsets(now, group_id=group_id, topics=topics)
        )

    async def delete_groups(self, group_ids: Sequence[str]) -> DeleteGroupsResult:
        """DeleteGroups (a share group's share states are deleted first: `ShareGroupService`)."""
        return await self.share.delete_groups(group_ids)

    async def share_group_heartbeat(
        self, req: ShareHeartbeatRequest, topics: TopicLookup
    ) -> ShareHeartbeatResult:
        """ShareGroupHeartbeat (KIP-932, `wirebroker.group.share.manager`), then the share
        state initialization it asks for (`ShareGroupService.heartbeat`)."""
        return await self.share.heartbeat(req, topics)

    def share_group_describe(self, group_ids: Sequence[str]) -> list[DescribedShareGroup]:
        return self.core.share_group_describe(group_ids)

    def is_share_group(self, group_id: str) -> bool:
        return group_id in self.core.state.share_groups

    def on_topics_deleted(self, topic_ids: set[uuid.UUID]) -> None:
        """Topics deleted: they leave the share groups' share-state bookkeeping (Kafka's
        maybe-cleanup-share-group-state; records appended, not waited for)."""
        if not self.runtime.stopped:
            self._process(self.core.share.topics_deleted(topic_ids))

    async def consumer_group_heartbeat(
        self, req: ConsumerHeartbeatRequest, topics: TopicLookup, topic_names: TopicNames
    ) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat (KIP-848, `wirebroker.group.consumer.manager`); `topics`
        looks a subscribed topic name up (id, partition count), `topic_names` lists them all
        (for regular-expression subscriptions)."""
        return await self._call(
            lambda now: self.core.consumer_group_heartbeat(now, req, topics, topic_names)
        )

    def consumer_group_describe(self, group_ids: Sequence[str]) -> list[DescribedConsumerGroup]:
        return self.core.consumer_group_describe(group_ids)

    def fetch_offsets(
        self,
        *,
        group_id: str,
        topics: Sequence[TopicPartitions] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResult:
        return self.core.fetch_offsets(
            group_id=group_id, topics=topics, member_id=member_id, member_epoch=member_epoch
        )

    def list_groups(
        self, *, states_filter: Sequence[str] = (), types_filter: Sequence[str] = ()
    ) -> ListGroupsResult:
        return self.core.list_groups(states_filter=states_filter, types_filter=types_filter)

    def describe_groups(self, *, group_ids: Sequence[str]) -> list[DescribedGroup]:
        return self.core.describe_groups(group_ids=group_ids)

    def tick(self) -> None:
        """Run every timer due now (the timer task does this by itself)."""
        self._process(Result())

    # == core calls and their effects ======================================================
    async def _call(self, call: Callable[[int], Result[R]]) -> R:
        """One core call; its answer once its records are replicated (else failed)."""
        applied = self._process(call(self.clock()))
        response, pending = applied
        assert response is not None, "core call without a response"
        if pending:
            failed = await self._replicated(pending)
            if failed:
                response = _failed_response(response, failed, self.core.partition_for)
        return response

    async def _parked(
        self, group_id: str, call: Callable[[Hashable, int], Result[None]]
    ) -> ParkedResult:
        key = ("req", next(self._keys))
        waiter = _Waiter(self.core.partition_for(group_id))
        self._waiters[key] = waiter
        try:
            self._process(call(key, self.clock()))
            await waiter.event.wait()
        finally:
            self._waiters.pop(key, None)
        response = waiter.response
        assert response is not None
        if waiter.replication is not None:
            failed = await self._replicated({waiter.partition: waiter.replication})
            if failed:
                response = response.failed(append_error_to_response_error(failed[waiter.partition]))
        return response

    def _process(self, result: Result[R]) -> tuple[R | None, _Pending]:
        """Apply one core result, then run the timers already due; the result's response and
        what it must wait for."""
        applied = self._apply(result)
        self.runtime.run_due_timers()
        return applied

    def _apply(self, result: Result[R]) -> tuple[R | None, _Pending]:
        """Append the records, deliver the completions (each waits for its partition's
        records), and return the response with what it waits for."""
        response = result.response
        completions = result.completions
        if not result.records:
            for c in completions:
                self._deliver(c, {})
            return response, {}
        appended, failed = self._append(result.records)
        pending = {
            p: a
            for p, a in appended.items()
            if p not in failed and a.part.high_watermark < a.end_offset
        }
        if not failed:
            for c in completions:
                self._deliver(c, pending)
            return response, pending
        if response is not None:
            response = _failed_response(response, failed, self.core.partition_for)
        for c in completions:
            waiter = self._waiters.get(c.key)
            error = failed.get(waiter.partition) if waiter is not None else None
            if error is not None:
                c = Completion(c.key, c.result.failed(append_error_to_response_error(error)))
            self._deliver(c, pending)
        self._recover(sorted(failed))
        return response, pending

    def _deliver(self, completion: Completion, pending: _Pending) -> None:
        waiter = self._waiters.get(completion.key)
        if waiter is None:
            return  # the request's task is gone (connection closed while parked)
        waiter.response = completion.result
        waiter.replication = pending.get(waiter.partition)
        waiter.event.set()

    # -- appending and replication -------------------------------------------------------
    def _append(self, records: list[Record]) -> tuple[_Pending, dict[int, ErrorCode]]:
        """Append `records` in order, grouped by partition: what each partition appended
        (its end offset) and the partitions that failed (their raw append error)."""
        now = self.clock()
        by_partition: dict[int, list[Record]] = {}
        for r in records:
            by_partition.setdefault(r.partition, []).append(r)
        if self.ensure_offsets_topic() is not ErrorCode.NONE:
            return {}, dict.fromkeys(by_partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        appended: _Pending = {}
        failed: dict[int, ErrorCode] = {}
        for partition, recs in by_partition.items():
            for chunk in record_chunks(recs):
                pid, epoch = chunk[0].producer_id, chunk[0].producer_epoch
                batch = build_batch(
                    [(r.key, r.value) for r in chunk],
                    base_timestamp=now,
                    producer_id=pid,
                    producer_epoch=epoch,
                    base_sequence=0 if pid >= 0 else -1,
                    is_transactional=pid >= 0,
                )
                done = self.runtime.append(partition, batch, now, transactional=pid >= 0)
                if isinstance(done, ErrorCode):
                    failed[partition] = done
                    break
                appended[partition] = done
        return appended, failed

    async def _replicated(self, pending: _Pending) -> dict[int, ErrorCode]:
        """Wait until every partition of `pending` is replicated past its records, all within
        offsets.commit.timeout.ms; the raw errors of the partitions that were not
        (NOT_LEADER_OR_FOLLOWER when the partition changed hands meanwhile)."""
        deadline = trio.current_time() + self.commit_timeout_ms / 1000
        failed: dict[int, ErrorCode] = {}
        for p, appended in pending.items():
            timeout_s = max(0.0, deadline - trio.current_time())
            error = await self.runtime.wait_replicated(appended, timeout_s)
            if error is ErrorCode.NONE:
                continue
            if self.ownership.token(p) != appended.token:
                error = ErrorCode.NOT_LEADER_OR_FOLLOWER
            log.warning(
                "%s-%d: records up to offset %d not replicated: %s",
                OFFSETS_TOPIC,
                p,
                appended.end_offset - 1,
                error.name,
            )
            failed[p] = error
        return failed

    def _recover(self, partitions: list[int]) -> None:
        """Unload `partitions` and reload them from the log (after a failed append)."""
        self._apply(self.core.unload(partitions))
        if self._recovering:
            return  # an append failed while reloading: leave the partitions unloaded
        self._recovering = True
        try:
            self._apply(self.core.begin_loading(partitions))
            for p in partitions:
                fold = OffsetsFold()
                self.runtime.read(p, fold)
                self._replay(p, fold)
            self._apply(self.core.complete_loading(self.clock(), partitions))
            log.warning(
                "reloaded %s partitions %s after a failed append", OFFSETS_TOPIC, partitions
            )
        except Exception:
            log.exception(
                "reloading %s partitions %s failed; they stay unloaded", OFFSETS_TOPIC, partitions
            )
            self._apply(self.core.unload(partitions))
            for p in partitions:
                self.ownership.drop(p)
        finally:
            self._recovering = False

    def _replay(self, partition: int, fold: OffsetsFold) -> int:
        count = 0
        skipped = 0
        records = [(-1, k, v, fold.positions.get(k, -1)) for k, v in fold.latest.items()]
        for pid, pending in fold.pending.items():
            records.extend((pid, k, v, offset) for k, v, offset in pending)
        for pid, key, value, offset in records:
            try:
                if pid < 0:
                    self.core.replay(key, value, offset)
                else:
                    self.core.replay_pending(pid, key, value, offset)
                count += 1
            except (GroupRecordError, RuntimeError) as exc:
                skipped += 1
                if skipped == 1:
                    log.warning(
                        "%s-%d: skipping a record that does not replay: %s",
                        OFFSETS_TOPIC,
                        partition,
                        exc,
                    )
        if skipped > 1:
            log.warning("%s-%d: %d records skipped in all", OFFSETS_TOPIC, partition, skipped)
        return count


def _failed_response(
    response: R, failed: dict[int, ErrorCode], partition_for: Callable[[str], int]
) -> R:
    """A response whose records were not appended or replicated in the `failed` partitions
    (raw errors): OffsetCommit maps them as Kafka's storeOffsets, the rest as its
    appendGroupMetadataErrorToResponseError; DeleteGroups fails only the groups there."""
    out: Any = response
    if isinstance(response, DeleteGroupsResult):
        out = response.failed_where(
            {
                r.group_id: append_error_to_response_error(failed[partition_for(r.group_id)])
                for r in response.results
                if partition_for(r.group_id) in failed
            }
        )
    elif isinstance(response, CommitResult):
        out = response.failed(append_error_to_commit_error(next(iter(failed.values()))))
    elif isinstance(response, Failable):
        out = response.failed(append_error_to_response_error(next(iter(failed.values()))))
    return out


def group_overrides(overrides: Mapping[str, str]) -> GroupOverrides:
    """What a group's overrides change for its coordinator (an override that does not parse,
    written by another tool, leaves the broker's default)."""

    def millis(name: str) -> int | None:
        raw = overrides.get(name)
        if raw is None:
            return None
        try:
            value = parse_value(GROUP_CONFIGS[name], raw)
        except GroupConfigError:
            log.warning("ignoring the group config %s=%r: not a valid value", name, raw)
            return None
        return value if isinstance(value, int) else None

    return GroupOverrides(
        session_timeout_ms=millis("consumer.session.timeout.ms"),
        heartbeat_interval_ms=millis("consumer.heartbeat.interval.ms"),
        share_session_timeout_ms=millis("share.session.timeout.ms"),
        share_heartbeat_interval_ms=millis("share.heartbeat.interval.ms"),
        share_assignment_interval_ms=millis("share.assignment.interval.ms"),
    )
