"""DescribeTransactions and ListTransactions over the coordinator's transactional ids: their
answers (`TxnDescription`, `ListResult`) and the read-only lookups that build them. Pure;
`TxnCoordinatorCore` checks ownership and loading first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocol.errors import ErrorCode
from wirebroker.txn.metadata import TopicPartition, TxnMetadata, TxnState

E = ErrorCode


@dataclass(frozen=True)
class TxnDescription:
    """DescribeTransactions for one id (error NONE, or TRANSACTIONAL_ID_NOT_FOUND,
    NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST). An error's other fields
    are 0 and empty, as Kafka answers them (its response defaults); a found id's start time is
    -1 while no transaction runs."""

    transactional_id: str
    error: ErrorCode
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = 0
    producer_id: int = 0
    producer_epoch: int = 0
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class TxnListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class ListResult:
    """ListTransactions: the listed ids, and the state filters that name no state."""

    transactions: tuple[TxnListing, ...]
    unknown_state_filters: tuple[str, ...]
    error: ErrorCode = E.NONE


def describe_txn(txns: Mapping[str, TxnMetadata], transactional_id: str) -> TxnDescription:
    """DescribeTransactions for an id this coordinator owns."""
    meta = txns.get(transactional_id)
    if meta is None or meta.state is TxnState.DEAD:
        return TxnDescription(transactional_id, E.TRANSACTIONAL_ID_NOT_FOUND)
    return TxnDescription(
        transactional_id,
        E.NONE,
        state=meta.state.state_name,
        timeout_ms=meta.timeout_ms,
        start_ms=meta.start_ms,
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        partitions=tuple(sorted(meta.partitions)),
    )


def list_txns(
    txns: Mapping[str, TxnMetadata],
    now_ms: int,
    state_filters: Iterable[str] = (),
    producer_id_filters: Iterable[int] = (),
    min_duration_ms: int = -1,
) -> ListResult:
    """ListTransactions: empty filters match all; `min_duration_ms` (v1, KIP-994) keeps
    transactions running for longer than it (start time set)."""
    states: set[TxnState] = set()
    unknown: list[str] = []
    for name in state_filters:
        st = TxnState.from_name(name)
        if st is None:
            unknown.append(name)
        else:
            states.add(st)
    pids = set(producer_id_filters)
    out = []
    for tid, meta in sorted(txns.items()):
        if (states or unknown) and meta.state not in states:
            continue
        if pids and meta.producer_id not in pids:
            continue
        if min_duration_ms >= 0 and not (
            meta.start_ms >= 0 and now_ms - meta.start_ms > min_duration_ms
        ):
            continue
        out.append(TxnListing(tid, meta.producer_id, meta.state.state_name))
    return ListResult(tuple(out), tuple(unknown))
