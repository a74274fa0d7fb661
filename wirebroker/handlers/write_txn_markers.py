"""WriteTxnMarkers (API key 27): serves v1-2 (v0 is gone from Kafka 4's schema; v2 adds
transaction_version). Sent by the transaction coordinator -- over the wire, also when it is
this broker -- to each partition leader. A TV2 transaction's marker (transaction_version 2,
KIP-890 part 2) carries the epoch EndTxn v5 bumped, the producer's + 1 here: a newer epoch is
accepted and becomes the producer's, so the old epoch is fenced from then on (data batches
and markers of it answer INVALID_PRODUCER_EPOCH); the same rule serves both versions.

Per marker (producer id, epoch, COMMIT/ABORT, coordinator epoch), per partition, in order:
    unknown topic or partition here         UNKNOWN_TOPIC_OR_PARTITION (the coordinator stops
                                            retrying: the partition is gone)
    this broker is not the leader           NOT_LEADER_OR_FOLLOWER (the coordinator re-resolves)
    ISR below min.insync.replicas           NOT_ENOUGH_REPLICAS (nothing written; retried)
    marker epoch older than the producer's  INVALID_PRODUCER_EPOCH
    coordinator epoch older than the last   TRANSACTION_COORDINATOR_FENCED (a zombie
      marker's for this producer            coordinator)
    storage errors                          their code
    else the control batch is appended through `ReplicaManager.append_marker` (followers
    replicate it like any batch) and the answer waits until the high watermark passes it,
    as an acks=-1 Produce (REQUEST_TIMED_OUT after request.timeout.ms's Kafka default, 30 s;
    NOT_ENOUGH_REPLICAS_AFTER_APPEND / NOT_LEADER_OR_FOLLOWER as there).
After a marker is in the log: KIP-890 verification entries of (producer, partition) are
dropped (`Services.txn_verifier.on_marker`), and a marker on a `__consumer_offsets` partition
completes the group coordinator's pending transactional offsets of the producer there
(`GroupCoordinatorRuntime.complete_txn`: visible to OffsetFetch on COMMIT, dropped on ABORT).
Skipped: authorization (CLUSTER_ACTION).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.handlers import _authz
from wirebroker.handlers._replication import await_replication
from wirebroker.handlers.registry import Later, handler
from wirebroker.log.errors import LogError
from wirebroker.replication.partition import NotEnoughReplicasError, NotLeaderOrFollowerError

if TYPE_CHECKING:
    from protocol.messages.write_txn_markers import (
        WritableTxnMarker,
        WritableTxnMarkerPartitionResult,
        WritableTxnMarkerResult,
        WritableTxnMarkerTopicResult,
        WriteTxnMarkersRequest,
        WriteTxnMarkersResponse,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.replication.partition import Partition

__all__ = ["handle"]

log = logging.getLogger(__name__)

#: Kafka waits request.timeout.ms (30 s by default) for a marker's replication.
REPLICATION_TIMEOUT_S = 30.0

#: (the partition's answer, partition, offset the HW must reach, leader epoch at the append)
_Waiting = tuple["WritableTxnMarkerPartitionResult", "Partition", int, int]


def _write(
    ctx: RequestContext, marker: WritableTxnMarker, topic: str, index: int, waiting: list[_Waiting]
) -> WritableTxnMarkerPartitionResult:
    services = ctx.services
    answer: WritableTxnMarkerPartitionResult = {"partition_index": index, "error_code": 0}
    part = services.replicas.partition(topic, index)
    if part is None:
        answer["error_code"] = int(services.replicas.missing_code(topic, index))
        return answer
    pid = int(marker["producer_id"])
    commit = bool(marker["transaction_result"])
    try:
        result = services.replicas.append_marker(
            part,
            pid,
            int(marker["producer_epoch"]),
            commit=commit,
            coordinator_epoch=int(marker["coordinator_epoch"]),
            now_ms=ctx.now_ms(),
        )
    except (LogError, NotEnoughReplicasError, NotLeaderOrFollowerError) as exc:
        log.info("marker for producer %d on %s-%d refused: %s", pid, topic, index, exc)
        answer["error_code"] = int(exc.error_code)
        return answer
    except Exception:
        log.exception("marker for producer %d on %s-%d failed", pid, topic, index)
        answer["error_code"] = int(ErrorCode.UNKNOWN)
        return answer
    if services.txn_verifier is not None:
        services.txn_verifier.on_marker(pid, topic, index)
    if topic == OFFSETS_TOPIC and services.group_coordinator is not None:
        services.group_coordinator.complete_txn(pid, index, commit=commit)
    if not part.single_replica and part.high_watermark <= result.last_offset:
        waiting.append((answer, part, result.last_offset + 1, part.leader_epoch))
    return answer


@handler(ApiKey.WRITE_TXN_MARKERS)
async def handle(
    ctx: RequestContext, req: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse | Later:
    results: list[WritableTxnMarkerResult] = []
    waiting: list[_Waiting] = []
    allowed = _authz.cluster(ctx)  # CLUSTER_ACTION, else every partition refused
    denied = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    for marker in req.get("markers") or []:
        topics: list[WritableTxnMarkerTopicResult] = []
        for t in marker.get("topics") or []:
            name = str(t["name"])
            partitions = [
                _write(ctx, marker, name, int(i), waiting)
                if allowed
                else cast(
                    "WritableTxnMarkerPartitionResult",
                    {"partition_index": int(i), "error_code": denied},
                )
                for i in t["partition_indexes"]
            ]
            topics.append({"name": name, "partitions": partitions})
        results.append({"producer_id": int(marker["producer_id"]), "topics": topics})
    response: WriteTxnMarkersResponse = {"markers": results}
    if not waiting:
        return response
    deadline = trio.current_time() + REPLICATION_TIMEOUT_S

    async def replicated() -> WriteTxnMarkersResponse:
        await await_replication(ctx, waiting, deadline)
        return response

    return Later(replicated)
