"""What the pure transaction coordinator hands back to its runtime.

Every core call returns a `TxnResult`:
    response  the answer to send now, or None when it waits for an append (below);
    appends   `TxnAppend`s: one `__transaction_state` record each (key, value; value None is a
              tombstone) to append with acks=-1;
    markers   `MarkerRequest`s: WriteTxnMarkers to send (one COMMIT/ABORT control batch per
              partition, with the producer id/epoch and the coordinator epoch given).

Contract for the runtime:
- For each append: write it, wait for the high watermark, then call
  `core.append_done(append, error, now_ms)` (error None on success, else the append's
  ErrorCode). Its result's `response`, when not None, is the answer to the request that
  caused the append (an `InitPidResult` for InitProducerId, an ErrorCode otherwise); it may
  carry further appends and markers. A failed append of a CompleteCommit/CompleteAbort
  record comes back as a new append to retry (Kafka retries it too).
- For each marker: send WriteTxnMarkers to the partition's leader; when a partition answers
  NONE (or UNKNOWN_TOPIC_OR_PARTITION: the topic is gone, Kafka drops it), call
  `core.marker_done(request, partition, now_ms)`; retry other errors with a backoff (Kafka
  retries until the coordinator loses the partition). When the last partition is done the
  core returns the CompleteCommit/CompleteAbort append.
- A TxnAppend is hashable by identity: the runtime maps it to its waiting request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from protocol.errors import ErrorCode
from wirebroker.coordinator.errors import TXN_APPEND_ERRORS
from wirebroker.txn.metadata import TopicPartition, TxnTransit

R = TypeVar("R")


@dataclass(frozen=True)
class InitPidResult:
    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


class AppendKind:
    """Why a record is written (decides what `append_done` answers)."""

    INIT = "init"  # InitProducerId: answer InitPidResult
    ADD = "add"  # AddPartitionsToTxn / AddOffsetsToTxn: answer NONE
    END = "end"  # EndTxn from the client: answer NONE (v5: an EndTxnResult), then markers
    FENCE = "fence"  # InitProducerId on Ongoing: abort; answer CONCURRENT_TRANSACTIONS
    TIMEOUT = "timeout"  # coordinator abort of a timed-out transaction: no answer
    COMPLETE = "complete"  # CompleteCommit / CompleteAbort after the markers: no answer
    EXPIRE = "expire"  # tombstone of an expired transactional id: no answer


@dataclass(frozen=True, eq=False)
class TxnAppend:
    """One `__transaction_state` record to append (value None: a tombstone)."""

    partition: int
    coordinator_epoch: int
    transactional_id: str
    key: bytes
    value: bytes | None
    kind: str
    transit: TxnTransit


@dataclass(frozen=True)
class EndTxnResult:
    """EndTxn v5 (transaction version 2): the error, and the producer id and epoch the client
    continues with (the bumped epoch; the next producer id with epoch 0 after a rollover)."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True)
class MarkerRequest:
    """WriteTxnMarkers for one transaction: a COMMIT (or ABORT) marker on each partition."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    transaction_version: int = 0
    """WriteTxnMarkers v2's TransactionVersion: 2 when the epoch was bumped by EndTxn v5."""


@dataclass
class TxnResult(Generic[R]):
    response: R | None = None
    appends: list[TxnAppend] = field(default_factory=list)
    markers: list[MarkerRequest] = field(default_factory=list)


def append_error_to_response_error(error: ErrorCode) -> ErrorCode:
    """A failed `__transaction_state` append as the client sees it (Kafka's
    `TransactionStateManager.appendTransactionToLog`): `wirebroker.coordinator.errors`."""
    return TXN_APPEND_ERRORS(error)


def for_version(error: ErrorCode, supports_producer_fenced: bool) -> ErrorCode:
    """PRODUCER_FENCED is new in KIP-588; older request versions (InitProducerId < 4,
    AddPartitionsToTxn / AddOffsetsToTxn / EndTxn / TxnOffsetCommit < 2) get
    INVALID_PRODUCER_EPOCH instead, as Kafka's handlers answer."""
    if error is ErrorCode.PRODUCER_FENCED and not supports_producer_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
