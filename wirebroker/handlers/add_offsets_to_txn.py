"""AddOffsetsToTxn (API key 25): serves v0-4.

Adds the group's `__consumer_offsets` partition (abs(hash(group_id)) % its partition count) to
the ongoing transaction (`TxnCoordinatorRuntime.add_offsets`; written to `__transaction_state`
before the answer), so that the transaction's COMMIT/ABORT marker reaches the offsets the
producer then commits with TxnOffsetCommit. Errors as AddPartitionsToTxn (PRODUCER_FENCED
becomes INVALID_PRODUCER_EPOCH before v2); no coordinator: COORDINATOR_NOT_AVAILABLE.
Skipped: authorization (Kafka checks WRITE on the transactional id, READ on the group).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType
from wirebroker.txn.effects import for_version

if TYPE_CHECKING:
    from protocol.messages.add_offsets_to_txn import (
        AddOffsetsToTxnRequest,
        AddOffsetsToTxnResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


@handler(ApiKey.ADD_OFFSETS_TO_TXN)
async def handle(ctx: RequestContext, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    coordinator = ctx.services.txn_coordinator
    if not _authz.allowed(ctx, ResourceType.TRANSACTIONAL_ID, str(req["transactional_id"])):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not _authz.allowed(ctx, ResourceType.GROUP, str(req["group_id"])):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif coordinator is None:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    else:
        error = await coordinator.add_offsets(
            str(req["transactional_id"]),
            int(req["producer_id"]),
            int(req["producer_epoch"]),
            str(req["group_id"]),
        )
    return {"throttle_time_ms": 0, "error_code": int(for_version(error, ctx.api_version >= 2))}
