"""Classic consumer groups (JoinGroup/SyncGroup protocol): states, members, one group.

The data model and the group-local rules of Kafka's `ClassicGroup`, `ClassicGroupMember` and
`ClassicGroupState`. The request flows that move a group between states live in
`wirebroker.group.membership` (JoinGroup/SyncGroup/Heartbeat/LeaveGroup),
`wirebroker.group.rebalance` (the join phase and the timers that drive it) and
`wirebroker.group.offsets_manager` (offsets, group deletion, expiry); this table is their
summary.

States and what each request does in them
=========================================

Empty                 no members (a new group, the end of the last member, or a "simple"
                      group that only stores offsets)
  JoinGroup  new      v4+ dynamic: MEMBER_ID_REQUIRED with a fresh member id (a *pending*
                      member); v0-3 or static (group.instance.id): add member -> Preparing
                      (the initial rebalance waits group.initial.rebalance.delay.ms)
  JoinGroup  known    UNKNOWN_MEMBER_ID
  SyncGroup           UNKNOWN_MEMBER_ID
  Heartbeat           UNKNOWN_MEMBER_ID
  LeaveGroup          UNKNOWN_MEMBER_ID per member
  OffsetCommit        accepted from "simple" committers only (generation -1 / no member);
                      else UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION
  OffsetFetch         served
  OffsetDelete        deletes
  DeleteGroups        tombstones for offsets and group -> Dead
  offset expiry       retention counted from the time the group became Empty; when the last
                      offset is gone the group is deleted -> Dead

PreparingRebalance    waiting for the members to (re)join
  JoinGroup  new      v4+ dynamic: MEMBER_ID_REQUIRED; else add member and park the request
  JoinGroup  known    update protocols/timeouts and park; when every member has rejoined the
                      generation is bumped -> CompletingRebalance (all parked joins answered;
                      the leader's answer lists every member's metadata)
  SyncGroup           REBALANCE_IN_PROGRESS
  Heartbeat           REBALANCE_IN_PROGRESS (renews the session)
  LeaveGroup          removes the member; may complete the join phase
  OffsetCommit        accepted from members of the current (old) generation
  OffsetDelete        NON_EMPTY_GROUP (consumer groups: GROUP_SUBSCRIBED_TO_TOPIC per
                      subscribed topic, other topics deleted)
  DeleteGroups        NON_EMPTY_GROUP
  join timer          (rebalance timeout = max over members; or the initial delay) dynamic
                      members that did not rejoin are removed; next generation ->
                      CompletingRebalance, or Empty when nobody is left (record written)

CompletingRebalance   waiting for the leader's SyncGroup with the assignment
  JoinGroup  known    same protocols: answered at once with the current generation;
                      changed protocols -> Preparing (parked syncs get REBALANCE_IN_PROGRESS)
  JoinGroup  new      -> Preparing (as above)
  SyncGroup           parked; the leader's SyncGroup stores the assignment (record written)
                      and answers every parked sync -> Stable
  Heartbeat           NONE
  LeaveGroup          removes the member -> Preparing
  OffsetCommit        REBALANCE_IN_PROGRESS (member and generation valid)
  OffsetDelete, DeleteGroups  as Preparing
  sync timer          (rebalance timeout) members that sent no SyncGroup are removed ->
                      Preparing

Stable                every member has its assignment
  JoinGroup  known    leader, or a follower with changed protocols -> Preparing; a follower
                      with the same protocols gets the current generation at once
  JoinGroup  static   a restarted static member (same group.instance.id, empty member id)
                      takes over the old member id's place without a rebalance (record
                      written) unless the selected protocol would change; the old member id
                      is fenced (FENCED_INSTANCE_ID)
  SyncGroup           answered with the member's current assignment
  Heartbeat           NONE
  LeaveGroup          removes the member -> Preparing
  OffsetCommit        accepted from members of the current generation
  session expiry      the member is removed -> Preparing

Dead                  the group is being removed (never stays in the coordinator's map)
  every request       COORDINATOR_NOT_AVAILABLE; OffsetFetch sees no offsets;
                      DescribeGroups says Dead; DeleteGroups / OffsetDelete GROUP_ID_NOT_FOUND

Valid transitions (target <- allowed previous states):
    Empty <- Preparing;  Preparing <- Stable, Completing, Empty;  Completing <- Preparing;
    Stable <- Completing;  Dead <- any.
"""

