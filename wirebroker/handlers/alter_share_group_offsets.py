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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers._share_offsets import change_offsets, error_fields
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclOperation
from wirebroker.share_coordinator.offsets_admin import ZERO_UUID, alter_offsets

if TYPE_CHECKING:
    from protocol.messages.alter_share_group_offsets import (
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _refused(topic: Mapping[str, Any], error: ErrorCode) -> dict[str, Any]:
    rows = [
        {"partition_index": p["partition_index"], **error_fields(error)}
        for p in topic["partitions"]
    ]
    return {"topic_name": topic["topic_name"], "topic_id": ZERO_UUID, "partitions": rows}


@handler(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
async def handle(
    ctx: RequestContext, req: AlterShareGroupOffsetsRequest
) -> AlterShareGroupOffsetsResponse:
    result: Any = await change_offsets(ctx, req, AclOperation.READ, alter_offsets, _refused)
    return result
