"""The `__consumer_offsets` log as the coordinator runtime reads and writes it (pure, sync).

    keyed_records(part), keep_latest(latest, records), Entry
                            the shared read side (`wirebroker.coordinator.log_reader`),
                            re-exported here
    OffsetsFold             `keep_latest` over entries, with transactions: records of a
                            transaction wait in `pending[producer id]` until its marker; a
                            COMMIT folds them into `latest` at the marker, each only over an
                            older record of its key (a plain commit written after it stays,
                            as in Kafka: `positions` holds each kept record's log offset), an
                            ABORT drops them; what is still pending at the end belongs to open
                            transactions
    record_chunks(records)  the records of one partition cut into batches of at most 512 KiB of
                            keys + values (well under the default max.message.bytes of 1 MiB),
                            and of one producer (transactional offset commits)

A loading leader reads up to its log end offset, not its high watermark, as Kafka does: what
a new leader holds past the high watermark becomes committed as its followers catch up.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from wirebroker.coordinator.log_reader import Entry, keep_latest, keyed_records

if TYPE_CHECKING:
    from wirebroker.group.effects import Record

__all__ = ["Entry", "OffsetsFold", "keep_latest", "keyed_records", "record_chunks"]

#: Keys+values per appended batch.
BATCH_BYTES = 512 * 1024


class OffsetsFold:
    """See the module docstring."""

    def __init__(self) -> None:
        self.latest: dict[bytes, bytes | None] = {}
        #: the log offset of each key's kept record (none for a tombstone)
        self.positions: dict[bytes, int] = {}
        #: producer id -> (key, value, log offset) of its open transaction, in log order
        self.pending: dict[int, list[tuple[bytes, bytes | None, int]]] = {}

    def add(self, entries: Iterable[Entry]) -> None:
        for e in entries:
            if e.key is None:
                done = self.pending.pop(e.producer_id, [])
                if e.commit:
                    for key, value, offset in done:
                        if self.positions.get(key, -1) < offset:
                            self._keep(key, value, offset)
            elif e.producer_id >= 0:
                self.pending.setdefault(e.producer_id, []).append((e.key, e.value, e.offset))
            else:
                self._keep(e.key, e.value, e.offset)

    def _keep(self, key: bytes, value: bytes | None, offset: int) -> None:
        keep_latest(self.latest, [(key, value)])
        if value is None:
            self.positions.pop(key, None)
        else:
            self.positions[key] = offset


def record_chunks(records: list[Record]) -> Iterator[list[Record]]:
    """See the module docstring."""
    chunk: list[Record] = []
    size = 0
    for r in records:
        n = len(r.key) + (len(r.value) if r.value is not None else 0)
        if chunk and (
            size + n > BATCH_BYTES
            or (r.producer_id, r.producer_epoch) != (chunk[0].producer_id, chunk[0].producer_epoch)
        ):
            yield chunk
            chunk, size = [], 0
        chunk.append(r)
        size += n
    if chunk:
        yield chunk
