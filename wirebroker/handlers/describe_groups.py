"""DescribeGroups (API key 15): serves v0-6.

One entry per requested group id, in request order (`GroupCoordinatorRuntime.describe_groups`,
the core's rules): group_state, protocol_type, protocol_data (the selected protocol, Stable
groups only), members (member_id, group_instance_id (v4+), client_id, client_host "/<ip>",
member_metadata (Stable groups only) and member_assignment). An unknown group is described as
Dead with no members; v6+ adds GROUP_ID_NOT_FOUND and "Group <id> not found." (a KIP-848
consumer group: "Group <id> is not a classic group.", as Kafka 4.4). Group-level
errors: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.

authorized_operations (v3+): -2147483648 ("not provided") unless include_authorized_operations
is set; then, for groups answered without error, every operation Kafka defines for a group
(there are no ACLs): READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS as a bit set (bit n
= AclOperation code n). No group coordinator: COORDINATOR_NOT_AVAILABLE for each group.
Skipped: authorization, throttling.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import DescribedGroup
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.describe_groups import (
        DescribedGroup as DescribedGroupEntry,
    )
    from protocol.messages.describe_groups import (
        DescribeGroupsRequest,
        DescribeGroupsResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "GROUP_ALL_OPERATIONS",
    "describe_groups_response",
    "handle",
]

AUTHORIZED_OPERATIONS_OMITTED = -2147483648
# AclOperation codes: READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
GROUP_ALL_OPERATIONS = sum(1 << code for code in (3, 6, 8, 10, 11))
_NOT_FOUND_VERSION = 6


def _described(version: int, g: DescribedGroup) -> DescribedGroupEntry:
    error, message = g.error, None
    if not g.exists and version >= _NOT_FOUND_VERSION:
        error = ErrorCode.GROUP_ID_NOT_FOUND
        message = g.error_message or f"Group {g.group_id} not found."
    return {
        "error_code": int(error),
        "error_message": message,
        "group_id": g.group_id,
        "group_state": g.state,
        "protocol_type": g.protocol_type,
        "protocol_data": g.protocol_data,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.member_metadata,
                "member_assignment": m.member_assignment,
            }
            for m in g.members
        ],
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def describe_groups_response(
    version: int, groups: Sequence[DescribedGroup]
) -> DescribeGroupsResponse:
    """The DescribeGroups response (authorized_operations left 'omitted')."""
    return {"throttle_time_ms": 0, "groups": [_described(version, g) for g in groups]}


@handler(ApiKey.DESCRIBE_GROUPS)
async def handle(ctx: RequestContext, req: DescribeGroupsRequest) -> DescribeGroupsResponse:
    version = ctx.api_version
    group_ids = [str(g) for g in req.get("groups") or []]
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        unavailable = [
            DescribedGroup(g, error=ErrorCode.COORDINATOR_NOT_AVAILABLE) for g in group_ids
        ]
        return describe_groups_response(version, unavailable)
    denied = _authz.denied_names(ctx, ResourceType.GROUP, group_ids)
    described = {
        g.group_id: g
        for g in coordinator.describe_groups(group_ids=[g for g in group_ids if g not in denied])
    }
    refused = DescribedGroup("", error=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    groups = [described.get(g) or refused._replace(group_id=g) for g in group_ids]
    answer = describe_groups_response(version, groups)
    if version >= 3 and req.get("include_authorized_operations"):
        for group in answer["groups"]:
            if group["error_code"] == 0:
                group["authorized_operations"] = _authz.operations_bits(
                    ctx, ResourceType.GROUP, group["group_id"], GROUP_ALL_OPERATIONS
                )
    return answer
