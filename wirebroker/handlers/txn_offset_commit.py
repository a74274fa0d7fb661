"""TxnOffsetCommit (API key 28): serves v0-6 (v5, KIP-890 part 2, and v6 advertised at
transaction.version 2 only).

The consumer offsets of a transaction (`sendOffsetsToTransaction`), sent by the producer to
the group coordinator after AddOffsetsToTxn. Per topic and partition, before the coordinator
(KafkaApis' order):
    v6 (KIP-1319): topics by `topic_id`; an id unknown here    UNKNOWN_TOPIC_ID
    v0-5: topics by `name`; a name unknown here                UNKNOWN_TOPIC_OR_PARTITION
    partition outside the topic                                UNKNOWN_TOPIC_OR_PARTITION
Then (nothing left: no coordinator call):
    KIP-890 part 1 (`Services.txn_verifier`, unless transaction.partition.verification.enable
    is false): the group's `__consumer_offsets` partition must be in the producer's ongoing
    transaction (AddOffsetsToTxn put it there) -> else INVALID_TXN_STATE for every partition
    (TRANSACTION_ABORTABLE from v4, as Kafka); a coordinator that cannot be asked ->
    COORDINATOR_NOT_AVAILABLE (retriable). v5+ at
    transaction.version 2 (a TV2 producer sends no AddOffsetsToTxn): the group coordinator
    adds the offsets partition to the transaction itself (AddPartitionsToTxn v5,
    verify_only=false, over the wire to the transaction coordinator).
    `GroupCoordinatorRuntime.txn_commit_offsets` (the core's rules, `offsets_manager`):
    generation/member checks of KIP-447 when given (v3+: `generation_id_or_member_epoch`,
    UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID; an unknown group with a
    generation is GROUP_ID_NOT_FOUND from v6, ILLEGAL_GENERATION before), none without them
    (v0-2 accept any group state); OFFSET_METADATA_TOO_LARGE; COORDINATOR_NOT_AVAILABLE /
    NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS. The offsets are appended as a
    transactional batch of the producer (its id and epoch; an older epoch ->
    INVALID_PRODUCER_EPOCH) and replicated before the answer; they stay pending (invisible to
    OffsetFetch) until the COMMIT marker (WriteTxnMarkers), and are dropped on ABORT.
The response lists topics and partitions in request order, by `topic_id` (echoed) from v6,
by name before. Skipped: authorization, throttling, STALE_MEMBER_EPOCH (v6; KIP-848 consumer
groups, which wirebroker does not have).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import CommitPartition, CommitTopic, TxnCommitRequest
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.handlers import _authz
from wirebroker.handlers._topics import NIL_UUID, resolve_topic
from wirebroker.handlers.registry import handler
from wirebroker.replication.txn_verify import TxnOperation
from wirebroker.security.acls import ResourceType
from wirebroker.txn import version as txn_version

if TYPE_CHECKING:
    from collections.abc import Mapping

    from protocol.messages.txn_offset_commit import (
        TxnOffsetCommitRequest,
        TxnOffsetCommitResponse,
        TxnOffsetCommitResponsePartition,
        TxnOffsetCommitResponseTopic,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]

_MEMBER_VERSION = 3
_TOPIC_IDS_VERSION = 6  # also: GROUP_ID_NOT_FOUND for an unknown group with a generation


#: verification errors the group coordinator answers as COORDINATOR_NOT_AVAILABLE (retriable)
_UNAVAILABLE = frozenset(
    {
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)


async def _verify(ctx: RequestContext, req: TxnOffsetCommitRequest, group_id: str) -> ErrorCode:
    """KIP-890 part 1 for the group's `__consumer_offsets` partition."""
    verifier = ctx.services.txn_verifier
    coordinator = ctx.services.group_coordinator
    operation = TxnOperation.of(
        ctx.api_version,
        txn_version.TV2_TXN_OFFSET_COMMIT_VERSION,
        tv2_level=txn_version.level(ctx.services.config) >= txn_version.MAX_LEVEL,
    )
    if verifier is None or not verifier.active(operation) or coordinator is None:
        return ErrorCode.NONE
    tp = (OFFSETS_TOPIC, coordinator.partition_for(group_id))
    pid, epoch = int(req["producer_id"]), int(req["producer_epoch"])
    part = ctx.services.replicas.partition(*tp)
    entry = part.log.producer_entry(pid) if part is not None else None
    ongoing = entry.epoch if entry is not None and entry.txn_first_offset >= 0 else -1
    if not verifier.needs_verification(pid, epoch, tp, ongoing_epoch=ongoing, add=operation.adds):
        return ErrorCode.NONE
    tid = str(req["transactional_id"])
    answers = await verifier.verify(tid, pid, epoch, [tp], operation=operation)
    code = answers.get(tp, ErrorCode.INVALID_TXN_STATE)
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if code in _UNAVAILABLE else code


#: A response topic's naming: {"topic_id": id} from v6, {"name": name} before.
Naming = dict[str, Any]


@dataclass
class _Topic:
    """One request topic entry as the coordinator gets it (names resolved)."""

    naming: Naming
    commit: CommitTopic


