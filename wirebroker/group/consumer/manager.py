"""ConsumerGroupHeartbeat and ConsumerGroupDescribe over the consumer groups of a
`CoordinatorState` (Kafka's GroupMetadataManager, its consumer-group part). Pure: every
call takes `now_ms` and returns a `Result` whose records the runtime appends first.

A heartbeat, in Kafka's order: request checks (validation.py), the coordinator's own checks,
then by member epoch:
    0    join (or rejoin): the member is created (a static member taking over its instance
         id's departed member keeps that member's epoch and assignment)
    >0   heartbeat: the member must exist (UNKNOWN_MEMBER_ID) at this epoch, or at its previous
         one owning a subset of its partitions (a lost response), else FENCED_MEMBER_EPOCH
    -1   leave: the member is removed, the group epoch moves
    -2   static leave: the member stays (epoch -2, its assignment kept) until its instance id
         rejoins or its session times out; the group epoch does not move
The group epoch moves as Kafka 4.4 moves it: a new group goes to 1, then one more when a
member's subscription (names or regex; a new member's non-empty one) changes or the
subscribed topics' metadata does (looked up at each heartbeat, regexes matched again), and
one more when a member leaves or is fenced. When the group epoch is above the assignment
epoch, a new target assignment is computed at once by the server assignor (the one the most
members name, else the first configured) and the member reconciles toward its target
(reconciliation.py). Timers: each member's session (group.consumer.session.timeout.ms,
renewed by each heartbeat) and, while it holds partitions to revoke, its rebalance timeout;
either fences it (removed, the group epoch moves, the others' target is computed).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable, Sequence

from protocol.errors import ErrorCode
from wirebroker.group.assignors import Assignor, AssignorError, MemberSpec, TopicSpec
from wirebroker.group.consumer.classic_members import ClassicMembers
from wirebroker.group.consumer.messages import (
    ConsumerHeartbeatRequest,
    ConsumerHeartbeatResult,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    HeartbeatError,
    TopicLookup,
    TopicNames,
)
from wirebroker.group.consumer.migration import Migration
from wirebroker.group.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    freeze,
)
from wirebroker.group.consumer.reconciliation import reconcile
from wirebroker.group.consumer.records import ConsumerRecords, metadata_hash
from wirebroker.group.consumer.validation import check_heartbeat
from wirebroker.group.effects import Effects, Result
from wirebroker.group.rebalance import Rebalancer
from wirebroker.group.regex import compile_subscription
from wirebroker.group.state import CoordinatorState

SESSION = "cg-session"
REVOKE = "cg-revoke"
REGEX = "cg-regex"


class ConsumerGroupManager:
    def __init__(
        self,
        state: CoordinatorState,
        assignors: Sequence[Assignor],
        new_member_id: Callable[[], str],
        rebalancer: Rebalancer | None = None,
    ) -> None:
        self.state = state
        self.assignors = {a.name: a for a in assignors}
        self.default_assignor = assignors[0]
        self.new_member_id = new_member_id
        self.records = ConsumerRecords(state.partition_for)
        self.migration = Migration(
            state, self.records, rebalancer or Rebalancer(state), self.start_session
        )
        self.classic = ClassicMembers(self)

    @property
    def groups(self) -> dict[str, ConsumerGroup]:
        return self.state.consumer_groups

    # == ConsumerGroupHeartbeat ============================================================
    def heartbeat(
        self,
        now_ms: int,
        req: ConsumerHeartbeatRequest,
        topics: TopicLookup,
        topic_names: TopicNames = tuple,
    ) -> Result[ConsumerHeartbeatResult]:
        """`topics` looks a subscribed name up; `topic_names` lists every topic (regular
        expression subscriptions are matched against them at each heartbeat)."""
        fx = Effects()
        bad = check_heartbeat(req, list(self.assignors))
        if bad is not None:
            return fx.result(ConsumerHeartbeatResult(error=bad[0], error_message=bad[1]))
        err = self.state.request_error(req.group_id)
        if err is not ErrorCode.NONE:
            return fx.result(ConsumerHeartbeatResult(error=err))
        try:
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return fx.result(self._leave(now_ms, req, fx))
            return fx.result(self._heartbeat(now_ms, req, (topics, topic_names), fx))
        except HeartbeatError as e:
            return fx.result(ConsumerHeartbeatResult(error=e.error, error_message=e.message))

    def _group(
        self, now_ms: int, req: ConsumerHeartbeatRequest, topics: TopicLookup, fx: Effects
    ) -> ConsumerGroup:
        gid = req.group_id
        classic = self.state.groups.get(gid)
        if gid in self.state.share_groups:
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group."
            )
        if classic is not None:
            if req.member_epoch != 0:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group."
                )
            if classic.members:  # online upgrade (migration.py)
                return self.migration.upgrade(classic, topics, fx, now_ms)
            # an empty classic group becomes a consumer group (its offsets stay)
            del self.state.groups[gid]
            self.state.cancel_group_timers(gid)
            self.records.classic_group_removed(fx, gid)
        group = self.groups.get(gid)
        if group is None:
            if req.member_epoch != 0:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found."
                )
            group = ConsumerGroup(gid)
            self.groups[gid] = group
        return group

    def _heartbeat(
        self,
        now_ms: int,
        req: ConsumerHeartbeatRequest,
        topics: tuple[TopicLookup, TopicNames],
        fx: Effects,
    ) -> ConsumerHeartbeatResult:
        group = self._group(now_ms, req, topics[0], fx)
        limit = self.state.config.consumer_max_size
        if len(group.members) >= limit and req.member_id not in group.members:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {limit} members.",
            )
        member = self._member(group, req, fx)
        updated = _with_request(member, req)
        reconciled = self.update_member(now_ms, group, member, updated, req.owned, topics, fx)
        full = (
            req.rebalance_timeout_ms != -1
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
            and req.owned is not None
        )
        send = req.member_epoch == 0 or full or reconciled.assigned != member.assigned
        return ConsumerHeartbeatResult(
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.state.consumer_heartbeat_interval_ms(group.group_id),
            assignment=dict(reconciled.assigned) if send else None,
        )

    def update_member(
        self,
        now_ms: int,
        group: ConsumerGroup,
        member: ConsumerMember,
        updated: ConsumerMember,
        owned: Assignment | None,
        topics: tuple[TopicLookup, TopicNames],
        fx: Effects,
    ) -> ConsumerMember:
        """Kafka's steps 1-3 of a heartbeat (or of a classic member's JoinGroup): store
        `updated` (was `member`), move the group epoch, compute the target, reconcile the
        member toward it (`owned`: what it says it owns) and restart its timers."""
        known = updated.member_id in group.members
        if updated != member or not known:
            group.put_member(updated)
            self.records.member(fx, group, updated)
        # Kafka 4.4: a new group moves to epoch 1, then one more for a subscription that
        # changed (a new member's non-empty one) or subscribed topics' metadata that did
        epoch = group.group_epoch
        if epoch == 0:
            group.group_epoch = 1
        for pattern in _resolve_regexes(group, topics[1]):
            self.records.regex(fx, group, pattern)
        if _unresolved(group):
            self._resolve_later(now_ms, group, topics)
        group.metadata = _metadata(group, topics[0])
        digest = metadata_hash(group.metadata)
        if _subscription_changed(member, updated) or digest != group.metadata_hash:
            group.metadata_hash = digest
            group.group_epoch += 1
        if group.group_epoch != epoch:
            self.records.group_epoch(fx, group)
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, fx)
        reconciled = reconcile(
            updated,
            group.target.get(updated.member_id, {}),
            group.assignment_epoch,
            owned,
            group.owner_of,
        )
        if reconciled != updated or not known:
            group.put_member(reconciled)
            self.records.current(fx, group, reconciled)
        self._schedule(now_ms, group, updated, reconciled)
        return reconciled

    def _member(
        self, group: ConsumerGroup, req: ConsumerHeartbeatRequest, fx: Effects
    ) -> ConsumerMember:
        """The member the request is from (new, taken over or existing), its epoch checked."""
        mid = req.member_id or self.new_member_id()
        if req.member_epoch == 0:
            if req.instance_id is not None:
                taken = self._take_over(group, req, mid, fx)
                if taken is not None:
                    return taken
            existing = group.members.get(mid)
            return existing if existing is not None else ConsumerMember(mid)
        member = group.members.get(mid)
        if member is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {mid} is not a member of group {group.group_id}.",
            )
        self._check_instance(group, member, req)
        if req.member_epoch > member.member_epoch:
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({req.member_epoch}) than "
                f"the one known by the group coordinator ({member.member_epoch}). The member "
                "must abandon all its partitions and rejoin.",
            )
        if req.member_epoch < member.member_epoch and (
            req.member_epoch != member.previous_member_epoch
            or not _subset(req.owned, member.assigned)
        ):
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({req.member_epoch}) than "
                f"the one known by the group coordinator ({member.member_epoch}). The member "
                "must abandon all its partitions and rejoin.",
            )
        return member

    def _check_instance(
        self, group: ConsumerGroup, member: ConsumerMember, req: ConsumerHeartbeatRequest
    ) -> None:
        if req.instance_id is None:
            return
        holder = group.static_members.get(req.instance_id)
        if holder != member.member_id:
            raise HeartbeatError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member.member_id} with instance id {req.instance_id} "
                f"was fenced by member {holder}.",
            )

    def _take_over(
        self, group: ConsumerGroup, req: ConsumerHeartbeatRequest, mid: str, fx: Effects
    ) -> ConsumerMember | None:
        """A static member joining under its instance id: a departed (epoch -2) holder is
        replaced, keeping its epoch and assignment; a live one is UNRELEASED_INSTANCE_ID."""
        assert req.instance_id is not None
        holder_id = group.static_members.get(req.instance_id)
        if holder_id is None or holder_id == mid:
            return None
        holder = group.members[holder_id]
        if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise HeartbeatError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {mid} with instance id {req.instance_id} cannot join the group "
                f"because the instance id is owned by {holder_id} member.",
            )
        target = group.target.get(holder_id, {})
        self.drop_member(group, holder_id, fx)
        group.target[mid] = target
        self.records.target_member(fx, group, mid)
        return holder.with_(member_id=mid, member_epoch=holder.previous_member_epoch)

    # == leaving and fencing ===============================================================
    def _leave(
        self, now_ms: int, req: ConsumerHeartbeatRequest, fx: Effects
    ) -> ConsumerHeartbeatResult:
        gid = req.group_id
        group = self.groups.get(gid)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            assert req.instance_id is not None
            holder = group.static_members.get(req.instance_id)
            if holder is None:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Instance id {req.instance_id} is unknown.",
                )
            if holder != req.member_id:
                raise HeartbeatError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} "
                    f"was fenced by member {holder}.",
                )
            member = group.members[holder]
            left = member.with_(
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                previous_member_epoch=member.member_epoch,
            )
            group.put_member(left)
            self.records.current(fx, group, left)
        else:
            if req.member_id not in group.members:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {gid}.",
                )
            self.fence(group, {req.member_id}, fx, now_ms)
        return ConsumerHeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch)

    def fence(self, group: ConsumerGroup, member_ids: set[str], fx: Effects, now_ms: int) -> None:
        """Fence or remove members: when only classic members remain the group may become
        a classic group (migration.py); else their partitions are free, the group epoch
        moves and the others' target assignment is computed at once (as Kafka 4.4: the
        assignment epoch follows, also when the group is left empty)."""
        if self.migration.can_downgrade(group, member_ids) and self.migration.downgrade(
            group, member_ids, fx, now_ms
        ):
            return
        for member_id in sorted(member_ids):
            self.drop_member(group, member_id, fx)
        used = {m.subscribed_topic_regex for m in group.members.values()}
        for pattern in [p for p in group.resolved if p not in used]:
            del group.resolved[pattern]
            self.records.regex(fx, group, pattern)
        names = group.subscribed_topic_names()
        group.metadata = {n: v for n, v in group.metadata.items() if n in names}
        group.metadata_hash = metadata_hash(group.metadata)
        self._bump(group, fx)
        with contextlib.suppress(HeartbeatError):  # the assignor failed: the next heartbeat
            self._assign(group, fx)

    def _resolve_later(
        self, now_ms: int, group: ConsumerGroup, topics: tuple[TopicLookup, TopicNames]
    ) -> None:
        """A regex new to the group is resolved after the heartbeat that brought it, as
        Kafka resolves it apart from the heartbeat: that heartbeat's assignment has the
        member's named topics only, the matched ones come with a new group epoch (at the
        member's next heartbeat)."""
        gid = group.group_id

        def resolve(now_ms: int, fx: Effects) -> None:
            group = self.groups.get(gid)
            if group is None:
                return
            changed = _resolve_regexes(group, topics[1], defer_new=False)
            if not changed:
                return
            for pattern in changed:
                self.records.regex(fx, group, pattern)
            group.metadata = _metadata(group, topics[0])
            group.metadata_hash = metadata_hash(group.metadata)
            self._bump(group, fx)
            with contextlib.suppress(HeartbeatError):  # the assignor failed: the next heartbeat
                self._assign(group, fx)

        self.state.timers.schedule((REGEX, gid), now_ms, resolve)

    def drop_member(self, group: ConsumerGroup, member_id: str, fx: Effects) -> None:
        group.remove_member(member_id)
        self.state.timers.cancel((SESSION, group.group_id, member_id))
        self.state.timers.cancel((REVOKE, group.group_id, member_id))
        self.records.member_removed(fx, group, member_id)

    def _schedule(
        self, now_ms: int, group: ConsumerGroup, before: ConsumerMember, after: ConsumerMember
    ) -> None:
        gid, mid = group.group_id, after.member_id
        timers = self.state.timers
        self.start_session(now_ms, group, after)
        key = (REVOKE, gid, mid)
        if after.state is not MemberState.UNREVOKED_PARTITIONS:
            timers.cancel(key)
        elif (
            before.state is not MemberState.UNREVOKED_PARTITIONS
            or before.member_epoch != after.member_epoch
            or key not in timers
        ):
            epoch = after.member_epoch
            timers.schedule(
                key, now_ms + after.rebalance_timeout_ms, self._expire_action(gid, mid, epoch)
            )

    def _expire_action(
        self, gid: str, mid: str, revoking_epoch: int | None = None
    ) -> Callable[[int, Effects], None]:
        def expire(now_ms: int, fx: Effects) -> None:
            group = self.groups.get(gid)
            member = group.members.get(mid) if group is not None else None
            if group is None or member is None:
                return
            if revoking_epoch is not None and (
                member.state is not MemberState.UNREVOKED_PARTITIONS
                or member.member_epoch != revoking_epoch
            ):
                return
            self.fence(group, {mid}, fx, now_ms)

        return expire

    def start_session(self, now_ms: int, group: ConsumerGroup, member: ConsumerMember) -> None:
        """The member's session (re)starts now (a classic member's own session timeout)."""
        gid, mid = group.group_id, member.member_id
        timeout = self.state.consumer_session_timeout_ms(gid)
        if member.classic is not None:
            timeout = member.classic.session_timeout_ms
        self.state.timers.schedule(
            (SESSION, gid, mid), now_ms + timeout, self._expire_action(gid, mid)
        )

    def on_loaded(self, group: ConsumerGroup, now_ms: int) -> None:
        """A group just loaded: each member's session starts now (Kafka's onLoaded), and
        a member still revoking gets its rebalance timeout again."""
        for member in group.members.values():
            self._schedule(now_ms, group, ConsumerMember(member.member_id), member)

    # == epochs and the target assignment ==================================================
    def _bump(self, group: ConsumerGroup, fx: Effects) -> None:
        group.group_epoch += 1
        self.records.group_epoch(fx, group)

    def _assignor(self, group: ConsumerGroup) -> Assignor:
        named = collections.Counter(
            m.server_assignor for m in group.members.values() if m.server_assignor
        )
        if not named:
            return self.default_assignor
        return self.assignors[max(sorted(named), key=lambda n: named[n])]

    def _assign(self, group: ConsumerGroup, fx: Effects) -> None:
        topics = {tid: TopicSpec(n) for tid, n in group.metadata.values()}
        members = {
            mid: MemberSpec(
                subscribed=frozenset(
                    group.metadata[n][0] for n in group.member_topics(m) if n in group.metadata
                ),
                rack=m.rack_id,
                instance_id=m.instance_id,
                assigned=group.target.get(mid, {}),
            )
            for mid, m in group.members.items()
        }
        try:
            result = self._assignor(group).assign(members, topics)
        except AssignorError as e:
            raise HeartbeatError(
                ErrorCode.UNKNOWN,
                f"Failed to compute a new target assignment for epoch {group.group_epoch}: {e}",
            ) from e
        before = group.target
        group.target = {mid: freeze(result.get(mid, {})) for mid in members}
        group.assignment_epoch = group.group_epoch
        changed = [m for m, a in group.target.items() if before.get(m) != a]
        self.records.target(fx, group, changed)

    # == ConsumerGroupDescribe =============================================================
    def describe(self, group_ids: Sequence[str]) -> list[DescribedConsumerGroup]:
        return [self._describe(gid) for gid in group_ids]

    def _describe(self, gid: str) -> DescribedConsumerGroup:
        err = self.state.request_error(gid)
        if err is not ErrorCode.NONE:
            return DescribedConsumerGroup(gid, error=err)
        group = self.groups.get(gid)
        if group is None:
            text = f"Group {gid} not found."
            if gid in self.state.groups or gid in self.state.share_groups:
                text = f"Group {gid} is not a consumer group."
            return DescribedConsumerGroup(gid, ErrorCode.GROUP_ID_NOT_FOUND, text)
        return DescribedConsumerGroup(
            gid,
            state=str(group.group_state()),
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=self._assignor(group).name,
            members=tuple(
                DescribedConsumerMember(
                    m.member_id,
                    m.instance_id,
                    m.rack_id,
                    m.member_epoch,
                    m.client_id,
                    m.client_host,
                    m.subscribed_topic_names,
                    m.subscribed_topic_regex,
                    m.assigned,
                    group.target.get(m.member_id, {}),
                    m.uses_classic,
                )
                for m in group.members.values()
            ),
        )


