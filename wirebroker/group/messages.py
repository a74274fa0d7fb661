"""Typed inputs and results of the group coordinator's API (no wire versions in here).

The handlers decode a request into these inputs and build their version's response from the
results; the core never sees an `api_version`. Every result that can be answered before its
`__consumer_offsets` records are appended has `failed(error)`: the same result with each
success code (NONE, and MEMBER_ID_REQUIRED whose new group is dropped with the append)
replaced by `error` -- what the runtime answers when the append fails.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
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