from __future__ import annotations

import enum
import struct
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from protocol.errors import ErrorCode
from wirebroker.group.effects import Completion, Parked
from wirebroker.group.messages import JoinMember, JoinRequest, JoinResult, Protocols, SyncResult

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalTransition(RuntimeError):
    """A bug: the coordinator tried a transition the state table forbids."""


@dataclass(eq=False)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: Parked | None = None
    awaiting_sync: Parked | None = None
    is_new: bool = False

    @classmethod
    def joining(cls, member_id: str, req: JoinRequest) -> ClassicGroupMember:
        """A new member as its JoinGroup describes it."""
        return cls(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            req.protocols,
            is_new=True,
        )

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol_name:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol_name!r}")

    def matches(self, protocols: Protocols) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """New members can expire while awaiting join; others awaiting a response cannot."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


def parse_consumer_subscription_topics(metadata: bytes) -> frozenset[str] | None:
    """Topics of a `consumer` protocol subscription (read with the v0 prefix every version
    shares: int16 version, [string] topics, nullable bytes user data), or None when the
    bytes do not follow it."""
    try:
        (version,) = struct.unpack_from(">h", metadata, 0)
        if version < 0:
            return None
        pos = 2
        (count,) = struct.unpack_from(">i", metadata, pos)
        pos += 4
        if count < 0 or count > len(metadata) - pos:
            return None
        topics: set[str] = set()
        for _ in range(count):
            (n,) = struct.unpack_from(">h", metadata, pos)
            pos += 2
            if n < 0 or pos + n > len(metadata):
                return None
            topics.add(metadata[pos : pos + n].decode("utf-8"))
            pos += n
        (user_len,) = struct.unpack_from(">i", metadata, pos)
        pos += 4
        if user_len > len(metadata) - pos:
            return None
        return frozenset(topics)
    except (struct.error, UnicodeDecodeError):
        return None


@dataclass(eq=False)
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.DEAD
    current_state_timestamp: int | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, ClassicGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    num_awaiting_join: int = 0
    supported_protocols: Counter[str] = field(default_factory=Counter)
    subscribed_topics: frozenset[str] | None = None
    new_member_added: bool = False

    # -- queries ---------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def state_timestamp_or_default(self) -> int:
        return -1 if self.current_state_timestamp is None else self.current_state_timestamp

    def assignments(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and bool(names)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(n, 0) == len(self.members) for n in names
        )

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """The protocol supported by every member that most members list first (ties: the
        first one voted for, in member order)."""
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        return next(name for name in votes if votes[name] == best)

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_consumer_subscription_topics(m.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return frozenset(topics)

    def join_members_list(self) -> tuple[JoinMember, ...]:
        """Every member's metadata for the selected protocol (the leader's JoinGroup answer)."""
        if self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE):
            raise IllegalTransition(
                f"cannot list members of group {self.group_id} in state {self.state}"
            )
        return tuple(
            JoinMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        )

    # -- validation ------------------------------------------------------------------------
    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID / NONE (Kafka's `validateMember`)."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        *,
        transactional: bool = False,
    ) -> ErrorCode:
        """Kafka's validateOffsetCommit; `transactional` (TxnOffsetCommit): without member
        and generation (v0-2) accepted in any state, and no REBALANCE_IN_PROGRESS."""
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and self.state is GroupState.EMPTY:
            return ErrorCode.NONE  # admin client or a consumer without group management
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            err = self.validate_member(member_id, group_instance_id)
            if err is not ErrorCode.NONE:
                return err
            if generation_id != self.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif self.state is not GroupState.EMPTY and not transactional:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if self.state is GroupState.COMPLETING_REBALANCE and not transactional:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- mutation --------------------------------------------------------------------------
    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalTransition(
                f"group {self.group_id}: {self.state} -> {target} is not a valid transition"
            )
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms

    def add(self, member: ClassicGroupMember, parked: Parked | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} already present")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise ValueError("the group and member protocol types differ")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names())
        member.awaiting_join = parked
        if parked is not None:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        removed = self.members.pop(member_id, None)
        if removed is not None:
            self.supported_protocols.subtract(removed.protocol_names())
            self.supported_protocols += Counter()  # drop zero counts
            if removed.awaiting_join is not None:
                self.num_awaiting_join -= 1
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return removed

    def update_member(
        self,
        member: ClassicGroupMember,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        parked: Parked | None,
        out: list[Completion],
    ) -> None:
        self.supported_protocols.subtract(member.protocol_names())
        member.protocols = protocols
        self.supported_protocols.update(member.protocol_names())
        self.supported_protocols += Counter()
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if parked is not None and member.awaiting_join is None:
            self.num_awaiting_join += 1
        elif parked is None and member.awaiting_join is not None:
            self.num_awaiting_join -= 1
        elif parked is not None and member.awaiting_join is not None:
            # A retried JoinGroup (another connection): answer the superseded one.
            old = member.awaiting_join
            out.append(Completion(old.key, JoinResult(error=ErrorCode.UNKNOWN_MEMBER_ID)))
        member.awaiting_join = parked

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False if none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for m in self.members.values():
            if m.awaiting_join is not None:
                self.leader_id = m.member_id
                return True
        return False

    def replace_static_member(
        self,
        group_instance_id: str,
        old_member_id: str,
        new_member_id: str,
        out: list[Completion],
    ) -> ClassicGroupMember:
        """Give a static member a new member id; requests parked under the old id are
        answered with FENCED_INSTANCE_ID."""
        old = self.members.pop(old_member_id, None)
        if old is None:
            raise KeyError(f"cannot replace unknown member {old_member_id}")
        if old.awaiting_join is not None:
            out.append(
                Completion(
                    old.awaiting_join.key,
                    JoinResult(error=ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id),
                )
            )
            old.awaiting_join = None
            self.num_awaiting_join -= 1
        if old.awaiting_sync is not None:
            out.append(
                Completion(old.awaiting_sync.key, SyncResult(error=ErrorCode.FENCED_INSTANCE_ID))
            )
            old.awaiting_sync = None
        new = replace(old, member_id=new_member_id, is_new=False)  # nothing parked (above)
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return new

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def complete_join(
        self, member: ClassicGroupMember, result: JoinResult, out: list[Completion]
    ) -> bool:
        """Answer the member's parked JoinGroup."""
        if member.awaiting_join is None:
            return False
        parked = member.awaiting_join
        member.awaiting_join = None
        self.num_awaiting_join -= 1
        out.append(Completion(parked.key, result))
        return True

    def complete_sync(
        self, member: ClassicGroupMember, result: SyncResult, out: list[Completion]
    ) -> bool:
        if member.awaiting_sync is None:
            return False
        out.append(Completion(member.awaiting_sync.key, result))
        member.awaiting_sync = None
        return True

    def complete_all_parked(self, error: ErrorCode, out: list[Completion]) -> None:
        """Answer every parked join and sync with `error` (coordinator unloading)."""
        for member_id, m in self.members.items():
            self.complete_join(m, JoinResult(error=error, member_id=member_id), out)
            self.complete_sync(m, SyncResult(error=error), out)


def protocol_names(protocols: Sequence[tuple[str, bytes]]) -> set[str]:
    return {name for name, _ in protocols}
