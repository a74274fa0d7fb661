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

Rebuild (`apply`) replays stored batch headers without validation (as Kafka's replication
origin does). Control batches only move the epoch. Transactions are not tracked (no
ongoing-transaction state, no LSO): transactional batches count as idempotent batches.

Snapshots: `<20-digit offset>.producers` files (wirebroker's own format, not Kafka's binary
`.snapshot`): an 8-hex-digit CRC-32C of the JSON body, a newline, then
`{"version": 1, "offset": N, "producers": [[pid, epoch, last_ts, [[first_seq, last_seq,
first_offset, last_offset, timestamp], ...]], ...]}` -- the state after every batch below N.
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
from wirebroker.log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from wirebroker.log.fs import FileSystem, read_file, write_file_atomic

__all__ = ["BatchMetadata", "ProducerEntry", "ProducerStateManager", "SnapshotError"]

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


class ProducerEntry:
    __slots__ = ("batches", "epoch", "last_timestamp", "producer_id")

    def __init__(
        self,
        producer_id: int,
        epoch: int = NO_EPOCH,
        batches: list[BatchMetadata] | None = None,
        last_timestamp: int = -1,
    ) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: list[BatchMetadata] = batches or []
        self.last_timestamp = last_timestamp

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.producer_id, self.epoch, list(self.batches), self.last_timestamp)

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
        return f"ProducerEntry({self.producer_id}, epoch={self.epoch}, {self.batches})"


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def _meta(h: BatchHeader) -> BatchMetadata:
    return BatchMetadata(
        h.base_sequence, h.last_sequence, h.base_offset, h.last_offset, h.max_timestamp
    )


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

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

    def validate_all(self, headers: Iterable[BatchHeader]) -> dict[int, ProducerEntry]:
        """`validate` every idempotent batch of a leader append (stamped headers, in
        order); -> the staged entries for `commit`."""
        staged: dict[int, ProducerEntry] = {}
        for h in headers:
            if h.producer_id >= 0:
                self.validate(h, h.base_offset, h.last_offset, staged)
        return staged

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch (the log cleaner keeps those)."""
        return {pid: e.batches[-1].last_offset for pid, e in self.producers.items() if e.batches}

    def validate(
        self, h: BatchHeader, first_offset: int, last_offset: int, staged: dict[int, ProducerEntry]
    ) -> None:
        """Check a leader append of batch `h` (to get offsets first..last); stage it."""
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
        if epoch != updated.epoch:
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
        updated.add_batch(
            epoch,
            BatchMetadata(first_seq, h.last_sequence, first_offset, last_offset, h.max_timestamp),
        )
        staged[pid] = updated

    def commit(self, staged: dict[int, ProducerEntry]) -> None:
        self.producers.update(staged)

    def apply(self, h: BatchHeader) -> None:
        """Replay a stored batch (rebuild): no validation."""
        if h.producer_id < 0:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerEntry(h.producer_id)
        if h.is_control:
            entry._set_epoch(h.producer_epoch)
            entry.last_timestamp = max(entry.last_timestamp, h.max_timestamp)
        else:
            entry.add_batch(h.producer_epoch, _meta(h))

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for expiration_ms (by their last batch timestamp)."""
        expired = [
            pid for pid, e in self.producers.items() if now_ms - e.last_timestamp >= expiration_ms
        ]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    def clear(self) -> None:
        self.producers.clear()

    # -- snapshots ----------------------------------------------------------------------------
    def to_snapshot(self, offset: int) -> bytes:
        body = json.dumps(
            {
                "version": 1,
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
            if doc["version"] != 1:
                raise SnapshotError(f"unknown producer snapshot version {doc['version']}")
            offset = int(doc["offset"])
            producers: dict[int, ProducerEntry] = {}
            for pid, epoch, last_ts, batches in doc["producers"]:
                producers[int(pid)] = ProducerEntry(
                    int(pid),
                    int(epoch),
                    [BatchMetadata(*(int(x) for x in b)) for b in batches],
                    int(last_ts),
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

    def load(self, log_end_offset: int) -> tuple[int, dict[int, ProducerEntry]]:
        """Newest valid snapshot at or below the log end; deletes those above it and
        corrupt ones. (0, {}) when there is none."""
        found: tuple[int, dict[int, ProducerEntry]] | None = None
        for offset, path in reversed(self.files()):
            if offset > log_end_offset:
                self.fs.unlink(path)
                continue
            if found is not None:
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
