"""InitializeShareGroupState (API key 83): serves v0 (the group coordinator -> share
coordinator RPC of KIP-932).

Per share partition (group id, topic id, partition): `ShareCoordinatorRuntime.initialize`
writes a ShareSnapshot with the state epoch and start offset (-1: not initialised, the share
partition applies share.auto.offset.reset) and answers once it is replicated. Errors, in
Kafka's order: the request rules of `_share_state` (empty topics / group id: no results; no
coordinator: COORDINATOR_NOT_AVAILABLE), NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS,
INVALID_REQUEST (negative partition or state epoch), FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION
(`wirebroker.share_coordinator.core`). Skipped: throttling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from wirebroker.handlers._share_state import answer
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.initialize_share_group_state import (
        InitializeShareGroupStateRequest,
        InitializeShareGroupStateResponse,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.share_coordinator.core import Outcome
    from wirebroker.share_coordinator.keys import SharePartitionKey
    from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime

__all__ = ["handle"]


async def _call(
    coordinator: ShareCoordinatorRuntime, key: SharePartitionKey, data: Mapping[str, Any]
) -> Outcome:
    return await coordinator.initialize(key, int(data["state_epoch"]), int(data["start_offset"]))


@handler(ApiKey.INITIALIZE_SHARE_GROUP_STATE)
async def handle(
    ctx: RequestContext, req: InitializeShareGroupStateRequest
) -> InitializeShareGroupStateResponse:
    response: Any = await answer(ctx, req, _call)
    return response
