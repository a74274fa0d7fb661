"""LeaveGroup (API key 13): serves v0-5 (classic protocol).

v0-2 name one `member_id`; the answer is a top-level error_code (that member's). v3+ carry a
batch of `members` (member_id, group_instance_id, reason v5+); each gets its own error_code in
`members` (echoing member_id and group_instance_id) and the top-level error_code is NONE unless
the whole request failed (INVALID_GROUP_ID for "", COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS). An empty member id with a group_instance_id removes that static
member (the admin client's removeMembersFromConsumerGroup). Departures start a rebalance; the
rules are the core's (`wirebroker.group.membership`). reason is ignored (Kafka
only logs it). No group coordinator: COORDINATOR_NOT_AVAILABLE. Skipped: authorization,
throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import LeaveMember, LeaveResult
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.leave_group import (
        LeaveGroupRequest,
        LeaveGroupResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle", "leave_response"]

_BATCH_VERSION = 3


def leave_response(version: int, result: LeaveResult) -> LeaveGroupResponse:
    """v0-2: the one member's error at the top level (or the request's); v3+: `members`."""
    if version < _BATCH_VERSION:
        error = result.members[0].error if result.members else result.error
        return {"throttle_time_ms": 0, "error_code": int(error)}
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "members": [
            {
                "member_id": m.member.member_id,
                "group_instance_id": m.member.group_instance_id,
                "error_code": int(m.error),
            }
            for m in result.members
        ],
    }


@handler(ApiKey.LEAVE_GROUP)
async def handle(ctx: RequestContext, req: LeaveGroupRequest) -> LeaveGroupResponse:
    version = ctx.api_version
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
            "members": [],
        }
    if not _authz.allowed(ctx, ResourceType.GROUP, str(req.get("group_id") or "")):
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
            "members": [],
        }
    if version >= _BATCH_VERSION:
        members = [
            LeaveMember(str(m.get("member_id") or ""), m.get("group_instance_id"), m.get("reason"))
            for m in req.get("members") or []
        ]
    else:
        members = [LeaveMember(str(req.get("member_id") or ""))]
    result = await coordinator.leave_group(group_id=str(req.get("group_id") or ""), members=members)
    return leave_response(version, result)
