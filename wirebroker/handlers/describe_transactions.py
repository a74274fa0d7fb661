"""DescribeTransactions (API key 65): serves v0.

One entry per requested transactional id, in request order (`TxnCoordinatorRuntime.describe`):
state name (Kafka's: Empty, Ongoing, PrepareCommit, ...), timeout, start time (-1 when no
transaction runs), producer id and epoch, the partitions grouped by topic. Per-id errors:
TRANSACTIONAL_ID_NOT_FOUND (unknown or being expired), NOT_COORDINATOR (another broker's
partition), COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE (no coordinator),
INVALID_REQUEST (empty id); with an error, state "", timeout, start time, producer id and
epoch 0, as Kafka answers. With an authorizer (Kafka's KafkaApis): an id the principal may
not DESCRIBE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and of a described transaction only the
partitions of topics it may DESCRIBE are listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType
from wirebroker.txn.coordinator import TxnDescription

if TYPE_CHECKING:
    from protocol.messages.describe_transactions import (
        DescribeTransactionsRequest,
        DescribeTransactionsResponse,
        TopicData,
        TransactionState,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _state(ctx: RequestContext, d: TxnDescription) -> TransactionState:
    topics: dict[str, list[int]] = {}
    for tp in d.partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    data: list[TopicData] = [
        {"topic": t, "partitions": ps}
        for t, ps in topics.items()
        if _authz.allowed(ctx, ResourceType.TOPIC, t)  # DESCRIBE
    ]
    return {
        "error_code": int(d.error),
        "transactional_id": d.transactional_id,
        "transaction_state": d.state,
        "transaction_timeout_ms": d.timeout_ms,
        "transaction_start_time_ms": d.start_ms,
        "producer_id": d.producer_id,
        "producer_epoch": d.producer_epoch,
        "topics": data,
    }


@handler(ApiKey.DESCRIBE_TRANSACTIONS)
async def handle(
    ctx: RequestContext, req: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    coordinator = ctx.services.txn_coordinator
    states: list[TransactionState] = []
    for tid in req.get("transactional_ids") or []:
        if not _authz.allowed(ctx, ResourceType.TRANSACTIONAL_ID, str(tid)):  # DESCRIBE
            d = TxnDescription(str(tid), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif coordinator is None:
            d = TxnDescription(str(tid), ErrorCode.COORDINATOR_NOT_AVAILABLE)
        else:
            d = coordinator.describe(str(tid))
        states.append(_state(ctx, d))
    return {"throttle_time_ms": 0, "transaction_states": states}
