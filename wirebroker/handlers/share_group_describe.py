"""ShareGroupDescribe (API key 77, KIP-932): serves v1, as Kafka 4.4.

One entry per requested group id (`GroupCoordinatorRuntime.share_group_describe`): state
(Empty, Stable), group and assignment epochs, the assignor ("simple"), and each member with
its epoch, client, rack, subscription and assignment (topic ids with their names). An
unknown group: GROUP_ID_NOT_FOUND "Group <id> not found."; a group of another type: "Group
<id> is not a share group.". authorized_operations: as DescribeGroups. No group
coordinator: COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.share.messages import DescribedShareGroup
from wirebroker.group.share.model import Assignment
from wirebroker.handlers import _authz
from wirebroker.handlers.describe_groups import (
    AUTHORIZED_OPERATIONS_OMITTED,
    GROUP_ALL_OPERATIONS,
)
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclOperation, ResourceType

if TYPE_CHECKING:
    from protocol.messages import share_group_describe as wire
    from wirebroker.handlers.context import RequestContext

__all__ = ["describe_response", "handle"]


def _assignment(a: Assignment, name_of: Callable[[uuid.UUID], str]) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": t, "topic_name": name_of(t), "partitions": sorted(ps)}
            for t, ps in sorted(a.items(), key=lambda kv: str(kv[0]))
        ]
    }


def _group(g: DescribedShareGroup, name_of: Callable[[uuid.UUID], str]) -> dict[str, Any]:
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
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "assignment": _assignment(m.assignment, name_of),
            }
            for m in g.members
        ],
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def describe_response(
    groups: list[DescribedShareGroup], name_of: Callable[[uuid.UUID], str]
) -> wire.ShareGroupDescribeResponse:
    described: list[Any] = [_group(g, name_of) for g in groups]
    return {"throttle_time_ms": 0, "groups": described}


@handler(ApiKey.SHARE_GROUP_DESCRIBE)
async def handle(
    ctx: RequestContext, req: wire.ShareGroupDescribeRequest
) -> wire.ShareGroupDescribeResponse:
    group_ids = [str(g) for g in req.get("group_ids") or []]
    coordinator = ctx.services.group_coordinator
    view = ctx.services.cluster

    def name_of(topic_id: uuid.UUID) -> str:
        info = view.topic_by_id(topic_id)
        return "" if info is None else info.name

    if coordinator is None:
        unavailable = [
            DescribedShareGroup(g, ErrorCode.COORDINATOR_NOT_AVAILABLE) for g in group_ids
        ]
        return describe_response(unavailable, name_of)
    denied = _authz.denied_names(ctx, ResourceType.GROUP, group_ids, AclOperation.DESCRIBE)
    described = {
        g.group_id: g
        for g in coordinator.share_group_describe([g for g in group_ids if g not in denied])
    }
    groups = [
        described.get(g) or DescribedShareGroup(g, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        for g in group_ids
    ]
    answer = describe_response(groups, name_of)
    if req.get("include_authorized_operations"):
        for group in answer["groups"]:
            if group["error_code"] == 0:
                group["authorized_operations"] = _authz.operations_bits(
                    ctx, ResourceType.GROUP, group["group_id"], GROUP_ALL_OPERATIONS
                )
    return answer
