"""DescribeShareGroupOffsets (API key 90): serves v0-1 (KIP-932; v1 adds lag, KIP-1226).

Per group, in request order (`wirebroker.share_coordinator.offsets_admin.describe_group`):
listed topics are read with ReadShareGroupStateSummary through the share persister (an unknown
topic: topic id zero, start offset -1 per partition); topics null: the group's initialised
partitions (`Services.share_groups`; an unknown group has none). Lag (v1): the partition's high
watermark where this broker leads it, minus the start offset and the delivery-complete count
(-1 otherwise). No persister: COORDINATOR_NOT_AVAILABLE for every group. With an authorizer: a
group the principal may not DESCRIBE answers GROUP_AUTHORIZATION_FAILED, topics it may not
DESCRIBE are left out. Skipped: throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._share_offsets import end_offset, error_fields, topic_name
from wirebroker.handlers._topics import topic_lookup
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType
from wirebroker.share_coordinator.offsets_admin import describe_group

if TYPE_CHECKING:
    from protocol.messages.describe_share_group_offsets import (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _failed(group_id: str, error: ErrorCode) -> dict[str, Any]:
    return {"group_id": group_id, "topics": [], **error_fields(error)}


@handler(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
async def handle(
    ctx: RequestContext, req: DescribeShareGroupOffsetsRequest
) -> DescribeShareGroupOffsetsResponse:
    persister = ctx.services.share_persister
    groups: list[Any] = []
    for group in req.get("groups") or []:
        group_id = str(group.get("group_id") or "")
        if not _authz.allowed(ctx, ResourceType.GROUP, group_id):  # DESCRIBE
            groups.append(_failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        if persister is None:
            groups.append(_failed(group_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            continue
        entry = await describe_group(
            persister,
            ctx.services.share_groups,
            group,
            topic_lookup(ctx.services.cluster),
            lambda topic_id: topic_name(ctx, topic_id),
            lambda topic_id, p: end_offset(ctx, topic_id, p),
        )
        entry["topics"] = [
            t for t in entry["topics"] if _authz.allowed(ctx, ResourceType.TOPIC, t["topic_name"])
        ]
        groups.append(entry)
    return {"throttle_time_ms": 0, "groups": groups}
