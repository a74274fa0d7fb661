"""A share partition (KIP-932): one share group's view of one topic partition, on its leader.

Pure: every call takes `now_ms` and nothing awaits; the runtime (`wirebroker.share.manager`)
reads the log, talks to the persister and applies what this returns. Kafka's SharePartition
(core/src/main/java/kafka/server/share) is the specification.

The window. The share-partition start offset (SPSO, `start_offset`) is the first offset not
yet in a terminal state; `next_offset` (Kafka's end offset + 1, SPEO + 1) the first offset
never acquired. Every offset in [start_offset, next_offset) has an in-flight state
(`InFlight`: state, delivery count, owner, lock deadline); below the window everything is
done, above it nothing was delivered. The window is kept per offset (Kafka keeps batches that
split per offset when needed); it never exceeds the record-lock cap by more than one log batch.

States (Kafka's RecordState ids) and transitions:

    AVAILABLE (0)    -> ACQUIRED            acquire (delivery count + 1, lock until now+duration)
    ACQUIRED (1)     -> ACKNOWLEDGED        ACCEPT (1)
                     -> AVAILABLE           RELEASE (2), lock timeout, member released;
                                            ARCHIVED instead once the delivery count reached
                                            share.delivery.count.limit
                     -> ARCHIVED            REJECT (3), GAP (0)
                     -> ACQUIRED            RENEW (4, KIP-1222): the lock starts again
    ACKNOWLEDGED (2), ARCHIVED (4)          terminal; the SPSO moves over them

Acquisition (`acquire`): the runtime reads the log from `next_fetch_offset()` (the first
AVAILABLE offset in the window, else `next_offset`) and passes the log batches it got; records
AVAILABLE in the window and new records after it are acquired, up to `max_records`, in
batch-optimized mode rounded up to the end of the log batch holding the last one (Kafka's
ShareAcquireMode BATCH_OPTIMIZED; RECORD_LIMIT stops exactly). New records are taken only while
the window is below `max_record_locks` (share.partition.max.record.locks). Offsets the read
skipped (between the fetch offset or `next_offset` and the next batch: compacted away) are
archived, never delivered; offsets without a record inside a batch's range are delivered with
it and the client acknowledges them as GAP. A batch flagged `aborted` (read_committed, an
aborted transaction's data) is archived, never delivered. Kafka's delivery throttling, so
that one bad record does not take its neighbours to the limit: a batch holding a record
delivered `throttle_limit()` times (half the delivery count limit, at least 2) is acquired on
its own, at most its size halved once per delivery from that limit; a record on its last
delivery attempt is not acquired after others (it goes alone in the next fetch).
Releasing a member's records when its share session closes takes their delivery count back.

Acknowledgement (`acknowledge`): all of a request's ranges for the partition or none. Each
offset must be ACQUIRED by the member (else INVALID_RECORD_STATE); a range past `next_offset`
is INVALID_REQUEST; offsets below the SPSO are skipped (already done). It returns a
`PendingChange`: the runtime writes its `state` (the new SPSO and the changed ranges) through
the persister and `commit`s it only when the write succeeded (Kafka rolls back otherwise).

Persisted state: ACQUIRED is never written; AVAILABLE, ACKNOWLEDGED and ARCHIVED ranges are
written when they change (acknowledgements, lock timeouts, releases, aborted data archived at
acquisition), with the SPSO. `initialize` rebuilds the window from a read state: offsets up to
the last persisted range that no range covers were in flight when the state was written and
are AVAILABLE again with delivery count 0 (Kafka's initial read gap).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from protocol.errors import ErrorCode
from wirebroker.share.persister import PartitionState, StateBatch

__all__ = [
    "AckBatch",
    "AckType",
    "Acquired",
    "InFlight",
    "LogBatch",
    "PendingChange",
    "RecordState",
    "ShareError",
    "SharePartition",
    "SharePartitionConfig",
]


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_PAST_ACQUIRED = "Batch record not found. The last offset in request is past acquired records."
_PERSISTED = frozenset({0, 2, 4})
_TERMINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
_ACK_TARGET = {
    AckType.GAP: RecordState.ARCHIVED,
    AckType.ACCEPT: RecordState.ACKNOWLEDGED,
    AckType.RELEASE: RecordState.AVAILABLE,
    AckType.REJECT: RecordState.ARCHIVED,
    AckType.RENEW: RecordState.ACQUIRED,
}


@dataclass(slots=True)
class InFlight:
    """One offset of the window."""

    state: RecordState
    delivery_count: int
    member_id: str = ""
    #: while ACQUIRED: when the acquisition lock runs out
    lock_until_ms: int = 0


@dataclass(frozen=True)
class SharePartitionConfig:
    """The group's settings a share partition uses (group configs over broker defaults)."""

    lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2_000
    #: share.auto.offset.reset: "latest", "earliest" (by_duration is resolved by the runtime)
    auto_offset_reset: str = "latest"


