"""ReadShareGroupState (API key 84): serves v0 (KIP-932, share partition leader -> share
coordinator).

Per share partition: `ShareCoordinatorRuntime.read` answers the state epoch, start offset and
state batches; a leader epoch other than the recorded one is written first (a ShareUpdate),
as Kafka's readStateAndMaybeUpdateLeaderEpoch. Errors: the request rules of `_share_state`,
NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST (negative partition or leader
epoch; "Read operation on uninitialized share partition not allowed."), FENCED_LEADER_EPOCH,
UNKNOWN_TOPIC_OR_PARTITION; with an error, state epoch 0, start offset 0, no batches
(the schema defaults Kafka leaves).
Skipped: throttling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from wirebroker.handlers._share_state import answer, error_fields
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.read_share_group_state import (
        ReadShareGroupStateRequest,
        ReadShareGroupStateResponse,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.share_coordinator.core import Outcome
    from wirebroker.share_coordinator.keys import SharePartitionKey
    from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime

__all__ = ["handle"]


async def _call(
    coordinator: ShareCoordinatorRuntime, key: SharePartitionKey, data: Mapping[str, Any]
) -> Outcome:
    return await coordinator.read(key, int(data["leader_epoch"]))


def _build(outcome: Outcome, data: Mapping[str, Any]) -> dict[str, Any]:
    state = outcome.state
    batches = [] if state is None else state.batches
    return {
        "partition": int(data["partition"]),
        **error_fields(outcome),
        "state_epoch": 0 if state is None else state.state_epoch,
        "start_offset": 0 if state is None else state.start_offset,
        "state_batches": [
            {
                "first_offset": b.first_offset,
                "last_offset": b.last_offset,
                "delivery_state": b.delivery_state,
                "delivery_count": b.delivery_count,
            }
            for b in batches
        ],
    }


@handler(ApiKey.READ_SHARE_GROUP_STATE)
async def handle(
    ctx: RequestContext, req: ReadShareGroupStateRequest
) -> ReadShareGroupStateResponse:
    response: Any = await answer(ctx, req, _call, _build)
    return response
