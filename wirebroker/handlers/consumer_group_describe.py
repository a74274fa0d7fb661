"""ConsumerGroupDescribe (API key 69, KIP-848): serves v0-1, as Kafka 4.4.

One entry per requested group id (`GroupCoordinatorRuntime.consumer_group_describe`): state
(Empty, Assigning, Reconciling, Stable), group and assignment epochs, the assignor, and each
member with its epoch, client, subscription, current and target assignment (topic ids with
their names; member_type v1+: 1, a consumer-protocol member, 0 a classic one). An unknown group:
GROUP_ID_NOT_FOUND "Group <id> not found."; a classic group: "Group <id> is not a consumer
group." (librdkafka and the Java admin then fall back to DescribeGroups).
authorized_operations: as DescribeGroups. No group coordinator: COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.consumer.messages import DescribedConsumerGroup
from wirebroker.group.consumer.model import Assignment
from wirebroker.handlers import _authz
from wirebroker.handlers.describe_groups import (
    AUTHORIZED_OPERATIONS_OMITTED,
    GROUP_ALL_OPERATIONS,
)
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages import consumer_group_describe as wire
    from wirebroker.handlers.context import RequestContext

__all__ = ["describe_response", "handle"]

#: the member type of a consumer-protocol member (v1+; 0 is a classic member)
_CLASSIC_MEMBER = 0
_CONSUMER_MEMBER = 1


def _assignment(a: Assignment, name_of: Callable[[uuid.UUID], str]) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": t, "topic_name": name_of(t), "partitions": sorted(ps)}
            for t, ps in sorted(a.items(), key=lambda kv: str(kv[0]))
        ]
    }


def _group(g: DescribedConsumerGroup, name_of: Callable[[uuid.UUID], str]) -> dict[str, Any]:
    return {
        "error_code": int(g.error),
        "error_message": g.error_message,
        "group_id": g.group_id,
        "group_state": g.state,
        "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch,
        "assignor_name": g.assignor_name,
        "members": [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex or "",
                "assignment": _assignment(m.assignment, name_of),
                "target_assignment": _assignment(m.target_assignment, name_of),
                "member_type": _CLASSIC_MEMBER if m.classic else _CONSUMER_MEMBER,
            }
            for m in g.members
        ],
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def describe_response(
    groups: list[DescribedConsumerGroup], name_of: Callable[[uuid.UUID], str]
) -> wire.ConsumerGroupDescribeResponse:
    described: list[Any] = [_group(g, name_of) for g in groups]
    return {"throttle_time_ms": 0, "groups": described}


@handler(ApiKey.CONSUMER_GROUP_DESCRIBE)
async def handle(
    ctx: RequestContext, req: wire.ConsumerGroupDescribeRequest
) -> wire.ConsumerGroupDescribeResponse:
    group_ids = [str(g) for g in req.get("group_ids") or []]
    coordinator = ctx.services.group_coordinator
    view = ctx.services.cluster

    def name_of(topic_id: uuid.UUID) -> str:
        info = view.topic_by_id(topic_id)
        return "" if info is None else info.name

    if coordinator is None:
        unavailable = [
            DescribedConsumerGroup(g, ErrorCode.COORDINATOR_NOT_AVAILABLE) for g in group_ids
        ]
        return describe_response(unavailable, name_of)
    denied = _authz.denied_names(ctx, ResourceType.GROUP, group_ids)
    described = {
        g.group_id: g
        for g in coordinator.consumer_group_describe([g for g in group_ids if g not in denied])
    }
    refused = DescribedConsumerGroup("", ErrorCode.GROUP_AUTHORIZATION_FAILED)
    groups = [described.get(g) or DescribedConsumerGroup(g, refused.error) for g in group_ids]
    answer = describe_response(groups, name_of)
    if req.get("include_authorized_operations"):
        for group in answer["groups"]:
            if group["error_code"] == 0:
                group["authorized_operations"] = _authz.operations_bits(
                    ctx, ResourceType.GROUP, group["group_id"], GROUP_ALL_OPERATIONS
                )
    return answer
