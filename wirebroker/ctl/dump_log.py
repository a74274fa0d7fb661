"""Print the segments, batches and index entries of a partition directory (read-only).

Usage::

    wirebroker dump-log DATA_DIR/<topic>-<n> [--records] [--no-index] [--segment BASE]
    python tools/dump_log.py ...      (the same, from a checkout: a thin wrapper of this module)

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
from collections.abc import Sequence
from pathlib import Path

DESCRIPTION = (
    "Print the segments, batches and index entries of a partition directory (read-only); "
    "exit 1 when something is wrong (bad CRC, torn or unparsable bytes, an index entry that "
    "disagrees with the log)."
)

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def dump_segment(path: Path, *, records: bool, indexes: bool) -> bool:
    from protocol.records import (
        BATCH_HEADER_SIZE,
        InvalidBatch,
        decode_records,
        parse_header,
        verify_crc,
    )

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, help="a partition directory <topic>-<n>")
    parser.add_argument("--records", action="store_true", help="decode every record")
    parser.add_argument("--no-index", action="store_true", help="skip the index files")
    parser.add_argument("--segment", type=int, help="only the segment with this base offset")


def run(args: argparse.Namespace) -> int:
    d: Path = args.directory
    if not d.is_dir():
        print(f"wirebroker: error: {d}: not a directory", file=sys.stderr)
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dump_log.py", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))
