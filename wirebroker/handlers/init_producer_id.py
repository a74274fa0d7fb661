"""InitProducerId (API key 22): serves v0-5 (v6 is unstable upstream and not generated).

    transactional_id null      a new producer id with epoch 0, always: Kafka's transaction
                               coordinator "blindly accepts" such requests and hands out a fresh
                               id even when producer_id/producer_epoch (v3+, KIP-360) name an
                               existing one (an idempotent producer bumps its epoch itself).
                               Ids come from `ProducerIdManager` and are never reused, even after
                               a crash; in a cluster from blocks every broker takes from one
                               ZooKeeper znode (`cluster.zk_producer_ids`).
    producer_id / epoch        exactly one of them -1 -> INVALID_REQUEST (Kafka's check).
    transactional_id ""        INVALID_REQUEST (as Kafka).
    transactional_id set       the transaction coordinator (`TxnCoordinatorRuntime.
                               init_producer_id`, table in `wirebroker.txn.metadata`): a new
                               producer id or an epoch bump, written to `__transaction_state`
                               before the answer; an ongoing transaction is aborted first
                               (CONCURRENT_TRANSACTIONS, the client retries);
                               transaction_timeout_ms outside (0, transaction.max.timeout.ms]
                               -> INVALID_TRANSACTION_TIMEOUT;
                               NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS by ownership;
                               v3+ producer_id/epoch not the id's -> PRODUCER_FENCED (v0-3:
                               INVALID_PRODUCER_EPOCH, before KIP-588). No coordinator:
                               COORDINATOR_NOT_AVAILABLE.
Failures answer producer_id -1, producer_epoch -1. The v6 fields (unstable upstream, not served)
need nothing should v6 be served later: enable2_pc and keep_prepared_txn are ignored,
ongoing_txn_producer_id/epoch take their JSON default -1. Skipped: authorization.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclOperation, ResourceType
from wirebroker.txn.effects import for_version

if TYPE_CHECKING:
    from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]

log = logging.getLogger(__name__)

_NO_PRODUCER_ID = -1
_NO_PRODUCER_EPOCH = -1


def _response(code: ErrorCode, producer_id: int = -1, epoch: int = -1) -> InitProducerIdResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


@handler(ApiKey.INIT_PRODUCER_ID)
async def handle(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse | None:
    transactional_id = req.get("transactional_id")
    producer_id = int(req.get("producer_id", _NO_PRODUCER_ID))
    producer_epoch = int(req.get("producer_epoch", _NO_PRODUCER_EPOCH))
    refusal = _refusal(ctx, transactional_id)
    if refusal is not None:
        return _response(refusal)
    if (producer_id == _NO_PRODUCER_ID) != (producer_epoch == _NO_PRODUCER_EPOCH):
        return _response(ErrorCode.INVALID_REQUEST)
    if transactional_id is not None:
        if transactional_id == "":
            return _response(ErrorCode.INVALID_REQUEST)
        return await _transactional(ctx, req, transactional_id, producer_id, producer_epoch)
    try:
        new_id = await ctx.services.producer_ids.allocate()
    except Exception:
        log.exception("allocating a producer id failed")
        return _response(ErrorCode.UNKNOWN)
    return _response(ErrorCode.NONE, new_id, 0)


def _refusal(ctx: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    """Kafka's checks, before any other: WRITE on the transactional id; an idempotent
    producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679)."""
    if transactional_id is not None:
        if not _authz.allowed(ctx, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return None
    if _authz.cluster(ctx) or _authz.allowed_by_type(ctx, ResourceType.TOPIC, AclOperation.WRITE):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


async def _transactional(
    ctx: RequestContext,
    req: InitProducerIdRequest,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
) -> InitProducerIdResponse:
    coordinator = ctx.services.txn_coordinator
    if coordinator is None:
        return _response(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    expected = None if producer_id == _NO_PRODUCER_ID else (producer_id, producer_epoch)
    timeout_ms = int(req.get("transaction_timeout_ms", 0))
    try:
        result = await coordinator.init_producer_id(transactional_id, timeout_ms, expected)
    except Exception:
        log.exception("InitProducerId for %r failed", transactional_id)
        return _response(ErrorCode.UNKNOWN)
    error = for_version(result.error, ctx.api_version >= 4)
    return _response(error, result.producer_id, result.producer_epoch)
