"""WriteShareGroupState (API key 85): serves v0-1 (KIP-932, share partition leader -> share
coordinator; v1 adds delivery_complete_count, KIP-1226).

Per share partition: `ShareCoordinatorRuntime.write` appends a ShareUpdate (or every
share.coordinator.snapshot.update.records.per.snapshot updates a ShareSnapshot) with the start
offset and the state batches, answered once replicated. Errors: the request rules of
`_share_state`, NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST (negative
partition, leader or state epoch; a share partition never initialised), FENCED_LEADER_EPOCH,
FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION. Skipped: throttling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from wirebroker.handlers._share_state import answer
from wirebroker.handlers.registry import handler
from wirebroker.share_coordinator.batches import StateBatch
from wirebroker.share_coordinator.core import WriteRequest

if TYPE_CHECKING:
    from protocol.messages.write_share_group_state import (
        WriteShareGroupStateRequest,
        WriteShareGroupStateResponse,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.share_coordinator.core import Outcome
    from wirebroker.share_coordinator.keys import SharePartitionKey
    from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime

__all__ = ["handle"]


async def _call(
    coordinator: ShareCoordinatorRuntime, key: SharePartitionKey, data: Mapping[str, Any]
) -> Outcome:
    batches = tuple(
        StateBatch(
            int(b["first_offset"]),
            int(b["last_offset"]),
            int(b["delivery_state"]),
            int(b["delivery_count"]),
        )
        for b in data.get("state_batches") or []
    )
    dcc = data.get("delivery_complete_count")
    request = WriteRequest(
        state_epoch=int(data["state_epoch"]),
        leader_epoch=int(data["leader_epoch"]),
        start_offset=int(data["start_offset"]),
        batches=batches,
        delivery_complete_count=-1 if dcc is None else int(dcc),
    )
    return await coordinator.write(key, request)


@handler(ApiKey.WRITE_SHARE_GROUP_STATE)
async def handle(
    ctx: RequestContext, req: WriteShareGroupStateRequest
) -> WriteShareGroupStateResponse:
    response: Any = await answer(ctx, req, _call)
    return response
