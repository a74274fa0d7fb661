"""Typed inputs and results of the group coordinator's API (no wire versions in here).

The handlers decode a request into these inputs and build their version's response from the
results; the core never sees an `api_version`. Every result that can be answered before its
`__consumer_offsets` records are appended has `failed(error)`: the same result with each
success code (NONE, and MEMBER_ID_REQUIRED whose new group is dropped with the append)
replaced by `error` -- what the runtime answers when the append fails.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, Self, TypeVar, cast

from protocol.errors import ErrorCode

#: Answers that count as success when their records could not be appended.
SUCCESS_CODES = (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED)


T = TypeVar("T")
M = TypeVar("M")


def _or_failed(current: ErrorCode, error: ErrorCode) -> ErrorCode:
    return error if current in SUCCESS_CODES else current


def _failed(value: T, error: ErrorCode) -> T:
    """`value` with each success code in an `error` field -- its own, and those of the
    dataclasses and (named) tuples it holds -- replaced by `error`."""
    if isinstance(value, tuple):
        items = [_failed(v, error) for v in value]
        if not hasattr(value, "_fields"):
            return cast("T", tuple(items))
        named: Any = type(value)(*items)
        if "error" in value._fields:
            named = named._replace(error=_or_failed(named.error, error))
        return cast("T", named)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _failed(getattr(value, f.name), error) for f in dataclasses.fields(value)
        }
        if "error" in changes:
            changes["error"] = _or_failed(changes["error"], error)
        return dataclasses.replace(value, **changes)
    return value


class Failable:
    """A result the runtime answers with `failed(error)` when its records were not appended."""

    def failed(self, error: ErrorCode) -> Self:
        return _failed(self, error)


# -- inputs --------------------------------------------------------------------------------


class LeaveMember(NamedTuple):
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


class CommitPartition(NamedTuple):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


class CommitTopic(NamedTuple):
    name: str
    partitions: Sequence[CommitPartition]


class TopicPartitions(NamedTuple):
    name: str
    partition_indexes: Sequence[int]


#: A member's JoinGroup protocols: (name, metadata), one entry per name, in request order.
Protocols = tuple[tuple[str, bytes], ...]


def protocols_tuple(protocols: Iterable[tuple[str, bytes]]) -> Protocols:
    """Normalise JoinGroup protocols: keep the first entry of each name, in request order.
    (Kafka's collection is keyed by name but tolerates duplicates, which then skew its
    protocol counts; dropping them is the robust reading.)"""
    seen: set[str] = set()
    out: list[tuple[str, bytes]] = []
    for name, meta in protocols:
        if name in seen:
            continue
        seen.add(name)
        out.append((name, bytes(meta)))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class JoinRequest:
    """A decoded JoinGroup, the handler's flags in place of its version:
    `require_known_member_id` (v4+) hands out member ids first; `supports_skip_assignment`
    (v9+) lets a restarted static leader skip the assignment. Normalised on construction:
    `rebalance_timeout_ms` -1 (v0) becomes the session timeout, `protocols` a `Protocols`."""

    group_id: str
    member_id: str
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True
    supports_skip_assignment: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocols", protocols_tuple(self.protocols))
        if self.rebalance_timeout_ms < 0:
            object.__setattr__(self, "rebalance_timeout_ms", self.session_timeout_ms)


@dataclasses.dataclass(frozen=True)
class HeartbeatRequest:
    """A decoded Heartbeat: a member of a generation (as SyncGroup names it too)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclasses.dataclass(frozen=True)
class SyncRequest(HeartbeatRequest):
    """A decoded SyncGroup; only the leader's `assignments` are stored."""

    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: Sequence[tuple[str, bytes]] = ()


@dataclasses.dataclass(frozen=True)
class CommitRequest:
    """A decoded OffsetCommit (topics by name). `generation_id` -1 with no member id is a
    "simple" commit; `retention_time_ms` other than -1 sets an explicit expire time."""

    group_id: str
    topics: Sequence[CommitTopic]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    #: OffsetCommit v9+ (members of KIP-848 consumer groups must use it)
    member_epoch_version: bool = True


@dataclasses.dataclass(frozen=True)
class TxnCommitRequest:
    """A decoded TxnOffsetCommit (topics by name): offsets of a transaction of `producer_id`
    at `producer_epoch`; generation/member (v3+, KIP-447) are checked when given."""

    group_id: str
    producer_id: int
    producer_epoch: int
    topics: Sequence[CommitTopic]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


