"""An internal topic's log as a coordinator loads it (pure, sync): the shared read side.

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
    LatestFold              `keep_latest` over the keyed entries of a log without transactions
                            (`__transaction_state`); `__consumer_offsets` folds its
                            transactional offsets too (`wirebroker.group.offsets_log`)

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
    from wirebroker.replication.partition import Partition

__all__ = ["Entry", "KeyedRecords", "LatestFold", "keep_latest", "keyed_records"]

log = logging.getLogger(__name__)

#: Bytes asked for per `PartitionLog.read` while loading.
READ_CHUNK = 4 * 1024 * 1024


class Entry(NamedTuple):
    """A record (`key` not None) or a transaction marker (`key` None) of the log."""

    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    commit: bool = False
    offset: int = -1  # a record's log offset


KeyedRecords = list[Entry]


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


class LatestFold:
    """See the module docstring: `latest` after `add`ing every chunk of a partition."""

    def __init__(self) -> None:
        self.latest: dict[bytes, bytes | None] = {}

    def add(self, entries: Iterable[Entry]) -> None:
        keep_latest(self.latest, [(e.key, e.value) for e in entries if e.key is not None])
