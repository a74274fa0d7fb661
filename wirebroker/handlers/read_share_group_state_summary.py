"""ReadShareGroupStateSummary (API key 87): serves v0-1 (KIP-932, group coordinator -> share
coordinator, for DescribeShareGroupOffsets; v1 adds delivery_complete_count, KIP-1226).

Per share partition: `ShareCoordinatorRuntime.read_summary` answers the state epoch, leader
epoch and start offset (-1, epochs 0 for a share partition without state: Kafka's answer).
Nothing is written. Errors: the request rules of `_share_state`, NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST (negative partition),
UNKNOWN_TOPIC_OR_PARTITION; with an error, epochs and start offset 0, delivery-complete count
-1 (the schema defaults). Skipped: throttling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from wirebroker.handlers._share_state import answer, error_fields
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.read_share_group_state_summary import (
        ReadShareGroupStateSummaryRequest,
        ReadShareGroupStateSummaryResponse,
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
    return await coordinator.read_summary(key)


def _build(outcome: Outcome, data: Mapping[str, Any]) -> dict[str, Any]:
    state = outcome.state
    return {
        "partition": int(data["partition"]),
        **error_fields(outcome),
        "state_epoch": 0 if state is None else state.state_epoch,
        "leader_epoch": 0 if state is None else state.leader_epoch,
        "start_offset": 0 if state is None else state.start_offset,
        "delivery_complete_count": -1 if state is None else state.delivery_complete_count,
    }


@handler(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY)
async def handle(
    ctx: RequestContext, req: ReadShareGroupStateSummaryRequest
) -> ReadShareGroupStateSummaryResponse:
    response: Any = await answer(ctx, req, _call, _build)
    return response
