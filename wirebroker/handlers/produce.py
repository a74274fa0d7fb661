"""Produce (API key 0): serves v3-13 (advertised from v0, KAFKA-18659; v0-2 are answered
UNSUPPORTED_VERSION per partition by `wirebroker.handlers.dispatcher`, acks=0 ones close).

Per request
    acks            must be -1, 0 or 1, else INVALID_REQUIRED_ACKS for every partition.
                    acks=-1: an ISR smaller than min.insync.replicas gives NOT_ENOUGH_REPLICAS
                    before appending; after the append the answer waits until the high
                    watermark covers it (`Services.produce_waiters`, Kafka's DelayedProduce):
                    REQUEST_TIMED_OUT after timeout_ms, NOT_ENOUGH_REPLICAS_AFTER_APPEND when
                    the ISR shrank below the minimum meanwhile, NOT_LEADER_OR_FOLLOWER when
                    leadership was lost (these keep the base offset, as Kafka); timeout_ms
                    counts from the append. The handler answers `Later` then: the connection
                    serves the next requests while this one waits, and sends the responses
                    in request order (net/connection.py, QUEUED). A partition whose only
                    replica is this broker (always, on a single broker) has its high
                    watermark at the log end after the append: no wait, no await.
                    acks=0 gets no response; if any partition failed, the connection is closed
                    (raise `ProduceWithoutAckFailed`), as Kafka does, so the producer notices and
                    refreshes its metadata.
    authorization   with an authorizer (wirebroker.handlers._authz): a transactional batch
                    needs WRITE on the transactional id, else every partition
                    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each topic needs WRITE, else its
                    partitions TOPIC_AUTHORIZATION_FAILED (before any other check, so an
                    unknown topic's existence is not revealed; not IDEMPOTENT_WRITE, which
                    Kafka 3+ no longer asks here).
    transactions    a request holding a transactional batch without a transactional_id gets
                    TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition (Kafka's
                    answer). Otherwise transactional batches are appended like any other; the
                    log's producer state opens the producer's transaction at the batch
                    (LSO, read_committed) until the coordinator's marker (WriteTxnMarkers).
                    KIP-890 part 1 first (`Services.txn_verifier`,
                    `wirebroker.replication.txn_verify`, unless
                    transaction.partition.verification.enable=false): a partition whose log
                    has no open transaction of this producer at this epoch records the
                    batch's sequence (`PartitionLog.start_txn_verification`: a later batch
                    may not start above the lowest one seen, a TV2 producer's first at 0)
                    and, unless verified since its last marker, is checked with the
                    transaction coordinator (AddPartitionsToTxn verify_only) before anything
                    is appended; not in the transaction -> TRANSACTION_ABORTABLE (v11+;
                    INVALID_TXN_STATE with "Partition was not added to the transaction" up to
                    v10), coordinator not reachable -> NOT_ENOUGH_REPLICAS (retriable) with
                    "Unable to verify the partition has been added to the transaction.
                    Underlying error: <NAME>", fencing errors as answered.
                    KIP-890 part 2 (v12+, at transaction.version 2: a TV2 producer sends no
                    AddPartitionsToTxn): the same request is AddPartitionsToTxn v5 with
                    verify_only=false, the leader adds the partition to the transaction on
                    the producer's behalf (Kafka's `addPartition` operation).
    timeout_ms      the acks=-1 wait (above); unused otherwise.

A partition named twice in the request is answered once and only its last data is appended;
a topic named twice is one entry of the answer (Kafka reads the request into a map).

Per partition, in this order
    unknown topic name                      UNKNOWN_TOPIC_OR_PARTITION (Kafka 4 never
                                            auto-creates on produce)
    unknown topic id (v13)                  UNKNOWN_TOPIC_ID
    unknown partition                       UNKNOWN_TOPIC_OR_PARTITION
    partition hosted on other brokers only  NOT_LEADER_OR_FOLLOWER
    internal topic (__consumer_offsets ...) INVALID_TOPIC_EXCEPTION, unless the client id is
                                            Kafka's "__admin_client"
    records null/empty, not exactly one     INVALID_RECORD (Kafka's ProduceRequest validation)
      complete batch, or magic != 2
    zstd batch with version < 7             UNSUPPORTED_COMPRESSION_TYPE
    transactional batch not confirmed by     TRANSACTION_ABORTABLE / INVALID_TXN_STATE (not in
      the transaction coordinator (KIP-890)  the transaction), NOT_ENOUGH_REPLICAS (coordinator
                                            unreachable), INVALID_PRODUCER_EPOCH (fenced, or an
                                            epoch older than the log's), with Kafka's texts
    this broker is not the leader           NOT_LEADER_OR_FOLLOWER (at the append)
    storage errors (wirebroker.log.errors)  their `error_code` (CORRUPT_MESSAGE, INVALID_RECORD,
                                            MESSAGE_TOO_LARGE, INVALID_TIMESTAMP,
                                            OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
                                            KAFKA_STORAGE_ERROR)
    records refused one by one (a keyless    INVALID_RECORD / INVALID_TIMESTAMP with Kafka's
      record in a compacted topic, a        record_errors [{batch_index,
      timestamp out of range, a client's    batch_index_error_message}] and error_message
      LogAppendTime: `log.validator`)       (KIP-467): clients fail those records with that
                                            message and the batch's others with a generic error
    idempotent duplicate                    NONE with the original base offset, nothing appended

Response fields: index, error_code, base_offset, log_append_time_ms (-1 unless the topic uses
LogAppendTime), log_start_offset, record_errors, error_message, throttle_time_ms 0. A failed
partition has base_offset and log_append_time_ms -1; as Kafka's ReplicaManager (checked against
it by tests/oracle/test_produce_errors.py): error_message is null except with record_errors
and for the verification refusals above (Kafka sends its text for no other produce error; ours
goes to the broker log, at INFO where Kafka logs the failure), and log_start_offset is the
partition's for an error raised by the append (INVALID_RECORD, INVALID_TIMESTAMP,
OUT_OF_ORDER_SEQUENCE_NUMBER, NOT_ENOUGH_REPLICAS, ...) but -1 for CORRUPT_MESSAGE,
MESSAGE_TOO_LARGE, KAFKA_STORAGE_ERROR, NOT_LEADER_OR_FOLLOWER and for every error found before
the append. A partition answered NOT_LEADER_OR_FOLLOWER carries
current_leader (v10+) and the answer the node_endpoints of those leaders (KIP-951,
`handlers._leader_hints`). Appends wake long-poll fetches (ReplicaManager.append
notifies its data listeners).

Records arrive as memoryviews of the request frame (`protocol.fastcodec`) and are handed to the
log as they are: the log copies each batch once, into the buffer it stamps and writes. Batch
headers are parsed once per partition here (`_parse`) and handed down with the records
(ReplicaManager.append -> Partition.append_records -> PartitionLog.append_as_leader).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import BatchHeader, InvalidBatch, iter_batches
from wirebroker.handlers import _authz
from wirebroker.handlers._leader_hints import (
    PRODUCE_HINT_CODES,
    PRODUCE_HINTS_MIN_VERSION,
    LeaderHints,
)
from wirebroker.handlers._replication import await_replication
from wirebroker.handlers._topics import resolve_entry
from wirebroker.handlers.registry import Later, handler
from wirebroker.log.errors import LogError
from wirebroker.metadata.names import is_internal
from wirebroker.replication.partition import NotEnoughReplicasError, NotLeaderOrFollowerError
from wirebroker.replication.txn_verify import TxnOperation, producer_answer
from wirebroker.security.acls import ResourceType
from wirebroker.txn import version as txn_version

if TYPE_CHECKING:
    from protocol.messages.produce import (
        PartitionProduceData,
        PartitionProduceResponse,
        ProduceRequest,
        ProduceResponse,
        TopicProduceData,
        TopicProduceResponse,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.replication.partition import Partition

__all__ = ["ADMIN_CLIENT_ID", "ProduceWithoutAckFailed", "handle"]

log = logging.getLogger(__name__)

#: Kafka lets only this client id write to internal topics (AdminUtils.ADMIN_CLIENT_ID).
ADMIN_CLIENT_ID = "__admin_client"
_ZSTD = 4
_ZSTD_MIN_VERSION = 7

#: the (position, header) of each batch of a partition's records, and the error that stopped
#: the walk (None when every batch parsed)
_Parsed = tuple[list[tuple[int, BatchHeader]], InvalidBatch | None]


class ProduceWithoutAckFailed(Exception):
    """acks=0 produce with a failed partition: closing the connection is the only signal."""


#: append errors Kafka answers with log_start_offset -1 and does not log (ReplicaManager's
#: "known" exceptions); any other error of the append carries the log start offset
_UNLOGGED_APPEND_ERRORS = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)


def _failed(index: int, code: ErrorCode) -> PartitionProduceResponse:
    return {
        "index": index,
        "error_code": int(code),
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": None,
    }


def _refused(part: Partition, code: ErrorCode, exc: Exception) -> PartitionProduceResponse:
    """The answer to an append that raised `exc` (module docstring: Kafka's fields)."""
    presp = _failed(part.index, code)
    if code in _UNLOGGED_APPEND_ERRORS:
        return presp
    presp["log_start_offset"] = part.log_start_offset
    record_errors = getattr(exc, "record_errors", ())
    if record_errors:
        presp["record_errors"] = [
            {"batch_index": i, "batch_index_error_message": m} for i, m in record_errors
        ]
        presp["error_message"] = str(exc)
    log.info("produce to %s-%d refused: %s (%s)", part.topic, part.index, code.name, exc)
    return presp


def _parse(parsed: dict[int, _Parsed], pdata: PartitionProduceData) -> _Parsed:
    """The batch headers of a partition's records, parsed once per request (`parsed`)."""
    key = id(pdata)
    found = parsed.get(key)
    if found is None:
        batches: list[tuple[int, BatchHeader]] = []
        try:
            batches.extend(iter_batches(pdata.get("records") or b""))
            found = (batches, None)
        except InvalidBatch as exc:
            found = (batches, exc)
        parsed[key] = found
    return found


def _check_records(
    records: bytes | memoryview | None, version: int, parsed: _Parsed
) -> tuple[ErrorCode, str | None]:
    """Kafka's ProduceRequest.validateRecords: exactly one complete v2 batch."""
    if not records:
        return (
            ErrorCode.INVALID_RECORD,
            f"Produce requests with version {version} must have at least one record batch "
            "per partition",
        )
    batches, error = parsed
    if error is not None:
        return ErrorCode.INVALID_RECORD, f"Invalid record batch: {error}"
    if len(batches) != 1:
        return (
            ErrorCode.INVALID_RECORD,
            f"Produce requests with version {version} are only allowed to contain exactly "
            "one record batch per partition",
        )
    header = batches[0][1]
    if header.compression == _ZSTD and version < _ZSTD_MIN_VERSION:
        return (
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"Produce requests with version {version} cannot use ZStandard compression",
        )
    return ErrorCode.NONE, None


def _merged(topic_data: list[TopicProduceData], by_id: bool) -> list[TopicProduceData]:
    """The request's topics with a partition named twice answered once, with its last data
    (Kafka reads the request into a map keyed by topic-partition: the last entry wins and is
    the only one appended), and a topic named twice as one entry; first-appearance order."""
    key_of = "topic_id" if by_id else "name"
    topics: dict[object, list[PartitionProduceData]] = {}
    heads: dict[object, TopicProduceData] = {}
    for topic in topic_data:
        key = topic.get(key_of)
        heads.setdefault(key, topic)
        topics.setdefault(key, []).extend(topic.get("partition_data") or [])
    if len(heads) == len(topic_data) and all(
        len({int(p.get("index")) for p in parts}) == len(parts) for parts in topics.values()
    ):
        return topic_data  # the usual request: nothing named twice
    merged: list[TopicProduceData] = []
    for key, parts in topics.items():
        last = {int(p.get("index")): p for p in parts}
        entry = cast("TopicProduceData", {**heads[key], "partition_data": list(last.values())})
        merged.append(entry)
    return merged


def _has_transactional_batch(
    topic_data: list[TopicProduceData], parsed: dict[int, _Parsed]
) -> bool:
    for topic in topic_data:
        for part in topic.get("partition_data") or []:
            if not part.get("records"):
                continue
            batches, _error = _parse(parsed, part)
            if any(header.is_transactional for _pos, header in batches):
                return True
    return False


#: a partition refused before the append: (error, Kafka's error_message or None)
_Refusal = tuple[ErrorCode, str | None]


async def _verify(
    ctx: RequestContext,
    transactional_id: str,
    topic_data: list[TopicProduceData],
    parsed: dict[int, _Parsed],
) -> dict[tuple[str, int], _Refusal]:
    """KIP-890 (module docstring): the partitions whose transactional batch the coordinator
    did not confirm, with the error and message to answer."""
    verifier = ctx.services.txn_verifier
    operation = TxnOperation.of(
        ctx.api_version,
        txn_version.TV2_PRODUCE_VERSION,
        tv2_level=txn_version.level(ctx.services.config) >= txn_version.MAX_LEVEL,
    )
    if verifier is None or not verifier.active(operation):
        return {}
    refused: dict[tuple[str, int], _Refusal] = {}
    todo: dict[tuple[int, int], list[tuple[str, int]]] = {}
    now_ms = ctx.now_ms()
    for topic in topic_data:
        info = _topic_info(ctx, topic)
        if info is None:
            continue
        for pdata in topic.get("partition_data") or []:
            batches, _error = _parse(parsed, pdata)
            txn = [h for _pos, h in batches if h.is_transactional and h.producer_id >= 0]
            part = ctx.services.replicas.partition(info, int(pdata.get("index")))
            if not txn or part is None or not part.is_leader:
                continue  # not appended here: its own error is answered
            h = txn[0]
            tp = (info, part.index)
            try:  # records the batch's sequence (the log's producer state)
                needed = part.log.start_txn_verification(
                    h.producer_id,
                    h.base_sequence,
                    h.producer_epoch,
                    adds=operation.adds,
                    now_ms=now_ms,
                )
            except LogError as exc:  # an epoch older than the producer's
                refused[tp] = (exc.error_code, None)
                continue
            if needed and verifier.needs_verification(
                h.producer_id, h.producer_epoch, tp, ongoing_epoch=-1, add=operation.adds
            ):
                todo.setdefault((h.producer_id, h.producer_epoch), []).append(tp)
    for (pid, epoch), tps in todo.items():
        answers = await verifier.verify(transactional_id, pid, epoch, tps, operation=operation)
        refused.update(
            {
                tp: producer_answer(code, operation)
                for tp, code in answers.items()
                if code != ErrorCode.NONE
            }
        )
    return refused


def _request_error(
    ctx: RequestContext,
    acks: int,
    transactional_id: str | None,
    topic_data: list[TopicProduceData],
    parsed: dict[int, _Parsed],
) -> ErrorCode | None:
    """The error of every partition, if any: bad acks; a transactional batch without a
    transactional id the principal may WRITE."""
    if acks not in (-1, 0, 1):
        return ErrorCode.INVALID_REQUIRED_ACKS
    if _has_transactional_batch(topic_data, parsed) and (
        transactional_id is None
        or not _authz.allowed(ctx, ResourceType.TRANSACTIONAL_ID, transactional_id)
    ):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None


def _topic_info(ctx: RequestContext, topic: TopicProduceData) -> str | None:
    """The name of a request topic (by name, or by id from v13), None when unknown."""
    _naming, info, _missing = resolve_entry(
        ctx.services.cluster, topic, by_id=ctx.api_version >= 13, name_key="name"
    )
    return None if info is None else info.name


#: an acks=-1 append waiting for the ISR: (its response, partition, required offset, epoch)
_Waiting = tuple["PartitionProduceResponse", "Partition", int, int]


def _append(
    ctx: RequestContext,
    part: Partition,
    records: bytes | memoryview,
    acks: int,
    batches: list[tuple[int, BatchHeader]],
    waiting: list[_Waiting],
) -> PartitionProduceResponse:
    try:
        result = ctx.services.replicas.append(
            part, records, now_ms=ctx.now_ms(), required_acks=acks, batches=batches
        )
    except (LogError, NotEnoughReplicasError, NotLeaderOrFollowerError) as exc:
        return _refused(part, exc.error_code, exc)
    except Exception as exc:
        log.exception("produce to %s-%d failed", part.topic, part.index)
        return _refused(part, ErrorCode.UNKNOWN, exc)
    presp: PartitionProduceResponse = {
        "index": part.index,
        "error_code": 0,
        "base_offset": result.first_offset,
        "log_append_time_ms": result.log_append_time,
        "log_start_offset": part.log_start_offset,
        "record_errors": [],
        "error_message": None,
    }
    if acks == -1 and not part.single_replica and part.high_watermark <= result.last_offset:
        waiting.append((presp, part, result.last_offset + 1, part.leader_epoch))
    return presp


@handler(ApiKey.PRODUCE)
async def handle(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | Later | None:
    version = ctx.api_version
    acks = int(req.get("acks", 1))
    topic_data = _merged(list(req.get("topic_data") or []), version >= 13)
    replicas = ctx.services.replicas
    view = ctx.services.cluster
    client_id = getattr(ctx.header, "client_id", None)

    parsed: dict[int, _Parsed] = {}
    request_error = _request_error(ctx, acks, req.get("transactional_id"), topic_data, parsed)
    verify_errors: dict[tuple[str, int], _Refusal] = {}
    if request_error is None and req.get("transactional_id") is not None:
        verify_errors = await _verify(ctx, str(req.get("transactional_id")), topic_data, parsed)

    responses = []
    any_error = False
    waiting: list[_Waiting] = []
    stats = ctx.services.stats
    named: list[tuple[str | None, PartitionProduceResponse]] = []  # for the leader hints
    for topic in topic_data:
        # v13+ topics all have an id, v3-12 a name
        naming, info, missing_code = resolve_entry(
            view, topic, by_id=version >= 13, name_key="name"
        )
        out_topic = cast("TopicProduceResponse", {**naming, "partition_responses": []})
        name = info.name if info is not None else None
        denied = not _authz.allowed(ctx, ResourceType.TOPIC, name or str(naming.get("name")))
        partition_responses = []
        for pdata in topic.get("partition_data") or []:
            index = int(pdata.get("index"))
            if request_error is not None:
                presp = _failed(index, request_error)
            elif denied and (name is not None or version < 13):
                presp = _failed(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif info is None or name is None:
                presp = _failed(index, missing_code)
            elif (part := replicas.partition(name, index)) is None:
                presp = _failed(index, replicas.missing_code(name, index))
            elif is_internal(name) and client_id != ADMIN_CLIENT_ID:
                presp = _failed(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
            else:
                records = pdata.get("records")
                batches = _parse(parsed, pdata)
                code, message = _check_records(records, version, batches)
                if code != ErrorCode.NONE:
                    log.debug("produce to %s-%d refused: %s", name, index, message)
                    presp = _failed(index, code)
                elif (refusal := verify_errors.get((name, index))) is not None:
                    presp = _failed(index, refusal[0])
                    presp["error_message"] = refusal[1]
                else:
                    assert records is not None
                    presp = _append(ctx, part, records, acks, batches[0], waiting)
                    if not presp["error_code"]:
                        stats.add_bytes_in(name, len(records))
            any_error = any_error or presp["error_code"] != 0
            partition_responses.append(presp)
            named.append((name, presp))
        out_topic["partition_responses"] = partition_responses
        responses.append(out_topic)

    if waiting:  # acks=-1 only: the answer comes once replicated (QUEUED, net/connection.py)
        deadline = trio.current_time() + max(0, int(req.get("timeout_ms", 0))) / 1000.0

        async def replicated() -> ProduceResponse:
            await await_replication(ctx, waiting, deadline)
            return _answer(ctx, version, responses, named)

        return Later(replicated)
    if acks == 0:
        if any_error:
            raise ProduceWithoutAckFailed(
                "acks=0 produce failed for at least one partition; closing the connection so "
                "the producer refreshes its metadata"
            )
        return None
    return _answer(ctx, version, responses, named)


def _answer(
    ctx: RequestContext,
    version: int,
    responses: list[TopicProduceResponse],
    named: list[tuple[str | None, PartitionProduceResponse]],
) -> ProduceResponse:
    """The answer, with leader hints (v10+, `handlers._leader_hints`) on the partitions
    answered NOT_LEADER_OR_FOLLOWER."""
    body: ProduceResponse = {"responses": responses, "throttle_time_ms": 0}
    if version < PRODUCE_HINTS_MIN_VERSION:
        return body
    hints: LeaderHints | None = None
    for name, presp in named:
        if presp["error_code"] in PRODUCE_HINT_CODES:
            hints = hints or LeaderHints(ctx.services, ctx.session.listener)
            presp["current_leader"] = hints.leader_of(name, presp["index"])  # type: ignore[typeddict-item]
    if hints is not None:
        body["node_endpoints"] = hints.node_endpoints()  # type: ignore[typeddict-item]
    return body
