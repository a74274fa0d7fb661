"""Classic-protocol members of a KIP-848 consumer group (Kafka 4.4's
classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup).

After an online upgrade (migration.py), or when a classic consumer joins a non-empty
consumer group, its JoinGroup / SyncGroup / Heartbeat / LeaveGroup are served from the
consumer group's state; the member is a `ConsumerMember` with `classic` set (its session
timeout and JoinGroup protocols, persisted in the member metadata record's tag 0).

    JoinGroup   policy disabled: INCONSISTENT_GROUP_PROTOCOL. Else, in Kafka's order: a new
                member id for an unknown member, GROUP_MAX_SIZE_REACHED, protocol type not
                "consumer" or no protocol in common with the other classic members:
                INCONSISTENT_GROUP_PROTOCOL; a dynamic member of v4+ without id:
                MEMBER_ID_REQUIRED. Then the member is created or updated from its first
                protocol's subscription (topics, rack) exactly as a heartbeat would (group
                epoch, target assignment) and reconciled with the partitions its
                subscription says it owns. Answer at once: generation = its member epoch,
                protocol "consumer" / its first protocol's name, no leader (every classic
                member is a follower: the assignment is the server's). Its session restarts
                (its own session timeout) and it must send SyncGroup within its rebalance
                timeout, else it is fenced.
    SyncGroup   the member (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, not classic:
                UNKNOWN_MEMBER_ID), its generation (ILLEGAL_GENERATION), the protocol
                (INCONSISTENT_GROUP_PROTOCOL), REBALANCE_IN_PROGRESS when the group epoch is
                past the member's and it is not revoking; else its current assignment,
                encoded in its subscription's version.
    Heartbeat   the same checks; REBALANCE_IN_PROGRESS when it must rejoin: the group epoch
                is past its epoch, it has partitions to revoke, or partitions it waits for
                are free now (it is then fenced unless it rejoins within its rebalance
                timeout); else NONE. The session restarts either way.
    LeaveGroup  each identity checked (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); the valid
                ones are fenced together, which may downgrade the group (migration.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

from protocol.consumer_group_records import ClassicMemberMetadata
from protocol.errors import ErrorCode
from wirebroker.group.classic import CONSUMER_PROTOCOL_TYPE
from wirebroker.group.consumer.messages import HeartbeatError
from wirebroker.group.consumer.migration import (
    MalformedProtocol,
    MigrationPolicy,
    decode_subscription,
    encode_assignment,
    subscription_version,
    to_ids,
    to_names,
)
from wirebroker.group.consumer.model import ConsumerGroup, ConsumerMember, MemberState
from wirebroker.group.effects import Effects
from wirebroker.group.messages import (
    HeartbeatRequest,
    JoinRequest,
    JoinResult,
    LeaveMember,
    LeaveResult,
    MemberLeft,
    SyncRequest,
    SyncResult,
)

if TYPE_CHECKING:
    from wirebroker.group.consumer.manager import ConsumerGroupManager

JOIN = "cg-join"
SYNC = "cg-sync"


class ClassicMembers:
    def __init__(self, manager: ConsumerGroupManager) -> None:
        self.manager = manager
        self.state = manager.state

    # == JoinGroup =========================================================================
    def join(
        self, key: Hashable, now_ms: int, group: ConsumerGroup, req: JoinRequest, fx: Effects
    ) -> None:
        if MigrationPolicy.parse(self.state.config.consumer_migration_policy) is (
            MigrationPolicy.DISABLED
        ):
            fx.complete(key, JoinResult(error=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        mid = req.member_id or self.manager.new_member_id()
        try:
            result = self._join(now_ms, group, req, mid, fx)
        except HeartbeatError as e:
            result = JoinResult(error=e.error, member_id=req.member_id)
        fx.complete(key, result)

    def _join(
        self, now_ms: int, group: ConsumerGroup, req: JoinRequest, mid: str, fx: Effects
    ) -> JoinResult:
        limit = self.state.config.consumer_max_size
        if len(group.members) >= limit and mid not in group.members:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not _supports(group, mid, req):
            raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if req.member_id == "" and req.group_instance_id is None and req.require_known_member_id:
            return JoinResult(error=ErrorCode.MEMBER_ID_REQUIRED, member_id=mid)
        replaced = _replaced(group, req)
        downgrade = replaced is not None and self.manager.migration.can_downgrade_replacing(
            group, replaced
        )
        member = self._joining_member(group, req, mid, fx)
        try:
            subscription = decode_subscription(req.protocols[0][1])
        except MalformedProtocol:
            raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from None
        changes: dict[str, object] = {
            "subscribed_topic_names": tuple(sorted(set(subscription.topics))),
            "client_id": req.client_id,
            "client_host": req.client_host,
            "classic": ClassicMemberMetadata(req.session_timeout_ms, tuple(req.protocols)),
        }
        if req.group_instance_id is not None:
            changes["instance_id"] = req.group_instance_id
        if subscription.rack_id is not None:
            changes["rack_id"] = subscription.rack_id
        if req.rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
        topics = self.state.topics
        owned = to_ids(subscription.owned, topics.lookup)
        assignment_epoch = group.assignment_epoch
        reconciled = self.manager.update_member(
            now_ms, group, member, member.with_(**changes), owned, (topics.lookup, topics.names), fx
        )
        answer = JoinResult(
            member_id=mid,
            generation_id=reconciled.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=req.protocols[0][0],
        )
        # Kafka 4.4: the classic group rebalances when the join moved the group epoch past
        # the assignment ("Downgrade group g from consumer to classic with stale assignment.")
        stale = group.group_epoch > assignment_epoch
        migration = self.manager.migration
        if downgrade and migration.downgrade(group, set(), fx, now_ms, rebalance=stale):
            return answer  # a classic group now (Kafka's convertToClassicGroup at a join)
        gid = group.group_id
        timers = self.state.timers
        timers.cancel((JOIN, gid, mid))
        timers.schedule(
            (SYNC, gid, mid),
            now_ms + reconciled.rebalance_timeout_ms,
            self._fence_action(gid, mid),
        )
        return answer

    def _joining_member(
        self, group: ConsumerGroup, req: JoinRequest, mid: str, fx: Effects
    ) -> ConsumerMember:
        iid = req.group_instance_id
        if iid is None:  # created when unknown (the id MEMBER_ID_REQUIRED gave, or any)
            found = group.members.get(mid)
            return ConsumerMember(mid) if found is None else found
        holder = group.static_members.get(iid)
        if req.member_id != "":
            if holder is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
            if holder != mid:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID)
            return group.members[mid]
        if holder is None:
            return ConsumerMember(mid)
        # a restarted static member takes its instance's place (epoch and assignment)
        old = group.members[holder]
        target = group.target.get(holder, {})
        self.manager.drop_member(group, holder, fx)
        group.target[mid] = target
        self.manager.records.target_member(fx, group, mid)
        return old.with_(member_id=mid)

    # == SyncGroup / Heartbeat =============================================================
    def sync(
        self, key: Hashable, now_ms: int, group: ConsumerGroup, req: SyncRequest, fx: Effects
    ) -> None:
        try:
            member = self._checked(group, req)
            first = _first_protocol(member)
            if (req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                req.protocol_name is not None and req.protocol_name != first[0]
            ):
                raise HeartbeatError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if (
                group.group_epoch > member.member_epoch
                and member.state is not MemberState.UNREVOKED_PARTITIONS
            ):
                raise HeartbeatError(ErrorCode.REBALANCE_IN_PROGRESS)
        except HeartbeatError as e:
            fx.complete(key, SyncResult(error=e.error))
            return
        gid = group.group_id
        self.state.timers.cancel((SYNC, gid, member.member_id))
        self.manager.start_session(now_ms, group, member)
        try:
            version = subscription_version(first[1])
        except MalformedProtocol:
            version = 0
        names = to_names(member.assigned, self._name_of(group))
        fx.complete(
            key,
            SyncResult(
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocol_name=first[0],
                assignment=encode_assignment(names, version),
            ),
        )

    def heartbeat(self, now_ms: int, group: ConsumerGroup, req: HeartbeatRequest) -> ErrorCode:
        try:
            member = self._checked(group, req)
        except HeartbeatError as e:
            return e.error
        gid, mid = group.group_id, member.member_id
        self.manager.start_session(now_ms, group, member)
        if (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased(member)
            )
        ):
            key = (JOIN, gid, mid)
            if key not in self.state.timers:
                self.state.timers.schedule(
                    key, now_ms + member.rebalance_timeout_ms, self._fence_action(gid, mid)
                )
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _checked(self, group: ConsumerGroup, req: HeartbeatRequest) -> ConsumerMember:
        member = _validated(group, req.member_id, req.group_instance_id)
        if not member.uses_classic:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
        if req.generation_id != member.member_epoch:
            raise HeartbeatError(ErrorCode.ILLEGAL_GENERATION)
        return member

    # == LeaveGroup ========================================================================
    def leave(
        self, now_ms: int, group: ConsumerGroup, members: Sequence[LeaveMember], fx: Effects
    ) -> LeaveResult:
        answers: list[MemberLeft] = []
        leaving: set[str] = set()
        for ident in members:
            try:
                if ident.member_id == "":
                    holder = group.static_members.get(ident.group_instance_id or "")
                    if holder is None:
                        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
                    leaving.add(holder)
                else:
                    leaving.add(
                        _validated(group, ident.member_id, ident.group_instance_id).member_id
                    )
                answers.append(MemberLeft(ident, ErrorCode.NONE))
            except HeartbeatError as e:
                answers.append(MemberLeft(ident, e.error))
        if leaving:
            self.manager.fence(group, leaving, fx, now_ms)
        return LeaveResult(members=tuple(answers))

    # == helpers ===========================================================================
    def _fence_action(self, gid: str, mid: str) -> Callable[[int, Effects], None]:
        """A classic member that did not rejoin (JOIN) or sync (SYNC) in time is fenced."""

        def fire(now_ms: int, fx: Effects) -> None:
            group = self.state.consumer_groups.get(gid)
            member = group.members.get(mid) if group is not None else None
            if group is not None and member is not None and member.uses_classic:
                self.manager.fence(group, {mid}, fx, now_ms)

        return fire

    def _name_of(self, group: ConsumerGroup) -> Callable[..., str | None]:
        known = {tid: name for name, (tid, _) in group.metadata.items()}
        fallback = self.state.topics.name_of
        return lambda tid: known.get(tid) or fallback(tid)


def _validated(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """The member a classic request names: by instance id when it has one (UNKNOWN_MEMBER_ID,
    FENCED_INSTANCE_ID for another member id), else by member id (UNKNOWN_MEMBER_ID)."""
    if instance_id is not None:
        holder = group.static_members.get(instance_id)
        if holder is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
        if holder != member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID)
    member = group.members.get(member_id)
    if member is None:
        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID)
    return member


def _first_protocol(member: ConsumerMember) -> tuple[str, bytes]:
    assert member.classic is not None
    protocols = member.classic.supported_protocols
    return protocols[0] if protocols else ("", b"")


def _supports(group: ConsumerGroup, mid: str, req: JoinRequest) -> bool:
    """Protocol type "consumer" and a protocol name every other classic member lists
    (Kafka's ConsumerGroup.supportsClassicProtocols)."""
    if req.protocol_type != CONSUMER_PROTOCOL_TYPE or not req.protocols:
        return False
    names = {n for n, _ in req.protocols}
    for other_id, other in group.members.items():
        if other_id != mid and other.classic is not None:
            names &= {n for n, _ in other.classic.supported_protocols}
    return bool(names)


def _replaced(group: ConsumerGroup, req: JoinRequest) -> str | None:
    """The member a static member joining without a member id replaces (None: none)."""
    if req.member_id != "" or req.group_instance_id is None:
        return None
    return group.static_members.get(req.group_instance_id)
