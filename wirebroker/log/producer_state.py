"""Idempotent producer state (Kafka's `ProducerStateManager` / `ProducerAppendInfo`).

Per producer id: the current epoch, the last 5 batches (first/last sequence, first/last
offset, max timestamp) and the last timestamp (for expiry).

Leader append checks, per batch with producer id >= 0 (`validate`), in Kafka's order:

1. duplicate (`find_duplicate`, checked by the caller before anything else): same epoch as
   the producer's, and (first seq, last seq) equal to one of the retained 5 batches ->
   the append is a retry; the caller answers with the original offsets.
2. epoch: batch epoch < current epoch -> `InvalidProducerEpochError`.
3. sequence:
   - batch epoch != current epoch (a bump): first seq must be 0, unless the producer is
     unknown (epoch -1), -> else `OutOfOrderSequenceError`;
   - same epoch: first seq must follow the last seq (last + 1, or 0 after 2**31-1), unless
     the producer was unknown before this request (Kafka 4 accepts any sequence from an
     unknown producer: its state may have been removed by retention or DeleteRecords, and
     the sequence is validated from then on).
4. accepted: the batch is recorded (a new epoch drops the retained batches).

Validation works on staged copies (`staged` dict) so a multi-batch request is all or
nothing; `commit(staged)` applies them only after the write succeeded.

Transaction verification (KIP-890, Kafka's VerificationStateEntry): when a leader checks with
the transaction coordinator that a producer's transactional batch may start a transaction
here (`start_verification`: none ongoing at the batch's epoch), it first records, per
producer, the lowest sequence seen at the newest epoch (a newer epoch starts over) and
whether the request's client adds partitions itself (transaction version 2, fixed when the
entry is made); the entry stays, also when the coordinator refused, until a transactional
batch or marker of the producer is appended (a TV2 marker of the entry's own epoch keeps it:
it belongs to the next transaction), or `producer.id.expiration.ms` after it was made. While
it lasts, a batch of the producer is refused with OUT_OF_ORDER_SEQUENCE_NUMBER, before the
checks of step 3, when its first sequence is above that lowest sequence (a retry must not skip
what an earlier attempt sent first), or, for a TV2 client, when it is not 0 and the producer
has no batch in the log (a TV2 producer's first write to a partition starts at 0).

Rebuild (`apply`) replays stored batches without validation (as Kafka's replication
origin does); control batches only move the epoch and end the transaction.

Transactions (KIP-98): a producer's entry also holds `txn_first_offset`, the first offset of
its ongoing transaction (-1: none), and `coordinator_epoch`, the coordinator epoch of its
last marker. A transactional data batch of a producer without an ongoing transaction starts
one at the batch's first offset; a non-transactional batch during one is refused
(`InvalidTxnStateError`). A marker (`end_txn`) ends it: its epoch may not be older than the
producer's (`InvalidProducerEpochError`; a newer one is a KIP-890 bump and becomes current),
its coordinator epoch not older than the last one seen (`TransactionCoordinatorFencedError`);
a marker without an ongoing transaction ends an empty one at the marker's offset. It yields a
`CompletedTxn` (producer, first offset, marker offset, aborted) and, Kafka's
`lastStableOffset(completedTxn)`, the LSO just after it: the first offset of the oldest other
ongoing transaction, else the marker offset + 1 (the `.txnindex` entry of an ABORT).

States of a producer's transaction: none (-1) -> ongoing (first offset) on a transactional
batch -> none on a marker. `ongoing` maps producer id -> first offset of every ongoing
transaction. A completed transaction whose marker is at or above the high watermark stays
"unreplicated" (`unreplicated`, Kafka's unreplicatedTxns) until the high watermark passes the
marker, so `first_unstable_offset(hw)` -- the minimum first offset over ongoing and
unreplicated transactions -- keeps read_committed readers below it until the marker is
replicated. The last stable offset is min(first unstable offset, high watermark).
Producers with an ongoing transaction never expire.

Snapshots: `<20-digit offset>.producers` files (wirebroker's own format, not Kafka's binary
`.snapshot`): an 8-hex-digit CRC-32C of the JSON body, a newline, then
`{"version": 2, "offset": N, "producers": [[pid, epoch, last_ts, [[first_seq, last_seq,
first_offset, last_offset, timestamp], ...], coordinator_epoch, txn_first_offset], ...]}` --
the state after every batch below N, ongoing transactions included (version 1 files, without
the last two fields, still load: no transactions).
`SnapshotFiles` lists, loads, writes (keeping the newest 3) and deletes them.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.crc32c import crc32c
from protocol.records import BatchHeader
from wirebroker.log.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from wirebroker.log.fs import FileSystem, read_file, write_file_atomic

__all__ = [
    "BatchMetadata",
    "CompletedTxn",
    "ProducerEntry",
    "ProducerStateManager",
    "SnapshotError",
    "VerificationState",
]

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2**31 - 1
NO_EPOCH = -1
NO_SEQUENCE = -1


class SnapshotError(ValueError):
    """A producer snapshot that does not parse or fails its checksum."""


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class VerificationState:
    """A producer's transaction verification in progress (module docstring)."""

    timestamp: int
    lowest_seq: int
    epoch: int
    adds: bool  # the client adds partitions itself (transaction version 2)

    def update(self, sequence: int, epoch: int) -> None:
        if epoch == self.epoch and sequence < self.lowest_seq:
            self.lowest_seq = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_seq = sequence


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


