"""SyncGroup (API key 14): serves v0-5 (classic protocol).

Awaits `GroupCoordinatorRuntime.sync_group`: a member's SyncGroup is parked until the leader's
SyncGroup brings the assignment (or the rebalance is restarted, the member removed, the group
unloaded); in Stable the member's current assignment is returned at once. Checks are the core's
(`wirebroker.group.membership`), after this handler's own first check (KafkaApis'): v5+
protocol_type and protocol_name are mandatory (INCONSISTENT_GROUP_PROTOCOL), INVALID_GROUP_ID for
"", UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS. The leader's
assignment is appended to `__consumer_offsets` and replicated before any member is answered
(not replicated within offsets.commit.timeout.ms, or too few in-sync replicas:
COORDINATOR_NOT_AVAILABLE; the coordinator's partition lost meanwhile: NOT_COORDINATOR).

Fields: group_instance_id from v3, protocol_type/protocol_name from v5 (null before: not
checked); response protocol_type/protocol_name (v5+) and assignment bytes.
No group coordinator: COORDINATOR_NOT_AVAILABLE. Skipped: authorization, throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import SyncRequest, SyncResult
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.sync_group import (
        SyncGroupRequest,
        SyncGroupResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle", "missing_protocol", "sync_response"]

_PROTOCOL_VERSION = 5


def sync_response(result: SyncResult) -> SyncGroupResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name,
        "assignment": result.assignment,
    }


def missing_protocol(version: int, protocol_type: str | None, protocol_name: str | None) -> bool:
    """v5+ must name both protocol_type and protocol_name (KafkaApis checks it first)."""
    return version >= _PROTOCOL_VERSION and (protocol_type is None or protocol_name is None)


@handler(ApiKey.SYNC_GROUP)
async def handle(ctx: RequestContext, req: SyncGroupRequest) -> SyncGroupResponse:
    version = ctx.api_version
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return sync_response(SyncResult(error=ErrorCode.COORDINATOR_NOT_AVAILABLE))
    if not _authz.allowed(ctx, ResourceType.GROUP, str(req.get("group_id") or "")):
        return sync_response(SyncResult(error=ErrorCode.GROUP_AUTHORIZATION_FAILED))
    protocol_type = req.get("protocol_type") if version >= _PROTOCOL_VERSION else None
    protocol_name = req.get("protocol_name") if version >= _PROTOCOL_VERSION else None
    if missing_protocol(version, protocol_type, protocol_name):
        return sync_response(SyncResult(error=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
    assignments = [
        (str(a.get("member_id") or ""), bytes(a.get("assignment") or b""))
        for a in req.get("assignments") or []
    ]
    result = await coordinator.sync_group(
        SyncRequest(
            group_id=str(req.get("group_id") or ""),
            generation_id=int(req.get("generation_id")),
            member_id=str(req.get("member_id") or ""),
            group_instance_id=req.get("group_instance_id") if version >= 3 else None,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments,
        )
    )
    return sync_response(result)
