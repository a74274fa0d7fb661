"""OffsetFetch (API key 9): serves v1-10 (v0 read ZooKeeper and is not in Kafka 4.x's schema).

Requests
    v1-7    one group: group_id, topics (null from v2 = every committed offset of the group),
            require_stable (v7+): a partition with a pending transactional offset (a
            TxnOffsetCommit whose marker has not arrived) answers UNSTABLE_OFFSET_COMMIT,
            offset -1 (the client retries); without it the last committed offset is given.
    v8+     `groups`, each with group_id, topics (null = all), member_id / member_epoch (v9+:
            checked for KIP-848 consumer groups: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, as
            Kafka 4.4; member_id null skips the check); topics by name (v8-9) or by topic_id
            (v10).
Per group (`GroupCoordinatorRuntime.fetch_offsets`, the core's rules): a partition without a
commit (or of an unknown topic) answers offset -1, leader epoch -1, metadata "", error NONE;
group-level errors are COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
(the client retries). The empty group id is served (Kafka keeps it for compatibility).
v10: a topic id this broker does not know answers UNKNOWN_TOPIC_ID for its partitions; an "all
topics" answer leaves out topics that no longer exist (no id to give).

Responses
    v8+     `groups`: group_id, topics, error_code per group.
    v2-7    the one group lifted to the top level: topics + top-level error_code.
    v1      no top-level error field: a group-level error is put on every requested partition
            (offset -1), as Kafka's OffsetFetchResponse does for versions below 2.
committed_leader_epoch is sent from v5. No group coordinator: COORDINATOR_NOT_AVAILABLE.
Skipped: authorization (TOPIC_AUTHORIZATION_FAILED filtering), throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import FetchedPartition, OffsetFetchResult, TopicPartitions
from wirebroker.handlers import _authz
from wirebroker.handlers._topics import NIL_UUID, resolve_topic
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.offset_fetch import (
        OffsetFetchRequest,
        OffsetFetchRequestTopics,
        OffsetFetchResponse,
        OffsetFetchResponseGroup,
        OffsetFetchResponsePartitions,
        OffsetFetchResponseTopic,
        OffsetFetchResponseTopics,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.metadata.view import ClusterView

__all__ = ["fetch_group_response", "handle"]

_GROUPS_VERSION = 8
_MEMBER_EPOCH_VERSION = 9
_TOPIC_IDS_VERSION = 10


def _partition(index: int, error: ErrorCode) -> OffsetFetchResponsePartitions:
    return _fetched(FetchedPartition(index), error)


def _fetched(
    p: FetchedPartition, error: ErrorCode = ErrorCode.NONE
) -> OffsetFetchResponsePartitions:
    return {
        "partition_index": p.partition_index,
        "committed_offset": p.committed_offset,
        "committed_leader_epoch": p.committed_leader_epoch,
        "metadata": p.metadata,
        "error_code": int(error),
    }


def _group_topic(
    name: str, partitions: list[OffsetFetchResponsePartitions]
) -> OffsetFetchResponseTopics:
    return {"name": name, "partitions": partitions}


def fetch_group_response(result: OffsetFetchResult) -> OffsetFetchResponseGroup:
    """One group's answer in the v8+ shape, topics by name."""
    return {
        "group_id": result.group_id,
        "topics": [
            _group_topic(t.name, [_fetched(p) for p in t.partitions]) for t in result.topics
        ],
        "error_code": int(result.error),
    }


