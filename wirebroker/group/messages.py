"""Typed inputs and results of the group coordinator's API (no wire versions in here).

The handlers decode a request into these inputs and build their version's response from the
results; the core never sees an `api_version`. Every result that can be answered before its
`__consumer_offsets` records are appended has `failed(error)`: the same result with each
success code (NONE, and MEMBER_ID_REQUIRED whose new group is dropped with the append)
replaced by `error` -- what the runtime answers when the append fails.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from protocol.errors import ErrorCode

#: Answers that count as success when their records could not be appended.
SUCCESS_CODES = (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED)


def _or_failed(current: ErrorCode, error: ErrorCode) -> ErrorCode:
    return error if current in SUCCESS_CODES else current


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
class SyncRequest:
    """A decoded SyncGroup; only the leader's `assignments` are stored."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: Sequence[tuple[str, bytes]] = ()


@dataclasses.dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


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


# -- JoinGroup / SyncGroup (parked: delivered as completions) --------------------------------


class JoinMember(NamedTuple):
    """One member in the leader's JoinGroup answer (metadata of the selected protocol)."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclasses.dataclass(frozen=True)
class JoinResult:
    error: ErrorCode = ErrorCode.NONE
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinMember, ...] = ()

    def failed(self, error: ErrorCode) -> JoinResult:
        return dataclasses.replace(self, error=_or_failed(self.error, error))


@dataclasses.dataclass(frozen=True)
class SyncResult:
    error: ErrorCode = ErrorCode.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""

    def failed(self, error: ErrorCode) -> SyncResult:
        return dataclasses.replace(self, error=_or_failed(self.error, error))


ParkedResult = JoinResult | SyncResult


# -- LeaveGroup ------------------------------------------------------------------------------


class MemberLeft(NamedTuple):
    member: LeaveMember
    error: ErrorCode


@dataclasses.dataclass(frozen=True)
class LeaveResult:
    """`error` is the request's own; `members` one answer per identity (empty on `error`)."""

    error: ErrorCode = ErrorCode.NONE
    members: tuple[MemberLeft, ...] = ()

    def failed(self, error: ErrorCode) -> LeaveResult:
        return LeaveResult(
            _or_failed(self.error, error),
            tuple(MemberLeft(m.member, _or_failed(m.error, error)) for m in self.members),
        )


# -- OffsetCommit / OffsetDelete --------------------------------------------------------------


class PartitionError(NamedTuple):
    partition_index: int
    error: ErrorCode


class TopicErrors(NamedTuple):
    name: str
    partitions: tuple[PartitionError, ...]


def _failed_topics(topics: tuple[TopicErrors, ...], error: ErrorCode) -> tuple[TopicErrors, ...]:
    return tuple(
        TopicErrors(
            t.name,
            tuple(
                PartitionError(p.partition_index, _or_failed(p.error, error)) for p in t.partitions
            ),
        )
        for t in topics
    )


@dataclasses.dataclass(frozen=True)
class CommitResult:
    topics: tuple[TopicErrors, ...] = ()

    def failed(self, error: ErrorCode) -> CommitResult:
        return CommitResult(_failed_topics(self.topics, error))

    def errors(self) -> dict[tuple[str, int], ErrorCode]:
        return {(t.name, p.partition_index): p.error for t in self.topics for p in t.partitions}


@dataclasses.dataclass(frozen=True)
class DeleteOffsetsResult:
    error: ErrorCode = ErrorCode.NONE
    topics: tuple[TopicErrors, ...] = ()

    def failed(self, error: ErrorCode) -> DeleteOffsetsResult:
        return DeleteOffsetsResult(
            _or_failed(self.error, error), _failed_topics(self.topics, error)
        )


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