@dataclass
class _Answer:
    """Kafka's TxnOffsetCommitResponse.Builder: topics keyed by their naming; the errors found
    before the coordinator first (in request order), then the coordinator's answer merged in
    (appended to a topic already there, else added; taken whole when nothing came before)."""

    topics: list[TxnOffsetCommitResponseTopic] = field(default_factory=list)
    by_key: dict[Any, TxnOffsetCommitResponseTopic] = field(default_factory=dict)

    def add(self, naming: Naming, index: int, code: ErrorCode) -> None:
        topic = self.by_key.get(_key(naming))
        if topic is None:
            topic = self.by_key[_key(naming)] = {**naming, "partitions": []}  # type: ignore[typeddict-item]
            self.topics.append(topic)
        topic["partitions"].append({"partition_index": index, "error_code": int(code)})

    def merge(self, coordinator: list[TxnOffsetCommitResponseTopic]) -> None:
        if not self.topics:
            self.topics = coordinator
            return
        for topic in coordinator:
            existing = self.by_key.get(_key(topic))
            if existing is None:
                self.topics.append(topic)
            else:
                existing["partitions"].extend(topic["partitions"])


def _key(topic: Mapping[str, Any]) -> Any:
    """What a response topic is keyed by: its id from v6, its name before."""
    return topic["topic_id"] if "topic_id" in topic else topic["name"]


def _refusal(ctx: RequestContext, req: TxnOffsetCommitRequest) -> ErrorCode | None:
    """WRITE on the transactional id, then READ on the group, else every partition's error."""
    if not _authz.allowed(ctx, ResourceType.TRANSACTIONAL_ID, str(req["transactional_id"])):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not _authz.allowed(ctx, ResourceType.GROUP, str(req["group_id"])):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None


def _resolve(ctx: RequestContext, req: TxnOffsetCommitRequest, answer: _Answer) -> list[_Topic]:
    """The request's topics resolved (v6 by id, before by name): the partitions to commit, in
    request order; unknown topics and partitions are answered into `answer`."""
    by_id = ctx.api_version >= _TOPIC_IDS_VERSION
    out: list[_Topic] = []
    for t in req.get("topics") or []:
        naming: Naming = (
            {"topic_id": t.get("topic_id") or NIL_UUID} if by_id else {"name": t["name"]}
        )
        info, missing = resolve_topic(
            ctx.services.cluster, by_id=by_id, name=t.get("name"), topic_id=t.get("topic_id")
        )
        partitions = []
        for p in t.get("partitions") or []:
            index = int(p["partition_index"])
            if info is None:
                answer.add(naming, index, missing)
            elif not _authz.allowed(ctx, ResourceType.TOPIC, info.name):  # READ
                answer.add(naming, index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif not 0 <= index < info.partitions:
                answer.add(naming, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                partitions.append(
                    CommitPartition(
                        index,
                        int(p["committed_offset"]),
                        int(p.get("committed_leader_epoch", -1)),
                        p.get("committed_metadata"),
                    )
                )
        if partitions and info is not None:
            out.append(_Topic(naming, CommitTopic(info.name, partitions)))
    return out


async def _coordinator_answer(
    ctx: RequestContext, req: TxnOffsetCommitRequest, topics: list[_Topic]
) -> list[TxnOffsetCommitResponseTopic]:
    """The group coordinator's answer for `topics` (in their order)."""
    version = ctx.api_version
    group_id = str(req.get("group_id") or "")
    commit_topics = [t.commit for t in topics]
    coordinator = ctx.services.group_coordinator
    failure = ErrorCode.NONE
    if coordinator is None:
        failure = ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif (err := coordinator.core.request_error(group_id)) is not ErrorCode.NONE:
        failure = err
    else:
        failure = await _verify(ctx, req, group_id)
    errors: dict[tuple[str, int], ErrorCode] = {}
    if failure is ErrorCode.NONE and coordinator is not None:
        member = version >= _MEMBER_VERSION
        result = await coordinator.txn_commit_offsets(
            TxnCommitRequest(
                group_id,
                int(req["producer_id"]),
                int(req["producer_epoch"]),
                commit_topics,
                generation_id=int(req.get("generation_id_or_member_epoch", -1)) if member else -1,
                member_id=str(req.get("member_id") or "") if member else "",
                group_instance_id=req.get("group_instance_id"),
            )
        )
        errors = dict(result.errors())
    out: list[TxnOffsetCommitResponseTopic] = []
    for t in topics:
        parts: list[TxnOffsetCommitResponsePartition] = []
        for p in t.commit.partitions:
            code = errors.get((t.commit.name, p.partition_index), failure)
            if code is ErrorCode.GROUP_ID_NOT_FOUND and version < _TOPIC_IDS_VERSION:
                code = ErrorCode.ILLEGAL_GENERATION
            parts.append({"partition_index": p.partition_index, "error_code": int(code)})
        out.append({**t.naming, "partitions": parts})  # type: ignore[typeddict-item]
    return out


@handler(ApiKey.TXN_OFFSET_COMMIT)
async def handle(ctx: RequestContext, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    answer = _Answer()
    refusal = _refusal(ctx, req)
    if refusal is not None:
        for t in req.get("topics") or []:
            naming: Naming = (
                {"topic_id": t.get("topic_id") or NIL_UUID}
                if ctx.api_version >= _TOPIC_IDS_VERSION
                else {"name": t["name"]}
            )
            for p in t.get("partitions") or []:
                answer.add(naming, int(p["partition_index"]), refusal)
        return {"throttle_time_ms": 0, "topics": answer.topics}
    topics = _resolve(ctx, req, answer)
    if topics:
        answer.merge(await _coordinator_answer(ctx, req, topics))
    return {"throttle_time_ms": 0, "topics": answer.topics}
