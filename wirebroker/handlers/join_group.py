"""JoinGroup (API key 11): serves v0-9 (classic protocol).

Decodes the request and awaits `GroupCoordinatorRuntime.join_group`, which parks the request
until the group answers (the rebalance completes, the member is removed, or the coordinator
unloads the group); only this connection waits. The state machine (MEMBER_ID_REQUIRED
handshake for dynamic members from v4, static membership from v5, the rebalance and session
timeouts, group.initial.rebalance.delay.ms, group.max.size, INVALID_GROUP_ID for "",
INVALID_SESSION_TIMEOUT outside group.min/max.session.timeout.ms) is the core's, see
`wirebroker.group.classic` and `wirebroker.group.membership`.

Fields: rebalance_timeout_ms is -1 before v1 (the session timeout is used), group_instance_id null
before v5, reason (v8+) is ignored (Kafka only logs it). The version becomes the core's flags:
require_known_member_id (v4+), supports_skip_assignment (v9+). client_id is the request header's;
client_host is "/<peer ip>" (Kafka's `InetAddress.toString()`), as DescribeGroups shows it.
Response: error_code, generation_id, protocol_type (v7+), protocol_name (null from v7 when unset,
"" before), leader, skip_assignment (v9), member_id, members (the leader's answer lists every
member's id, group_instance_id and metadata). No group coordinator: COORDINATOR_NOT_AVAILABLE.
Skipped: authorization, throttling."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import JoinRequest, JoinResult
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.join_group import (
        JoinGroupRequest,
        JoinGroupResponse,
        JoinGroupResponseMember,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["client_host", "handle", "join_response"]

#: JoinGroup v4+: a new dynamic member gets its id first (MEMBER_ID_REQUIRED), then rejoins.
_KNOWN_MEMBER_ID_VERSION = 4
#: JoinGroup v9+: a restarted static leader may skip the assignment (skip_assignment).
_SKIP_ASSIGNMENT_VERSION = 9


def client_host(ctx: RequestContext) -> str:
    """The client address as Kafka reports it for group members: "/<ip>"."""
    host = ctx.client_host
    return host if host.startswith("/") else f"/{host}"


def join_response(version: int, result: JoinResult) -> JoinGroupResponse:
    """The JoinGroup response body. Like Kafka's `JoinGroupResponse`: below v7 a null
    protocol name is sent as "", from v7 an empty one as null."""
    protocol_name = result.protocol_name
    if version < 7 and protocol_name is None:
        protocol_name = ""
    elif version >= 7 and protocol_name == "":
        protocol_name = None
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        "protocol_name": protocol_name,
        "leader": result.leader,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        # a JoinMember's fields are the wire's
        "members": [cast("JoinGroupResponseMember", m._asdict()) for m in result.members],
    }


@handler(ApiKey.JOIN_GROUP)
async def handle(ctx: RequestContext, req: JoinGroupRequest) -> JoinGroupResponse:
    version = ctx.api_version
    member_id = str(req.get("member_id") or "")
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return join_response(
            version, JoinResult(error=ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id)
        )
    if not _authz.allowed(ctx, ResourceType.GROUP, str(req.get("group_id") or "")):
        return join_response(
            version, JoinResult(error=ErrorCode.GROUP_AUTHORIZATION_FAILED, member_id="")
        )
    protocols = tuple(
        (str(p.get("name") or ""), bytes(p.get("metadata") or b""))
        for p in req.get("protocols") or []
    )
    result = await coordinator.join_group(
        JoinRequest(
            group_id=str(req.get("group_id") or ""),
            member_id=member_id,
            protocol_type=str(req.get("protocol_type") or ""),
            protocols=protocols,
            session_timeout_ms=int(req.get("session_timeout_ms")),
            rebalance_timeout_ms=int(req.get("rebalance_timeout_ms", -1)) if version >= 1 else -1,
            group_instance_id=req.get("group_instance_id") if version >= 5 else None,
            client_id=str(getattr(ctx.header, "client_id", None) or ""),
            client_host=client_host(ctx),
            require_known_member_id=version >= _KNOWN_MEMBER_ID_VERSION,
            supports_skip_assignment=version >= _SKIP_ASSIGNMENT_VERSION,
        )
    )
    return join_response(version, result)
