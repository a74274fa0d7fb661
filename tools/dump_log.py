#!/usr/bin/env python3
"""Print the segments, batches and index entries of a partition directory (read-only).

Usage::

    python tools/dump_log.py DATA_DIR/<topic>-<n> [--records] [--no-index] [--segment BASE]

For each `<base>.log`: every batch (position, offsets, size, leader epoch, timestamps,
producer id/epoch/sequence, codec, CRC check), then the `.index` and `.timeindex` entries
with a check that each offset-index entry points at a batch with that last offset. Also
prints `leader-epoch-checkpoint`, `partition.metadata` and producer snapshots. Never writes:
unlike `PartitionLog.open`, nothing is recovered or rebuilt. Exit status 1 when something
is wrong (bad CRC, unparsable bytes, index entry that disagrees with the log).
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from protocol.records import (
    BATCH_HEADER_SIZE,
    InvalidBatch,
    decode_records,
    parse_header,
    verify_crc,
)

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def dump_segment(path: Path, *, records: bool, indexes: bool) -> bool:
    base = int(path.name[:20])
    data = path.read_bytes()
    ok = True
    print(f"== segment {path.name}: base offset {base}, {len(data)} bytes")
    pos = 0
    starts: dict[int, int] = {}
    while pos < len(data):
        if len(data) - pos < BATCH_HEADER_SIZE:
            print(f"  {pos:>10}  TORN: {len(data) - pos} trailing bytes")
            ok = False
            break
        try:
            h = parse_header(data, pos)
        except InvalidBatch as exc:
            print(f"  {pos:>10}  UNPARSABLE: {exc}")
            ok = False
            break
        if h.size > len(data) - pos:
            print(f"  {pos:>10}  TORN batch: {h.size} bytes, {len(data) - pos} left")
            ok = False
            break
        crc = "ok" if verify_crc(data, pos, h) else "BAD"
        ok = ok and crc == "ok"
        flags = "".join(
            [
                " txn" if h.is_transactional else "",
                " ctl" if h.is_control else "",
                " logappend" if h.timestamp_type else "",
            ]
        )
        print(
            f"  {pos:>10}  offsets {h.base_offset}-{h.last_offset} count {h.records_count} "
            f"size {h.size} epoch {h.partition_leader_epoch} ts {h.base_timestamp}.."
            f"{h.max_timestamp} pid {h.producer_id}/{h.producer_epoch} seq "
            f"{h.base_sequence} codec {CODECS.get(h.compression, h.compression)} "
            f"crc {crc}{flags}"
        )
        if records:
            try:
                for r in decode_records(data, pos):
                    print(
                        f"              {r.offset} ts {r.timestamp} key {r.key!r} "
                        f"value {r.value!r} headers {list(r.headers)}"
                    )
            except InvalidBatch as exc:
                print(f"              records undecodable: {exc}")
                ok = False
        starts[pos] = h.last_offset
        pos += h.size
    if not indexes:
        return ok
    index = path.with_suffix(".index")
    if index.exists():
        raw = index.read_bytes()
        print(
            f"  -- {index.name}: {len(raw) // 8} entries"
            f"{' (length not a multiple of 8)' if len(raw) % 8 else ''}"
        )
        for rel, p in struct.iter_unpack(">ii", raw[: len(raw) - len(raw) % 8]):
            match = starts.get(p) == base + rel
            ok = ok and match
            print(f"     offset {base + rel} -> position {p}{'' if match else '  MISMATCH'}")
    else:
        print(f"  -- {index.name}: missing")
    tindex = path.with_suffix(".timeindex")
    if tindex.exists():
        raw = tindex.read_bytes()
        print(
            f"  -- {tindex.name}: {len(raw) // 12} entries"
            f"{' (length not a multiple of 12)' if len(raw) % 12 else ''}"
        )
        for ts, rel in struct.iter_unpack(">qi", raw[: len(raw) - len(raw) % 12]):
            print(f"     timestamp {ts} -> offset {base + rel}")
    else:
        print(f"  -- {tindex.name}: missing")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", type=Path, help="a partition directory <topic>-<n>")
    ap.add_argument("--records", action="store_true", help="decode every record")
    ap.add_argument("--no-index", action="store_true", help="skip the index files")
    ap.add_argument("--segment", type=int, help="only the segment with this base offset")
    args = ap.parse_args(argv)
    d: Path = args.directory
    if not d.is_dir():
        print(f"{d}: not a directory", file=sys.stderr)
        return 2
    ok = True
    for path in sorted(d.glob("*.log")):
        if args.segment is not None and int(path.name[:20]) != args.segment:
            continue
        ok = dump_segment(path, records=args.records, indexes=not args.no_index) and ok
    for name in ("leader-epoch-checkpoint", "partition.metadata"):
        f = d / name
        if f.exists():
            print(f"== {name}")
            print("  " + f.read_text(errors="replace").replace("\n", "\n  ").rstrip())
    for snap in sorted(d.glob("*.producers")):
        print(f"== producer snapshot {snap.name}: {snap.stat().st_size} bytes")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
