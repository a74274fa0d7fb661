"""The classic group membership protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Kafka's `GroupMetadataManager` (classic-group request parts). What each request does in
each group state is tabled in `wirebroker.group.classic`; the join phase and the timers are
`wirebroker.group.rebalance`'s. JoinGroup / SyncGroup answers are typed `Completion`s
(possibly delivered by a later call); Heartbeat answers an `ErrorCode`, LeaveGroup a
`LeaveResult`. Wire versions never reach this module: the handlers turn them into flags
(`require_known_member_id`: JoinGroup v4+, `supports_skip_assignment`: v9+).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.group.classic import (
    ClassicGroup,
    ClassicGroupMember,
    GroupState,
    protocol_names,
)
from wirebroker.group.consumer.records import consumer_group_tombstones
from wirebroker.group.effects import Effects, Parked, Result
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
from wirebroker.group.rebalance import Rebalancer, generation_answer, hb_key
from wirebroker.group.records import empty_group_metadata_record, group_metadata_record
from wirebroker.group.state import CoordinatorState

if TYPE_CHECKING:
    from wirebroker.group.consumer.classic_members import ClassicMembers
    from wirebroker.group.consumer.model import ConsumerGroup


class GroupMembership:
    def __init__(
        self, state: CoordinatorState, rebalancer: Rebalancer, member_id_suffix: Callable[[], str]
    ) -> None:
        self.state = state
        self.rebalancer = rebalancer
        self._suffix = member_id_suffix
        #: serves the classic members of non-empty KIP-848 consumer groups (set by the core)
        self.consumer_members: ClassicMembers

    # == JoinGroup =========================================================================
    def join_group(self, key: Hashable, now_ms: int, req: JoinRequest) -> Result[None]:
        """JoinGroup; the answer comes as `Completion(key, JoinResult)`, possibly later."""
        fx = Effects()
        group_id = req.group_id

        def fail(error: ErrorCode, mid: str = req.member_id) -> Result[None]:
            fx.complete(key, JoinResult(error=error, member_id=mid))
            return fx.result()

        # Kafka's order: coordinator inactive, group id, session timeout, then the
        # partition's state (not ours / loading).
        if not self.state.active:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group_id == "":
            return fail(ErrorCode.INVALID_GROUP_ID)
        cfg = self.state.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        err = self.state.coordinator_error(group_id)
        if err is not ErrorCode.NONE:
            return fail(err)
        if group_id in self.state.share_groups:  # Kafka 4.4: a share group takes no
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")  # classic member
        consumer_group = self.state.consumer_groups.get(group_id)
        if consumer_group is not None:
            if consumer_group.members:  # a classic member of a consumer group (KIP-848)
                self.consumer_members.join(key, now_ms, consumer_group, req, fx)
                return fx.result()
            del self.state.consumer_groups[group_id]  # an empty one becomes a classic group
            fx.records.extend(
                consumer_group_tombstones(self.state.partition_for(group_id), consumer_group)
            )
        parked = _Joining(Parked(key), req)
        is_unknown = req.member_id == ""
        group = self.state.groups.get(group_id)
        is_new_group = group is None
        if group is None:
            if not is_unknown:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            group = ClassicGroup(group_id, current_state_timestamp=now_ms)
            self.state.groups[group_id] = group

        if not self._accept_joining_member(group, req.member_id):
            self.rebalancer.remove_member(group, req.member_id, fx)
            fail(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        elif is_unknown:
            self._join_new_member(group, parked, fx, now_ms)
        else:
            self._join_existing_member(group, parked, fx, now_ms)

        if is_new_group and not fx.records:
            # Persist the new group so it survives a restart (Kafka does the same).
            fx.records.append(
                empty_group_metadata_record(self.state.partition_for(group_id), group)
            )
        return fx.result()

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.state.config.max_group_size
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join is not None) or (
                group.num_awaiting_join < max_size
            )
        return member_id in group.members or len(group.members) < max_size

    def _join_new_member(
        self, group: ClassicGroup, join: _Joining, fx: Effects, now_ms: int
    ) -> None:
        req = join.req
        if group.is_in(GroupState.DEAD):
            join.answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, "", fx)
            return
        if not group.supports_protocols(req.protocol_type, protocol_names(req.protocols)):
            join.answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "", fx)
            return
        new_member_id = f"{req.group_instance_id or req.client_id}-{self._suffix()}"
        if req.group_instance_id is not None:
            existing = group.static_members.get(req.group_instance_id)
            if existing is not None:
                self._update_static_member(group, join, existing, new_member_id, fx, now_ms)
            else:
                self._add_member_then_rebalance(group, join, new_member_id, fx, now_ms)
        elif req.require_known_member_id:
            # v4+: hand out the member id first; the member joins with it in a second request.
            group.pending_join_members.add(new_member_id)
            self.rebalancer.schedule_heartbeat(
                group.group_id, new_member_id, now_ms + req.session_timeout_ms
            )
            join.answer(ErrorCode.MEMBER_ID_REQUIRED, new_member_id, fx)
        else:
            self._add_member_then_rebalance(group, join, new_member_id, fx, now_ms)

    def _join_existing_member(
        self, group: ClassicGroup, join: _Joining, fx: Effects, now_ms: int
    ) -> None:
        req = join.req
        mid = req.member_id
        if group.is_in(GroupState.DEAD):
            join.answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, mid, fx)
            return
        if not group.supports_protocols(req.protocol_type, protocol_names(req.protocols)):
            join.answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, mid, fx)
            return
        if group.is_pending_member(mid):
            if req.group_instance_id is not None:
                # Kafka fails this with an internal error: pending members are dynamic.
                join.answer(ErrorCode.UNKNOWN, mid, fx)
                return
            self._add_member_then_rebalance(group, join, mid, fx, now_ms)
            return
        err = group.validate_member(mid, req.group_instance_id)
        if err is not ErrorCode.NONE:
            join.answer(err, mid, fx)
            return
        member = group.members[mid]
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._update_member_then_rebalance(group, member, join, fx, now_ms)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # Same metadata (the member probably missed the answer): current generation.
                join.answer_current(group, mid, fx)
            else:
                self._update_member_then_rebalance(group, member, join, fx, now_ms)
        elif group.is_in(GroupState.STABLE):
            if group.is_leader(mid) or not member.matches(req.protocols):
                # The leader's JoinGroup forces a rebalance (e.g. topic metadata changed).
                self._update_member_then_rebalance(group, member, join, fx, now_ms)
            else:
                join.answer_current(group, mid, fx)
        else:
            join.answer(ErrorCode.UNKNOWN_MEMBER_ID, mid, fx)

    def _update_member_then_rebalance(
        self,
        group: ClassicGroup,
        member: ClassicGroupMember,
        join: _Joining,
        fx: Effects,
        now_ms: int,
    ) -> None:
        join.update(group, member, fx)
        self.rebalancer.maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)

    def _add_member_then_rebalance(
        self, group: ClassicGroup, join: _Joining, member_id: str, fx: Effects, now_ms: int
    ) -> None:
        member = ClassicGroupMember.joining(member_id, join.req)
        if group.is_in(GroupState.PREPARING_REBALANCE) and (
            group.previous_state is GroupState.EMPTY
        ):
            group.new_member_added = True  # lets the initial rebalance wait a bit longer
        group.add(member, join.parked)
        # A new member cannot heartbeat while its JoinGroup is parked; if its client gave up
        # it would linger, so the join itself expires after new_member_join_timeout_ms.
        self.rebalancer.schedule_heartbeat(
            group.group_id, member_id, now_ms + self.state.config.new_member_join_timeout_ms
        )
        self.rebalancer.maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)

    def _update_static_member(
        self,
        group: ClassicGroup,
        join: _Joining,
        old_member_id: str,
        new_member_id: str,
        fx: Effects,
        now_ms: int,
    ) -> None:
        req = join.req
        assert req.group_instance_id is not None
        current_leader = group.leader_id
        member = group.replace_static_member(
            req.group_instance_id, old_member_id, new_member_id, fx.completions
        )
        self.state.timers.cancel(hb_key(group.group_id, old_member_id))
        self.rebalancer.renew_session(group.group_id, member, now_ms)
        join.update(group, member, fx)
        if group.is_in(GroupState.STABLE):
            if group.protocol_name == group.select_protocol():
                # Restarted static member, same protocol: no rebalance, just persist the new
                # member id (the runtime appends the record before answering).
                fx.records.append(
                    group_metadata_record(
                        self.state.partition_for(group.group_id), group, group.assignments()
                    )
                )
                answer = _static_rejoin_answer(group, join.req, new_member_id, current_leader)
                group.complete_join(member, answer, fx.completions)
            else:
                self.rebalancer.maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            # The leader may already hold the old member id in its assignment: rebalance.
            self.rebalancer.prepare_rebalance(group, fx, now_ms)
        else:
            self.rebalancer.maybe_complete_join_phase(group, fx, now_ms)

    def _consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The non-empty consumer group `group_id` names, served if this core serves it."""
        group = self.state.consumer_groups.get(group_id)
        if group is None or not group.members:
            return None
        if self.state.request_error(group_id) is not ErrorCode.NONE:
            return None
        return group

    # == SyncGroup =========================================================================
    def sync_group(self, key: Hashable, now_ms: int, req: SyncRequest) -> Result[None]:
        """SyncGroup. The answer comes as `Completion(key, SyncResult)`, possibly later."""
        fx = Effects()
        group_id, member_id = req.group_id, req.member_id
        consumer_group = self._consumer_group(group_id)
        if consumer_group is not None:
            self.consumer_members.sync(key, now_ms, consumer_group, req, fx)
            return fx.result()
        err = self._sync_error(req)
        group = self.state.groups.get(group_id)
        if err is not ErrorCode.NONE or group is None:
            fx.complete(key, SyncResult(error=err))
            return fx.result()

        member = group.members[member_id]
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.awaiting_sync is not None:  # a retry: answer the superseded request
                group.complete_sync(
                    member, SyncResult(error=ErrorCode.REBALANCE_IN_PROGRESS), fx.completions
                )
            member.awaiting_sync = Parked(key)
            self.rebalancer.remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                self._store_assignment(group, req.assignments, fx, now_ms)
            return fx.result()

        # Stable: hand out the current assignment.
        self.rebalancer.remove_pending_sync_member(group, member_id)
        fx.complete(
            key,
            SyncResult(
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=member.assignment,
            ),
        )
        return fx.result()

    def _sync_error(self, req: SyncRequest) -> ErrorCode:
        """The SyncGroup checks, in Kafka's order (NONE: the sync goes ahead)."""
        err = self.state.request_error(req.group_id)
        if err is not ErrorCode.NONE:
            return err
        group = self.state.groups.get(req.group_id)
        if group is None or group.is_in(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        err = _member_error(group, req.member_id, req.group_instance_id, req.generation_id)
        if err is not ErrorCode.NONE:
            return err
        if _inconsistent(req.protocol_type, group.protocol_type) or _inconsistent(
            req.protocol_name, group.protocol_name
        ):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _store_assignment(
        self,
        group: ClassicGroup,
        assignments: Sequence[tuple[str, bytes]],
        fx: Effects,
        now_ms: int,
    ) -> None:
        """The leader's SyncGroup: persist the assignment, answer every parked sync."""
        assignment = {mid: bytes(a) for mid, a in assignments}
        for m in group.members.values():
            assignment.setdefault(m.member_id, b"")
        fx.records.append(
            group_metadata_record(self.state.partition_for(group.group_id), group, assignment)
        )
        for m in group.members.values():
            m.assignment = assignment[m.member_id]
        self.rebalancer.propagate_assignment(group, ErrorCode.NONE, fx, now_ms)
        group.transition_to(GroupState.STABLE, now_ms)

    # == Heartbeat =========================================================================
    def heartbeat(self, now_ms: int, req: HeartbeatRequest) -> Result[ErrorCode]:
        """Heartbeat: the error to answer (renews the member's session when it is valid)."""
        return Result(response=self._heartbeat(now_ms, req))

    def _heartbeat(self, now_ms: int, req: HeartbeatRequest) -> ErrorCode:
        group_id, member_id = req.group_id, req.member_id
        err = self.state.request_error(group_id)
        if err is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE  # Kafka answers blindly while loading
        if err is not ErrorCode.NONE:
            return err
        consumer_group = self._consumer_group(group_id)
        if consumer_group is not None:
            return self.consumer_members.heartbeat(now_ms, consumer_group, req)
        group = self.state.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        err = _member_error(group, member_id, req.group_instance_id, req.generation_id)
        if err is not ErrorCode.NONE:
            return err
        if group.is_in(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.rebalancer.renew_session(group_id, group.members[member_id], now_ms)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # == LeaveGroup ========================================================================
    def leave_group(
        self, now_ms: int, *, group_id: str, members: Sequence[LeaveMember]
    ) -> Result[LeaveResult]:
        """LeaveGroup: one answer per identity (member id and/or group.instance.id; an empty
        member id with an instance id removes that static member, as the admin client does)."""
        fx = Effects()
        err = self.state.request_error(group_id)
        if err is not ErrorCode.NONE:
            return fx.result(LeaveResult(err))
        consumer_group = self._consumer_group(group_id)
        if consumer_group is not None:
            return fx.result(self.consumer_members.leave(now_ms, consumer_group, members, fx))
        group = self.state.groups.get(group_id)
        if group is None:
            return fx.result(
                LeaveResult(
                    members=tuple(MemberLeft(m, ErrorCode.UNKNOWN_MEMBER_ID) for m in members)
                )
            )
        if group.is_in(GroupState.DEAD):
            return fx.result(LeaveResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        answers = tuple(MemberLeft(m, self._leave_one(group, m, fx)) for m in members)
        if any(a.error is ErrorCode.NONE for a in answers):
            if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self.rebalancer.maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)
            elif group.is_in(GroupState.PREPARING_REBALANCE):
                self.rebalancer.maybe_complete_join_phase(group, fx, now_ms)
        return fx.result(LeaveResult(members=answers))

    def _leave_one(self, group: ClassicGroup, ident: LeaveMember, fx: Effects) -> ErrorCode:
        remove = self.rebalancer.remove_member
        if ident.member_id == "":
            iid = ident.group_instance_id
            if iid is not None and iid in group.static_members:
                remove(group, group.static_members[iid], fx)
                return ErrorCode.NONE
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_pending_member(ident.member_id):
            remove(group, ident.member_id, fx)
            return ErrorCode.NONE
        err = group.validate_member(ident.member_id, ident.group_instance_id)
        if err is ErrorCode.NONE:
            remove(group, ident.member_id, fx)
        return err


@dataclass(frozen=True)
class _Joining:
    """A JoinGroup being handled: its parked slot and request."""

    parked: Parked
    req: JoinRequest

    def answer(self, error: ErrorCode, member_id: str, fx: Effects) -> None:
        fx.complete(self.parked.key, JoinResult(error=error, member_id=member_id))

    def answer_current(self, group: ClassicGroup, member_id: str, fx: Effects) -> None:
        members = group.join_members_list() if group.is_leader(member_id) else ()
        fx.complete(self.parked.key, generation_answer(group, member_id, members))

    def update(self, group: ClassicGroup, member: ClassicGroupMember, fx: Effects) -> None:
        req = self.req
        group.update_member(
            member,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            self.parked,
            fx.completions,
        )


def _static_rejoin_answer(
    group: ClassicGroup, req: JoinRequest, member_id: str, current_leader: str | None
) -> JoinResult:
    if req.supports_skip_assignment:
        is_leader = group.is_leader(member_id)
        members = group.join_members_list() if is_leader else ()
        return generation_answer(group, member_id, members, skip_assignment=is_leader)
    # Before v9 the old leader id is returned, so a restarted leader acts as a follower and
    # does not recompute the assignment.
    return generation_answer(group, member_id, (), leader=current_leader or "")


def _member_error(
    group: ClassicGroup, member_id: str, group_instance_id: str | None, generation_id: int
) -> ErrorCode:
    """SyncGroup's and Heartbeat's common checks: a Dead group, the member, its generation."""
    if group.is_in(GroupState.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    err = group.validate_member(member_id, group_instance_id)
    if err is not ErrorCode.NONE:
        return err
    if generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
