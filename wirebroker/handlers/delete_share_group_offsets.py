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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers._share_offsets import change_offsets, error_fields
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclOperation
from wirebroker.share_coordinator.offsets_admin import ZERO_UUID, delete_offsets

if TYPE_CHECKING:
    from protocol.messages.delete_share_group_offsets import (
        DeleteShareGroupOffsetsRequest,
        DeleteShareGroupOffsetsResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _refused(topic: Mapping[str, Any], error: ErrorCode) -> dict[str, Any]:
    return {"topic_name": topic["topic_name"], "topic_id": ZERO_UUID, **error_fields(error)}


@handler(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
async def handle(
    ctx: RequestContext, req: DeleteShareGroupOffsetsRequest
) -> DeleteShareGroupOffsetsResponse:
    result: Any = await change_offsets(ctx, req, AclOperation.DELETE, delete_offsets, _refused)
    return result
