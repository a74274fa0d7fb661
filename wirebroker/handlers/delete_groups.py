"""DeleteGroups (API key 42): serves v0-3.

Duplicate group ids are answered once (Kafka de-duplicates), in request order. Per group
(`GroupCoordinatorRuntime.delete_groups`, the core's rules): an Empty group is deleted (offset
tombstones, then the group tombstone, appended and replicated before the answer) -> NONE; a
group with members NON_EMPTY_GROUP; an unknown group GROUP_ID_NOT_FOUND;
COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS as the
coordinator's state says. No group coordinator: COORDINATOR_NOT_AVAILABLE. v3 adds a
per-group `error_message`: null here, as Kafka 4.4 leaves it for every error a classic group
can have (Kafka fills it only when deleting a share or streams group's state fails,
GROUP_DELETION_FAILED). Skipped: authorization, throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import DeleteGroupsResult
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.delete_groups import (
        DeleteGroupsRequest,
        DeleteGroupsResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["delete_groups_response", "handle"]


def delete_groups_response(result: DeleteGroupsResult) -> DeleteGroupsResponse:
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": r.group_id, "error_code": int(r.error)} for r in result.results],
    }


@handler(ApiKey.DELETE_GROUPS)
async def handle(ctx: RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse:
    group_ids = list(dict.fromkeys(str(g) for g in req.get("groups_names") or []))
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return {
            "throttle_time_ms": 0,
            "results": [
                {"group_id": g, "error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE)}
                for g in group_ids
            ],
        }
    denied = _authz.denied_names(ctx, ResourceType.GROUP, group_ids)
    result = await coordinator.delete_groups([g for g in group_ids if g not in denied])
    codes = {r.group_id: int(r.error) for r in result.results}
    refused = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": g, "error_code": codes.get(g, refused)} for g in group_ids],
    }