class ProducerEntry:
    __slots__ = (
        "batches",
        "coordinator_epoch",
        "epoch",
        "last_timestamp",
        "producer_id",
        "txn_first_offset",
    )

    def __init__(
        self,
        producer_id: int,
        epoch: int = NO_EPOCH,
        batches: list[BatchMetadata] | None = None,
        last_timestamp: int = -1,
        coordinator_epoch: int = -1,
        txn_first_offset: int = -1,
    ) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: list[BatchMetadata] = batches or []
        self.last_timestamp = last_timestamp
        self.coordinator_epoch = coordinator_epoch
        self.txn_first_offset = txn_first_offset

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.producer_id,
            self.epoch,
            list(self.batches),
            self.last_timestamp,
            self.coordinator_epoch,
            self.txn_first_offset,
        )

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def _set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches = []

    def add_batch(self, epoch: int, meta: BatchMetadata) -> None:
        self._set_epoch(epoch)
        self.batches.append(meta)
        if len(self.batches) > NUM_BATCHES_TO_RETAIN:
            del self.batches[0]
        self.last_timestamp = meta.timestamp

    def __repr__(self) -> str:
        return (
            f"ProducerEntry({self.producer_id}, epoch={self.epoch}, {self.batches}, "
            f"txn_first_offset={self.txn_first_offset})"
        )


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def _meta(h: BatchHeader) -> BatchMetadata:
    return BatchMetadata(
        h.base_sequence, h.last_sequence, h.base_offset, h.last_offset, h.max_timestamp
    )


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        #: producer id -> first offset of its ongoing transaction
        self.ongoing: dict[int, int] = {}
        #: completed transactions whose marker is not below the high watermark yet
        self.unreplicated: list[CompletedTxn] = []
        #: producer id -> its transaction verification in progress
        self.verifying: dict[int, VerificationState] = {}

    def set_producers(self, producers: dict[int, ProducerEntry]) -> None:
        """Replace the whole state (snapshot load)."""
        self.producers = producers
        self.ongoing = {
            pid: e.txn_first_offset for pid, e in producers.items() if e.txn_first_offset >= 0
        }
        self.unreplicated = []

    # -- transactions -------------------------------------------------------------------------
    def start_verification(
        self, producer_id: int, sequence: int, epoch: int, *, adds: bool, now_ms: int
    ) -> bool:
        """A leader is about to check a transactional batch (`sequence`, `epoch`) with the
        coordinator: False when the producer has a transaction ongoing here at that epoch
        (nothing to check), else True, with the verification state recorded (module
        docstring). `InvalidProducerEpochError` for an epoch older than the producer's."""
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last "
                f"seen epoch {entry.epoch}"
            )
        if entry is not None and entry.txn_first_offset >= 0 and entry.epoch == epoch:
            return False
        state = self.verifying.get(producer_id)
        if state is None:
            self.verifying[producer_id] = VerificationState(now_ms, sequence, epoch, adds)
        else:
            state.update(sequence, epoch)
        return True

    def _end_verification(self, producer_id: int, marker_epoch: int | None = None) -> None:
        """A transactional batch (or a marker of `marker_epoch`) of the producer was appended."""
        state = self.verifying.get(producer_id)
        if state is not None and not (state.adds and marker_epoch == state.epoch):
            del self.verifying[producer_id]

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the oldest ongoing or unreplicated transaction, or None."""
        firsts = list(self.ongoing.values())
        firsts.extend(t.first_offset for t in self.unreplicated if t.last_offset >= high_watermark)
        return min(firsts) if firsts else None

    def last_stable_offset(self, high_watermark: int) -> int:
        first = (
            self.first_unstable_offset(high_watermark)
            if self.ongoing or self.unreplicated
            else None
        )
        return high_watermark if first is None else min(first, high_watermark)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below the high watermark."""
        if self.unreplicated:
            self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]

    def lso_after(self, txn: CompletedTxn) -> int:
        """Kafka's lastStableOffset(completedTxn): the oldest other ongoing transaction's
        first offset, else the marker offset + 1."""
        others = [first for pid, first in self.ongoing.items() if pid != txn.producer_id]
        return min(others) if others else txn.last_offset + 1

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """The checks of a leader's marker append (see the module doc)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id}: marker epoch {producer_epoch} is older than {entry.epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"producer {producer_id}: coordinator epoch {coordinator_epoch} is older than "
                f"{entry.coordinator_epoch}"
            )

    def end_txn(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        marker_offset: int,
        timestamp: int,
        *,
        aborted: bool,
    ) -> CompletedTxn:
        """Apply a marker at `marker_offset` (no checks: `check_marker` first)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        first = entry.txn_first_offset if entry.txn_first_offset >= 0 else marker_offset
        entry._set_epoch(producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.txn_first_offset = -1
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        self.ongoing.pop(producer_id, None)
        self._end_verification(producer_id, producer_epoch)
        txn = CompletedTxn(producer_id, first, marker_offset, aborted)
        self.unreplicated.append(txn)
        return txn

    def __len__(self) -> int:
        return len(self.producers)

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    def find_duplicate(self, h: BatchHeader) -> BatchMetadata | None:
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None
        return entry.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence)

    def find_first_duplicate(self, headers: Iterable[BatchHeader]) -> BatchMetadata | None:
        """The first of the idempotent batches `headers` that duplicates a retained batch."""
        for h in headers:
            if h.producer_id >= 0:
                dup = self.find_duplicate(h)
                if dup is not None:
                    return dup
        return None

    def validate_all(
        self, headers: Iterable[BatchHeader], *, coordinator: bool = False
    ) -> dict[int, ProducerEntry]:
        """`validate` every idempotent batch of a leader append (stamped headers, in
        order); -> the staged entries for `commit`. `coordinator`: the group coordinator's
        own transactional offset commits (Kafka's AppendOrigin.COORDINATOR): epochs are
        checked, sequences are not."""
        staged: dict[int, ProducerEntry] = {}
        for h in headers:
            if h.producer_id >= 0:
                self.validate(h, h.base_offset, h.last_offset, staged, coordinator=coordinator)
        return staged

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch (the log cleaner keeps those)."""
        return {pid: e.batches[-1].last_offset for pid, e in self.producers.items() if e.batches}

    def validate(
        self,
        h: BatchHeader,
        first_offset: int,
        last_offset: int,
        staged: dict[int, ProducerEntry],
        *,
        coordinator: bool = False,
    ) -> None:
        """Check a leader append of batch `h` (to get offsets first..last); stage it
        (`coordinator`: see `validate_all`)."""
        pid = h.producer_id
        current = self.producers.get(pid)
        updated = staged.get(pid)
        if updated is None:
            updated = current.copy() if current is not None else ProducerEntry(pid)
        epoch = h.producer_epoch
        first_seq = h.base_sequence
        if epoch < updated.epoch:
            raise InvalidProducerEpochError(
                f"producer {pid}: epoch {epoch} is older than the last seen {updated.epoch}"
            )
        if coordinator:
            pass
        elif (verifying := self.verifying.get(pid)) is not None and (
            first_seq > verifying.lowest_seq
            or (verifying.adds and first_seq != 0 and (current is None or not current.batches))
        ):
            raise OutOfOrderSequenceError(
                f"producer {pid}: sequence {first_seq} while its transaction verification "
                f"started at {verifying.lowest_seq} (epoch {verifying.epoch})"
            )
        elif epoch != updated.epoch:
            if first_seq != 0 and updated.epoch != NO_EPOCH:
                raise OutOfOrderSequenceError(
                    f"producer {pid}: new epoch {epoch} must start at sequence 0, got {first_seq}"
                )
        else:
            current_epoch = current.epoch if current is not None else NO_EPOCH
            if current_epoch != NO_EPOCH and not in_sequence(updated.last_seq, first_seq):
                raise OutOfOrderSequenceError(
                    f"producer {pid}: sequence {first_seq} does not follow "
                    f"{updated.last_seq} (epoch {epoch})"
                )
        if h.is_transactional:
            if updated.txn_first_offset < 0:
                updated.txn_first_offset = first_offset
        elif updated.txn_first_offset >= 0:
            raise InvalidTxnStateError(
                f"producer {pid}: non-transactional batch during its ongoing transaction "
                f"(from offset {updated.txn_first_offset})"
            )
        updated.add_batch(
            epoch,
            BatchMetadata(first_seq, h.last_sequence, first_offset, last_offset, h.max_timestamp),
        )
        staged[pid] = updated

    def commit(self, staged: dict[int, ProducerEntry]) -> None:
        self.producers.update(staged)
        for pid, e in staged.items():
            if e.txn_first_offset >= 0:  # its batches were transactional
                self.ongoing[pid] = e.txn_first_offset
                self._end_verification(pid)

    def apply(self, h: BatchHeader, marker: tuple[int, int] | None = None) -> CompletedTxn | None:
        """Replay a stored batch (rebuild, follower): no validation. `marker`: (type,
        coordinator epoch) of a control batch (see control.py); a control batch without it
        only moves the epoch. -> the transaction a marker completed."""
        if h.producer_id < 0:
            return None
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerEntry(h.producer_id)
        if h.is_control:
            if marker is not None and h.is_transactional:
                kind, coordinator_epoch = marker
                return self.end_txn(
                    h.producer_id,
                    h.producer_epoch,
                    coordinator_epoch,
                    h.base_offset,
                    h.max_timestamp,
                    aborted=kind == 0,
                )
            entry._set_epoch(h.producer_epoch)
            entry.last_timestamp = max(entry.last_timestamp, h.max_timestamp)
            return None
        entry.add_batch(h.producer_epoch, _meta(h))
        if h.is_transactional:
            self._end_verification(h.producer_id)
            if entry.txn_first_offset < 0:
                entry.txn_first_offset = h.base_offset
                self.ongoing[h.producer_id] = h.base_offset
        return None

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for expiration_ms (by their last batch timestamp)."""
        expired = [
            pid
            for pid, e in self.producers.items()
            if now_ms - e.last_timestamp >= expiration_ms and e.txn_first_offset < 0
        ]
        for pid in expired:
            del self.producers[pid]
        self.verifying = {
            pid: v for pid, v in self.verifying.items() if now_ms - v.timestamp < expiration_ms
        }
        return len(expired)

    def clear(self) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()
        self.verifying.clear()

    # -- snapshots ----------------------------------------------------------------------------
    def to_snapshot(self, offset: int) -> bytes:
        body = json.dumps(
            {
                "version": 2,
                "offset": offset,
                "producers": [
                    [
                        e.producer_id,
                        e.epoch,
                        e.last_timestamp,
                        [
                            [b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp]
                            for b in e.batches
                        ],
                        e.coordinator_epoch,
                        e.txn_first_offset,
                    ]
                    for e in sorted(self.producers.values(), key=lambda e: e.producer_id)
                ],
            },
            separators=(",", ":"),
        ).encode()
        return b"%08x\n" % crc32c(body) + body

    @staticmethod
    def from_snapshot(data: bytes) -> tuple[int, dict[int, ProducerEntry]]:
        """(offset, producers) from snapshot bytes; SnapshotError when invalid."""
        head, sep, body = data.partition(b"\n")
        try:
            if not sep or int(head, 16) != crc32c(body):
                raise SnapshotError("producer snapshot checksum mismatch")
            doc: Any = json.loads(body)
            if doc["version"] not in (1, 2):
                raise SnapshotError(f"unknown producer snapshot version {doc['version']}")
            offset = int(doc["offset"])
            producers: dict[int, ProducerEntry] = {}
            for pid, epoch, last_ts, batches, *txn in doc["producers"]:
                coordinator_epoch, txn_first = (int(txn[0]), int(txn[1])) if txn else (-1, -1)
                producers[int(pid)] = ProducerEntry(
                    int(pid),
                    int(epoch),
                    [BatchMetadata(*(int(x) for x in b)) for b in batches],
                    int(last_ts),
                    coordinator_epoch,
                    txn_first,
                )
        except SnapshotError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise SnapshotError(f"malformed producer snapshot: {exc}") from None
        return offset, producers


