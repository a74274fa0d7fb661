"""The `__consumer_offsets` log as the coordinator runtime reads and writes it (pure, sync).

    keyed_records(part)     an `Entry` for every keyed record and every transaction marker of
                            one partition, from its log start to its log end, a chunk (one
                            `PartitionLog.read` of 4 MiB) at a time; records without a key are
                            skipped, an undecodable batch is logged and skipped. A record of a
                            transactional batch carries its producer id; a marker is an entry
                            with key None, the producer id and `commit`
    keep_latest(latest, records)
                            fold (key, value) pairs into "the last value of each key, in the
                            order of those last occurrences" -- what log compaction keeps, so
                            replaying it gives the same state as replaying everything
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

import logging
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from protocol.records import InvalidBatch, decode_records, iter_batches
from wirebroker.log.control import COMMIT, ControlError, parse_marker

if TYPE_CHECKING:
    from wirebroker.group.effects import Record
    from wirebroker.replication.partition import Partition

__all__ = ["Entry", "OffsetsFold", "keep_latest", "keyed_records", "record_chunks"]

log = logging.getLogger(__name__)

#: Bytes asked for per `PartitionLog.read` while loading.
READ_CHUNK = 4 * 1024 * 1024
#: Keys+values per appended batch.
BATCH_BYTES = 512 * 1024


class Entry(NamedTuple):
    """A record (`key` not None) or a transaction marker (`key` None) of the log."""

    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    commit: bool = False
    offset: int = -1  # a record's log offset


KeyedRecords = list[Entry]


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


def keyed_records(part: Partition) -> Iterator[KeyedRecords]:
    """See the module docstring."""
    plog = part.log
    offset = plog.log_start_offset
    end = plog.log_end_offset
    while offset < end:
        data = plog.read(offset, max_bytes=READ_CHUNK)
        if not data:
            return
        out: KeyedRecords = []
        for pos, header in iter_batches(data):
            if header.next_offset <= offset:
                continue
            if header.is_control and header.is_transactional and header.producer_id >= 0:
                try:
                    kind, _epoch = parse_marker(memoryview(data)[pos : pos + header.size])
                    out.append(Entry(None, None, header.producer_id, kind == COMMIT))
                except ControlError as exc:
                    log.warning("%s-%d: bad marker: %s", part.topic, part.index, exc)
            elif not header.is_control:
                pid = header.producer_id if header.is_transactional else -1
                try:
                    records = decode_records(data, pos)
                except InvalidBatch as exc:
                    log.warning(
                        "%s-%d: skipping undecodable batch at offset %d: %s",
                        part.topic,
                        part.index,
                        header.base_offset,
                        exc,
                    )
                    records = []
                for rec in records:
                    if rec.offset >= offset and rec.key is not None:
                        out.append(Entry(rec.key, rec.value, pid, offset=rec.offset))
            offset = header.next_offset
        yield out


def keep_latest(
    latest: dict[bytes, bytes | None], records: Iterable[tuple[bytes, bytes | None]]
) -> None:
    """See the module docstring."""
    for key, value in records:
        latest.pop(key, None)
        latest[key] = value


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
