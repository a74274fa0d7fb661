"""EndTxn (API key 26): serves v0-4.

Commits or aborts the ongoing transaction (`TxnCoordinatorRuntime.end_txn`): PrepareCommit /
PrepareAbort is written to `__transaction_state` and replicated, then the answer NONE; the
COMMIT/ABORT markers are written afterwards by the coordinator (WriteTxnMarkers to every
partition's leader, `wirebroker.txn.markers`) and the transaction completes. Until then the id
answers CONCURRENT_TRANSACTIONS (the client retries its next AddPartitions). A retry of an
EndTxn that completed answers NONE; the other outcome INVALID_TXN_STATE; an EndTxn on an id
without an ongoing transaction INVALID_TXN_STATE. PRODUCER_FENCED becomes
INVALID_PRODUCER_EPOCH before v2. Not served: v5 (KIP-890 part 2, an epoch bump per
transaction, needs transaction.version 2, which this broker does not advertise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers.registry import handler
from wirebroker.txn.effects import for_version

if TYPE_CHECKING:
    from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


@handler(ApiKey.END_TXN, max_version=4)
async def handle(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    coordinator = ctx.services.txn_coordinator
    if coordinator is None:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    else:
        error = await coordinator.end_txn(
            str(req["transactional_id"]),
            int(req["producer_id"]),
            int(req["producer_epoch"]),
            bool(req["committed"]),
        )
    return {"throttle_time_ms": 0, "error_code": int(for_version(error, ctx.api_version >= 2))}