def _fetch_group(
    ctx: RequestContext,
    group_id: str,
    topics: list[OffsetFetchRequestTopics] | None,
    require_stable: bool,
    by_id: bool,
    member: tuple[str | None, int] = (None, -1),
) -> OffsetFetchResponseGroup:
    """One group's answer in the v8+ shape (topics by name, or by id when `by_id`)."""
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return {
            "group_id": group_id,
            "topics": [],
            "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
        }
    if not _authz.allowed(ctx, ResourceType.GROUP, group_id):
        return {
            "group_id": group_id,
            "topics": [],
            "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
        }
    view = ctx.services.cluster
    requested: list[TopicPartitions] | None = None
    unknown_ids: list[OffsetFetchResponseTopics] = []
    denied: list[OffsetFetchResponseTopics] = []  # topics it may not DESCRIBE
    denied_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if topics is not None:
        requested = []
        for t in topics:
            indexes = [int(i) for i in t.get("partition_indexes") or []]
            if by_id:
                topic_id = t.get("topic_id") or NIL_UUID
                info, missing = resolve_topic(view, by_id=True, topic_id=topic_id)
                if info is None:
                    unknown_ids.append(
                        {
                            "topic_id": topic_id,
                            "partitions": [_partition(i, missing) for i in indexes],
                        }
                    )
                    continue
                if not _authz.allowed(ctx, ResourceType.TOPIC, info.name):
                    refused = [_partition(i, denied_code) for i in indexes]
                    denied.append({"topic_id": topic_id, "partitions": refused})
                    continue
                requested.append(TopicPartitions(info.name, indexes))
            else:
                name = str(t.get("name") or "")
                if not _authz.allowed(ctx, ResourceType.TOPIC, name):
                    refused = [_partition(i, denied_code) for i in indexes]
                    denied.append({"name": name, "partitions": refused})
                    continue
                requested.append(TopicPartitions(name, indexes))
    answer = fetch_group_response(
        coordinator.fetch_offsets(
            group_id=group_id, topics=requested, member_id=member[0], member_epoch=member[1]
        )
    )  # member: v9+ (member id, epoch), checked for KIP-848 consumer groups
    if topics is None and _authz.enabled(ctx):  # every topic: only those it may DESCRIBE
        kept = [
            t
            for t in answer["topics"]
            if _authz.allowed(ctx, ResourceType.TOPIC, t.get("name", ""))
        ]
        answer = {**answer, "topics": kept}
    if require_stable and answer["error_code"] == 0:
        for answered in answer["topics"]:
            topic = answered.get("name", "")
            for p in answered["partitions"]:
                if coordinator.has_pending_txn_offset(group_id, topic, p["partition_index"]):
                    p.update(_partition(p["partition_index"], ErrorCode.UNSTABLE_OFFSET_COMMIT))
    if by_id and answer["error_code"] == 0:
        answer = {**answer, "topics": _by_id(view, answer["topics"]) + unknown_ids}
    if denied and answer["error_code"] == 0:
        answer = {**answer, "topics": [*answer["topics"], *denied]}
    return answer


def _by_id(view: ClusterView, topics: Any) -> list[OffsetFetchResponseTopics]:
    """Answered topics named by id (v10); topics that no longer exist are left out."""
    out: list[OffsetFetchResponseTopics] = []
    for answered in topics:
        info = view.topic(answered.get("name", ""))
        if info is not None:
            out.append({"topic_id": info.topic_id, "partitions": answered["partitions"]})
    return out


@handler(ApiKey.OFFSET_FETCH)
async def handle(ctx: RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse:
    version = ctx.api_version
    require_stable = bool(req.get("require_stable", False))
    if version >= _GROUPS_VERSION:
        by_id = version >= _TOPIC_IDS_VERSION
        groups: list[OffsetFetchResponseGroup] = []
        for g in req.get("groups") or []:
            topics = g.get("topics")
            groups.append(
                _fetch_group(
                    ctx,
                    str(g.get("group_id") or ""),
                    None if topics is None else list(topics),
                    require_stable,
                    by_id,
                    (g.get("member_id"), int(g.get("member_epoch", -1)))
                    if version >= _MEMBER_EPOCH_VERSION
                    else (None, -1),
                )
            )
        return {"throttle_time_ms": 0, "groups": groups}

    v1_topics = req.get("topics")
    requested: list[OffsetFetchRequestTopics] | None = None
    if v1_topics is not None:  # the v8+ shape by name carries the same fields
        requested = [
            {"name": t["name"], "partition_indexes": t["partition_indexes"]} for t in v1_topics
        ]
    answer = _fetch_group(ctx, str(req.get("group_id") or ""), requested, require_stable, False)
    error = ErrorCode(answer["error_code"])
    out_topics: list[OffsetFetchResponseTopic] = [
        {"name": t.get("name", ""), "partitions": list(t["partitions"])} for t in answer["topics"]
    ]
    if version < 2 and error is not ErrorCode.NONE:
        out_topics = [
            {
                "name": t.get("name", ""),
                "partitions": [_partition(int(i), error) for i in t["partition_indexes"] or []],
            }
            for t in requested or []
        ]
    return {"throttle_time_ms": 0, "topics": out_topics, "error_code": int(error)}
