"""Record-level lookups in one `Segment`: timestamp -> offset (Kafka's
`LogSegment.findOffsetByTimestamp`: time index -> offset index -> batch scan -> record decode)
and the offset of the segment's max timestamp (ListOffsets MAX_TIMESTAMP). Read only; reads
go through `Segment.read_batch` (CRC checked): damage raises `CorruptSegment`.
"""

from __future__ import annotations

from protocol.records import BatchHeader, InvalidBatch, Record, decode_records
from wirebroker.log.config import DECODE_CAP
from wirebroker.log.segment import CorruptSegment, Segment

__all__ = ["decode_batch", "find_max_timestamp_offset", "find_offset_by_timestamp"]


def decode_batch(seg: Segment, pos: int, h: BatchHeader) -> list[Record]:
    """The records of the batch at `pos` (CRC checked); CorruptSegment when damaged."""
    data = seg.read_batch(pos, h)
    try:
        return decode_records(data, 0, max_decompressed_bytes=DECODE_CAP)
    except InvalidBatch as exc:
        raise CorruptSegment(f"batch at {pos} of {seg.log_path.name}: {exc}") from exc


def find_offset_by_timestamp(
    seg: Segment, timestamp: int, start_offset: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after `timestamp` whose offset is at
    least `start_offset`; None when the segment holds none."""
    if seg.largest_timestamp() < timestamp or seg.size == 0:
        return None
    _, pos = seg.index.lookup(seg.time_index.lookup(timestamp))
    for bpos, h in seg.batches_from(pos):
        if h.max_timestamp < timestamp or h.last_offset < start_offset:
            continue
        for rec in decode_batch(seg, bpos, h):
            if rec.timestamp >= timestamp and rec.offset >= start_offset:
                return rec.offset, rec.timestamp
    return None


def find_max_timestamp_offset(seg: Segment) -> int:
    """Offset of the first record carrying the segment's max timestamp (>= 0)."""
    target = seg.max_timestamp
    _, pos = seg.index.lookup(seg.offset_of_max_timestamp)
    for pass_start in (pos, 0):
        for bpos, h in seg.batches_from(pass_start):
            if h.max_timestamp != target:
                continue
            if h.timestamp_type == 1:
                return h.base_offset
            for rec in decode_batch(seg, bpos, h):
                if rec.timestamp == target:
                    return rec.offset
            return h.last_offset
    return seg.offset_of_max_timestamp
