"""OffsetForLeaderEpoch (API key 23): serves v2-4 (the schema's range; v0-1 are gone in Kafka 4).

For each partition: the largest epoch <= the requested leader_epoch that the leader knows, and
the end offset of that epoch (the start offset of the next epoch, or the log end offset for the
latest epoch), per KIP-101/KIP-279, from the partition log's leader-epoch cache. An epoch older
than every known epoch answers leader_epoch -1, end_offset -1 with NONE, as Kafka.
Errors: unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; current_leader_epoch (v2+):
> ours UNKNOWN_LEADER_EPOCH, < ours FENCED_LEADER_EPOCH, -1 no check; then a broker that does not
lead the partition (or does not host it) -> NOT_LEADER_OR_FOLLOWER, for consumers and followers
alike (Kafka answers only as leader). Failed partitions answer leader_epoch -1, end_offset -1.
replica_id (v3+; -2 for consumers, a broker id for followers) is accepted and not checked: the
answer is the same for both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._topics import answer_partition
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.offset_for_leader_epoch import (
        EpochEndOffset,
        OffsetForLeaderEpochRequest,
        OffsetForLeaderEpochResponse,
        OffsetForLeaderPartition,
        OffsetForLeaderTopicResult,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.replication.partition import Partition

__all__ = ["handle"]


def _answer(
    index: int, code: ErrorCode = ErrorCode.NONE, *, epoch: int = -1, end_offset: int = -1
) -> EpochEndOffset:
    return {
        "error_code": int(code),
        "partition": index,
        "leader_epoch": epoch,
        "end_offset": end_offset,
    }


def end_offset_for_epoch(part: Partition, pdata: OffsetForLeaderPartition) -> EpochEndOffset:
    epoch, end_offset = part.end_offset_for_epoch(int(pdata.get("leader_epoch")))
    return _answer(part.index, epoch=epoch, end_offset=end_offset)


@handler(ApiKey.OFFSET_FOR_LEADER_EPOCH)
async def handle(
    ctx: RequestContext, req: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse | None:
    replicas = ctx.services.replicas
    topics_out: list[OffsetForLeaderTopicResult] = []
    # a broker with CLUSTER_ACTION may ask of any topic; a consumer (KIP-320) DESCRIBE each
    follower = _authz.enabled(ctx) and _authz.cluster(ctx)
    for topic in req.get("topics") or []:
        name = topic.get("topic")
        denied = not follower and not _authz.allowed(ctx, ResourceType.TOPIC, name)
        partitions_out: list[EpochEndOffset] = []
        for pdata in topic.get("partitions") or []:
            index = int(pdata.get("partition"))
            if denied:
                partitions_out.append(_answer(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            epoch = int(pdata.get("current_leader_epoch", -1))
            partitions_out.append(
                answer_partition(replicas, name, index, epoch, pdata, end_offset_for_epoch, _answer)
            )
        topics_out.append({"topic": name, "partitions": partitions_out})
    return {"throttle_time_ms": 0, "topics": topics_out}
