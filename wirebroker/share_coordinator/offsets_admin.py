"""The share group offsets admin APIs (KIP-932): Describe / Alter / DeleteShareGroupOffsets.

They go to the GROUP coordinator of the share group, which reads, initialises and deletes the
share-partition state through the `Persister` (`StatePersister` below, the interface's part
used here). What the group coordinator knows about the group comes from a `ShareGroups`
object the broker injects (the share group itself lives in `wirebroker.group.share`):

    lookup(group_id)                 a `ShareGroupView` (the group is a share group this broker
                                     coordinates: empty or not, the state epoch it initialises
                                     state with, its initialised partitions per topic id), or
                                     the error: GROUP_ID_NOT_FOUND (no such group, or not a
                                     share group), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
    offsets_altered(group, parts)    Alter initialised these partitions (Kafka records them in
                                     the group's state-partition metadata)
    offsets_deleted(group, topics)   Delete removed these topic ids' state

Rules (Kafka 4.4's GroupCoordinatorService / GroupMetadataManager):

    Describe, topics listed   per topic name: unknown topic -> topic id zero, each partition
                              start offset -1, no error; else ReadShareGroupStateSummary per
                              partition: start offset (-1: never initialised), leader epoch,
                              lag (v1) = end offset - start offset - delivery-complete count
                              when all three are known (else -1); a persister error gives start
                              offset -1, leader epoch 0, no error (Kafka does not pass it on).
                              The group is not looked up.
    Describe, topics null     the group's initialised partitions (lookup: an unknown group has
                              none, no error, as Kafka answers; other lookup errors for the
                              whole group)
    Alter                     empty group id: INVALID_GROUP_ID; lookup errors; a group with
                              members: NON_EMPTY_GROUP (top level); per topic: unknown topic or
                              partition: UNKNOWN_TOPIC_OR_PARTITION per partition; else
                              InitializeShareGroupState(state epoch, the new start offset)
    Delete                    empty group id: INVALID_GROUP_ID; lookup errors; NON_EMPTY_GROUP;
                              per topic: unknown: UNKNOWN_TOPIC_OR_PARTITION; else
                              DeleteShareGroupState for each of its partitions (the first error
                              is the topic's)

The end offset of the lag is the partition's high watermark where this broker leads it
(`EndOffsets`; Kafka asks every partition's leader with ListOffsets); elsewhere the lag is -1.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from protocol.errors import ErrorCode
from wirebroker.share_coordinator.core import MESSAGES

__all__ = [
    "ShareGroupLookup",
    "ShareGroupView",
    "ShareGroups",
    "StatePersister",
    "alter_offsets",
    "delete_offsets",
    "describe_group",
]

ZERO_UUID = uuid.UUID(int=0)
#: topic name -> (topic id, partition count), None: unknown topic
TopicLookup = Callable[[str], "tuple[uuid.UUID, int] | None"]
#: topic id -> topic name, None: unknown
TopicNames = Callable[[uuid.UUID], "str | None"]
#: (topic id, partition) -> its end offset (high watermark), None: not known here
EndOffsets = Callable[[uuid.UUID, int], "int | None"]

_GROUP_MESSAGES = {
    ErrorCode.INVALID_GROUP_ID: "The group id is invalid.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
}


@dataclass(frozen=True)
class ShareGroupView:
    group_id: str
    empty: bool
    state_epoch: int = 0
    partitions: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)


ShareGroupLookup = Callable[[str], "ShareGroupView | ErrorCode"]


class ShareGroups(Protocol):
    def lookup(self, group_id: str) -> ShareGroupView | ErrorCode: ...

    def offsets_altered(self, group_id: str, partitions: Mapping[uuid.UUID, set[int]]) -> None: ...

    def offsets_deleted(self, group_id: str, topic_ids: set[uuid.UUID]) -> None: ...


class StatePersister(Protocol):
    async def initialize_state(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        state_epoch: int,
        start_offset: int,
    ) -> ErrorCode: ...

    async def read_summary(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> Any: ...

    async def delete_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ErrorCode: ...


def message(error: ErrorCode) -> str | None:
    if error is ErrorCode.NONE:
        return None
    return _GROUP_MESSAGES.get(error) or MESSAGES.get(error) or error.name


def _partition(index: int, error: ErrorCode, start: int = -1, leader: int = 0) -> dict[str, Any]:
    return {
        "partition_index": index,
        "start_offset": start,
        "leader_epoch": leader,
        "lag": -1,
        "error_code": int(error),
        "error_message": message(error),
    }


async def _summaries(
    persister: StatePersister,
    group_id: str,
    topic_id: uuid.UUID,
    partitions: list[int],
    end_offset: EndOffsets,
) -> list[dict[str, Any]]:
    out = []
    for p in partitions:
        summary = await persister.read_summary(group_id, topic_id, p, 0)
        if isinstance(summary, ErrorCode):
            out.append(_partition(p, ErrorCode.NONE))
            continue
        row = _partition(p, ErrorCode.NONE, summary.start_offset, summary.leader_epoch)
        dcc = getattr(summary, "delivery_complete_count", -1)
        end = end_offset(topic_id, p)
        if summary.start_offset != -1 and dcc != -1 and end is not None:
            row["lag"] = end - summary.start_offset - dcc
        out.append(row)
    return out


async def describe_group(
    persister: StatePersister,
    groups: ShareGroups | None,
    group: Mapping[str, Any],
    topics: TopicLookup,
    names: TopicNames,
    end_offset: EndOffsets,
) -> dict[str, Any]:
    """One DescribeShareGroupOffsets group entry (see the module docstring)."""
    group_id = str(group.get("group_id") or "")
    wanted = group.get("topics")
    out: list[dict[str, Any]] = []
    if wanted is None:
        view = ErrorCode.GROUP_ID_NOT_FOUND if groups is None else groups.lookup(group_id)
        if view is ErrorCode.GROUP_ID_NOT_FOUND:
            view = ShareGroupView(group_id, empty=True)
        if isinstance(view, ErrorCode):
            return {"group_id": group_id, "topics": [], **_error(view)}
        for topic_id, parts in sorted(view.partitions.items(), key=lambda kv: str(kv[0])):
            name = names(topic_id)
            if name is not None:
                rows = await _summaries(persister, group_id, topic_id, sorted(parts), end_offset)
                out.append({"topic_name": name, "topic_id": topic_id, "partitions": rows})
        return {"group_id": group_id, "topics": out, **_error(ErrorCode.NONE)}
    for topic in wanted:
        name = str(topic["topic_name"])
        found = topics(name)
        indexes = [int(p) for p in topic.get("partitions") or []]
        if found is None:
            rows = [_partition(p, ErrorCode.NONE) for p in indexes]
            out.append({"topic_name": name, "topic_id": ZERO_UUID, "partitions": rows})
            continue
        rows = await _summaries(persister, group_id, found[0], indexes, end_offset)
        out.append({"topic_name": name, "topic_id": found[0], "partitions": rows})
    return {"group_id": group_id, "topics": out, **_error(ErrorCode.NONE)}


def _error(error: ErrorCode) -> dict[str, Any]:
    return {"error_code": int(error), "error_message": message(error)}


def _checked_group(groups: ShareGroups | None, group_id: str) -> ShareGroupView | ErrorCode:
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID
    view = ErrorCode.GROUP_ID_NOT_FOUND if groups is None else groups.lookup(group_id)
    if isinstance(view, ShareGroupView) and not view.empty:
        return ErrorCode.NON_EMPTY_GROUP
    return view


async def alter_offsets(
    persister: StatePersister,
    groups: ShareGroups | None,
    request: Mapping[str, Any],
    topics: TopicLookup,
) -> dict[str, Any]:
    """An AlterShareGroupOffsets response body (without throttle time)."""
    group_id = str(request.get("group_id") or "")
    view = _checked_group(groups, group_id)
    if isinstance(view, ErrorCode):
        return {"responses": [], **_error(view)}
    altered: dict[uuid.UUID, set[int]] = {}
    responses = []
    for topic in request.get("topics") or []:
        name = str(topic["topic_name"])
        found = topics(name)
        rows = []
        for p in topic.get("partitions") or []:
            index = int(p["partition_index"])
            if found is None or not 0 <= index < found[1]:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = await persister.initialize_state(
                    group_id, found[0], index, view.state_epoch, int(p["start_offset"])
                )
                if error is ErrorCode.NONE:
                    altered.setdefault(found[0], set()).add(index)
            rows.append({"partition_index": index, **_error(error)})
        topic_id = ZERO_UUID if found is None else found[0]
        responses.append({"topic_name": name, "topic_id": topic_id, "partitions": rows})
    if altered and groups is not None:
        groups.offsets_altered(group_id, altered)
    return {"responses": responses, **_error(ErrorCode.NONE)}


async def delete_offsets(
    persister: StatePersister,
    groups: ShareGroups | None,
    request: Mapping[str, Any],
    topics: TopicLookup,
) -> dict[str, Any]:
    """A DeleteShareGroupOffsets response body (without throttle time)."""
    group_id = str(request.get("group_id") or "")
    view = _checked_group(groups, group_id)
    if isinstance(view, ErrorCode):
        return {"responses": [], **_error(view)}
    deleted: set[uuid.UUID] = set()
    responses = []
    for topic in request.get("topics") or []:
        name = str(topic["topic_name"])
        found = topics(name)
        if found is None:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            error = ErrorCode.NONE
            for index in range(found[1]):
                result = await persister.delete_state(group_id, found[0], index)
                if error is ErrorCode.NONE and result is not ErrorCode.NONE:
                    error = result
            if error is ErrorCode.NONE:
                deleted.add(found[0])
        topic_id = ZERO_UUID if found is None else found[0]
        responses.append({"topic_name": name, "topic_id": topic_id, **_error(error)})
    if deleted and groups is not None:
        groups.offsets_deleted(group_id, deleted)
    return {"responses": responses, **_error(ErrorCode.NONE)}
