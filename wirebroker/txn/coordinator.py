"""The pure transaction coordinator (Kafka's `TransactionCoordinator` + the cache side of its
`TransactionStateManager` and the completion side of its marker channel manager).

It never awaits and takes `now_ms`; every call returns a `TxnResult` (wirebroker.txn.effects:
response, `__transaction_state` appends, WriteTxnMarkers requests). The state table is in
`wirebroker.txn.metadata`. Ownership: a transactional id lives in `__transaction_state`
partition `partition_for(id)`; the core serves the partitions the runtime loaded
(`complete_loading`, with the partition's leader epoch as coordinator epoch) and answers
NOT_COORDINATOR for others, COORDINATOR_LOAD_IN_PROGRESS while one loads (`begin_loading`).
`unload` drops a partition; appends and markers still in flight for it then complete to
NOT_COORDINATOR / nothing (their coordinator epoch no longer matches).

Transaction version 2 (KIP-890 part 2): `end_txn(..., tv2=True)` (EndTxn v5) bumps the epoch
on every commit/abort and answers an `EndTxnResult` (see `_end_txn_v2`); partitions are added
implicitly by the partition leaders (AddPartitionsToTxn v5, verify_only false, `client_tv` 2).
Not here: TxnOffsetCommit (the group coordinator's side), the producer-id block allocation
(injected as `allocate_producer_id`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from protocol.errors import ErrorCode
from protocol.txn_records import encode_key, encode_value
from wirebroker.group.partitioning import partition_for as offsets_partition_for
from wirebroker.txn.config import TxnConfig
from wirebroker.txn.effects import (
    AppendKind,
    EndTxnResult,
    InitPidResult,
    MarkerRequest,
    TxnAppend,
    TxnResult,
    append_error_to_response_error,
)
from wirebroker.txn.metadata import (
    COMPLETED,
    EXHAUSTED_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    PREPARING,
    TopicPartition,
    TxnMetadata,
    TxnState,
    TxnTransit,
    is_epoch_exhausted,
)
from wirebroker.txn.partitioning import partition_for
from wirebroker.txn.queries import (
    ListResult,
    TxnDescription,
    TxnListing,
    describe_txn,
    list_txns,
)

OFFSETS_TOPIC = "__consumer_offsets"
E = ErrorCode

__all__ = ["ListResult", "TxnCoordinatorCore", "TxnDescription", "TxnListing"]
S = TxnState


class TxnCoordinatorCore:
    """Transactional ids -> `TxnMetadata`, for the `__transaction_state` partitions owned."""

    def __init__(self, config: TxnConfig, allocate_producer_id: Callable[[], int]) -> None:
        self.config = config
        self.allocate_producer_id = allocate_producer_id
        self.txns: dict[str, TxnMetadata] = {}
        self.owned: dict[int, int] = {}  # partition -> coordinator epoch
        self.loading: set[int] = set()
        self._markers: dict[str, tuple[MarkerRequest, set[TopicPartition]]] = {}

    # -- ownership -----------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.num_partitions)

    def _owner_error(self, transactional_id: str) -> ErrorCode | None:
        p = self.partition_for(transactional_id)
        if p in self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.owned:
            return E.NOT_COORDINATOR
        return None

    def begin_loading(self, partition: int) -> None:
        self.unload([partition])
        self.loading.add(partition)

    def complete_loading(
        self, partition: int, coordinator_epoch: int, loaded: dict[str, TxnMetadata], now_ms: int
    ) -> TxnResult[None]:
        """Install a replayed partition (`wirebroker.txn.loader`). Transactions found in
        PrepareCommit/PrepareAbort get their markers sent again (then complete), as Kafka's
        `loadTransactionsForTxnTopicPartition` does."""
        self.loading.discard(partition)
        self.owned[partition] = coordinator_epoch
        result: TxnResult[None] = TxnResult()
        for tid, meta in loaded.items():
            self.txns[tid] = meta
            if meta.state in PREPARING:
                self._send_markers(meta, meta.prepare_complete(now_ms), result)
        return result

    def unload(self, partitions: Iterable[int]) -> None:
        gone = set(partitions)
        for p in gone:
            self.owned.pop(p, None)
            self.loading.discard(p)
        for tid in [t for t in self.txns if self.partition_for(t) in gone]:
            del self.txns[tid]
            self._markers.pop(tid, None)

    def _value_version(self, transit: TxnTransit) -> int:
        """TransactionLogValue version 1 at transaction.version 2 (Kafka's choice), and for
        any TV2 transaction (its tags must survive a reload)."""
        return 1 if self.config.transaction_version >= 2 else transit.value_version

    def _append(self, meta: TxnMetadata, transit: TxnTransit, kind: str) -> TxnAppend:
        tid = meta.transactional_id
        p = self.partition_for(tid)
        value = transit.to_value()
        return TxnAppend(
            partition=p,
            coordinator_epoch=self.owned[p],
            transactional_id=tid,
            key=encode_key(tid),
            value=None if value is None else encode_value(value, self._value_version(transit)),
            kind=kind,
            transit=transit,
        )

    # -- InitProducerId ------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str | None,
        timeout_ms: int,
        now_ms: int,
        expected: tuple[int, int] | None = None,
    ) -> TxnResult[InitPidResult]:
        """InitProducerId. `expected`: the request's (producer id, epoch) when not (-1, -1)
        (KIP-360 v3+). Answered at once (errors, the idempotent case) or after the append."""
        if transactional_id is None:
            return TxnResult(InitPidResult(E.NONE, self.allocate_producer_id(), 0))
        if transactional_id == "":
            return TxnResult(InitPidResult(E.INVALID_REQUEST))
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return TxnResult(InitPidResult(E.INVALID_TRANSACTION_TIMEOUT))
        if (err := self._owner_error(transactional_id)) is not None:
            return TxnResult(InitPidResult(err))
        meta = self.txns.get(transactional_id)
        if meta is None:
            meta = TxnMetadata(
                transactional_id,
                self.allocate_producer_id(),
                timeout_ms=timeout_ms,
                last_update_ms=now_ms,
            )
            self.txns[transactional_id] = meta
        return self._prepare_init(meta, timeout_ms, expected, now_ms)

    def _prepare_init(
        self, meta: TxnMetadata, timeout_ms: int, expected: tuple[int, int] | None, now_ms: int
    ) -> TxnResult[InitPidResult]:
        if meta.pending is not None or meta.state in PREPARING:
            return TxnResult(InitPidResult(E.CONCURRENT_TRANSACTIONS))
        if expected is not None and not (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or expected[0] == meta.producer_id
            or (expected[0] == meta.last_producer_id and is_epoch_exhausted(expected[1]))
        ):
            return TxnResult(InitPidResult(E.PRODUCER_FENCED))
        if meta.state is S.ONGOING:
            # Abort the ongoing transaction with a bumped epoch that no client ever sees; the
            # client retries and then gets the epoch after it (or a new producer id).
            meta.fence_epoch()
            transit = meta.prepare_end(False, now_ms)
            return TxnResult(appends=[self._append(meta, transit, AppendKind.FENCE)])
        if meta.state not in COMPLETED:
            raise AssertionError(f"{meta.transactional_id}: InitProducerId in {meta.state}")
        if is_epoch_exhausted(meta.producer_epoch) and (
            expected is None or expected[1] == meta.producer_epoch
        ):
            transit = meta.prepare_rotation(
                self.allocate_producer_id(), timeout_ms, now_ms, expected is not None
            )
        else:
            maybe = meta.prepare_increment_epoch(
                timeout_ms, None if expected is None else expected[1], now_ms
            )
            if maybe is None:
                return TxnResult(InitPidResult(E.PRODUCER_FENCED))
            transit = maybe
        return TxnResult(appends=[self._append(meta, transit, AppendKind.INIT)])

    # -- AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> TxnMetadata | ErrorCode:
        if not transactional_id:
            return E.INVALID_REQUEST
        if (err := self._owner_error(transactional_id)) is not None:
            return err
        meta = self.txns.get(transactional_id)
        if (
            meta is not None
            and meta.state in PREPARING
            and meta.next_producer_id != NO_PRODUCER_ID
            and producer_id == meta.next_producer_id
        ):
            # TV2 rollover: EndTxn answered the next producer id while the markers are written
            return E.CONCURRENT_TRANSACTIONS
        if meta is None or meta.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != producer_epoch:
            return E.PRODUCER_FENCED
        return meta

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
        client_tv: int | None = None,
    ) -> TxnResult[ErrorCode]:
        """AddPartitionsToTxn (v0-3, and a v4+ transaction with verify_only false): one error
        for all the partitions (the handler answers it for each). `client_tv` 2: added by a
        partition leader for a TV2 producer (v5), recorded as the client's version."""
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(meta, ErrorCode):
            return TxnResult(meta)
        wanted = {TopicPartition(*tp) for tp in partitions}
        if meta.pending is not None or meta.state in PREPARING:
            return TxnResult(E.CONCURRENT_TRANSACTIONS)
        if meta.state is S.ONGOING and wanted <= meta.partitions:
            return TxnResult(E.NONE)
        transit = meta.prepare_add_partitions(wanted, now_ms, client_tv)
        return TxnResult(appends=[self._append(meta, transit, AppendKind.ADD)])

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ with verify_only (KIP-890 part 1, sent by partition leaders
        before a transactional append): NONE for each partition already in the ongoing
        transaction, TRANSACTION_ABORTABLE for the others; an id/epoch/state error for all."""
        wanted = [TopicPartition(*tp) for tp in partitions]
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(meta, ErrorCode):
            return dict.fromkeys(wanted, meta)
        if meta.state in PREPARING:
            return dict.fromkeys(wanted, E.CONCURRENT_TRANSACTIONS)
        return {tp: E.NONE if tp in meta.partitions else E.TRANSACTION_ABORTABLE for tp in wanted}

    def add_offsets(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        now_ms: int,
    ) -> TxnResult[ErrorCode]:
        """AddOffsetsToTxn: adds the group's `__consumer_offsets` partition."""
        tp = TopicPartition(
            OFFSETS_TOPIC, offsets_partition_for(group_id, self.config.offsets_num_partitions)
        )
        return self.add_partitions(transactional_id, producer_id, producer_epoch, [tp], now_ms)

    # -- EndTxn, timeouts, expiration ----------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
        tv2: bool = False,
    ) -> TxnResult[Any]:
        """EndTxn from the client. v0-4 (TV0/1): the epoch must match exactly; answers an
        ErrorCode. `tv2` (v5): `_end_txn_v2`, answers an `EndTxnResult`."""
        if tv2:
            return self._end_txn_v2(transactional_id, producer_id, producer_epoch, commit, now_ms)
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(meta, ErrorCode):
            return TxnResult(meta)
        if meta.pending is not None:
            return TxnResult(E.CONCURRENT_TRANSACTIONS)
        state = meta.state
        if state is S.ONGOING:
            transit = meta.prepare_end(commit, now_ms, client_tv=0)
            return TxnResult(appends=[self._append(meta, transit, AppendKind.END)])
        same = (state in (S.PREPARE_COMMIT, S.COMPLETE_COMMIT)) == commit
        if state in PREPARING and same:
            return TxnResult(E.CONCURRENT_TRANSACTIONS)
        if state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and same:
            return TxnResult(E.NONE)  # a retry of an EndTxn that completed
        return TxnResult(E.INVALID_TXN_STATE)

    def _end_txn_v2(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
    ) -> TxnResult[EndTxnResult]:
        """EndTxn v5 (Kafka's TV2 endTransaction). Every commit/abort bumps the epoch
        (PrepareX carries epoch + 1; the markers are written with it, so the old epoch is
        fenced on every partition) and answers the new (producer id, epoch). At an exhausted
        epoch (>= 32766) the bump goes to 32767 and a next producer id is allocated: the
        answer carries it with epoch 0, taken at CompleteX. Retries of an EndTxn whose answer
        was lost come with the old epoch: epoch + 1 == current (or the old producer id at
        32766 after a rollover) -> NONE with the current id/epoch once complete. While a
        transit is pending (the markers of a PrepareX are being written) every EndTxn is
        answered CONCURRENT_TRANSACTIONS before any id or epoch check (Kafka 4.4 does so
        for the new epoch, the retry, other epochs and other producer ids alike). The epoch
        check by state: Ongoing/Empty: equal; PrepareX: only the retry; CompleteX: the retry
        or equal. An abort from Empty /
        CompleteCommit / CompleteAbort (the client cannot know whether its first Produce
        reached a leader) is a transaction without partitions: PrepareAbort, then at once
        CompleteAbort, with the bump."""

        def fail(error: ErrorCode) -> TxnResult[EndTxnResult]:
            return TxnResult(EndTxnResult(error))

        if not transactional_id:
            return fail(E.INVALID_REQUEST)
        if (err := self._owner_error(transactional_id)) is not None:
            return fail(err)
        meta = self.txns.get(transactional_id)
        if meta is None:
            return fail(E.INVALID_PRODUCER_ID_MAPPING)
        if meta.pending is not None:
            # Before the id and epoch checks, as Kafka 4.4 answers: while the markers of the
            # previous EndTxn are written, even the producer's next epoch waits.
            return fail(E.CONCURRENT_TRANSACTIONS)
        state = meta.state
        retry_on_overflow = (
            meta.last_producer_id == producer_id
            and producer_epoch == EXHAUSTED_EPOCH
            and meta.producer_epoch == 0
        )
        retry_on_bump = (
            meta.producer_id == producer_id and meta.producer_epoch == producer_epoch + 1
        )
        if state in (S.ONGOING, S.EMPTY):
            valid = producer_epoch == meta.producer_epoch
        elif state in PREPARING:
            valid = retry_on_bump
        else:
            valid = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if meta.producer_id != producer_id and not retry_on_overflow:
            return fail(E.INVALID_PRODUCER_ID_MAPPING)
        if not valid:
            return fail(E.PRODUCER_FENCED)
        done = (state is S.COMPLETE_COMMIT) == commit
        if state is S.ONGOING or (not commit and state in COMPLETED and not is_retry):
            if meta.producer_epoch >= 32767:
                # only after a fencing abort at 32766 (never told to a client): re-init
                return fail(E.PRODUCER_FENCED)
            next_pid = (
                self.allocate_producer_id()
                if is_epoch_exhausted(meta.producer_epoch)
                else NO_PRODUCER_ID
            )
            transit = meta.prepare_end_v2(
                commit, next_pid, now_ms, no_partition_added=state is not S.ONGOING
            )
            return TxnResult(appends=[self._append(meta, transit, AppendKind.END)])
        if state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and done and is_retry:
            return TxnResult(EndTxnResult(E.NONE, meta.producer_id, meta.producer_epoch))
        if state in PREPARING and (state is S.PREPARE_COMMIT) == commit:
            return fail(E.CONCURRENT_TRANSACTIONS)
        return fail(E.INVALID_TXN_STATE)

    def abort_timed_out(self, now_ms: int) -> TxnResult[None]:
        """Abort (with an epoch bump, fencing the producer) every Ongoing transaction older
        than its timeout; the runtime calls this every abort_check_interval_ms."""
        result: TxnResult[None] = TxnResult()
        for meta in self.txns.values():
            if (
                meta.state is S.ONGOING
                and meta.pending is None
                and meta.start_ms + meta.timeout_ms < now_ms
                and self.partition_for(meta.transactional_id) in self.owned
            ):
                meta.fence_epoch()
                transit = meta.prepare_end(False, now_ms)
                result.appends.append(self._append(meta, transit, AppendKind.TIMEOUT))
        return result

    def expire_transactional_ids(self, now_ms: int) -> TxnResult[None]:
        """Tombstone every completed id untouched for transactional.id.expiration.ms."""
        result: TxnResult[None] = TxnResult()
        horizon = now_ms - self.config.id_expiration_ms
        for meta in self.txns.values():
            if (
                meta.state in COMPLETED
                and meta.pending is None
                and meta.last_update_ms <= horizon
                and self.partition_for(meta.transactional_id) in self.owned
            ):
                transit = meta.prepare_dead(now_ms)
                result.appends.append(self._append(meta, transit, AppendKind.EXPIRE))
        return result

    # -- completions ---------------------------------------------------------------------

    def append_done(
        self, append: TxnAppend, error: ErrorCode | None, now_ms: int
    ) -> TxnResult[InitPidResult | ErrorCode]:
        """The append of `append` finished (error None: replicated). Completes or reverts its
        transit; the response (if any) answers the request that caused it."""
        result: TxnResult[InitPidResult | ErrorCode] = TxnResult()
        meta = self.txns.get(append.transactional_id)
        if (
            self.owned.get(append.partition) != append.coordinator_epoch
            or meta is None
            or meta.pending is not append.transit
        ):
            return self._answer(append, E.NOT_COORDINATOR, result)
        if error is not None:
            return self._append_failed(meta, append, append_error_to_response_error(error), result)
        meta.complete(append.transit)
        kind = append.kind
        if kind == AppendKind.INIT:
            result.response = InitPidResult(E.NONE, meta.producer_id, meta.producer_epoch)
        elif kind == AppendKind.ADD:
            result.response = E.NONE
        elif kind in (AppendKind.END, AppendKind.FENCE, AppendKind.TIMEOUT):
            if kind == AppendKind.END and append.transit.client_transaction_version >= 2:
                result.response = _end_v2_answer(append.transit)  # type: ignore[assignment]
            elif kind == AppendKind.END:
                result.response = E.NONE
            elif kind == AppendKind.FENCE:
                result.response = InitPidResult(E.CONCURRENT_TRANSACTIONS)
            self._send_markers(meta, meta.prepare_complete(now_ms), result)
        elif kind == AppendKind.EXPIRE:
            del self.txns[meta.transactional_id]
        return result

    @staticmethod
    def _answer(
        append: TxnAppend, error: ErrorCode, result: TxnResult[InitPidResult | ErrorCode]
    ) -> TxnResult[InitPidResult | ErrorCode]:
        kind = append.kind
        if kind in (AppendKind.INIT, AppendKind.FENCE):
            result.response = InitPidResult(error)
        elif kind == AppendKind.END and append.transit.client_transaction_version >= 2:
            result.response = EndTxnResult(error)  # type: ignore[assignment]
        elif kind in (AppendKind.ADD, AppendKind.END):
            result.response = error
        return result

    def _append_failed(
        self,
        meta: TxnMetadata,
        append: TxnAppend,
        error: ErrorCode,
        result: TxnResult[InitPidResult | ErrorCode],
    ) -> TxnResult[InitPidResult | ErrorCode]:
        meta.pending = None
        if append.kind in (AppendKind.FENCE, AppendKind.TIMEOUT):
            meta.has_failed_epoch_fence = True  # the bumped epoch stays in memory
        if append.kind == AppendKind.COMPLETE:
            if error is E.COORDINATOR_NOT_AVAILABLE:  # retriable: write it again
                meta.pending = append.transit
                result.appends.append(append)
            return result
        return self._answer(append, error, result)

    def _send_markers(
        self, meta: TxnMetadata, complete: TxnTransit, result: TxnResult[Any]
    ) -> None:
        """Markers for a PrepareCommit/PrepareAbort transaction; `complete` (the pending
        CompleteX transit) is written when the last partition acked."""
        p = self.partition_for(meta.transactional_id)
        request = MarkerRequest(
            meta.transactional_id,
            meta.producer_id,
            meta.producer_epoch,
            self.owned[p],
            meta.state is S.PREPARE_COMMIT,
            frozenset(meta.partitions),
            meta.client_transaction_version,
        )
        if not meta.partitions:
            result.appends.append(self._append_complete(meta, complete))
            return
        self._markers[meta.transactional_id] = (request, set(meta.partitions))
        result.markers.append(request)

    def _append_complete(self, meta: TxnMetadata, complete: TxnTransit) -> TxnAppend:
        meta.pending = None
        append = self._append(meta, complete, AppendKind.COMPLETE)
        meta.pending = complete
        return append

    def marker_done(
        self, request: MarkerRequest, partition: TopicPartition, now_ms: int
    ) -> TxnResult[None]:
        """One partition wrote `request`'s marker (or its topic is gone)."""
        result: TxnResult[None] = TxnResult()
        entry = self._markers.get(request.transactional_id)
        meta = self.txns.get(request.transactional_id)
        if entry is None or entry[0] is not request or meta is None or meta.pending is None:
            return result
        entry[1].discard(TopicPartition(*partition))
        if not entry[1]:
            del self._markers[request.transactional_id]
            result.appends.append(self._append_complete(meta, meta.pending))
        return result

    def marker_pending(self, request: MarkerRequest) -> bool:
        """`request` is still the current marker request of its transaction, under the same
        coordinator epoch (False once its partition was unloaded or the transaction moved on):
        the sender retries only these."""
        entry = self._markers.get(request.transactional_id)
        p = self.partition_for(request.transactional_id)
        return (
            entry is not None
            and entry[0] is request
            and self.owned.get(p) == request.coordinator_epoch
        )

    def pending_markers(self) -> list[tuple[MarkerRequest, frozenset[TopicPartition]]]:
        """Marker requests still waiting, with the partitions not yet acked."""
        return [(req, frozenset(left)) for req, left in self._markers.values()]

    # -- Describe / List (queries.py) ---------------------------------------------------

    def describe(self, transactional_id: str) -> TxnDescription:
        if not transactional_id:
            return TxnDescription(transactional_id, E.INVALID_REQUEST)
        if (err := self._owner_error(transactional_id)) is not None:
            return TxnDescription(transactional_id, err)
        return describe_txn(self.txns, transactional_id)

    def list_transactions(
        self,
        now_ms: int,
        state_filters: Iterable[str] = (),
        producer_id_filters: Iterable[int] = (),
        min_duration_ms: int = -1,
    ) -> ListResult:
        """ListTransactions (`queries.list_txns`); none while a partition loads."""
        if self.loading:
            return ListResult((), (), E.COORDINATOR_LOAD_IN_PROGRESS)
        return list_txns(self.txns, now_ms, state_filters, producer_id_filters, min_duration_ms)


def _end_v2_answer(transit: TxnTransit) -> EndTxnResult:
    """EndTxn v5's answer once PrepareX is written: the bumped epoch, or after a rollover the
    next producer id with epoch 0 (what the client's next transaction uses)."""
    if transit.next_producer_id != NO_PRODUCER_ID:
        return EndTxnResult(E.NONE, transit.next_producer_id, 0)
    return EndTxnResult(E.NONE, transit.producer_id, transit.producer_epoch)
