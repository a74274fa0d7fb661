"""ListGroups (API key 16): serves v0-5.

Every group the coordinator holds (`GroupCoordinatorRuntime.list_groups`): group_id,
protocol_type ("" for a group that only stores offsets; "consumer" for a KIP-848 group,
"share" for a KIP-932 one), group_state (v4+; a KIP-848 group: Empty, Assigning,
Reconciling, Stable; a share group: Empty, Stable), group_type (v5+, "classic", "consumer" or
"share"). Filters: states_filter (v4+) and types_filter (v5+), compared
case-insensitively; empty = no filter; an unknown type matches nothing. Errors (top level):
COORDINATOR_NOT_AVAILABLE before the coordinator is active, COORDINATOR_LOAD_IN_PROGRESS while
any `__consumer_offsets` partition is loading. No group coordinator: COORDINATOR_NOT_AVAILABLE.
Skipped: authorization (Kafka filters by DESCRIBE on each group), throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import ListGroupsResult
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.list_groups import (
        ListedGroup,
        ListGroupsRequest,
        ListGroupsResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle", "list_groups_response"]


def list_groups_response(result: ListGroupsResult) -> ListGroupsResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        # a ListedGroup's fields are the wire's
        "groups": [cast("ListedGroup", g._asdict()) for g in result.groups],
    }


@handler(ApiKey.LIST_GROUPS)
async def handle(ctx: RequestContext, req: ListGroupsRequest) -> ListGroupsResponse:
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return list_groups_response(ListGroupsResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    version = ctx.api_version
    states = [str(s) for s in req.get("states_filter") or []] if version >= 4 else []
    types = [str(t) for t in req.get("types_filter") or []] if version >= 5 else []
    result = coordinator.list_groups(states_filter=states, types_filter=types)
    if _authz.enabled(ctx) and not _authz.cluster(ctx):  # DESCRIBE the cluster: every group
        allowed = tuple(
            g for g in result.groups if _authz.allowed(ctx, ResourceType.GROUP, g.group_id)
        )
        result = result._replace(groups=allowed)
    return list_groups_response(result)
