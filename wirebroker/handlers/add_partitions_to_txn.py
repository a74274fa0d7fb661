"""AddPartitionsToTxn (API key 24): serves v0-5.

    v0-3      one transaction from a producer (`v3_and_below_*` fields): every partition is
              added to it (`TxnCoordinatorRuntime.add_partitions`, written to
              `__transaction_state` before the answer), one error for all of them. Partitions
              of unknown topics (or indexes past the topic's count) answer
              UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, nothing added
              (Kafka's check). PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH before v2.
    v4+       batched, sent by brokers: `transactions`, each answered in `results_by_transaction`.
              verify_only=true (KIP-890 part 1, a partition leader asking before it appends a
              transactional batch): per partition NONE when it is in the ongoing transaction,
              else TRANSACTION_ABORTABLE, or the id's error (`verify_partitions`; nothing
              written). verify_only=false: added as in v0-3 (v5 from a leader for a TV2 producer,
              KIP-890 part 2: recorded as client transaction version 2). Top-level
              error_code NONE.
Errors of the coordinator: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
CONCURRENT_TRANSACTIONS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, COORDINATOR_NOT_AVAILABLE
(no coordinator, or the append failed). Skipped: authorization (Kafka checks WRITE on each topic
and, for v4+, CLUSTER_ACTION), throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType
from wirebroker.txn.effects import for_version
from wirebroker.txn.metadata import TopicPartition

if TYPE_CHECKING:
    from protocol.messages.add_partitions_to_txn import (
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnResponse,
        AddPartitionsToTxnResult,
        AddPartitionsToTxnTopic,
        AddPartitionsToTxnTopicResult,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]

_BATCHED_VERSION = 4
_TV2_VERSION = 5


def _partitions(topics: list[AddPartitionsToTxnTopic]) -> list[TopicPartition]:
    return [TopicPartition(str(t["name"]), int(p)) for t in topics for p in t["partitions"]]


def _results(errors: dict[TopicPartition, ErrorCode]) -> list[AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[tuple[int, ErrorCode]]] = {}
    for tp, error in errors.items():
        by_topic.setdefault(tp.topic, []).append((tp.partition, error))
    return [
        {
            "name": name,
            "results_by_partition": [
                {"partition_index": p, "partition_error_code": int(e)} for p, e in parts
            ],
        }
        for name, parts in by_topic.items()
    ]


def _unknown(ctx: RequestContext, partitions: list[TopicPartition]) -> set[TopicPartition]:
    cluster = ctx.services.cluster
    return {tp for tp in partitions if cluster.partition(tp.topic, tp.partition) is None}


def _refused(
    ctx: RequestContext, transactional_id: str, partitions: list[TopicPartition]
) -> dict[TopicPartition, ErrorCode] | None:
    """A client's request: WRITE on the transactional id (else every partition
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic (else its partitions
    TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED)."""
    if not _authz.allowed(ctx, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    denied = _authz.denied_names(ctx, ResourceType.TOPIC, (tp[0] for tp in partitions))
    if not denied:
        return None
    return {
        tp: (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
            if tp[0] in denied
            else ErrorCode.OPERATION_NOT_ATTEMPTED
        )
        for tp in partitions
    }


async def _add(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partitions: list[TopicPartition],
    verify_only: bool,
    client_tv: int | None,
) -> dict[TopicPartition, ErrorCode]:
    coordinator = ctx.services.txn_coordinator
    refused = None if verify_only else _refused(ctx, transactional_id, partitions)
    if refused is not None:  # a client's request: its authorization first, as Kafka
        return refused
    if coordinator is None:
        return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if verify_only:
        return coordinator.verify_partitions(
            transactional_id, producer_id, producer_epoch, partitions
        )
    unknown = _unknown(ctx, partitions)
    if unknown:
        return {
            tp: (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED
            )
            for tp in partitions
        }
    error = await coordinator.add_partitions(
        transactional_id, producer_id, producer_epoch, partitions, client_tv
    )
    return dict.fromkeys(partitions, for_version(error, ctx.api_version >= 2))


@handler(ApiKey.ADD_PARTITIONS_TO_TXN)
async def handle(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    if ctx.api_version < _BATCHED_VERSION:
        partitions = _partitions(list(req.get("v3_and_below_topics") or []))
        errors = await _add(
            ctx,
            str(req.get("v3_and_below_transactional_id") or ""),
            int(req.get("v3_and_below_producer_id", -1)),
            int(req.get("v3_and_below_producer_epoch", -1)),
            partitions,
            False,
            0,
        )
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _results(errors)}
    results: list[AddPartitionsToTxnResult] = []
    if not _authz.cluster(ctx):  # brokers' batched requests (v4+): CLUSTER_ACTION
        denied = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return {"throttle_time_ms": 0, "error_code": denied, "results_by_transaction": []}
    for txn in req.get("transactions") or []:
        errors = await _add(
            ctx,
            str(txn["transactional_id"]),
            int(txn["producer_id"]),
            int(txn["producer_epoch"]),
            _partitions(list(txn["topics"] or [])),
            bool(txn.get("verify_only", False)),
            2 if ctx.api_version >= _TV2_VERSION else None,
        )
        results.append(
            {"transactional_id": str(txn["transactional_id"]), "topic_results": _results(errors)}
        )
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": results}
