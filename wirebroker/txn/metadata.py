"""One transactional id's state (Kafka's `TransactionMetadata`) and its transitions.

A transition is two-phase, as in Kafka: `prepare_*` builds a `TxnTransit` (the next state,
complete) and parks it as `pending`; the record of the transit is appended to
`__transaction_state`; only when the append succeeded does `complete(transit)` make it the
state. While a transit is pending every client request on the id is answered
CONCURRENT_TRANSACTIONS (the coordinator in `wirebroker.txn.coordinator` enforces this).

States and what each request does in them (P = pending transit in progress)
==========================================================================

state           InitProducerId          AddPartitions/Offsets   EndTxn commit    EndTxn abort
-------------   ---------------------   ---------------------   --------------   --------------
(absent)        new producer id,        INVALID_PRODUCER_ID_    INVALID_PRODUCER_ID_MAPPING
                epoch 0 -> Empty        MAPPING
Empty           epoch + 1 (or a new     -> Ongoing (start =     INVALID_TXN_STATE
                producer id when the    now)
                epoch is exhausted)
                -> Empty
Ongoing         fence: epoch + 1,       partitions already in:  -> PrepareCommit -> PrepareAbort
                -> PrepareAbort, then   NONE at once; else add
                markers; answer         (record)
                CONCURRENT_TRANSACTIONS
PrepareCommit   CONCURRENT_TRANS.       CONCURRENT_TRANS.       CONCURRENT_T.    INVALID_TXN_ST.
PrepareAbort    CONCURRENT_TRANS.       CONCURRENT_TRANS.       INVALID_TXN_ST.  CONCURRENT_T.
CompleteCommit  as Empty                -> Ongoing (start=now)  NONE (a retry)   INVALID_TXN_ST.
CompleteAbort   as Empty                -> Ongoing (start=now)  INVALID_TXN_ST.  NONE (a retry)
Dead            (being expired: never visible to a request; Describe says not found)
any, P          CONCURRENT_TRANS.       CONCURRENT_TRANS.       CONCURRENT_TRANSACTIONS
(A PrepareCommit/PrepareAbort id always has its CompleteX transit pending while its markers
are written, so in practice the "any, P" row answers every request there.)

Checks before the table, in Kafka's order: InitProducerId: transaction timeout in
(0, transaction.max.timeout.ms] else INVALID_TRANSACTION_TIMEOUT; pending -> CONCURRENT_
TRANSACTIONS; an expected (producer id, epoch) (KIP-360) that is neither the current producer
id, nor the previous one with an exhausted epoch -> PRODUCER_FENCED; with the current id, an
epoch that is neither the current nor the last one (a retry) -> PRODUCER_FENCED.
AddPartitions / EndTxn: producer id differs -> INVALID_PRODUCER_ID_MAPPING; epoch differs ->
PRODUCER_FENCED (the handler answers INVALID_PRODUCER_EPOCH to versions older than KIP-588's).

Coordinator-driven transitions: Ongoing past start + timeout -> epoch + 1, PrepareAbort
(markers, then CompleteAbort); Empty / CompleteCommit / CompleteAbort untouched for
transactional.id.expiration.ms -> Dead (a tombstone; removed when it is written);
PrepareCommit / PrepareAbort -> CompleteCommit / CompleteAbort once every partition acked its
marker (the partitions are cleared). Epochs: `EXHAUSTED_EPOCH` = 32766 (Short.MaxValue - 1);
at it InitProducerId rotates to a new producer id with epoch 0 (`last_producer_id` keeps the
old one so the retry of that InitProducerId is recognised).

Valid transitions (target <- allowed previous states), Kafka's `TransactionState`:
    Empty <- Empty, CompleteCommit, CompleteAbort;  Ongoing <- Ongoing, Empty, CompleteCommit,
    CompleteAbort;  PrepareCommit <- Ongoing;  PrepareAbort <- Ongoing, PrepareEpochFence,
    Empty, CompleteCommit, CompleteAbort (the last three: a TV2 abort of a transaction that
    added no partition);
    CompleteCommit <- PrepareCommit;  CompleteAbort <- PrepareAbort;
    Dead <- Empty, CompleteCommit, CompleteAbort;  PrepareEpochFence <- Ongoing.
(PrepareEpochFence is Kafka's in-memory step before a fencing abort; here the fence goes
straight to PrepareAbort with the bumped epoch, so the state is never stored; its id is still
decoded.)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from protocol.txn_records import TxnLogValue

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
EXHAUSTED_EPOCH = 32766  # Short.MaxValue - 1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class TxnState(enum.Enum):
    """Kafka's TransactionState: (id written in the log, name shown by Describe/List)."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        for s in cls:
            if s.id == state_id:
                return s
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        for s in cls:
            if s.state_name == name:
                return s
        return None


