"""DeleteShareGroupState (API key 86): serves v0 (KIP-932, group coordinator -> share
coordinator).

Per share partition: `ShareCoordinatorRuntime.delete` writes a ShareSnapshot tombstone (the
state is forgotten; a key without state answers NONE and writes nothing). Errors: the request
rules of `_share_state`, NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST
(negative partition), UNKNOWN_TOPIC_OR_PARTITION. Skipped: throttling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from wirebroker.handlers._share_state import answer
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.delete_share_group_state import (
        DeleteShareGroupStateRequest,
        DeleteShareGroupStateResponse,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.share_coordinator.core import Outcome
    from wirebroker.share_coordinator.keys import SharePartitionKey
    from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime

__all__ = ["handle"]


async def _call(
    coordinator: ShareCoordinatorRuntime, key: SharePartitionKey, data: Mapping[str, Any]
) -> Outcome:
    del data
    return await coordinator.delete(key)


@handler(ApiKey.DELETE_SHARE_GROUP_STATE)
async def handle(
    ctx: RequestContext, req: DeleteShareGroupStateRequest
) -> DeleteShareGroupStateResponse:
    response: Any = await answer(ctx, req, _call)
    return response
