"""ShareGroupHeartbeat and ShareGroupDescribe over the share groups of a `CoordinatorState`
(Kafka 4.4's GroupMetadataManager, its share-group part). Pure: every call takes `now_ms`
and returns a `Result` whose records the runtime appends first.

A heartbeat, in Kafka's order: the request checks (INVALID_REQUEST texts), the coordinator's
own checks, then by member epoch:
    0    join (the client names its member id): the member is created (or found)
    >0   heartbeat: the member must exist (UNKNOWN_MEMBER_ID) at this epoch or its previous
         one, else FENCED_MEMBER_EPOCH
    -1   leave: the member is removed, the group epoch moves
A new group is at epoch 1 (Kafka 4.4), so its first member joins at 2. The group epoch moves
when a member's subscription changes, when
the subscribed topics' metadata changes (looked up at each heartbeat), when partitions whose
share state was initialized since are not in the target assignment yet, and when a member
leaves or is fenced. When the group epoch is above the assignment epoch, a new target is
computed by the simple assignor over the initialized partitions only, at most once per
`share.assignment.interval.ms` (Kafka 4.4's assignment interval), and every member takes its
target at the assignment epoch at its next heartbeat (no revocation step). Subscribed
partitions whose share state is not initialized (or whose initialization started more than
`group.share.initialize.retry.interval.ms` ago) are recorded as initializing and handed back
in the result (`initialize`): the runtime initializes them through the persister, then
`initialized` (or `uninitialized`, on a persister error) records the outcome. (The check for
initialized partitions not assigned yet is made only while the assignment is current.)
Timers: each member's session (share.session.timeout.ms, renewed by each heartbeat).
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.errors import ErrorCode
from wirebroker.group.consumer.messages import TopicLookup
from wirebroker.group.consumer.records import metadata_hash
from wirebroker.group.effects import Effects, Result
from wirebroker.group.share import assignor
from wirebroker.group.share.messages import (
    DescribedShareGroup,
    DescribedShareMember,
    InitializeRequest,
    ShareHeartbeatRequest,
    ShareHeartbeatResult,
)
from wirebroker.group.share.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    InitValue,
    ShareGroup,
    ShareMember,
    StatePartitions,
    TopicKey,
    freeze,
)
from wirebroker.group.share.records import ShareRecords
from wirebroker.group.state import CoordinatorState

SESSION = "sg-session"


class HeartbeatError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def check_heartbeat(req: ShareHeartbeatRequest) -> str | None:
    """Kafka's `throwIfShareGroupHeartbeatRequestIsInvalid`: the INVALID_REQUEST text."""
    if req.member_id == "":
        return "MemberId can't be empty."
    if req.group_id == "":
        return "GroupId can't be empty."
    if req.rack_id == "":
        return "RackId can't be empty."
    if req.member_epoch == 0:
        if not req.subscribed_topic_names:
            return "SubscribedTopicNames must be set in first request."
    elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        return "MemberEpoch is invalid."
    return None


