"""The rebalance machinery of classic groups: the join phase, member removal and the timers.

Kafka's `GroupMetadataManager` (classic-group rebalance parts). `Rebalancer` moves a group
through PreparingRebalance -> CompletingRebalance (see the table in
`wirebroker.group.classic`) and owns the timers that drive it, keyed per group:
    ("hb", group, member)  session expiry (and a new member's join expiry)
    ("join", group)        join phase completion: rebalance timeout, or the initial delay
                           (group.initial.rebalance.delay.ms, extended while members arrive)
    ("sync", group)        members that sent no SyncGroup in time are removed
Every parked request of a removed member is answered (UNKNOWN_MEMBER_ID), never dropped.
"""

from __future__ import annotations

import logging

from protocol.errors import ErrorCode
from wirebroker.group.classic import ClassicGroup, ClassicGroupMember, GroupState
from wirebroker.group.effects import Effects
from wirebroker.group.messages import JoinMember, JoinResult, SyncResult
from wirebroker.group.records import group_metadata_record
from wirebroker.group.state import CoordinatorState

log = logging.getLogger("wirebroker.group")


def hb_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("hb", group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("sync", group_id)


class Rebalancer:
    def __init__(self, state: CoordinatorState) -> None:
        self.state = state

    # -- sessions ----------------------------------------------------------------------------
    def renew_session(self, group_id: str, member: ClassicGroupMember, now_ms: int) -> None:
        """The member's session now expires one session timeout from `now_ms`."""
        self.schedule_heartbeat(group_id, member.member_id, now_ms + member.session_timeout_ms)

    def schedule_heartbeat(self, group_id: str, member_id: str, deadline_ms: int) -> None:
        def expire(now_ms: int, fx: Effects) -> None:
            self._expire_heartbeat(group_id, member_id, fx, now_ms)

        self.state.timers.schedule(hb_key(group_id, member_id), deadline_ms, expire)

    def _expire_heartbeat(self, group_id: str, member_id: str, fx: Effects, now_ms: int) -> None:
        group = self.state.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return
        if group.is_pending_member(member_id):
            group.remove(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
                self.complete_join(group, fx, now_ms)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        self.remove_member(group, member_id, fx)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)
        elif group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self.complete_join(group, fx, now_ms)

    def remove_member(self, group: ClassicGroup, member_id: str, fx: Effects) -> None:
        """Drop a member (or pending member); anything it still has parked is answered with
        UNKNOWN_MEMBER_ID so no request waits forever."""
        member = group.members.get(member_id)
        if member is not None:
            group.complete_join(
                member, JoinResult(error=ErrorCode.UNKNOWN_MEMBER_ID), fx.completions
            )
            group.complete_sync(
                member, SyncResult(error=ErrorCode.UNKNOWN_MEMBER_ID), fx.completions
            )
        group.remove(member_id)
        self.state.timers.cancel(hb_key(group.group_id, member_id))

    # -- join phase --------------------------------------------------------------------------
    def maybe_prepare_rebalance_or_complete_join(
        self, group: ClassicGroup, fx: Effects, now_ms: int
    ) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, fx, now_ms)
        else:
            self.maybe_complete_join_phase(group, fx, now_ms)

    def prepare_rebalance(self, group: ClassicGroup, fx: Effects, now_ms: int) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            for m in group.members.values():
                m.assignment = b""
            self.propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS, fx, now_ms)
        group.pending_sync_members.clear()
        self.state.timers.cancel(sync_key(group.group_id))
        initial = group.is_in(GroupState.EMPTY)
        if initial:
            delay = self.state.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_rebalance(group.group_id, now_ms, delay, remaining)
        group.transition_to(GroupState.PREPARING_REBALANCE, now_ms)
        if not initial:
            if group.has_all_members_joined():
                self.complete_join(group, fx, now_ms)
            else:
                self._schedule_join_completion(group, now_ms)

    def _schedule_initial_rebalance(
        self, group_id: str, now_ms: int, delay: int, remaining: int
    ) -> None:
        def fire(t: int, fx: Effects) -> None:
            group = self.state.groups.get(group_id)
            if group is None:
                return
            if group.new_member_added and remaining != 0:
                # More members arrived during the delay: wait again, within the budget.
                group.new_member_added = False
                new_delay = min(self.state.config.initial_rebalance_delay_ms, remaining)
                self._schedule_initial_rebalance(group_id, t, new_delay, max(remaining - delay, 0))
            else:
                self.complete_join(group, fx, t)

        self.state.timers.schedule(join_key(group_id), now_ms + delay, fire)

    def _schedule_join_completion(self, group: ClassicGroup, now_ms: int) -> None:
        group_id = group.group_id

        def fire(t: int, fx: Effects) -> None:
            g = self.state.groups.get(group_id)
            if g is not None:
                self.complete_join(g, fx, t)

        self.state.timers.schedule(join_key(group_id), now_ms + group.rebalance_timeout_ms(), fire)

    def maybe_complete_join_phase(self, group: ClassicGroup, fx: Effects, now_ms: int) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        if group.previous_state is GroupState.EMPTY:
            return  # the initial rebalance completes only on its timer
        if group.has_all_members_joined():
            self.complete_join(group, fx, now_ms)

    def complete_join(self, group: ClassicGroup, fx: Effects, now_ms: int) -> None:
        self.state.timers.cancel(join_key(group.group_id))
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        for m in group.not_yet_rejoined_members():
            if not m.is_static:
                self.remove_member(group, m.member_id, fx)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout (sessions will expire).
            self._schedule_join_completion(group, now_ms)
            return
        group.init_next_generation(now_ms)
        log.info(
            "group %s rebalanced: generation %d, protocol %s, %d member(s) [%s]",
            group.group_id,
            group.generation_id,
            group.protocol_name,
            len(group.members),
            ", ".join(
                f"{m.client_id}/{m.member_id}"
                + (" (leader)" if group.is_leader(m.member_id) else "")
                for m in group.members.values()
            ),
        )
        if group.is_in(GroupState.EMPTY):
            fx.records.append(
                group_metadata_record(self.state.partition_for(group.group_id), group, {})
            )
            return
        members = group.join_members_list()
        for m in list(group.members.values()):
            answer = generation_answer(group, m.member_id, members)
            group.complete_join(m, answer, fx.completions)
            self.renew_session(group.group_id, m, now_ms)
            m.is_new = False
            group.pending_sync_members.add(m.member_id)
        self._schedule_sync_expiration(group, now_ms)

    # -- sync phase --------------------------------------------------------------------------
    def _schedule_sync_expiration(self, group: ClassicGroup, now_ms: int) -> None:
        group_id = group.group_id
        generation = group.generation_id

        def fire(t: int, fx: Effects) -> None:
            g = self.state.groups.get(group_id)
            if g is None or g.generation_id != generation:
                return
            if g.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and (
                g.pending_sync_members
            ):
                for mid in list(g.pending_sync_members):
                    self.remove_member(g, mid, fx)
                self.prepare_rebalance(g, fx, t)

        self.state.timers.schedule(sync_key(group_id), now_ms + group.rebalance_timeout_ms(), fire)

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or (
            not group.pending_sync_members
        ):
            self.state.timers.cancel(sync_key(group.group_id))

    def propagate_assignment(
        self, group: ClassicGroup, error: ErrorCode, fx: Effects, now_ms: int
    ) -> None:
        ok = error is ErrorCode.NONE
        for m in group.members.values():
            answered = group.complete_sync(
                m,
                SyncResult(
                    error=error,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None,
                    assignment=m.assignment,
                ),
                fx.completions,
            )
            if answered:
                self.renew_session(group.group_id, m, now_ms)


def generation_answer(
    group: ClassicGroup,
    member_id: str,
    members: tuple[JoinMember, ...],
    *,
    leader: str | None = None,
    skip_assignment: bool = False,
) -> JoinResult:
    """The JoinGroup answer for the group's current generation; `members` go to the leader
    only. `leader` overrides the leader id given (a restarted static member before v9)."""
    shown_leader = (group.leader_id or "") if leader is None else leader
    return JoinResult(
        member_id=member_id,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=shown_leader,
        skip_assignment=skip_assignment,
        members=members if group.is_leader(member_id) and leader is None else (),
    )
