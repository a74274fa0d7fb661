"""ListPartitionReassignments (key 46), version 0.

In a cluster: the partitions with a reassignment in progress (`TopicAdmin.reassignments`,
from this broker's ZooKeeper mirror) with their full replica set, adding and removing
replicas, filtered by the listed partitions when `topics` is not null.

A single broker never has a reassignment in progress (AlterPartitionReassignments to
the current replica completes at once), and Kafka lists only partitions with one in progress:
the answer is always error NONE with no topics, for `topics` null (every partition) and for
any listed partitions, known or not (Kafka also leaves out partitions it does not know).

Skipped: authorization, timeout_ms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.list_partition_reassignments import (
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
        OngoingPartitionReassignment,
    )


@handler(ApiKey.LIST_PARTITION_REASSIGNMENTS)
async def handle(
    ctx: RequestContext, req: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    if not _authz.cluster(ctx):  # DESCRIBE
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": _authz.CLUSTER_DENIED,
            "topics": [],
        }
    ongoing = ctx.services.admin.reassignments() or {}
    wanted = req.get("topics")
    if wanted is not None:
        asked = {(t["name"], int(i)) for t in wanted for i in t["partition_indexes"]}
        ongoing = {k: v for k, v in ongoing.items() if k in asked}
    by_topic: dict[str, list[OngoingPartitionReassignment]] = {}
    for (topic, index), (replicas, adding, removing) in sorted(ongoing.items()):
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": index,
                "replicas": replicas,
                "adding_replicas": adding,
                "removing_replicas": removing,
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
    }
