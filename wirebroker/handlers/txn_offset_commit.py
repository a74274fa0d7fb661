"""TxnOffsetCommit (API key 28): serves v0-5 (v5, KIP-890 part 2, advertised at
transaction.version 2 only).

The consumer offsets of a transaction (`sendOffsetsToTransaction`), sent by the producer to
the group coordinator after AddOffsetsToTxn. Per partition, before the coordinator:
    topic unknown / partition outside it    UNKNOWN_TOPIC_OR_PARTITION
Then (nothing left: no coordinator call):
    KIP-890 part 1 (`Services.txn_verifier`, unless transaction.partition.verification.enable
    is false): the group's `__consumer_offsets` partition must be in the producer's ongoing
    transaction (AddOffsetsToTxn put it there) -> else INVALID_TXN_STATE for every partition;
    a coordinator that cannot be asked -> COORDINATOR_NOT_AVAILABLE (retriable). v5 at
    transaction.version 2 (a TV2 producer sends no AddOffsetsToTxn): the group coordinator
    adds the offsets partition to the transaction itself (AddPartitionsToTxn v5,
    verify_only=false, over the wire to the transaction coordinator).
    `GroupCoordinatorRuntime.txn_commit_offsets` (the core's rules, `offsets_manager`):
    generation/member checks of KIP-447 when given (v3+: UNKNOWN_MEMBER_ID,
    ILLEGAL_GENERATION, FENCED_INSTANCE_ID; an unknown group with a generation
    ILLEGAL_GENERATION), none without them (v0-2 accept any group state);
    OFFSET_METADATA_TOO_LARGE; COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR /
    COORDINATOR_LOAD_IN_PROGRESS. The offsets are appended as a transactional batch of the
    producer (its id and epoch; an older epoch -> INVALID_PRODUCER_EPOCH) and replicated before
    the answer; they stay pending (invisible to OffsetFetch) until the COMMIT marker
    (WriteTxnMarkers), and are dropped on ABORT.
Skipped: authorization, throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import CommitPartition, CommitTopic, TxnCommitRequest
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.handlers.registry import handler
from wirebroker.txn import version as txn_version

if TYPE_CHECKING:
    from protocol.messages.txn_offset_commit import (
        TxnOffsetCommitRequest,
        TxnOffsetCommitResponse,
        TxnOffsetCommitResponsePartition,
        TxnOffsetCommitResponseTopic,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]

_MEMBER_VERSION = 3


async def _verify(ctx: RequestContext, req: TxnOffsetCommitRequest, group_id: str) -> ErrorCode:
    """KIP-890 part 1 for the group's `__consumer_offsets` partition."""
    verifier = ctx.services.txn_verifier
    coordinator = ctx.services.group_coordinator
    add = ctx.api_version >= txn_version.TV2_TXN_OFFSET_COMMIT_VERSION and (
        txn_version.level(ctx.services.config) >= txn_version.MAX_LEVEL
    )
    if verifier is None or not (verifier.enabled or add) or coordinator is None:
        return ErrorCode.NONE
    tp = (OFFSETS_TOPIC, coordinator.partition_for(group_id))
    pid, epoch = int(req["producer_id"]), int(req["producer_epoch"])
    part = ctx.services.replicas.partition(*tp)
    entry = part.log.producer_entry(pid) if part is not None else None
    ongoing = entry.epoch if entry is not None and entry.txn_first_offset >= 0 else -1
    if not verifier.needs_verification(pid, epoch, tp, ongoing_epoch=ongoing, add=add):
        return ErrorCode.NONE
    answers = await verifier.verify(str(req["transactional_id"]), pid, epoch, [tp], add=add)
    code = answers.get(tp, ErrorCode.INVALID_TXN_STATE)
    if code is ErrorCode.NOT_ENOUGH_REPLICAS:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return code


@handler(ApiKey.TXN_OFFSET_COMMIT, max_version=5)
async def handle(ctx: RequestContext, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    version = ctx.api_version
    group_id = str(req.get("group_id") or "")
    store = ctx.services.topics
    errors: dict[tuple[int, int], ErrorCode] = {}
    commit_topics: list[CommitTopic] = []
    for i, t in enumerate(req.get("topics") or []):
        info = store.get(t["name"])
        partitions = []
        for p in t.get("partitions") or []:
            index = int(p["partition_index"])
            if info is None or not 0 <= index < info.partitions:
                errors[(i, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            partitions.append(
                CommitPartition(
                    index,
                    int(p["committed_offset"]),
                    int(p.get("committed_leader_epoch", -1)),
                    p.get("committed_metadata"),
                )
            )
        if partitions:
            commit_topics.append(CommitTopic(t["name"], partitions))

    coordinator = ctx.services.group_coordinator
    coordinator_errors: dict[tuple[str, int], ErrorCode] = {}
    if commit_topics:
        failure = ErrorCode.NONE
        if coordinator is None:
            failure = ErrorCode.COORDINATOR_NOT_AVAILABLE
        elif (err := coordinator.core.request_error(group_id)) is not ErrorCode.NONE:
            failure = err
        else:
            failure = await _verify(ctx, req, group_id)
        if failure is not ErrorCode.NONE or coordinator is None:
            coordinator_errors = {
                (t.name, p.partition_index): failure for t in commit_topics for p in t.partitions
            }
        else:
            result = await coordinator.txn_commit_offsets(
                TxnCommitRequest(
                    group_id,
                    int(req["producer_id"]),
                    int(req["producer_epoch"]),
                    commit_topics,
                    generation_id=int(req.get("generation_id_or_member_epoch", -1))
                    if version >= _MEMBER_VERSION
                    else -1,
                    member_id=str(req.get("member_id") or "") if version >= _MEMBER_VERSION else "",
                    group_instance_id=req.get("group_instance_id"),
                )
            )
            coordinator_errors = dict(result.errors())

    out: list[TxnOffsetCommitResponseTopic] = []
    for i, t in enumerate(req.get("topics") or []):
        parts: list[TxnOffsetCommitResponsePartition] = []
        for p in t.get("partitions") or []:
            index = int(p["partition_index"])
            code = errors.get((i, index)) or coordinator_errors.get((t["name"], index))
            parts.append({"partition_index": index, "error_code": int(code or 0)})
        out.append({"name": t["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "topics": out}
