"""DescribeTopicPartitions (key 75), version 0: topic metadata in pages (KIP-966).

Which topics: the listed names, or every topic when the list is empty (internal topics
included); answered in name order, duplicates once. Paging (as Kafka 4.x):

    limit           min(response_partition_limit, 2000): partitions per response (Kafka's
                    max.request.partition.size.limit default); a value < 1 means 2000
    cursor          where to start: topics before cursor["topic_name"] are skipped, and that
                    topic starts at cursor["partition_index"]. With every topic asked for, the
                    cursor's topic need not exist (the page starts at the first name after
                    it); with listed topics, a cursor naming none of them answers every listed
                    topic INVALID_REQUEST (authorized operations -2147483648, "not provided"),
                    as Kafka's handler refuses the request
    next_cursor     null when everything fitted; else the first partition left out (the next
                    topic's partition 0 when a page ends exactly at a topic's end)

A listed name that does not exist gets UNKNOWN_TOPIC_OR_PARTITION with no partitions (it
takes no room in the page); a topic whose partitions all precede the cursor is left out.
Partition fields: error NONE, partition_index, leader_id (this broker), leader_epoch,
replica_nodes, isr_nodes, eligible_leader_replicas [] and last_known_elr [] (no ELR on one
broker), offline_replicas []. topic_authorized_operations: every topic operation (no ACLs),
the same bit set Metadata uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._topics import NIL_UUID
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.metadata import TOPIC_ALL_OPERATIONS
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.describe_topic_partitions import (
        DescribeTopicPartitionsRequest,
        DescribeTopicPartitionsResponse,
        DescribeTopicPartitionsResponseCursor,
        DescribeTopicPartitionsResponseTopic,
    )

MAX_PARTITIONS_PER_RESPONSE = 2000


#: topic_authorized_operations of a refused request: Kafka's default, "not provided".
_OPERATIONS_NOT_PROVIDED = -(2**31)


def _error_topic(
    name: str, code: int, operations: int = TOPIC_ALL_OPERATIONS
) -> DescribeTopicPartitionsResponseTopic:
    return {
        "error_code": code,
        "name": name,
        "topic_id": NIL_UUID,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": operations,
    }


@handler(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
async def handle(
    ctx: RequestContext, req: DescribeTopicPartitionsRequest
) -> DescribeTopicPartitionsResponse:
    view = ctx.services.cluster
    requested = [t["name"] for t in req["topics"]]
    names = sorted(set(requested)) if requested else sorted(info.name for info in view.all_topics())
    denied = _authz.denied_names(ctx, ResourceType.TOPIC, names)  # DESCRIBE
    if not requested:  # every topic: only those it may describe
        names = [n for n in names if n not in denied]
    limit = int(req["response_partition_limit"])
    limit = MAX_PARTITIONS_PER_RESPONSE if limit < 1 else min(limit, MAX_PARTITIONS_PER_RESPONSE)
    cursor = req.get("cursor")
    if requested and cursor is not None and cursor["topic_name"] not in names:
        refused = ErrorCode.INVALID_REQUEST
        return {
            "throttle_time_ms": 0,
            "topics": [_error_topic(n, refused, _OPERATIONS_NOT_PROVIDED) for n in names],
            "next_cursor": None,
        }
    if cursor is not None:
        names = [n for n in names if n >= cursor["topic_name"]]
    topics: list[DescribeTopicPartitionsResponseTopic] = []
    left = limit
    next_cursor: DescribeTopicPartitionsResponseCursor | None = None
    for name in names:
        info = view.topic(name)
        if name in denied:
            topics.append(
                _error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, _OPERATIONS_NOT_PROVIDED)
            )
            continue
        if info is None:
            topics.append(_error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        start = (
            int(cursor["partition_index"])
            if cursor is not None and name == cursor["topic_name"]
            else 0
        )
        parts = [p for p in view.partitions(name) if p.index >= start]
        if not parts:
            continue
        if left == 0:
            next_cursor = {"topic_name": name, "partition_index": parts[0].index}
            break
        page, rest = parts[:left], parts[left:]
        left -= len(page)
        topics.append(
            {
                "error_code": ErrorCode.NONE,
                "name": name,
                "topic_id": info.topic_id,
                "is_internal": info.is_internal,
                "partitions": [
                    {
                        "error_code": p.error_code,
                        "partition_index": p.index,
                        "leader_id": p.leader,
                        "leader_epoch": p.leader_epoch,
                        "replica_nodes": list(p.replicas),
                        "isr_nodes": list(p.isr),
                        "eligible_leader_replicas": [],
                        "last_known_elr": [],
                        "offline_replicas": list(p.offline),
                    }
                    for p in page
                ],
                "topic_authorized_operations": TOPIC_ALL_OPERATIONS,
            }
        )
        if rest:
            next_cursor = {"topic_name": name, "partition_index": rest[0].index}
            break
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}
