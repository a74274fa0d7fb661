"""OffsetDelete (API key 47): serves v0.

Per topic, before the coordinator (KafkaApis' order): an unknown topic answers
UNKNOWN_TOPIC_OR_PARTITION for each of its partitions, a partition index outside the topic
likewise for that partition. The rest goes to `GroupCoordinatorRuntime.delete_offsets` (the
core's rules, `wirebroker.group.offsets_manager`): top-level INVALID_GROUP_ID for "",
GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (a group with members that is not a `consumer` group);
per partition GROUP_SUBSCRIBED_TO_TOPIC for a topic the members consume, else NONE (a
tombstone is appended when an offset existed, before the answer). The response merges both, in
request order; a top-level error from the coordinator leaves only the partitions failed here.
No group coordinator: COORDINATOR_NOT_AVAILABLE. Skipped: authorization, throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import TopicPartitions
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.offset_delete import (
        OffsetDeleteRequest,
        OffsetDeleteResponse,
        OffsetDeleteResponsePartition,
        OffsetDeleteResponseTopic,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


@handler(ApiKey.OFFSET_DELETE)
async def handle(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return {
            "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
            "throttle_time_ms": 0,
            "topics": [],
        }
    if not _authz.allowed(ctx, ResourceType.GROUP, str(req.get("group_id") or "")):
        return {
            "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
            "throttle_time_ms": 0,
            "topics": [],
        }
    view = ctx.services.cluster
    request_topics = list(req.get("topics") or [])
    local: dict[tuple[str, int], ErrorCode] = {}
    valid: list[TopicPartitions] = []
    for t in request_topics:
        name = str(t.get("name") or "")
        info = view.topic(name)
        denied = not _authz.allowed(ctx, ResourceType.TOPIC, name)
        ok = []
        for p in t.get("partitions") or []:
            index = int(p.get("partition_index"))
            if denied:
                local[(name, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or not 0 <= index < info.partitions:
                local[(name, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                ok.append(index)
        if ok:
            valid.append(TopicPartitions(name, ok))

    answer = await coordinator.delete_offsets(group_id=str(req.get("group_id") or ""), topics=valid)
    remote = {
        (t.name, p.partition_index): int(p.error) for t in answer.topics for p in t.partitions
    }
    out_topics: list[OffsetDeleteResponseTopic] = []
    for t in request_topics:
        name = str(t.get("name") or "")
        parts: list[OffsetDeleteResponsePartition] = []
        for p in t.get("partitions") or []:
            index = int(p.get("partition_index"))
            if (name, index) in local:
                parts.append({"partition_index": index, "error_code": int(local[(name, index)])})
            elif (name, index) in remote:
                parts.append({"partition_index": index, "error_code": remote[(name, index)]})
        if parts:
            out_topics.append({"name": name, "partitions": parts})
    return {"error_code": int(answer.error), "throttle_time_ms": 0, "topics": out_topics}
