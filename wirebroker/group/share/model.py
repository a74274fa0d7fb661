"""The share group (KIP-932) and its members, as plain data.

A share group has no revocation step: a member's assignment is its target at once, and a
partition may be assigned to several members (records are shared by acquisition locks on
the partition leader, not by ownership). States (Kafka's ShareGroupState): Empty (no
members) and Stable. `StatePartitions` is what Kafka's ShareGroupStatePartitionMetadata
record holds for the group: the partitions whose share state is being initialized (with
when that started), those initialized (only these are assigned), and the topics whose state
is being deleted.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

TopicKey = uuid.UUID
#: topic id -> partitions
Assignment = Mapping[TopicKey, frozenset[int]]

LEAVE_GROUP_MEMBER_EPOCH = -1
GROUP_TYPE_SHARE = "share"
PROTOCOL_TYPE_SHARE = "share"
#: the member state of the record (share members are always stable: MemberState.STABLE)
MEMBER_STATE_STABLE = 0


class ShareGroupState(enum.StrEnum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


def freeze(
    assignment: Mapping[TopicKey, frozenset[int] | set[int]],
) -> dict[TopicKey, frozenset[int]]:
    """A copy without empty topics."""
    return {t: frozenset(ps) for t, ps in assignment.items() if ps}


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: Assignment = field(default_factory=dict)

    def with_(self, **changes: object) -> ShareMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class InitValue:
    """Partitions of one topic in the share-state bookkeeping, with the topic's name and
    when they were added (ms; -1 when unknown)."""

    name: str
    partitions: frozenset[int]
    timestamp_ms: int = -1


@dataclass
class StatePartitions:
    initializing: dict[TopicKey, InitValue] = field(default_factory=dict)
    initialized: dict[TopicKey, InitValue] = field(default_factory=dict)
    #: topic id -> topic name
    deleting: dict[TopicKey, str] = field(default_factory=dict)

    def initialized_partitions(self) -> dict[TopicKey, frozenset[int]]:
        return {t: v.partitions for t, v in self.initialized.items() if v.partitions}


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    #: when the last target assignment was computed (ms; 0: never)
    assignment_timestamp_ms: int = 0
    metadata_hash: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    #: member id -> its target assignment (of `assignment_epoch`)
    target: dict[str, Assignment] = field(default_factory=dict)
    #: subscribed topic name -> (id, partition count) at the last heartbeat
    metadata: dict[str, tuple[TopicKey, int]] = field(default_factory=dict)

    def group_state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topic_names(self) -> set[str]:
        return {n for m in self.members.values() for n in m.subscribed_topic_names}
