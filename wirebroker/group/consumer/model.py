"""The consumer group (KIP-848) and its members, as plain data.

A member's state (Kafka's `MemberState`):
    STABLE                 its epoch is the assignment epoch, it owns its whole target
    UNREVOKED_PARTITIONS   it must first give up `pending_revocation` (keeps its epoch; fenced
                           after its rebalance timeout if it does not)
    UNRELEASED_PARTITIONS  at the assignment epoch, but some target partitions are still owned
                           by other members (they come in a later heartbeat)
The group's state (`group_state`): Empty (no members), Assigning (group epoch above the
assignment epoch), Reconciling (a member not yet stable at the assignment epoch), Stable.

A member that joined with the classic protocol (JoinGroup/SyncGroup, `classic` set: its
session timeout and the protocols of its JoinGroup) is a "classic member" of the consumer
group (KIP-848 online migration, `classic_members.py`).

`ConsumerGroup.owners` indexes which member owns each partition (assigned or pending
revocation): a partition is given to a member only when no other member owns it.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from protocol.consumer_group_records import ClassicMemberMetadata

TopicKey = uuid.UUID
#: topic id -> partitions
Assignment = Mapping[TopicKey, frozenset[int]]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
GROUP_TYPE_CONSUMER = "consumer"


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class GroupState(enum.StrEnum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def freeze(
    assignment: Mapping[TopicKey, frozenset[int] | set[int]],
) -> dict[TopicKey, frozenset[int]]:
    """A copy without empty topics."""
    return {t: frozenset(ps) for t, ps in assignment.items() if ps}


@dataclass(frozen=True)
class ConsumerMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    #: set for a member using the classic protocol (JoinGroup/SyncGroup/Heartbeat)
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def with_(self, **changes: object) -> ConsumerMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    #: member id -> its target assignment (of `assignment_epoch`)
    target: dict[str, Assignment] = field(default_factory=dict)
    #: (topic id, partition) -> the member owning it (assigned or pending revocation)
    owners: dict[tuple[TopicKey, int], str] = field(default_factory=dict)
    #: subscribed topic name -> (id, partition count) at the last heartbeat
    metadata: dict[str, tuple[TopicKey, int]] = field(default_factory=dict)
    #: the hash of `metadata` when the group epoch last moved (records.metadata_hash)
    metadata_hash: int = 0
    #: instance id -> member id (static members)
    static_members: dict[str, str] = field(default_factory=dict)
    #: subscription regex -> the topic names it matched at the last heartbeat
    resolved: dict[str, frozenset[str]] = field(default_factory=dict)

    def group_state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE:
                return GroupState.RECONCILING
        return GroupState.STABLE

    def owner_of(self, topic: TopicKey, partition: int) -> str | None:
        return self.owners.get((topic, partition))

    def put_member(self, member: ConsumerMember) -> None:
        """Add or replace `member`, keeping `owners` and `static_members` in step."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        for assignment in (member.assigned, member.pending_revocation):
            for t, ps in assignment.items():
                for p in ps:
                    self.owners[(t, p)] = member.member_id
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._release(old)
            if (
                old.instance_id is not None
                and self.static_members.get(old.instance_id) == member_id
            ):
                del self.static_members[old.instance_id]
        self.target.pop(member_id, None)
        return old

    def _release(self, member: ConsumerMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for t, ps in assignment.items():
                for p in ps:
                    if self.owners.get((t, p)) == member.member_id:
                        del self.owners[(t, p)]

    def member_topics(self, member: ConsumerMember) -> set[str]:
        """The topic names `member` subscribes to: its names and what its regex matched."""
        out = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            out |= self.resolved.get(member.subscribed_topic_regex, frozenset())
        return out

    def all_classic_except(self, member_ids: set[str]) -> bool:
        """Whether every member but `member_ids` uses the classic protocol."""
        return all(m.uses_classic for mid, m in self.members.items() if mid not in member_ids)

    def waiting_on_unreleased(self, member: ConsumerMember) -> bool:
        """An UNRELEASED_PARTITIONS member some of whose target partitions another member
        still owns (Kafka's waitingOnUnreleasedPartition)."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for t, ps in self.target.get(member.member_id, {}).items():
            have = member.assigned.get(t, frozenset())
            for p in ps - have:
                if self.owners.get((t, p)) not in (None, member.member_id):
                    return True
        return False

    def subscribed_topic_names(self) -> set[str]:
        return {n for m in self.members.values() for n in self.member_topics(m)}