S = TxnState
VALID_PREVIOUS_STATES: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset(
        {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    ),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
COMPLETED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})
PREPARING = frozenset({S.PREPARE_COMMIT, S.PREPARE_ABORT})


class IllegalTransition(RuntimeError):
    """A bug: the coordinator tried a transition the state table forbids."""


def is_epoch_exhausted(epoch: int) -> bool:
    return epoch >= EXHAUSTED_EPOCH


@dataclass(frozen=True)
class TxnTransit:
    """The complete next state of a transactional id (Kafka's `TxnTransitMetadata`)."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    last_update_ms: int
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0

    def to_value(self) -> TxnLogValue | None:
        """The record value (None: a tombstone, for Dead). Partitions grouped by topic,
        sorted; null when Empty, as Kafka writes them."""
        if self.state is S.DEAD:
            return None
        grouped: dict[str, list[int]] = {}
        for tp in sorted(self.partitions):
            grouped.setdefault(tp.topic, []).append(tp.partition)
        parts = None
        if self.state is not S.EMPTY:
            parts = tuple((t, tuple(ids)) for t, ids in grouped.items())
        return TxnLogValue(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            timeout_ms=self.timeout_ms,
            status=self.state.id,
            partitions=parts,
            last_update_ms=self.last_update_ms,
            start_ms=self.start_ms,
            previous_producer_id=self.last_producer_id,
            next_producer_id=self.next_producer_id,
            client_transaction_version=self.client_transaction_version,
        )

    @property
    def value_version(self) -> int:
        """TransactionLogValue version this transit needs at least: 1 (flexible, with the
        tagged previous/next producer id and client transaction version) for a TV2
        transaction, else 0 (the coordinator writes 1 for all at transaction.version 2)."""
        return 1 if self.client_transaction_version >= 2 else 0


@dataclass
class TxnMetadata:
    """The coordinator's state of one transactional id."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = S.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    pending: TxnTransit | None = None
    """The transit whose record is being appended (or, for CompleteCommit/CompleteAbort, whose
    markers are being written); None when no transition is in progress."""
    next_producer_id: int = NO_PRODUCER_ID
    """TV2: the producer id the transaction rolls over to when its epoch bump exhausted the
    epochs (set at PrepareCommit/PrepareAbort, taken at CompleteCommit/CompleteAbort)."""
    client_transaction_version: int = 0
    """The transaction version of the client's last transition (2: KIP-890 part 2)."""
    has_failed_epoch_fence: bool = False
    """A fencing abort's append failed after its epoch bump was kept in memory: the next
    fence reuses that epoch instead of bumping again (Kafka's `hasFailedEpochFence`)."""

    @classmethod
    def from_value(cls, transactional_id: str, value: TxnLogValue) -> TxnMetadata:
        state = TxnState.from_id(value.status)
        parts: set[TopicPartition] = set()
        if state is not S.EMPTY:
            for topic, ids in value.partitions or ():
                parts.update(TopicPartition(topic, p) for p in ids)
        return cls(
            transactional_id=transactional_id,
            producer_id=value.producer_id,
            producer_epoch=value.producer_epoch,
            last_producer_id=value.previous_producer_id,
            timeout_ms=value.timeout_ms,
            state=state,
            partitions=parts,
            start_ms=value.start_ms,
            last_update_ms=value.last_update_ms,
            next_producer_id=value.next_producer_id,
            client_transaction_version=value.client_transaction_version,
        )

    # -- transits ----------------------------------------------------------------------

    def _transit(self, state: TxnState, now_ms: int, **changes: object) -> TxnTransit:
        if self.pending is not None:
            raise IllegalTransition(f"{self.transactional_id}: a transition is in progress")
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state} -> {state}")
        base = TxnTransit(
            producer_id=self.producer_id,
            last_producer_id=self.last_producer_id,
            producer_epoch=self.producer_epoch,
            last_producer_epoch=self.last_producer_epoch,
            timeout_ms=self.timeout_ms,
            state=state,
            partitions=frozenset(self.partitions),
            start_ms=self.start_ms,
            last_update_ms=now_ms,
            next_producer_id=self.next_producer_id,
            client_transaction_version=self.client_transaction_version,
        )
        transit = replace(base, **changes)  # type: ignore[arg-type]
        self.pending = transit
        return transit

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> TxnTransit | None:
        """InitProducerId on a completed id: the next epoch (-> Empty), or the same answer
        again for a retry (expected = the last epoch); None: PRODUCER_FENCED."""
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._transit(
            S.EMPTY,
            now_ms,
            producer_epoch=epoch,
            last_producer_epoch=last,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_ms=-1,
        )

    def prepare_rotation(
        self, new_producer_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransit:
        """InitProducerId at an exhausted epoch: a new producer id, epoch 0 (-> Empty)."""
        return self._transit(
            S.EMPTY,
            now_ms,
            producer_id=new_producer_id,
            last_producer_id=self.producer_id,
            producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_ms=-1,
        )

    def prepare_add_partitions(
        self, added: set[TopicPartition], now_ms: int, client_tv: int | None = None
    ) -> TxnTransit:
        start = now_ms if self.state in COMPLETED else self.start_ms
        tv = self.client_transaction_version if client_tv is None else client_tv
        return self._transit(
            S.ONGOING,
            now_ms,
            partitions=frozenset(self.partitions | added),
            start_ms=start,
            client_transaction_version=tv,
        )

    def prepare_end(self, commit: bool, now_ms: int, client_tv: int | None = None) -> TxnTransit:
        """EndTxn v0-4 (`client_tv` 0) / a fencing or timeout abort (None: the version
        stays): the epoch stays."""
        tv = self.client_transaction_version if client_tv is None else client_tv
        return self._transit(
            S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
            now_ms,
            client_transaction_version=tv,
        )

    def prepare_end_v2(
        self, commit: bool, next_producer_id: int, now_ms: int, *, no_partition_added: bool
    ) -> TxnTransit:
        """EndTxn v5 (KIP-890 part 2, Kafka's prepareAbortOrCommit with TV2): the epoch is
        bumped (the markers carry the new one, fencing the transaction's old epoch on every
        partition); `next_producer_id` (not -1 when the bump reaches Short.MaxValue) is the
        producer id taken at completion. `no_partition_added`: an abort from
        Empty/CompleteCommit/CompleteAbort (nothing to mark; starts now)."""
        if self.producer_epoch >= 32767:
            raise IllegalTransition(f"{self.transactional_id}: cannot bump epoch 32767")
        changes: dict[str, object] = {}
        if no_partition_added:
            changes = {"partitions": frozenset(), "start_ms": now_ms}
        return self._transit(
            S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
            now_ms,
            producer_epoch=self.producer_epoch + 1,
            last_producer_epoch=self.producer_epoch,
            next_producer_id=next_producer_id,
            client_transaction_version=2,
            **changes,
        )

    def fence_epoch(self) -> None:
        """The in-memory epoch bump of a fencing abort (Kafka's PrepareEpochFence step): the
        bumped epoch is never returned to a client; the producer must re-init."""
        if self.producer_epoch >= 32767:
            raise IllegalTransition(f"{self.transactional_id}: cannot fence epoch 32767")
        if not self.has_failed_epoch_fence:
            self.producer_epoch += 1
        self.last_producer_epoch = NO_PRODUCER_EPOCH

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """CompleteCommit/CompleteAbort; a TV2 transaction that exhausted its epochs takes
        its next producer id with epoch 0 here (Kafka's prepareComplete)."""
        state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.client_transaction_version >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            return self._transit(
                state,
                now_ms,
                partitions=frozenset(),
                producer_id=self.next_producer_id,
                last_producer_id=self.producer_id,
                producer_epoch=0,
                last_producer_epoch=self.producer_epoch,
                next_producer_id=NO_PRODUCER_ID,
            )
        return self._transit(state, now_ms, partitions=frozenset())

    def prepare_dead(self, now_ms: int) -> TxnTransit:
        return self._transit(S.DEAD, now_ms, partitions=frozenset())

    def complete(self, transit: TxnTransit) -> None:
        """Make the pending `transit` the state (its record is in the log)."""
        if self.pending is not transit:
            raise IllegalTransition(f"{self.transactional_id}: completing a stale transit")
        self.pending = None
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_ms = transit.start_ms
        self.last_update_ms = transit.last_update_ms
        self.next_producer_id = transit.next_producer_id
        self.client_transaction_version = transit.client_transaction_version
        if transit.state is S.PREPARE_ABORT:
            self.has_failed_epoch_fence = False