def _with_request(member: ConsumerMember, req: ConsumerHeartbeatRequest) -> ConsumerMember:
    """`member` with what this request sets (a field not sent keeps its value)."""
    changes: dict[str, object] = {}
    if req.instance_id is not None:
        changes["instance_id"] = req.instance_id
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.server_assignor is not None:
        changes["server_assignor"] = req.server_assignor
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
    if req.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex or None
    if req.member_epoch == 0:
        changes["client_id"] = req.client_id
        changes["client_host"] = req.client_host
    return member.with_(**changes) if changes else member


def _subscription_changed(before: ConsumerMember, after: ConsumerMember) -> bool:
    return (
        before.subscribed_topic_names != after.subscribed_topic_names
        or before.subscribed_topic_regex != after.subscribed_topic_regex
    )


def _resolve_regexes(
    group: ConsumerGroup, topic_names: TopicNames, *, defer_new: bool = True
) -> list[str]:
    """Match every subscription regex of the group against the topics (whole names,
    internal topics included, as Kafka 4.4's TopicRegexResolver); the patterns whose
    matches changed (or that no member uses any more). With `defer_new` a pattern the group
    has not resolved yet is left out (`_unresolved`; resolved by a timer, `_resolve_later`)."""
    before = group.resolved
    patterns = {
        p
        for p in (m.subscribed_topic_regex for m in group.members.values())
        if p and (p in before or not defer_new)
    }
    if not patterns:
        group.resolved = {}
    else:
        names = list(topic_names())
        group.resolved = {p: compile_subscription(p).matching(names) for p in sorted(patterns)}
    return sorted(
        p for p in set(before) | set(group.resolved) if before.get(p) != group.resolved.get(p)
    )


def _unresolved(group: ConsumerGroup) -> bool:
    """Whether a member subscribes with a regex the group has not resolved yet."""
    return any(
        m.subscribed_topic_regex and m.subscribed_topic_regex not in group.resolved
        for m in group.members.values()
    )


def _metadata(group: ConsumerGroup, topics: TopicLookup) -> dict[str, tuple]:
    out = {}
    for name in sorted(group.subscribed_topic_names()):
        found = topics(name)
        if found is not None:
            out[name] = found
    return out


def _subset(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return True
    return all(ps <= assigned.get(t, frozenset()) for t, ps in owned.items())
