"""AlterShareGroupOffsets (API key 91): serves v0 (KIP-932).

`wirebroker.share_coordinator.offsets_admin.alter_offsets`: the group must be an empty share
group (INVALID_GROUP_ID, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP at the top level); each listed
partition's state is initialised at its new start offset through the share persister
(InitializeShareGroupState), UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or partition. No
persister: COORDINATOR_NOT_AVAILABLE. With an authorizer: READ on the group
(GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED per partition).
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
from wirebroker.share_coordinator.offsets_admin import ZERO_UUID, alter_offsets, message

if TYPE_CHECKING:
    from protocol.messages.alter_share_group_offsets import (
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsResponse,
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


@handler(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
async def handle(
    ctx: RequestContext, req: AlterShareGroupOffsetsRequest
) -> AlterShareGroupOffsetsResponse:
    group_id = str(req.get("group_id") or "")
    result: Any
    if not _authz.allowed(ctx, ResourceType.GROUP, group_id, AclOperation.READ):
        result = _failed(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return result
    persister = ctx.services.share_persister
    if persister is None:
        result = _failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return result
    denied = _authz.denied_names(
        ctx,
        ResourceType.TOPIC,
        [t["topic_name"] for t in req.get("topics") or []],
        AclOperation.READ,
    )
    allowed = dict(req)
    allowed["topics"] = [t for t in req.get("topics") or [] if t["topic_name"] not in denied]
    body = await alter_offsets(
        persister, ctx.services.share_groups, allowed, lambda name: topic_by_name(ctx, name)
    )
    for topic in req.get("topics") or []:
        if topic["topic_name"] in denied:
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            rows = [
                {
                    "partition_index": p["partition_index"],
                    "error_code": int(error),
                    "error_message": message(error),
                }
                for p in topic["partitions"]
            ]
            body["responses"].append(
                {"topic_name": topic["topic_name"], "topic_id": ZERO_UUID, "partitions": rows}
            )
    result = {"throttle_time_ms": 0, **body}
    return result
