"""Topic and partition lookup shared by the handlers.

Requests name a topic by `name` (older versions) or by `topic_id` (Fetch v13+, Produce v13+,
Metadata v10+ with a non-zero id, DeleteTopics v6, OffsetCommit/OffsetFetch v10). An unknown
id answers UNKNOWN_TOPIC_ID, an unknown name UNKNOWN_TOPIC_OR_PARTITION: `resolve_topic`, and
`resolve_entry` for a request entry whose response names the topic the same way.
`answer_partition` answers for one partition, fencing a stale or future leader epoch and (unless
told otherwise) answering NOT_LEADER_OR_FOLLOWER from a broker that does not lead it; a
partition this broker does not host answers NOT_LEADER_OR_FOLLOWER when its topic exists
(another broker hosts it), else UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, TypeVar

from protocol.errors import ErrorCode
from wirebroker.log.errors import LogError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from wirebroker.metadata.topic_store import TopicInfo
    from wirebroker.metadata.view import ClusterView
    from wirebroker.replication.partition import Partition
    from wirebroker.replication.replica_manager import ReplicaManager

__all__ = ["NIL_UUID", "answer_partition", "resolve_entry", "resolve_topic", "topic_lookup"]

log = logging.getLogger(__name__)

NIL_UUID = uuid.UUID(int=0)
Q = TypeVar("Q")
R = TypeVar("R")


def topic_lookup(view: ClusterView) -> Callable[[str], tuple[uuid.UUID, int] | None]:
    """A topic name -> (its id, its partition count), None for an unknown topic: how the
    group coordinator and the share offsets APIs are given the topics."""

    def lookup(name: str) -> tuple[uuid.UUID, int] | None:
        info = view.topic(name)
        return None if info is None else (info.topic_id, info.partitions)

    return lookup


def resolve_topic(
    view: ClusterView,
    *,
    by_id: bool,
    name: str | None = None,
    topic_id: uuid.UUID | None = None,
) -> tuple[TopicInfo | None, ErrorCode]:
    """(the topic, NONE), or (None, the error code of an unknown one): by `topic_id` when
    `by_id`, else by `name`."""
    if by_id:
        info = view.topic_by_id(topic_id) if topic_id is not None else None
        missing = ErrorCode.UNKNOWN_TOPIC_ID
    else:
        info = view.topic(name) if name is not None else None
        missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return info, (ErrorCode.NONE if info is not None else missing)


def resolve_entry(
    view: ClusterView, entry: Mapping[str, Any], *, by_id: bool, name_key: str
) -> tuple[dict[str, Any], TopicInfo | None, ErrorCode]:
    """A request's topic entry resolved by its `topic_id` (when `by_id`) or its `name_key`
    field: (the response's naming field, {"topic_id": id} or {name_key: name}; the topic or
    None; NONE or the error of an unknown topic)."""
    if by_id:
        topic_id = entry["topic_id"]
        return {"topic_id": topic_id}, *resolve_topic(view, by_id=True, topic_id=topic_id)
    name = entry[name_key]
    return {name_key: name}, *resolve_topic(view, by_id=False, name=name)


def answer_partition(
    replicas: ReplicaManager,
    name: str | None,
    index: int,
    current_leader_epoch: int,
    request: Q,
    answer: Callable[[Partition, Q], R],
    failed: Callable[[int, ErrorCode], R],
    *,
    require_leader: bool = True,
) -> R:
    """`answer(partition, request)` for a partition this broker has at the client's current
    leader epoch (and leads, when `require_leader`); else `failed(index, code)`:
    UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER, the fencing error, the code of a
    `LogError` that `answer` raised, or UNKNOWN for any other exception (logged with
    `answer`'s name)."""
    part = replicas.partition(name, index) if name is not None else None
    if part is None:
        return failed(index, replicas.missing_code(name, index))
    if require_leader:
        code = part.check_leader(current_leader_epoch)
    else:
        code = part.check_leader_epoch(current_leader_epoch)
    if code is not ErrorCode.NONE:
        return failed(index, code)
    try:
        return answer(part, request)
    except LogError as exc:
        return failed(index, exc.error_code)
    except Exception:
        log.exception("%s of %s-%d failed", answer.__name__, name, index)
        return failed(index, ErrorCode.UNKNOWN)