SNAPSHOT_SUFFIX = ".producers"
SNAPSHOTS_KEPT = 3  # older ones only help after a deep truncation; then the log is scanned
_SNAPSHOT_RE = re.compile(r"(\d{20})\.producers")
log = logging.getLogger(__name__)


class SnapshotFiles:
    """The `<offset>.producers` files of one partition directory. OSError propagates."""

    def __init__(self, fs: FileSystem, directory: Path) -> None:
        self.fs = fs
        self.directory = directory

    def files(self) -> list[tuple[int, Path]]:
        """(offset, path) of every snapshot, oldest first."""
        out = []
        for name in self.fs.listdir(self.directory):
            m = _SNAPSHOT_RE.fullmatch(name)
            if m:
                out.append((int(m.group(1)), self.directory / name))
        return sorted(out)

    def load(
        self, log_end_offset: int, at_or_below: int | None = None
    ) -> tuple[int, dict[int, ProducerEntry]]:
        """Newest valid snapshot at or below `at_or_below` (default: the log end); deletes
        those above the log end and corrupt ones. (0, {}) when there is none."""
        limit = log_end_offset if at_or_below is None else min(at_or_below, log_end_offset)
        found: tuple[int, dict[int, ProducerEntry]] | None = None
        for offset, path in reversed(self.files()):
            if offset > log_end_offset:
                self.fs.unlink(path)
                continue
            if found is not None or offset > limit:
                continue
            data = read_file(self.fs, path)
            try:
                if data is None:
                    raise SnapshotError("vanished")
                snap_offset, producers = ProducerStateManager.from_snapshot(data)
                if snap_offset != offset:
                    raise SnapshotError(f"offset {snap_offset} does not match the name")
            except SnapshotError as exc:
                log.warning(
                    "%s: dropping producer snapshot %s: %s", self.directory.name, path.name, exc
                )
                self.fs.unlink(path)
                continue
            found = (offset, producers)
        return found if found is not None else (0, {})

    def take(self, state: ProducerStateManager, offset: int) -> None:
        """Snapshot `state` at `offset` (the log end); keep the newest SNAPSHOTS_KEPT."""
        path = self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"
        write_file_atomic(self.fs, path, state.to_snapshot(offset))
        offsets = [off for off, _ in self.files()]
        if len(offsets) > SNAPSHOTS_KEPT:
            cutoff = offsets[-SNAPSHOTS_KEPT]
            self.delete(lambda off: off >= cutoff)

    def delete(self, keep: Callable[[int], bool]) -> None:
        """Delete every snapshot whose offset `keep` rejects."""
        for offset, path in self.files():
            if not keep(offset):
                with suppress(FileNotFoundError):
                    self.fs.unlink(path)
