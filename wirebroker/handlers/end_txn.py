"""EndTxn (API key 26): serves v0-5 (v5 advertised at transaction.version 2 only).

Commits or aborts the ongoing transaction (`TxnCoordinatorRuntime.end_txn`): PrepareCommit /
PrepareAbort is written to `__transaction_state` and replicated, then the answer NONE; the
COMMIT/ABORT markers are written afterwards by the coordinator (WriteTxnMarkers to every
partition's leader, `wirebroker.txn.markers`) and the transaction completes. Until then the id
answers CONCURRENT_TRANSACTIONS (the client retries its next AddPartitions). A retry of an
EndTxn that completed answers NONE; the other outcome INVALID_TXN_STATE; an EndTxn on an id
without an ongoing transaction INVALID_TXN_STATE. PRODUCER_FENCED becomes
INVALID_PRODUCER_EPOCH before v2.

v5 at transaction.version 2 (KIP-890 part 2, `TxnCoordinatorRuntime.end_txn_v2`): every
commit/abort bumps the producer epoch; the answer carries the producer id and epoch the client
continues with (the next producer id with epoch 0 when the epoch ran out); the markers are
written with the bumped epoch (WriteTxnMarkers v2, TransactionVersion 2). A retry with the old
epoch is answered CONCURRENT_TRANSACTIONS while the markers are written, then NONE with the
current id/epoch; an abort without a transaction (Empty, CompleteX) is an empty transaction
(bumped epoch, no markers). Errors answer producer id/epoch -1. Below level 2 a v5 request is
served as v4 (not advertised then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType
from wirebroker.txn import version as txn_version
from wirebroker.txn.effects import for_version

if TYPE_CHECKING:
    from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


@handler(ApiKey.END_TXN, max_version=5)
async def handle(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    coordinator = ctx.services.txn_coordinator
    pid, epoch = -1, -1
    if not _authz.allowed(ctx, ResourceType.TRANSACTIONAL_ID, str(req["transactional_id"])):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif coordinator is None:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif (
        ctx.api_version >= txn_version.TV2_END_TXN_VERSION
        and txn_version.level(ctx.services.config) >= txn_version.MAX_LEVEL
    ):
        result = await coordinator.end_txn_v2(
            str(req["transactional_id"]),
            int(req["producer_id"]),
            int(req["producer_epoch"]),
            bool(req["committed"]),
        )
        error, pid, epoch = result.error, result.producer_id, result.producer_epoch
    else:
        error = await coordinator.end_txn(
            str(req["transactional_id"]),
            int(req["producer_id"]),
            int(req["producer_epoch"]),
            bool(req["committed"]),
        )
    response: EndTxnResponse = {
        "throttle_time_ms": 0,
        "error_code": int(for_version(error, ctx.api_version >= 2)),
    }
    if ctx.api_version >= txn_version.TV2_END_TXN_VERSION:
        response["producer_id"] = pid
        response["producer_epoch"] = epoch
    return response
