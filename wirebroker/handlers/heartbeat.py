"""Heartbeat (API key 12): serves v0-4 (classic protocol).

`GroupCoordinatorRuntime.heartbeat` renews the member's session; the answer is the core's
(`wirebroker.group.membership`): NONE in Stable and CompletingRebalance,
REBALANCE_IN_PROGRESS while the group prepares a rebalance (the member must rejoin),
UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID, INVALID_GROUP_ID for "", NONE while
the group's partition is loading (Kafka answers blindly), NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE as the coordinator's state says. group_instance_id from v3.
No group coordinator: COORDINATOR_NOT_AVAILABLE. Skipped: authorization, throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import HeartbeatRequest
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages import heartbeat as wire
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


@handler(ApiKey.HEARTBEAT)
async def handle(ctx: RequestContext, req: wire.HeartbeatRequest) -> wire.HeartbeatResponse:
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE)}
    if not _authz.allowed(ctx, ResourceType.GROUP, str(req.get("group_id") or "")):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    error = coordinator.heartbeat(
        HeartbeatRequest(
            group_id=str(req.get("group_id") or ""),
            generation_id=int(req.get("generation_id")),
            member_id=str(req.get("member_id") or ""),
            group_instance_id=req.get("group_instance_id") if ctx.api_version >= 3 else None,
        )
    )
    return {"throttle_time_ms": 0, "error_code": int(error)}
