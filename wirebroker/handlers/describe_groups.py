"""DescribeGroups (API key 15): serves v0-6.

One entry per requested group id, in request order (`GroupCoordinatorRuntime.describe_groups`,
the core's rules): group_state, protocol_type, protocol_data (the selected protocol, Stable
groups only), members (member_id, group_instance_id (v4+), client_id, client_host "/<ip>",
member_metadata (Stable groups only) and member_assignment). An unknown group is described as
Dead with no members; v6+ adds GROUP_ID_NOT_FOUND and "Group <id> not found.". Group-level
errors: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.

authorized_operations (v3+): -2147483648 ("not provided") unless include_authorized_operations
is set; then, for groups answered without error, every operation Kafka defines for a group
(there are no ACLs): READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS as a bit set (bit n
= AclOperation code n). No group coordinator: COORDINATOR_NOT_AVAILABLE for each group.
Skipped: authorization, throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.describe_groups import DescribeGroupsRequest
    from wirebroker.handlers.context import RequestContext

__all__ = ["AUTHORIZED_OPERATIONS_OMITTED", "GROUP_ALL_OPERATIONS", "handle"]

AUTHORIZED_OPERATIONS_OMITTED = -2147483648
# AclOperation codes: READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
GROUP_ALL_OPERATIONS = sum(1 << code for code in (3, 6, 8, 10, 11))


@handler(ApiKey.DESCRIBE_GROUPS)
async def handle(ctx: RequestContext, req: DescribeGroupsRequest) -> dict[str, Any] | None:
    version = ctx.api_version
    group_ids = [str(g) for g in req.get("groups") or []]
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
                    "error_message": None,
                    "group_id": g,
                    "group_state": "",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                }
                for g in group_ids
            ],
        }
    answer = coordinator.describe_groups(api_version=version, group_ids=group_ids)
    if version >= 3 and req.get("include_authorized_operations"):
        for group in answer["groups"]:
            if group["error_code"] == 0:
                group["authorized_operations"] = GROUP_ALL_OPERATIONS
    return answer
