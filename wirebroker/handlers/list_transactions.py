"""ListTransactions (API key 66): serves v0-2.

The transactional ids of the `__transaction_state` partitions this broker coordinates
(`TxnCoordinatorRuntime.list_transactions`), with their producer id and state. Filters (empty:
all): state_filters (state names; unknown names are echoed in unknown_state_filters and match
nothing), producer_id_filters, duration_filter (v1, KIP-994: only transactions running for longer
than it, ms; -1 none), transactional_id_pattern (v2, KIP-1152: a Java regular expression over the
whole id; Python's `re.fullmatch` here; an invalid pattern -> INVALID_REQUEST, as
protocol.errors has no INVALID_REGULAR_EXPRESSION).
Errors (top level): COORDINATOR_LOAD_IN_PROGRESS while a partition loads; no coordinator:
COORDINATOR_NOT_AVAILABLE. Skipped: authorization (Kafka lists only ids the client may
DESCRIBE).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.list_transactions import (
        ListTransactionsRequest,
        ListTransactionsResponse,
        TransactionState,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _error(code: ErrorCode) -> ListTransactionsResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "unknown_state_filters": [],
        "transaction_states": [],
    }


@handler(ApiKey.LIST_TRANSACTIONS)
async def handle(ctx: RequestContext, req: ListTransactionsRequest) -> ListTransactionsResponse:
    coordinator = ctx.services.txn_coordinator
    if coordinator is None:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    version = ctx.api_version
    pattern = req.get("transactional_id_pattern") if version >= 2 else None
    regex = None
    if pattern:
        try:
            regex = re.compile(str(pattern))
        except re.error:
            return _error(ErrorCode.INVALID_REQUEST)
    result = coordinator.list_transactions(
        [str(s) for s in req.get("state_filters") or []],
        [int(p) for p in req.get("producer_id_filters") or []],
        int(req.get("duration_filter", -1)) if version >= 1 else -1,
    )
    states: list[TransactionState] = [
        {
            "transactional_id": t.transactional_id,
            "producer_id": t.producer_id,
            "transaction_state": t.state,
        }
        for t in result.transactions
        if (regex is None or regex.fullmatch(t.transactional_id))
        and _authz.allowed(ctx, ResourceType.TRANSACTIONAL_ID, t.transactional_id)
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "unknown_state_filters": list(result.unknown_state_filters),
        "transaction_states": states,
    }