# -- JoinGroup / SyncGroup (parked: delivered as completions) --------------------------------


class JoinMember(NamedTuple):
    """One member in the leader's JoinGroup answer (metadata of the selected protocol)."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclasses.dataclass(frozen=True)
class JoinResult(Failable):
    error: ErrorCode = ErrorCode.NONE
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinMember, ...] = ()


@dataclasses.dataclass(frozen=True)
class SyncResult(Failable):
    error: ErrorCode = ErrorCode.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


ParkedResult = JoinResult | SyncResult


# -- LeaveGroup ------------------------------------------------------------------------------


class MemberLeft(NamedTuple):
    member: LeaveMember
    error: ErrorCode


@dataclasses.dataclass(frozen=True)
class LeaveResult(Failable):
    """`error` is the request's own; `members` one answer per identity (empty on `error`)."""

    error: ErrorCode = ErrorCode.NONE
    members: tuple[MemberLeft, ...] = ()


# -- OffsetCommit / OffsetDelete --------------------------------------------------------------


class PartitionError(NamedTuple):
    partition_index: int
    error: ErrorCode


class TopicErrors(NamedTuple):
    name: str
    partitions: tuple[PartitionError, ...]


@dataclasses.dataclass(frozen=True)
class CommitResult(Failable):
    topics: tuple[TopicErrors, ...] = ()

    def errors(self) -> dict[tuple[str, int], ErrorCode]:
        return {(t.name, p.partition_index): p.error for t in self.topics for p in t.partitions}


@dataclasses.dataclass(frozen=True)
class DeleteOffsetsResult(Failable):
    error: ErrorCode = ErrorCode.NONE
    topics: tuple[TopicErrors, ...] = ()


# -- DeleteGroups ----------------------------------------------------------------------------


class DeletedGroup(NamedTuple):
    group_id: str
    error: ErrorCode


@dataclasses.dataclass(frozen=True)
class DeleteGroupsResult:
    results: tuple[DeletedGroup, ...] = ()

    def failed_where(self, error_of: dict[str, ErrorCode]) -> DeleteGroupsResult:
        """Per group: `error_of[group_id]` (when present) replaces a NONE answer."""
        return DeleteGroupsResult(
            tuple(
                DeletedGroup(r.group_id, error_of[r.group_id])
                if r.error is ErrorCode.NONE and r.group_id in error_of
                else r
                for r in self.results
            )
        )


# -- OffsetFetch -----------------------------------------------------------------------------


class FetchedPartition(NamedTuple):
    """A committed offset; a partition without one is (-1, -1, "")."""

    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str = ""


class FetchedTopic(NamedTuple):
    name: str
    partitions: tuple[FetchedPartition, ...]


class OffsetFetchResult(NamedTuple):
    group_id: str
    error: ErrorCode
    topics: tuple[FetchedTopic, ...] = ()


# -- ListGroups / DescribeGroups --------------------------------------------------------------


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


class ListGroupsResult(NamedTuple):
    error: ErrorCode
    groups: tuple[ListedGroup, ...] = ()


class DescribedMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class DescribedGroup(NamedTuple):
    """`exists` False: a group this coordinator does not hold (described as Dead)."""

    group_id: str
    error: ErrorCode = ErrorCode.NONE
    state: str = ""
    exists: bool = True
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedMember, ...] = ()
    #: v6+ text when `exists` is False (None: "Group <id> not found.")
    error_message: str | None = None


# -- modern groups: ConsumerGroupHeartbeat / ShareGroupHeartbeat, their Describe ---------------
# Kafka's ModernGroup: the groups whose members heartbeat with epochs (KIP-848 consumer groups
# in consumer/, KIP-932 share groups in share/); each package subclasses these with its own.


@dataclasses.dataclass(frozen=True)
class ModernHeartbeatResult(Failable):
    error: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: topic id -> partitions; None: not sent (unchanged)
    assignment: Mapping[uuid.UUID, frozenset[int]] | None = None


@dataclasses.dataclass(frozen=True)
class DescribedModernGroup(Generic[M]):
    """A group as its Describe answers it; `members`: its type's described members."""

    group_id: str
    error: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[M, ...] = ()