@dataclass(frozen=True)
class LogBatch:
    """A log batch the runtime read: its offsets, and whether it must not be delivered."""

    first_offset: int
    last_offset: int
    aborted: bool = False


@dataclass(frozen=True)
class Acquired:
    """A range acquired for a member (ShareFetch's acquired_records)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class AckBatch:
    """One acknowledgement range: one type for all of it, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class ShareError(Exception):
    """A refused request: its error code and Kafka's message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class PendingChange:
    """A change decided but not applied: write `state`, then `SharePartition.commit` it."""

    state: PartitionState | None
    updates: dict[int, InFlight] = field(default_factory=dict)
    #: records became AVAILABLE (waiting fetches may acquire them)
    released: bool = False


class SharePartition:
    """One share group's share partition (module docstring)."""

    def __init__(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        config: SharePartitionConfig | None = None,
    ) -> None:
        self.group_id = group_id
        self.topic_id = topic_id
        self.partition = partition
        self.config = config or SharePartitionConfig()
        self.state_epoch = 0
        self.leader_epoch = -1
        self.start_offset = 0
        self.next_offset = 0
        self.records: dict[int, InFlight] = {}

    # -- initialisation --------------------------------------------------------------------
    def initialize(
        self, persisted: PartitionState, *, log_start: int, log_end: int, leader_epoch: int
    ) -> None:
        """The window from a persisted state; start offset -1: share.auto.offset.reset
        (earliest: the log start, latest: `log_end`, the offset the next record gets)."""
        self.state_epoch = persisted.state_epoch
        self.leader_epoch = leader_epoch
        start = persisted.start_offset
        if start < 0:
            start = log_start if self.config.auto_offset_reset == "earliest" else log_end
        self.start_offset = start
        self.records = {}
        batches = [b for b in persisted.batches if b.last_offset >= start]
        last = max((b.last_offset for b in batches), default=start - 1)
        for offset in range(start, last + 1):
            self.records[offset] = InFlight(RecordState.AVAILABLE, 0)
        for b in batches:
            # anything but the persisted states (never written so): deliverable
            state = (
                RecordState(b.delivery_state)
                if b.delivery_state in _PERSISTED
                else RecordState.AVAILABLE
            )
            for offset in range(max(b.first_offset, start), b.last_offset + 1):
                self.records[offset] = InFlight(state, b.delivery_count)
        self.next_offset = last + 1
        self._advance_start()

    # -- queries ---------------------------------------------------------------------------
    def next_fetch_offset(self) -> int:
        """Where the next log read starts: the first AVAILABLE offset, else `next_offset`."""
        for offset in range(self.start_offset, self.next_offset):
            if self.records[offset].state is RecordState.AVAILABLE:
                return offset
        return self.next_offset

    def in_flight(self) -> int:
        return self.next_offset - self.start_offset

    def can_acquire(self) -> bool:
        """Records could be acquired: some AVAILABLE in the window, or room for new ones."""
        if self.next_fetch_offset() < self.next_offset:
            return True
        return self.in_flight() < self.config.max_record_locks

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition lock deadline (None: nothing acquired)."""
        return min(
            (r.lock_until_ms for r in self.records.values() if r.state is RecordState.ACQUIRED),
            default=None,
        )

    def persisted_state(self) -> PartitionState:
        """The whole window as the persister would hold it (ACQUIRED written as AVAILABLE)."""
        return self._state(self.start_offset, self.records)

    # -- acquisition -----------------------------------------------------------------------
    def throttle_limit(self) -> int:
        """Delivery count from which a record's batch is throttled (Kafka: half the delivery
        count limit rounded up, at least 2), so that one bad record does not take its whole
        batch to the limit."""
        return max(2, -(-self.config.delivery_count_limit // 2))

    def acquire(
        self,
        member_id: str,
        batches: Sequence[LogBatch],
        max_records: int,
        now_ms: int,
        *,
        fetch_offset: int | None = None,
        record_limit: bool = False,
        batch_size: int = 0,
    ) -> tuple[list[Acquired], PendingChange | None]:
        """Acquire for `member_id` from the log batches read from `fetch_offset` (module
        docstring). Returns the acquired ranges and, when offsets were archived on the way
        (aborted data, offsets the log no longer has), the change to write (applied already:
        nothing to roll back). `batch_size` > 0 (batch-optimized mode): the ranges are split
        at log batches once `batch_size` long."""
        taken: list[int] = []
        archived: dict[int, InFlight] = {}
        if batches and fetch_offset is not None:
            self._archive_missing(fetch_offset, batches[0].first_offset, archived)
        lock_until = now_ms + self.config.lock_duration_ms
        for batch in batches:
            if len(taken) >= max_records:
                break
            if batch.first_offset > self.next_offset:
                self._archive_missing(self.next_offset, batch.first_offset, archived)
            room = max_records - len(taken) if record_limit else None
            throttle = self._throttle(batch)
            if throttle is not None:
                if taken:
                    break  # a throttled batch is delivered on its own
                room = throttle if room is None else min(room, throttle)
            if not self._acquire_batch(member_id, batch, room, lock_until, taken, archived):
                break
            if throttle is not None:
                break
        change = None
        if archived:
            self._advance_start()
            change = PendingChange(self._state(self.start_offset, archived))
        splits = frozenset(b.first_offset for b in batches) if not record_limit else frozenset()
        return _acquired_ranges(taken, self.records, splits, batch_size), change

    def _archive_missing(self, first: int, end: int, archived: dict[int, InFlight]) -> None:
        """Offsets in [first, end) the log read skipped (compacted away, never written):
        AVAILABLE ones of the window and new ones are archived, never delivered (Kafka
        archives stale cached batches and does not acquire what the log lacks)."""
        for offset in range(max(first, self.start_offset), end):
            rec = self.records.get(offset)
            if rec is None:
                if offset != self.next_offset:
                    return
                rec = self.records[offset] = InFlight(RecordState.ARCHIVED, 0)
                self.next_offset = offset + 1
                archived[offset] = rec
            elif rec.state is RecordState.AVAILABLE:
                rec.state = RecordState.ARCHIVED
                archived[offset] = rec

    def _acquire_batch(
        self,
        member_id: str,
        batch: LogBatch,
        room: int | None,
        lock_until: int,
        taken: list[int],
        archived: dict[int, InFlight],
    ) -> bool:
        """Acquire what `batch` offers (`_batch_offsets`) into `taken`; False: stop here (a
        record on its last delivery attempt is left to be delivered alone)."""
        last_attempt = self.config.delivery_count_limit - 1
        for offset in self._batch_offsets(batch, room):
            rec = self.records.get(offset)
            if rec is None:
                rec = InFlight(RecordState.AVAILABLE, 0)
                self.records[offset] = rec
                self.next_offset = offset + 1
            elif rec.state is not RecordState.AVAILABLE:
                continue
            if batch.aborted:
                rec.state, rec.member_id = RecordState.ARCHIVED, ""
                archived[offset] = rec
                continue
            if last_attempt > 1 and rec.delivery_count == last_attempt and taken:
                return False
            rec.state, rec.member_id = RecordState.ACQUIRED, member_id
            rec.delivery_count += 1
            rec.lock_until_ms = lock_until
            taken.append(offset)
        return True

    def _throttle(self, batch: LogBatch) -> int | None:
        """How many records of `batch` one acquisition may take when an AVAILABLE record of it
        was delivered `throttle_limit()` times or more: the batch's size halved for each
        delivery from the limit on, counted on the first such record (Kafka's delivery
        throttling); None: no throttling."""
        limit = self.throttle_limit()
        for offset in range(max(batch.first_offset, self.start_offset), batch.last_offset + 1):
            rec = self.records.get(offset)
            if rec is None:
                return None  # new records from here on
            if rec.state is RecordState.AVAILABLE and rec.delivery_count >= limit:
                size = batch.last_offset - batch.first_offset + 1
                return max(1, size >> (rec.delivery_count - limit + 1))
        return None

    def _batch_offsets(self, batch: LogBatch, room: int | None) -> Iterator[int]:
        """The offsets of `batch` acquisition may take: AVAILABLE ones in the window, then new
        ones from `next_offset` while the window is under the record-lock cap (checked at
        each new offset in record-limit mode, where `room` bounds the count; at the batch's
        first new offset in batch mode, which then takes the whole batch)."""
        first = max(batch.first_offset, self.start_offset)
        cap = self.config.max_record_locks
        taking_new = False
        count = 0
        for offset in range(first, batch.last_offset + 1):
            if room is not None and count >= room:
                return
            rec = self.records.get(offset)
            if rec is None:
                if (room is not None or not taking_new) and self.in_flight() >= cap:
                    return
                taking_new = True
            if rec is None or rec.state is RecordState.AVAILABLE:
                count += 1
            yield offset

    # -- acknowledgement -------------------------------------------------------------------
    def acknowledge(
        self, member_id: str, batches: Sequence[AckBatch], now_ms: int
    ) -> PendingChange:
        """Plan the acknowledgement of `batches` by `member_id` (all or nothing). Raises
        ShareError (INVALID_REQUEST, INVALID_RECORD_STATE) when any range is refused."""
        updates: dict[int, InFlight] = {}
        for batch in batches:
            if batch.last_offset < self.start_offset:
                continue  # already archived or acknowledged
            if batch.last_offset >= self.next_offset:
                raise ShareError(ErrorCode.INVALID_REQUEST, _PAST_ACQUIRED)
            first = max(batch.first_offset, self.start_offset)
            for offset in range(first, batch.last_offset + 1):
                kind = batch.types[offset - batch.first_offset if len(batch.types) > 1 else 0]
                rec = updates.get(offset) or self.records[offset]
                if rec.state is not RecordState.ACQUIRED:
                    raise ShareError(
                        ErrorCode.INVALID_RECORD_STATE,
                        "The batch cannot be acknowledged. The offset is not acquired.",
                    )
                if rec.member_id != member_id:
                    raise ShareError(
                        ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of offset"
                    )
                updates[offset] = self._after_ack(rec, AckType(kind), now_ms)
        return self._pending(updates)

    def _after_ack(self, rec: InFlight, kind: AckType, now_ms: int) -> InFlight:
        target = _ACK_TARGET[kind]
        if target is RecordState.ACQUIRED:
            until = now_ms + self.config.lock_duration_ms
            return InFlight(target, rec.delivery_count, rec.member_id, until)
        if target is RecordState.AVAILABLE:
            return self._released(rec)
        return InFlight(target, rec.delivery_count)

    def _released(self, rec: InFlight) -> InFlight:
        """An ACQUIRED record given back: AVAILABLE, or ARCHIVED at the delivery count limit."""
        if rec.delivery_count >= self.config.delivery_count_limit:
            return InFlight(RecordState.ARCHIVED, rec.delivery_count)
        return InFlight(RecordState.AVAILABLE, rec.delivery_count)

    def release_member(self, member_id: str) -> PendingChange:
        """Plan the release of every record `member_id` holds (its share session closed):
        AVAILABLE with the delivery count taken back, as Kafka does (fetched, maybe never
        handed to the application)."""
        return self._pending(
            {
                offset: InFlight(RecordState.AVAILABLE, max(0, rec.delivery_count - 1))
                for offset, rec in self.records.items()
                if rec.state is RecordState.ACQUIRED and rec.member_id == member_id
            }
        )

    def expire_locks(self, now_ms: int) -> PendingChange:
        """Plan the release of every record whose acquisition lock ran out by `now_ms`."""
        return self._pending(
            {
                offset: self._released(rec)
                for offset, rec in self.records.items()
                if rec.state is RecordState.ACQUIRED and rec.lock_until_ms <= now_ms
            }
        )

    def commit(self, change: PendingChange) -> None:
        """Apply a planned change (after its state was written)."""
        for offset, rec in change.updates.items():
            if offset in self.records:
                self.records[offset] = rec
        self._advance_start()

    def _pending(self, updates: dict[int, InFlight]) -> PendingChange:
        if not updates:
            return PendingChange(None)
        persisted = {o: r for o, r in updates.items() if r.state is not RecordState.ACQUIRED}
        start = self._start_after(updates)
        state = self._state(start, persisted) if persisted or start != self.start_offset else None
        released = any(r.state is RecordState.AVAILABLE for r in updates.values())
        return PendingChange(state, updates, released)

    # -- the window ------------------------------------------------------------------------
    def _start_after(self, updates: Mapping[int, InFlight]) -> int:
        start = self.start_offset
        while start < self.next_offset:
            rec = updates.get(start) or self.records[start]
            if rec.state not in _TERMINAL:
                break
            start += 1
        return start

    def _advance_start(self) -> None:
        start = self._start_after({})
        for offset in range(self.start_offset, start):
            del self.records[offset]
        self.start_offset = start

    def advance_log_start(self, log_start: int) -> PendingChange | None:
        """The log start moved past the SPSO (retention, DeleteRecords): the offsets below it
        that are not acquired are archived, the window starts there (Kafka's
        updateCacheAndOffsets). Applied at once; the change to write, if any."""
        if log_start <= self.start_offset:
            return None
        archived: dict[int, InFlight] = {}
        for offset in range(self.start_offset, min(log_start, self.next_offset)):
            rec = self.records[offset]
            if rec.state is RecordState.AVAILABLE:
                rec.state = RecordState.ARCHIVED
                archived[offset] = rec
        if log_start >= self.next_offset and not any(
            r.state is RecordState.ACQUIRED for r in self.records.values()
        ):
            self.records.clear()
            self.start_offset = self.next_offset = log_start
        else:
            self._advance_start()
        return PendingChange(self._state(self.start_offset, archived))

    def _state(self, start: int, records: Mapping[int, InFlight]) -> PartitionState:
        """`records` (offset -> state) as persisted ranges from `start`: ACQUIRED as AVAILABLE
        with its count before this delivery, adjacent offsets of one state and count merged."""
        batches: list[StateBatch] = []
        for offset in sorted(records):
            if offset < start:
                continue
            rec = records[offset]
            state, count = rec.state, rec.delivery_count
            if state is RecordState.ACQUIRED:
                state, count = RecordState.AVAILABLE, count - 1
            last = batches[-1] if batches else None
            if (
                last is not None
                and last.last_offset + 1 == offset
                and (last.delivery_state, last.delivery_count) == (int(state), count)
            ):
                batches[-1] = StateBatch(last.first_offset, offset, int(state), count)
            else:
                batches.append(StateBatch(offset, offset, int(state), count))
        return PartitionState(self.state_epoch, start, self.leader_epoch, tuple(batches))


def _acquired_ranges(
    offsets: list[int],
    records: Mapping[int, InFlight],
    splits: frozenset[int] = frozenset(),
    batch_size: int = 0,
) -> list[Acquired]:
    """Consecutive acquired offsets of one delivery count as one range; a range of
    `batch_size` offsets or more ends before the next log batch (`splits`: their first
    offsets), as Kafka splits what it acquires by the request's batch_size."""
    out: list[Acquired] = []
    for offset in offsets:
        count = records[offset].delivery_count
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_offset + 1 == offset
            and last.delivery_count == count
            and not (
                batch_size > 0 and offset in splits and offset - last.first_offset >= batch_size
            )
        ):
            out[-1] = Acquired(last.first_offset, offset, count)
        else:
            out.append(Acquired(offset, offset, count))
    return out
