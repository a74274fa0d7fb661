"""The group coordinator's pure core: classic groups and committed offsets.

Sans-I/O (no trio, never awaits, takes `now_ms`). `GroupCoordinatorCore` composes the parts
as Kafka's `GroupCoordinatorShard` does (plus the checks of `GroupCoordinatorService`):
    state.py            `CoordinatorState`: groups, offsets, timers, partition statuses
    membership.py       JoinGroup / SyncGroup / Heartbeat / LeaveGroup, static membership
    rebalance.py        the join phase, member removal, session / join / sync timers
    offsets_manager.py  OffsetCommit / OffsetFetch / OffsetDelete / DeleteGroups, expiry
    loader.py           replay of `__consumer_offsets` into a `LoadedState`
The group states and what each request does in them are tabled in `wirebroker.group.classic`;
the effect contract (results, parked requests, records to append before answering) in
`wirebroker.group.effects`; the typed inputs and results in `wirebroker.group.messages`
(the handlers build each version's response from them).

Driving it (the trio runtime's job):
- JoinGroup / SyncGroup take a runtime-chosen `key`; their answer arrives as a
  `Completion(key, result)` -- in the same call's `Result.completions` or in a later one's.
- Every other API returns its typed result at once (read-only APIs return it bare).
- After every call, `next_deadline()` is the time to call `tick(now_ms)`, which runs due
  timers: session expiry (pending and real members), join phase completion (rebalance
  timeout, group.initial.rebalance.delay.ms), sync expiry, offset expiry.
- Loading: `begin_loading(partitions)`, `replay(key, value)` for every record of those
  `__consumer_offsets` partitions in log order, `complete_loading(now_ms, partitions)`.
  Until the first `complete_loading` every group request gets COORDINATOR_NOT_AVAILABLE;
  afterwards a partition being (re)loaded answers COORDINATOR_LOAD_IN_PROGRESS and a
  partition this core does not own NOT_COORDINATOR (Kafka's runtime errors).

Where the core is not Kafka (on purpose):
- Group state changes are applied when the call returns; the records are appended by the
  runtime before any response goes out (Kafka waits for the append, then applies). See
  `effects` for what to do when an append fails.
- KIP-848 consumer groups are `wirebroker.group.consumer` (ConsumerGroupHeartbeat /
  ConsumerGroupDescribe, `consumer_group_heartbeat` here), KIP-932 share groups
  `wirebroker.group.share` (ShareGroupHeartbeat / ShareGroupDescribe); streams groups are
  not implemented, their records are skipped on replay.
- Transactional offsets (TxnOffsetCommit) stay pending (`txn_offsets.py`) until
  `complete_txn` (a marker written to their partition).
- Topic existence (UNKNOWN_TOPIC_OR_PARTITION in OffsetCommit) and authorization are the
  handlers' business; OffsetCommit/OffsetFetch v10 topic ids are mapped to names there too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence

from protocol.errors import ErrorCode
from wirebroker.group.assignors import assignors_from_config
from wirebroker.group.classic import ClassicGroup, GroupState
from wirebroker.group.config import GroupConfig
from wirebroker.group.consumer.manager import ConsumerGroupManager
from wirebroker.group.consumer.messages import TopicResolver
from wirebroker.group.consumer.model import GROUP_TYPE_CONSUMER
from wirebroker.group.effects import Effects, Result
from wirebroker.group.loader import GroupLoader
from wirebroker.group.membership import GroupMembership
from wirebroker.group.messages import (
    DescribedGroup,
    DescribedMember,
    ListedGroup,
    ListGroupsResult,
)
from wirebroker.group.offsets import OffsetAndMetadata
from wirebroker.group.offsets_manager import EXPIRE_KEY, OffsetsManager
from wirebroker.group.rebalance import Rebalancer
from wirebroker.group.share.manager import ShareGroupManager
from wirebroker.group.share.model import GROUP_TYPE_SHARE, PROTOCOL_TYPE_SHARE
from wirebroker.group.state import CoordinatorState, GroupOverrides, PartitionStatus

GROUP_TYPE_CLASSIC = "classic"


class GroupCoordinatorCore:
    def __init__(
        self,
        config: GroupConfig | None = None,
        *,
        member_id_suffix: Callable[[], str] | None = None,
    ) -> None:
        self.config = config or GroupConfig()
        self.state = CoordinatorState(self.config)
        self.rebalancer = Rebalancer(self.state)
        self.membership = GroupMembership(
            self.state, self.rebalancer, member_id_suffix or (lambda: str(uuid.uuid4()))
        )
        self.offsets = OffsetsManager(self.state, self.rebalancer)
        self.loader = GroupLoader(self.state)
        self.consumer = ConsumerGroupManager(
            self.state,
            assignors_from_config(self.config.consumer_assignors),
            member_id_suffix or (lambda: str(uuid.uuid4())),
            self.rebalancer,
        )
        self.membership.consumer_members = self.consumer.classic
        # The request APIs are the parts' own (see their docstrings).
        self.join_group = self.membership.join_group
        self.sync_group = self.membership.sync_group
        self.heartbeat = self.membership.heartbeat
        self.leave_group = self.membership.leave_group
        self.commit_offsets = self.offsets.commit_offsets
        self.fetch_offsets = self.offsets.fetch_offsets
        self.delete_offsets = self.offsets.delete_offsets
        self.delete_groups = self.offsets.delete_groups
        self.txn_commit_offsets = self.offsets.txn_commit_offsets
        self.has_pending_txn_offset = self.offsets.has_pending_txn_offset
        self.consumer_group_heartbeat = self.consumer.heartbeat
        self.consumer_group_describe = self.consumer.describe
        self.share = ShareGroupManager(self.state)
        self.share_group_heartbeat = self.share.heartbeat
        self.share_group_describe = self.share.describe
        self.offsets.share_delete = self.share.delete_group

    # == introspection =====================================================================
    def partition_for(self, group_id: str) -> int:
        return self.state.partition_for(group_id)

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.state.groups.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self.state.groups)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetAndMetadata]:
        return {(t, p): v for t, p, v in self.state.offsets.entries(group_id)}

    def next_deadline(self) -> int | None:
        """When the runtime should call `tick` next (None: no timer pending)."""
        return self.state.timers.next_deadline()

    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE when this core serves `group_id` now, else the error to answer with."""
        return self.state.coordinator_error(group_id)

    def request_error(self, group_id: str) -> ErrorCode:
        return self.state.request_error(group_id)

    # == loading ===========================================================================
    def _all_partitions(self, partitions: Iterable[int] | None) -> list[int]:
        if partitions is None:
            return list(range(self.config.num_partitions))
        return list(partitions)

    def begin_loading(self, partitions: Iterable[int] | None = None) -> Result[None]:
        """Start (re)loading `partitions` (all when None): their state is dropped (requests
        still parked there are answered NOT_COORDINATOR) and rebuilt by `replay`; requests
        for their groups get COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
        fx = Effects()
        parts = self._all_partitions(partitions)
        self._drop_state(set(parts), fx)
        for p in parts:
            self.state.partitions[p] = PartitionStatus.LOADING
        return fx.result()

    def replay(self, key: bytes, value: bytes | None, offset: int = -1) -> bool:
        """Apply one `__consumer_offsets` record at log offset `offset` (False: a record type
        this core ignores).

        Only for partitions being loaded (`begin_loading`): records the core emitted itself
        are already applied. Raises `GroupRecordError` on bytes that do not decode."""
        return self.loader.replay(key, value, offset)

    def complete_txn(self, producer_id: int, partition: int, *, commit: bool) -> Result[None]:
        """A COMMIT/ABORT marker of `producer_id` was written to `partition` (see
        `OffsetsManager.complete_txn`); also applied to what a load of it replayed."""
        self.loader.complete_txn(producer_id, partition, commit=commit)
        return self.offsets.complete_txn(producer_id, partition, commit=commit)

    def replay_pending(
        self, producer_id: int, key: bytes, value: bytes | None, offset: int = -1
    ) -> bool:
        """Replay an offset commit of an open transaction (its marker not in the log), at log
        offset `offset`."""
        return self.loader.replay_pending(producer_id, key, value, offset)

    def complete_loading(
        self, now_ms: int, partitions: Iterable[int] | None = None
    ) -> Result[None]:
        """Finish loading: install what was replayed, start the session timers of every
        loaded member (Kafka's `onLoaded`) and serve the partitions."""
        fx = Effects()
        parts = set(self._all_partitions(partitions))
        state = self.state
        loaded = self.loader.take(parts)
        state.groups.update(loaded.groups)
        state.consumer_groups.update(loaded.consumer_groups)
        for consumer_group in loaded.consumer_groups.values():
            self.consumer.on_loaded(consumer_group, now_ms)
        state.share_groups.update(loaded.share_groups)
        state.share_states.update(loaded.share_states)
        for share_group in loaded.share_groups.values():
            self.share.on_loaded(share_group, now_ms)
        for gid, topics in loaded.offsets.items():
            state.offsets.set_group(gid, topics)
        state.txn_offsets.merge(loaded.pending)
        for p in parts:
            state.partitions[p] = PartitionStatus.ACTIVE
        state.active = True
        for group in list(state.groups.values()):
            if state.partition_for(group.group_id) not in parts:
                continue
            for m in group.members.values():
                self.rebalancer.renew_session(group.group_id, m, now_ms)
            if len(group.members) > self.config.max_group_size:
                self.rebalancer.prepare_rebalance(group, fx, now_ms)
        if EXPIRE_KEY not in state.timers:
            self.offsets.schedule_expiration(now_ms)
        return fx.result()

    def unload(self, partitions: Iterable[int] | None = None) -> Result[None]:
        """Stop serving `partitions` (all when None): parked requests of their groups are
        answered with NOT_COORDINATOR and their state is dropped."""
        fx = Effects()
        parts = set(self._all_partitions(partitions))
        self._drop_state(parts, fx)
        for p in parts:
            self.state.partitions.pop(p, None)
        return fx.result()

    def set_topics(self, topics: TopicResolver) -> None:
        """How the core sees the cluster's topics (names <-> ids): what the classic members of
        consumer groups and the migrations between group types name partitions with."""
        self.state.topics = topics

    def set_group_configs(self, group_id: str, overrides: GroupOverrides | None) -> None:
        """The group's GROUP config overrides changed (None: it has none): its members'
        session timeout and heartbeat interval from their next heartbeat on."""
        if overrides is None or overrides == GroupOverrides():
            self.state.group_configs.pop(group_id, None)
        else:
            self.state.group_configs[group_id] = overrides

    def shutdown(self) -> Result[None]:
        """Unload everything; later requests get COORDINATOR_NOT_AVAILABLE."""
        result = self.unload(list(self.state.partitions) or None)
        self.state.active = False
        self.state.timers.cancel(EXPIRE_KEY)
        return result

    def _drop_state(self, parts: set[int], fx: Effects) -> None:
        state = self.state
        self.loader.take(parts)
        for group_id in list(state.groups):
            if state.partition_for(group_id) in parts:
                group = state.groups.pop(group_id)
                group.complete_all_parked(ErrorCode.NOT_COORDINATOR, fx.completions)
                state.cancel_group_timers(group_id)
        for group_id in list(state.consumer_groups):
            if state.partition_for(group_id) in parts:
                del state.consumer_groups[group_id]
                state.cancel_group_timers(group_id)
        for groups in (state.share_groups, state.share_states):
            for group_id in [g for g in groups if state.partition_for(g) in parts]:
                del groups[group_id]
                state.cancel_group_timers(group_id)
        for group_id in state.offsets.groups():
            if state.partition_for(group_id) in parts:
                state.offsets.remove_group(group_id)
        state.txn_offsets.drop_groups(lambda g: state.partition_for(g) in parts)

    # == timers ============================================================================
    def tick(self, now_ms: int) -> Result[None]:
        """Run every timer due at `now_ms`."""
        fx = Effects()
        while (due := self.state.timers.pop_due(now_ms)) is not None:
            _, action = due
            action(now_ms, fx)
        return fx.result()

    # == ListGroups / DescribeGroups =======================================================
    def list_groups(
        self, *, states_filter: Sequence[str] = (), types_filter: Sequence[str] = ()
    ) -> ListGroupsResult:
        """States compared case-insensitively; types likewise ("classic", "consumer" or
        "share"; an unknown type matches nothing)."""
        state = self.state
        if not state.active:
            return ListGroupsResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if any(s is PartitionStatus.LOADING for s in state.partitions.values()):
            return ListGroupsResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        states = {s.strip().lower() for s in states_filter}
        types = {t.strip().lower() for t in types_filter}
        listed: list[ListedGroup] = []
        if not types or GROUP_TYPE_CLASSIC in types:
            listed.extend(
                ListedGroup(g.group_id, g.protocol_type or "", str(g.state), GROUP_TYPE_CLASSIC)
                for g in state.groups.values()
                if not states or str(g.state).lower() in states
            )
        if not types or GROUP_TYPE_CONSUMER in types:
            for cg in state.consumer_groups.values():
                cg_state = str(cg.group_state())
                if not states or cg_state.lower() in states:
                    listed.append(
                        ListedGroup(cg.group_id, "consumer", cg_state, GROUP_TYPE_CONSUMER)
                    )
        if not types or GROUP_TYPE_SHARE in types:
            for sg in state.share_groups.values():
                sg_state = str(sg.group_state())
                if not states or sg_state.lower() in states:
                    listed.append(
                        ListedGroup(sg.group_id, PROTOCOL_TYPE_SHARE, sg_state, GROUP_TYPE_SHARE)
                    )
        return ListGroupsResult(ErrorCode.NONE, tuple(listed))

    def describe_groups(self, *, group_ids: Sequence[str]) -> list[DescribedGroup]:
        """Unknown groups are Dead (`exists` False). Member metadata and the protocol name
        are given only for Stable groups."""
        return [self._describe(gid) for gid in group_ids]

    def _describe(self, gid: str) -> DescribedGroup:
        err = self.state.coordinator_error(gid)
        if err is not ErrorCode.NONE:
            return DescribedGroup(gid, error=err)
        group = self.state.groups.get(gid)
        if gid in self.state.consumer_groups or gid in self.state.share_groups:
            return DescribedGroup(
                gid,
                state=str(GroupState.DEAD),
                exists=False,
                error_message=f"Group {gid} is not a classic group.",
            )
        if group is None or group.is_in(GroupState.DEAD):
            return DescribedGroup(gid, state=str(GroupState.DEAD), exists=False)
        stable = group.is_in(GroupState.STABLE)
        return DescribedGroup(
            gid,
            state=str(group.state),
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=tuple(
                DescribedMember(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(group.protocol_name) if stable else b"",
                    m.assignment,
                )
                for m in group.members.values()
            ),
        )
