"""An independent reader of partition directories: the oracle of the reliability tests.

Everything here reads the files directly with `protocol.records` (never `wirebroker.log`), so
what the broker's recovery decides can be checked against a second implementation:

- `scan_partition(dir)`: the valid prefix of a partition directory. Segments (`<base>.log`,
  20-digit names) are walked in base-offset order; within a segment a batch is valid when at
  least 61 bytes remain, its header parses (magic 2, batchLength >= 49), it lies wholly inside
  the file, its base offset is not below the previous batch's next offset (the segment's
  base offset for the first batch), its lastOffsetDelta is >= 0 and its CRC-32C matches.
  The first byte that fails any of these is the damage point: the log must end at the last
  valid batch before it, and every later segment is dropped. `end_offset` is the next offset
  after the last valid batch (the damaged segment's base offset when it has none).
- `check_consistency(plog, scan)`: the segments and log end match the scan; every offset
  of every valid batch, read through `PartitionLog.read` and found through
  `Segment.translate_offset`, gives exactly that batch; `offset_for_timestamp` agrees with a
  record-by-record scan; each segment's max timestamp is the batches' maximum; index entries
  are safe floors (an `.index` entry points at a batch start at or below its offset; a
  `.timeindex` entry (t, o) has only smaller timestamps before o's batch) -- exact entries
  are not required, since a sparser or older index gives the same lookups. Returns the
  number of lookups made (a figure for the report).
- `read_back(plog, max_bytes)`: reads the whole log through `PartitionLog.read` as a
  consumer does and returns the batches served, stopping at a `StorageError`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    InvalidBatch,
    Record,
    decode_records,
    iter_batches,
    parse_header,
    verify_crc,
)
from wirebroker.log import PartitionLog, StorageError

__all__ = [
    "ScanResult",
    "ScannedBatch",
    "check_consistency",
    "decode_batch",
    "read_back",
    "scan_partition",
    "segment_bases",
]

_DECODE_CAP = 64 << 20


@dataclass(frozen=True)
class ScannedBatch:
    segment_base: int
    position: int
    header: BatchHeader
    data: bytes


@dataclass
class ScanResult:
    batches: list[ScannedBatch] = field(default_factory=list)
    end_offset: int = 0
    damage: str | None = None  # the first damage found, None for an intact directory
    damaged_segment: int | None = None
    kept_segments: list[int] = field(default_factory=list)


def segment_bases(directory: Path) -> list[int]:
    """Base offsets of the `<20 digits>.log` files, ascending."""
    out = []
    for name in os.listdir(directory):
        stem, dot, ext = name.partition(".")
        if dot and ext == "log" and len(stem) == 20 and stem.isdigit():
            out.append(int(stem))
    return sorted(out)


def _first_problem(data: bytes, pos: int, expected: int) -> tuple[BatchHeader | None, str]:
    left = len(data) - pos
    if left < BATCH_HEADER_SIZE:
        return None, f"{left} trailing bytes (torn header)"
    try:
        h = parse_header(data, pos)
    except InvalidBatch as exc:
        return None, f"unparsable header ({exc})"
    if h.size > left:
        return None, f"batch of {h.size} bytes runs past the end ({left} left)"
    if h.base_offset < expected:
        return None, f"base offset {h.base_offset} below {expected}"
    if h.last_offset_delta < 0:
        return None, f"negative last offset delta {h.last_offset_delta}"
    if not verify_crc(data, pos, h):
        return None, "CRC mismatch"
    return h, ""


def scan_partition(directory: Path) -> ScanResult:
    """The valid prefix of a partition directory (see the module doc)."""
    result = ScanResult()
    bases = segment_bases(directory)
    if not bases:
        return result
    result.end_offset = bases[0]
    for base in bases:
        data = (directory / f"{base:020d}.log").read_bytes()
        result.kept_segments.append(base)
        pos = 0
        expected = base
        seg_end = base
        while pos < len(data):
            h, why = _first_problem(data, pos, expected)
            if h is None:
                result.damage = f"segment {base} position {pos}: {why}"
                result.damaged_segment = base
                break
            result.batches.append(ScannedBatch(base, pos, h, data[pos : pos + h.size]))
            expected = seg_end = h.next_offset
            pos += h.size
        result.end_offset = seg_end
        if result.damage is not None:
            break
    return result


def decode_batch(data: bytes) -> list[Record]:
    return decode_records(data, 0, max_decompressed_bytes=_DECODE_CAP)


def read_back(plog: PartitionLog, max_bytes: int = 1) -> tuple[list[bytes], StorageError | None]:
    """Every batch served from the log start, as a consumer reads: `read(offset, max_bytes)`
    from the next offset after what was served (max_bytes=1: one batch per read). Returns
    the batches, split apart, and the StorageError that stopped the reading, if any."""
    out: list[bytes] = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        try:
            data = plog.read(offset, max_bytes=max_bytes)
        except StorageError as exc:
            return out, exc
        if not data:
            raise AssertionError(f"empty read at {offset} below the log end {plog.log_end_offset}")
        batches = list(iter_batches(data))
        if max_bytes == 1:
            assert len(batches) == 1, f"read(max_bytes=1) at {offset} served {len(batches)}"
        out.extend(data[p : p + h.size] for p, h in batches)
        offset = batches[-1][1].next_offset
    return out, None


def _expected_offset_for_timestamp(
    records: list[Record], target: int, log_start: int
) -> tuple[int, int] | None:
    for r in records:
        if r.offset >= log_start and r.timestamp >= target:
            return r.offset, r.timestamp
    return None


def check_consistency(plog: PartitionLog, scan: ScanResult) -> int:
    """Assert that the loaded log agrees with the independent scan; returns lookups made."""
    lookups = 0
    assert plog.log_end_offset == scan.end_offset, (plog.log_end_offset, scan.end_offset)
    segs = plog.segments
    assert [s.base_offset for s in segs] == scan.kept_segments, (
        [s.base_offset for s in segs],
        scan.kept_segments,
    )
    by_segment: dict[int, list[ScannedBatch]] = {}
    for b in scan.batches:
        by_segment.setdefault(b.segment_base, []).append(b)
    records: list[Record] = []
    for seg in segs:
        batches = by_segment.get(seg.base_offset, [])
        at = {b.position: b for b in batches}
        assert seg.size == sum(b.header.size for b in batches), (seg, len(batches))
        # index entries need not be exact (a sparser or older entry is fine) but must be
        # safe floors: an offset entry points at a batch start at or below its offset; a
        # time entry (t, o) has every batch before o's batch below t
        for rel, pos in zip(seg.index.rel_offsets, seg.index.positions, strict=True):
            target = at.get(pos)
            assert target is not None, f"index entry ({rel}, {pos}) of {seg} is not a batch start"
            assert target.header.base_offset <= seg.base_offset + rel, (seg, rel, pos)
        for ts, rel in zip(seg.time_index.timestamps, seg.time_index.rel_offsets, strict=True):
            off = seg.base_offset + rel
            before = [b.header.max_timestamp for b in batches if b.header.last_offset < off]
            holder = [b for b in batches if b.header.base_offset <= off <= b.header.last_offset]
            assert holder and max(before, default=-1) < ts, (
                f"time index entry ({ts}, {off}) of {seg} is not a safe floor"
            )
        if batches:
            true_max = max(b.header.max_timestamp for b in batches)
            assert seg.max_timestamp == true_max, (
                f"{seg}: max timestamp {seg.max_timestamp}, the batches say {true_max}"
            )
        for b in batches:
            h = b.header
            for off in sorted({h.base_offset, (h.base_offset + h.last_offset) // 2, h.last_offset}):
                found = seg.translate_offset(off)
                assert found is not None and found[0] == b.position, (off, found, b.position)
                lookups += 1
                if off >= plog.log_start_offset:
                    served = plog.read(off, max_bytes=1)
                    assert served == b.data, f"read({off}) served other bytes"
                    lookups += 1
            records.extend(decode_batch(b.data))
    targets = sorted(
        {r.timestamp for r in records[:: max(len(records) // 40, 1)]}
        | {r.timestamp + 1 for r in records[:: max(len(records) // 20, 1)]}
        | {-1, 0}
    )
    for t in targets:
        expected = _expected_offset_for_timestamp(records, t, plog.log_start_offset)
        got = plog.offset_for_timestamp(t)
        assert got == expected, f"offset_for_timestamp({t}) = {got}, a full scan says {expected}"
        lookups += 1
    return lookups
