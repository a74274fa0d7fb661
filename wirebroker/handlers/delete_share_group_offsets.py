"""DeleteShareGroupOffsets (API key 92): serves v0 (KIP-932).

`wirebroker.share_coordinator.offsets_admin.delete_offsets`: the group must be an empty share
group (INVALID_GROUP_ID, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP at the top level); each listed
topic's share-partition state is deleted through the share persister (DeleteShareGroupState
per partition; an unknown topic: UNKNOWN_TOPIC_OR_PARTITION for it). No persister:
COORDINATOR_NOT_AVAILABLE. With an authorizer: DELETE on the group
(GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED for it).
Skipped: throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._share_offsets import topic_by_name
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclOperation, ResourceType
from wirebroker.share_coordinator.offsets_admin import ZERO_UUID, delete_offsets, message

if TYPE_CHECKING:
    from protocol.messages.delete_share_group_offsets import (
        DeleteShareGroupOffsetsRequest,
        DeleteShareGroupOffsetsResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _failed(error: ErrorCode) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": message(error),
        "responses": [],
    }


@handler(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
async def handle(
    ctx: RequestContext, req: DeleteShareGroupOffsetsRequest
) -> DeleteShareGroupOffsetsResponse:
    group_id = str(req.get("group_id") or "")
    result: Any
    if not _authz.allowed(ctx, ResourceType.GROUP, group_id, AclOperation.DELETE):
        result = _failed(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return result
    persister = ctx.services.share_persister
    if persister is None:
        result = _failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return result
    names = [t["topic_name"] for t in req.get("topics") or []]
    denied = _authz.denied_names(ctx, ResourceType.TOPIC, names, AclOperation.READ)
    allowed = dict(req)
    allowed["topics"] = [t for t in req.get("topics") or [] if t["topic_name"] not in denied]
    body = await delete_offsets(
        persister, ctx.services.share_groups, allowed, lambda name: topic_by_name(ctx, name)
    )
    for name in names:
        if name in denied:
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            body["responses"].append(
                {
                    "topic_name": name,
                    "topic_id": ZERO_UUID,
                    "error_code": int(error),
                    "error_message": message(error),
                }
            )
    result = {"throttle_time_ms": 0, **body}
    return result