class ShareGroupManager:
    def __init__(self, state: CoordinatorState) -> None:
        self.state = state
        self.records = ShareRecords(state.partition_for)

    @property
    def groups(self) -> dict[str, ShareGroup]:
        return self.state.share_groups

    @property
    def states(self) -> dict[str, StatePartitions]:
        return self.state.share_states

    # == ShareGroupHeartbeat ===============================================================
    def heartbeat(
        self, now_ms: int, req: ShareHeartbeatRequest, topics: TopicLookup
    ) -> Result[ShareHeartbeatResult]:
        """`topics` looks a subscribed topic name up (id, partition count)."""
        fx = Effects()
        bad = check_heartbeat(req)
        if bad is not None:
            return fx.result(ShareHeartbeatResult(ErrorCode.INVALID_REQUEST, bad))
        err = self.state.request_error(req.group_id)
        if err is not ErrorCode.NONE:
            return fx.result(ShareHeartbeatResult(error=err))
        try:
            if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                return fx.result(self._leave(req, fx))
            return fx.result(self._heartbeat(now_ms, req, topics, fx))
        except HeartbeatError as e:
            return fx.result(ShareHeartbeatResult(error=e.error, error_message=e.message))

    def _not_share(self, gid: str) -> bool:
        return gid in self.state.groups or gid in self.state.consumer_groups

    def _group(self, gid: str, *, create: bool) -> ShareGroup:
        group = self.groups.get(gid)
        if group is not None:
            return group
        if self._not_share(gid):
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group.")
        if not create:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {gid} not found.")
        group = ShareGroup(gid, group_epoch=1)  # Kafka 4.4: a new group is at epoch 1
        self.groups[gid] = group
        return group

    def _member(self, group: ShareGroup, req: ShareHeartbeatRequest) -> ShareMember:
        member = group.members.get(req.member_id)
        if member is None:
            if req.member_epoch != 0:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {group.group_id}.",
                )
            return ShareMember(req.member_id)
        epoch = req.member_epoch
        if epoch == 0:
            return member
        if epoch > member.member_epoch:
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a greater member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )
        if epoch < member.member_epoch and epoch != member.previous_member_epoch:
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a smaller member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}), and it does not "
                f"match the previous member epoch ({member.previous_member_epoch}). The member "
                "must abandon all its partitions and rejoin.",
            )
        return member

    def _heartbeat(
        self, now_ms: int, req: ShareHeartbeatRequest, topics: TopicLookup, fx: Effects
    ) -> ShareHeartbeatResult:
        gid = req.group_id
        group = self._group(gid, create=req.member_epoch == 0)
        limit = self.state.config.share_max_size
        if len(group.members) >= limit and req.member_id not in group.members:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The share group has reached its maximum capacity of {limit} members.",
            )
        member = self._member(group, req)
        updated = _with_request(member, req)
        known = member.member_id in group.members
        bump = False
        if updated != member or not known:
            group.members[updated.member_id] = updated
            self.records.member(fx, gid, updated)
            bump = updated.subscribed_topic_names != member.subscribed_topic_names
        metadata = group.metadata = _metadata(group, topics)
        if group.assignment_epoch >= group.group_epoch:  # Kafka 4.4 asks only then
            bump = bump or self._initialized_assignment_pending(group, metadata)
        digest = metadata_hash(metadata)
        if bump or digest != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = digest
            self.records.group_epoch(fx, group)
        if group.group_epoch > group.assignment_epoch and _can_assign(
            group.assignment_timestamp_ms, self.state.share_assignment_interval_ms(gid), now_ms
        ):
            self._assign(now_ms, group, metadata, fx)
        target = freeze(group.target.get(updated.member_id, {}))
        reconciled = updated
        if updated.member_epoch != group.assignment_epoch or dict(updated.assigned) != target:
            reconciled = updated.with_(
                member_epoch=group.assignment_epoch,
                previous_member_epoch=updated.member_epoch,
                assigned=target,
            )
            group.members[reconciled.member_id] = reconciled
            self.records.current(fx, gid, reconciled)
        self._schedule(now_ms, gid, reconciled.member_id)
        send = (
            req.member_epoch == 0
            or req.subscribed_topic_names is not None
            or reconciled.assigned != member.assigned
        )
        return ShareHeartbeatResult(
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.state.share_heartbeat_interval_ms(gid),
            assignment=dict(reconciled.assigned) if send else None,
            initialize=self._maybe_initialize(now_ms, group, metadata, fx),
        )

    def _initialized_assignment_pending(
        self, group: ShareGroup, metadata: dict[str, tuple[TopicKey, int]]
    ) -> bool:
        """Kafka's `initializedAssignmentPending`: a subscribed topic's initialized
        partitions differ from what the target assignment holds of it. A topic is the one
        its name has now (`metadata`): the bookkeeping of a topic deleted and re-created
        under its name while this coordinator did not hear of it never counts."""
        info = self.states.get(group.group_id)
        if not group.members or info is None or not info.initialized:
            return False
        assigned: dict[TopicKey, set[int]] = {}
        for target in group.target.values():
            for t, ps in target.items():
                assigned.setdefault(t, set()).update(ps)
        return any(
            v.name in metadata and metadata[v.name][0] == t and assigned.get(t) != set(v.partitions)
            for t, v in info.initialized.items()
        )

    def _assign(
        self, now_ms: int, group: ShareGroup, metadata: dict[str, tuple[TopicKey, int]], fx: Effects
    ) -> None:
        info = self.states.get(group.group_id)
        initialized = info.initialized_partitions() if info is not None else {}
        subscriptions = {
            mid: frozenset(metadata[n][0] for n in m.subscribed_topic_names if n in metadata)
            for mid, m in group.members.items()
        }
        result = assignor.assign(subscriptions, initialized, group.target)
        before = group.target
        group.target = {mid: freeze(result.get(mid, {})) for mid in group.members}
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = now_ms
        changed = sorted(m for m, a in group.target.items() if before.get(m) != a)
        self.records.target(fx, group, changed)

    # == share state initialization ========================================================
    def _maybe_initialize(
        self,
        now_ms: int,
        group: ShareGroup,
        metadata: dict[str, tuple[TopicKey, int]],
        fx: Effects,
    ) -> InitializeRequest | None:
        """Kafka's `maybeCreateInitializeShareGroupStateRequest`: the subscribed partitions
        neither initialized nor initializing (for less than the retry interval) are
        recorded as initializing and returned."""
        info = self.states.get(group.group_id) or StatePartitions()
        retry_ms = self.state.config.share_initialize_retry_interval_ms
        done: dict[TopicKey, set[int]] = {t: set(v.partitions) for t, v in info.initialized.items()}
        for t, v in info.initializing.items():
            if v.timestamp_ms >= 0 and now_ms - v.timestamp_ms < retry_ms:
                done.setdefault(t, set()).update(v.partitions)
        change: dict[TopicKey, InitValue] = {}
        for name, (topic_id, count) in sorted(metadata.items()):
            missing = frozenset(range(count)) - done.get(topic_id, set())
            if missing:
                change[topic_id] = InitValue(name, missing, now_ms)
        if not change:
            return None
        initializing = dict(info.initializing)
        for t, v in change.items():
            old = initializing.get(t)
            initializing[t] = InitValue(
                v.name, v.partitions | (old.partitions if old else frozenset()), now_ms
            )
        updated = StatePartitions(
            initializing,
            dict(info.initialized),
            {t: n for t, n in info.deleting.items() if t not in change},
        )
        self.states[group.group_id] = updated
        self.records.state_partitions(fx, group.group_id, updated)
        return InitializeRequest(group.group_id, group.group_epoch, change)

    def initialized(self, now_ms: int, request: InitializeRequest) -> Result[None]:
        """The persister initialized `request`'s partitions: they become assignable (the
        next heartbeat moves the group epoch and assigns them)."""
        fx = Effects()
        info = self.states.get(request.group_id)
        if request.group_id not in self.groups or info is None:
            return fx.result()
        initialized = dict(info.initialized)
        initializing = dict(info.initializing)
        for t, v in request.topics.items():
            old = initialized.get(t)
            parts = v.partitions | (old.partitions if old else frozenset())
            initialized[t] = InitValue(v.name, parts, now_ms)
            if t in initializing:
                left = initializing[t].partitions - v.partitions
                if left:
                    initializing[t] = InitValue(
                        initializing[t].name, left, initializing[t].timestamp_ms
                    )
                else:
                    del initializing[t]
        updated = StatePartitions(initializing, initialized, dict(info.deleting))
        self.states[request.group_id] = updated
        self.records.state_partitions(fx, request.group_id, updated)
        return fx.result()

    def uninitialized(self, request: InitializeRequest) -> Result[None]:
        """The persister failed: `request`'s partitions are no longer initializing."""
        fx = Effects()
        info = self.states.get(request.group_id)
        if info is None or not info.initializing:
            return fx.result()
        initializing = {}
        for t, v in info.initializing.items():
            left = v.partitions - (
                request.topics[t].partitions if t in request.topics else frozenset()
            )
            if left:
                initializing[t] = InitValue(v.name, left, v.timestamp_ms)
        updated = StatePartitions(initializing, dict(info.initialized), dict(info.deleting))
        self.states[request.group_id] = updated
        self.records.state_partitions(fx, request.group_id, updated)
        return fx.result()

    def share_partitions(self, group_id: str) -> dict[TopicKey, frozenset[int]]:
        """The partitions whose share state exists or is being made (initialized or
        initializing): what deleting the group must delete."""
        info = self.states.get(group_id)
        out: dict[TopicKey, frozenset[int]] = {}
        if info is not None:
            for values in (info.initialized, info.initializing):
                for t, v in values.items():
                    out[t] = out.get(t, frozenset()) | v.partitions
        return out

    def begin_deletion(self, group_id: str) -> Result[dict[TopicKey, frozenset[int]]]:
        """Kafka's `shareGroupBuildPartitionDeleteRequest`: the group's initialized and
        initializing topics are recorded as deleting; the answer is their partitions, whose
        share states the runtime then deletes through the persister."""
        fx = Effects()
        partitions = self.share_partitions(group_id)
        info = self.states.get(group_id)
        if info is None or not partitions:
            return fx.result(partitions)
        deleting = dict(info.deleting)
        for values in (info.initialized, info.initializing):
            deleting.update((t, v.name) for t, v in values.items())
        updated = StatePartitions(deleting=deleting)
        self.states[group_id] = updated
        self.records.state_partitions(fx, group_id, updated)
        return fx.result(partitions)

    def offsets_deleted(self, group_id: str, topic_ids: set[TopicKey]) -> Result[None]:
        """DeleteShareGroupOffsets deleted these topics' share states: they are neither
        initialized nor initializing any more (a later subscription initializes them anew)."""
        fx = Effects()
        info = self.states.get(group_id)
        if info is None:
            return fx.result()
        updated = StatePartitions(
            {t: v for t, v in info.initializing.items() if t not in topic_ids},
            {t: v for t, v in info.initialized.items() if t not in topic_ids},
            dict(info.deleting),
        )
        self.states[group_id] = updated
        self.records.state_partitions(fx, group_id, updated)
        return fx.result()

    def topics_deleted(self, topic_ids: set[TopicKey]) -> Result[None]:
        """Kafka's `maybeCleanupShareGroupState`: deleted topics leave the share-state
        bookkeeping (initializing, initialized, deleting) of every share group held here; a
        new record for each group that had one. The share coordinator deletes their share
        states itself; the groups' assignments drop them at the members' next heartbeats (the
        topics are gone from the metadata)."""
        fx = Effects()
        for group_id, info in sorted(self.states.items()):
            updated = StatePartitions(
                {t: v for t, v in info.initializing.items() if t not in topic_ids},
                {t: v for t, v in info.initialized.items() if t not in topic_ids},
                {t: n for t, n in info.deleting.items() if t not in topic_ids},
            )
            if updated != info:
                self.states[group_id] = updated
                self.records.state_partitions(fx, group_id, updated)
        return fx.result()

    # == leaving, fencing, deleting ========================================================
    def _leave(self, req: ShareHeartbeatRequest, fx: Effects) -> ShareHeartbeatResult:
        gid = req.group_id
        group = self.groups.get(gid)
        if group is None:
            text = f"Group {gid} is not a share group." if self._not_share(gid) else None
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, text or f"Group {gid} not found.")
        if req.member_id not in group.members:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {gid}.",
            )
        self.remove_member(group, req.member_id, fx)
        return ShareHeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch)

    def remove_member(self, group: ShareGroup, member_id: str, fx: Effects) -> None:
        """Kafka's `shareGroupFenceMember`: tombstones, then the group epoch moves (the others
        get their new target at their next heartbeat; the last member's leaving moves the
        assignment epoch too)."""
        gid = group.group_id
        del group.members[member_id]
        group.target.pop(member_id, None)
        self.state.timers.cancel((SESSION, gid, member_id))
        self.records.member_removed(fx, gid, member_id)
        names = group.subscribed_topic_names()
        group.metadata = {n: v for n, v in group.metadata.items() if n in names}
        group.metadata_hash = metadata_hash(group.metadata)
        group.group_epoch += 1
        self.records.group_epoch(fx, group)
        if not group.members:  # Kafka 4.4: the last one out brings the assignment epoch along
            group.assignment_epoch = group.group_epoch
            group.assignment_timestamp_ms = 0
            self.records.target(fx, group, ())

    def delete_group(self, group_id: str, fx: Effects) -> ErrorCode:
        """DeleteGroups of a share group: refused while it has members; else its records'
        tombstones (the runtime deleted its share state first)."""
        group = self.groups[group_id]
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        self.records.group_removed(fx, group)
        del self.groups[group_id]
        self.states.pop(group_id, None)
        self.state.cancel_group_timers(group_id)
        return ErrorCode.NONE

    def _schedule(self, now_ms: int, gid: str, mid: str) -> None:
        timeout = self.state.share_session_timeout_ms(gid)

        def expire(now_ms: int, fx: Effects) -> None:
            del now_ms
            group = self.groups.get(gid)
            if group is not None and mid in group.members:
                self.remove_member(group, mid, fx)

        self.state.timers.schedule((SESSION, gid, mid), now_ms + timeout, expire)

    def on_loaded(self, group: ShareGroup, now_ms: int) -> None:
        """A group just loaded: each member's session starts now (Kafka's onLoaded)."""
        for mid in group.members:
            self._schedule(now_ms, group.group_id, mid)

    # == ShareGroupDescribe ================================================================
    def describe(self, group_ids: Sequence[str]) -> list[DescribedShareGroup]:
        return [self._describe(gid) for gid in group_ids]

    def _describe(self, gid: str) -> DescribedShareGroup:
        err = self.state.request_error(gid)
        if err is not ErrorCode.NONE:
            return DescribedShareGroup(gid, error=err)
        group = self.groups.get(gid)
        if group is None:
            text = f"Group {gid} is not a share group." if self._not_share(gid) else None
            return DescribedShareGroup(
                gid, ErrorCode.GROUP_ID_NOT_FOUND, text or f"Group {gid} not found."
            )
        return DescribedShareGroup(
            gid,
            state=str(group.group_state()),
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=assignor.NAME,
            members=tuple(
                DescribedShareMember(
                    m.member_id,
                    m.rack_id,
                    m.member_epoch,
                    m.client_id,
                    m.client_host,
                    m.subscribed_topic_names,
                    m.assigned,
                )
                for m in group.members.values()
            ),
        )


def _with_request(member: ShareMember, req: ShareHeartbeatRequest) -> ShareMember:
    """`member` with what this request sets (rack and subscription when sent; the client id
    and host of every request, as Kafka)."""
    changes: dict[str, object] = {"client_id": req.client_id, "client_host": req.client_host}
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
    return member.with_(**changes)


def _metadata(group: ShareGroup, topics: TopicLookup) -> dict[str, tuple[TopicKey, int]]:
    out = {}
    for name in sorted(group.subscribed_topic_names()):
        found = topics(name)
        if found is not None:
            out[name] = found
    return out


def _can_assign(last_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Kafka 4.4's `canComputeNextTargetAssignment`."""
    return last_ms == 0 or interval_ms == 0 or now_ms >= last_ms + interval_ms
