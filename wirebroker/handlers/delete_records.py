"""DeleteRecords (key 21), versions 0-2.

Moves a partition's log start offset forward (Kafka 4.x KafkaApis.handleDeleteRecordsRequest,
ReplicaManager.deleteRecordsOnLocalLog, Partition.deleteRecordsOnLeader). Per partition:

    unknown topic or partition    UNKNOWN_TOPIC_OR_PARTITION
    not hosted here               NOT_LEADER_OR_FOLLOWER (the topic has it on another broker)
    internal topic                INVALID_TOPIC_EXCEPTION (Kafka: "Cannot delete records of
                                  internal topic __consumer_offsets")
    not led by this broker        NOT_LEADER_OR_FOLLOWER
    cleanup.policy without delete POLICY_VIOLATION
    offset -1                     the high watermark
    offset < -1, or beyond the    OFFSET_OUT_OF_RANGE
    high watermark
    otherwise                     the log start offset becomes max(current, offset); whole
                                  segments below it are deleted by the log

`low_watermark` is the partition's log start offset afterwards (-1 with an error). The answer is
immediate (`timeout_ms` unused): Kafka waits until every follower moved its log start too;
followers here follow the leader's log start offset on their next fetch.
Results are grouped by topic, in request order; a partition named twice answers once.

Skipped: authorization, throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.cluster.names import is_internal
from wirebroker.handlers._configs import error_of
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.delete_records import (
        DeleteRecordsPartitionResult,
        DeleteRecordsRequest,
        DeleteRecordsResponse,
        DeleteRecordsTopicResult,
    )

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


def _delete(ctx: RequestContext, topic: str, index: int, offset: int) -> tuple[ErrorCode, int]:
    part = ctx.services.replicas.partition(topic, index)
    if part is None:
        return ctx.services.replicas.missing_code(topic, index), INVALID_LOW_WATERMARK
    if is_internal(topic):
        return ErrorCode.INVALID_TOPIC_EXCEPTION, INVALID_LOW_WATERMARK
    if not part.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, INVALID_LOW_WATERMARK
    if not part.deletes_records:
        return ErrorCode.POLICY_VIOLATION, INVALID_LOW_WATERMARK
    target = part.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > part.high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
    if target > part.log_start_offset:
        try:
            part.delete_records_before(target)
        except Exception as exc:
            found = error_of(exc)
            if found is None:
                raise
            return found[0], INVALID_LOW_WATERMARK
    return ErrorCode.NONE, part.log_start_offset


@handler(ApiKey.DELETE_RECORDS)
async def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    grouped: dict[str, dict[int, int]] = {}
    for topic in req["topics"] or []:
        partitions = grouped.setdefault(topic["name"], {})
        for p in topic["partitions"] or []:
            partitions[int(p["partition_index"])] = int(p["offset"])
    topics: list[DeleteRecordsTopicResult] = []
    for name, partitions in grouped.items():
        results: list[DeleteRecordsPartitionResult] = []
        for index, offset in partitions.items():
            code, low = _delete(ctx, name, index, offset)
            results.append({"partition_index": index, "low_watermark": low, "error_code": code})
        topics.append({"name": name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
