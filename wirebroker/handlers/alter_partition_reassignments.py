"""AlterPartitionReassignments (key 45), versions 0-1.

In a cluster (`TopicAdmin.alter_reassignments`, wirebroker.cluster.zk_topic_admin) a target
replica set starts a reassignment (KIP-455: /brokers/topics/<T> holds target + leaving
replicas, adding_replicas, removing_replicas; the new replicas catch up as followers and the
controller finishes once they are all in the ISR); null cancels one. Errors: unknown
partition, NO_REASSIGNMENT_IN_PROGRESS (cancel without one), INVALID_REPLICA_ASSIGNMENT
(empty, duplicates, a broker that is not live), INVALID_REPLICATION_FACTOR (a different
replica count while allow_replication_factor_change is false).

With one broker the only valid replica set is [this broker], which every partition already
has; a reassignment to it completes at once. Per partition, as Kafka's controller checks:

    unknown topic or partition index           UNKNOWN_TOPIC_OR_PARTITION
    replicas null (cancel a reassignment)      NO_REASSIGNMENT_IN_PROGRESS: none ever is
                                                 (no message, as Kafka)
    replicas empty, with duplicates, or        INVALID_REPLICA_ASSIGNMENT (error code 39,
      naming a broker other than this one        INVALID_REPLICATION_ASSIGNMENT here)
    replicas == [this broker]                  NONE (already the assignment: nothing moves)
The checks and Kafka's messages: wirebroker.metadata.reassignment.

Top-level error_code NONE; allow_replication_factor_change (v1) is echoed and changes nothing
(the only valid replica set has the current factor). Skipped: authorization, timeout_ms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler
from wirebroker.metadata.reassignment import check_target, unknown_partition

if TYPE_CHECKING:
    from protocol.messages.alter_partition_reassignments import (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
        ReassignablePartitionResponse,
        ReassignableTopicResponse,
    )


def _check(
    ctx: RequestContext, topic: str, index: int, replicas: list[int] | None, allow_rf: bool
) -> tuple[int, str | None]:
    info = ctx.services.cluster.topic(topic)
    if info is None or not 0 <= index < info.partitions:
        return unknown_partition(topic, index, topic_exists=info is not None)
    node = ctx.services.node_id
    problem = check_target(
        [node], replicas, ongoing=False, registered=(node,), allow_rf_change=allow_rf
    )
    return problem or (ErrorCode.NONE, None)


@handler(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
async def handle(
    ctx: RequestContext, req: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    allow_rf = bool(req.get("allow_replication_factor_change", True))
    if not _authz.cluster(ctx):  # ALTER
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {
            "throttle_time_ms": 0,
            "allow_replication_factor_change": allow_rf,
            "error_code": denied,
            "error_message": _authz.CLUSTER_DENIED,
            "responses": [
                {
                    "name": topic["name"],
                    "partitions": [
                        {
                            "partition_index": part["partition_index"],
                            "error_code": denied,
                            "error_message": _authz.CLUSTER_DENIED,
                        }
                        for part in topic["partitions"]
                    ],
                }
                for topic in req["topics"]
            ],
        }
    changes = [
        (
            topic["name"],
            int(part["partition_index"]),
            None if part["replicas"] is None else [int(r) for r in part["replicas"]],
        )
        for topic in req["topics"]
        for part in topic["partitions"]
    ]
    done = await ctx.services.admin.alter_reassignments(changes, allow_rf_change=allow_rf)
    responses: list[ReassignableTopicResponse] = []
    for topic in req["topics"]:
        partitions: list[ReassignablePartitionResponse] = []
        for part in topic["partitions"]:
            wanted = part["replicas"]
            replicas = None if wanted is None else [int(r) for r in wanted]
            key = (topic["name"], int(part["partition_index"]))
            if done is not None:
                code, message = done.get(key) or unknown_partition(*key, topic_exists=False)
            else:
                code, message = _check(ctx, key[0], key[1], replicas, allow_rf)
            partitions.append(
                {
                    "partition_index": part["partition_index"],
                    "error_code": code,
                    "error_message": message,
                }
            )
        responses.append({"name": topic["name"], "partitions": partitions})
    return {
        "throttle_time_ms": 0,
        "allow_replication_factor_change": bool(req.get("allow_replication_factor_change", True)),
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "responses": responses,
    }
