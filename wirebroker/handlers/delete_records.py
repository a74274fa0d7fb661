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

Then the wait (Kafka's DelayedDeleteRecords): a partition that succeeded is answered once its
low watermark reaches the requested offset (the least log start offset of the leader and of the
followers on live brokers, `Partition.low_watermark`; a follower moves its log start to the
leader's from its next Fetch response and reports it in the Fetch after). Per partition:

    low watermark >= requested    NONE, low_watermark = the low watermark
    leadership lost meanwhile     NOT_LEADER_OR_FOLLOWER, -1
    timeout_ms passed first       REQUEST_TIMED_OUT, low_watermark = the low watermark then

A single replica (a single broker, replication factor 1) has no followers: its low watermark is
its log start offset, so it answers at once, with no await. All partitions of a request share
one deadline (timeout_ms from the request's arrival). Without a purgatory (`Services.
produce_waiters` None, some unit tests) a low watermark not there at once is REQUEST_TIMED_OUT.
Waiters re-check when a follower reports a higher log start offset and on every HW, ISR or role
change; a follower broker that dies stops counting at the next of these (its ISR removal).
`low_watermark` is -1 with any other error.
Results are grouped by topic, in request order; a partition named twice answers once.

Skipped: authorization, throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._configs import error_of
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler
from wirebroker.metadata.names import is_internal
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.delete_records import (
        DeleteRecordsPartitionResult,
        DeleteRecordsRequest,
        DeleteRecordsResponse,
        DeleteRecordsTopicResult,
    )
    from wirebroker.replication.partition import Partition

    _Pending = tuple[Partition, int]

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


def _delete(ctx: RequestContext, topic: str, index: int, offset: int) -> ErrorCode | _Pending:
    """The leader's own delete: an error, or what to wait for."""
    part = ctx.services.replicas.partition(topic, index)
    if part is None:
        return ctx.services.replicas.missing_code(topic, index)
    if is_internal(topic):
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if not part.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if not part.deletes_records:
        return ErrorCode.POLICY_VIOLATION
    target = part.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > part.high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE
    if target > part.log_start_offset:
        try:
            part.delete_records_before(target)
        except Exception as exc:
            found = error_of(exc)
            if found is None:
                raise
            return found[0]
    return part, target


async def _answer(
    ctx: RequestContext, topic: str, index: int, offset: int, deadline: float
) -> tuple[ErrorCode, int]:
    """(error code, low watermark) of one partition, once known (see the module doc)."""
    deleted = _delete(ctx, topic, index, offset)
    if isinstance(deleted, ErrorCode):
        return deleted, INVALID_LOW_WATERMARK
    part, target = deleted
    cluster = ctx.services.cluster

    def is_alive(node_id: int) -> bool:
        return cluster.broker(node_id) is not None

    status = part.delete_records_status(target, is_alive)
    if status is not None:
        return status
    waiters = ctx.services.produce_waiters
    if waiters is None:
        return ErrorCode.REQUEST_TIMED_OUT, part.low_watermark(is_alive)
    return await waiters.wait_low_watermark(part, target, deadline, is_alive)


@handler(ApiKey.DELETE_RECORDS)
async def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    deadline = trio.current_time() + max(0, int(req["timeout_ms"])) / 1000.0
    grouped: dict[str, dict[int, int]] = {}
    for topic in req["topics"] or []:
        partitions = grouped.setdefault(topic["name"], {})
        for p in topic["partitions"] or []:
            partitions[int(p["partition_index"])] = int(p["offset"])
    topics: list[DeleteRecordsTopicResult] = []
    for name, partitions in grouped.items():
        results: list[DeleteRecordsPartitionResult] = []
        denied = not _authz.allowed(ctx, ResourceType.TOPIC, name)  # DELETE
        for index, offset in partitions.items():
            if denied:
                code, low = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1
            else:
                code, low = await _answer(ctx, name, index, offset, deadline)
            results.append({"partition_index": index, "low_watermark": low, "error_code": code})
        topics.append({"name": name, "partitions": results})
    return {"throttle_time_ms": 0, "topics": topics}
