"""The `__consumer_offsets` log as the coordinator runtime reads and writes it (pure, sync).

    keyed_records(part)     (key, value) of every keyed record of one partition, from its log
                            start to its log end, a chunk (one `PartitionLog.read` of 4 MiB) at
                            a time; control batches and records without a key are skipped, an
                            undecodable batch is logged and skipped
    keep_latest(latest, records)
                            fold records into "the last value of each key, in the order of
                            those last occurrences" -- what log compaction keeps, so replaying it
                            gives the same state as replaying everything
    record_chunks(records)  the records of one partition cut into batches of at most 512 KiB of
                            keys + values (well under the default max.message.bytes of 1 MiB)

A loading leader reads up to its log end offset, not its high watermark, as Kafka does: what
a new leader holds past the high watermark becomes committed as its followers catch up.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from protocol.records import InvalidBatch, decode_records, iter_batches

if TYPE_CHECKING:
    from wirebroker.group.effects import Record
    from wirebroker.replication.partition import Partition

__all__ = ["keep_latest", "keyed_records", "record_chunks"]

log = logging.getLogger(__name__)

#: Bytes asked for per `PartitionLog.read` while loading.
READ_CHUNK = 4 * 1024 * 1024
#: Keys+values per appended batch.
BATCH_BYTES = 512 * 1024

KeyedRecords = list[tuple[bytes, bytes | None]]


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
            if not header.is_control:
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
                        out.append((rec.key, rec.value))
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
        if chunk and size + n > BATCH_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(r)
        size += n
    if chunk:
        yield chunk
