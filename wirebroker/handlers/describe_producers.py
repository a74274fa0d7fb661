"""DescribeProducers (API key 61): serves v0. The producer state of partitions this broker
leads (Kafka's `kafka-transactions.sh describe-producers`).

Per partition: unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; not the leader
NOT_LEADER_OR_FOLLOWER (error_message says so); else every producer the log's producer state
holds: producer id, epoch, last sequence (-1 when it has no retained batch), last timestamp,
coordinator epoch of its last marker (-1: none), current_txn_start_offset (first offset of its
open transaction, -1: none). Skipped: authorization.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.describe_producers import (
        DescribeProducersRequest,
        DescribeProducersResponse,
        PartitionResponse,
        ProducerState,
        TopicResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _partition(ctx: RequestContext, topic: str, index: int) -> PartitionResponse:
    if not _authz.allowed(ctx, ResourceType.TOPIC, topic):  # READ
        denied = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return {"partition_index": index, "error_code": denied, "active_producers": []}
    replicas = ctx.services.replicas
    part = replicas.partition(topic, index)
    if part is None:
        code = replicas.missing_code(topic, index)
        return {"partition_index": index, "error_code": int(code), "active_producers": []}
    if not part.is_leader:
        return {
            "partition_index": index,
            "error_code": int(ErrorCode.NOT_LEADER_OR_FOLLOWER),
            "error_message": f"This server is not the leader for partition {topic}-{index}",
            "active_producers": [],
        }
    producers: list[ProducerState] = [
        {
            "producer_id": e.producer_id,
            "producer_epoch": e.epoch,
            "last_sequence": e.last_seq,
            "last_timestamp": e.last_timestamp,
            "coordinator_epoch": e.coordinator_epoch,
            "current_txn_start_offset": e.txn_first_offset,
        }
        for e in part.log.producer_entries()
    ]
    return {"partition_index": index, "error_code": 0, "active_producers": producers}


@handler(ApiKey.DESCRIBE_PRODUCERS)
async def handle(ctx: RequestContext, req: DescribeProducersRequest) -> DescribeProducersResponse:
    topics: list[TopicResponse] = []
    for t in req.get("topics") or []:
        name = str(t["name"])
        topics.append(
            {
                "name": name,
                "partitions": [_partition(ctx, name, int(i)) for i in t["partition_indexes"]],
            }
        )
    return {"throttle_time_ms": 0, "topics": topics}
