"""Print the segments, batches and index entries of a partition directory (read-only).

Usage::

    wirebroker dump-log DATA_DIR/<topic>-<n> [--records] [--no-index] [--segment BASE]
                        [--format text|json]
    python tools/dump_log.py ...      (the same, from a checkout: a thin wrapper of this module)

For each `<base>.log`: every batch (position, offsets, size, leader epoch, timestamps,
producer id/epoch/sequence, codec, CRC check), then the `.index` and `.timeindex` entries
with a check that each offset-index entry points at a batch with that last offset. Also
prints `leader-epoch-checkpoint`, `partition.metadata` and producer snapshots. Never writes:
unlike `PartitionLog.open`, nothing is recovered or rebuilt. Exit status 1 when something
is wrong (bad CRC, unparsable bytes, index entry that disagrees with the log).

`--format json` prints the same as one JSON document on stdout (the exit status is the same)::

    {"directory", "ok",
     "segments": [{"file", "base_offset", "bytes", "ok",
                   "batches": [{"position", "base_offset", "last_offset", "record_count", "size",
                                "leader_epoch", "first_timestamp", "max_timestamp",
                                "producer_id", "producer_epoch", "base_sequence",
                                "attributes": {"value", "compression", "timestamp_type",
                                               "transactional", "control"},
                                "crc_valid",
                                "records": [{"offset", "timestamp", "key", "value", "headers",
                                             "key_base64"?, "value_base64"?}]   (--records)
                                "records_error"?}],
                   "problems": [{"position", "kind": torn|unparsable|torn_batch, ...}],
                   "index": null | {"file", "bytes", "whole_entries",
                                    "entries": [{"offset", "position", "matches_log"}]},
                   "timeindex": null | {"file", "bytes", "whole_entries",
                                        "entries": [{"timestamp", "offset"}]}}],
                   (no "index"/"timeindex" keys with --no-index; null: the file is missing)
     "leader_epoch_checkpoint": null | {"text", "version"?, "entries"?: [{"epoch",
                                        "start_offset"}]},
     "partition_metadata": null | text, "producer_snapshots": [{"file", "bytes"}]}

Keys and values are text (UTF-8, undecodable bytes as backslash escapes) with the exact bytes
in base64 beside them when they are not UTF-8, as `consume --format json` does.
"""

from __future__ import annotations

import argparse
import base64
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wirebroker.ctl._output import emit_json

DESCRIPTION = (
    "Print the segments, batches and index entries of a partition directory (read-only); "
    "exit 1 when something is wrong (bad CRC, torn or unparsable bytes, an index entry that "
    "disagrees with the log)."
)

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def scan_segment(path: Path, *, records: bool, indexes: bool) -> dict[str, Any]:
    """Read one `<base>.log` (and its indexes) into a segment document (module doc); never
    prints. Batches keep their decoded `Record`s under "records" when asked; `problems` lists
    what is wrong and "ok" says whether anything is."""
    from protocol.records import BATCH_HEADER_SIZE, InvalidBatch, parse_header

    base = int(path.name[:20])
    data = path.read_bytes()
    ok = True
    batches: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    segment: dict[str, Any] = {
        "file": path.name,
        "base_offset": base,
        "bytes": len(data),
        "batches": batches,
        "problems": problems,
    }
    pos = 0
    starts: dict[int, int] = {}
    while pos < len(data):
        if len(data) - pos < BATCH_HEADER_SIZE:
            problems.append({"position": pos, "kind": "torn", "bytes": len(data) - pos})
            ok = False
            break
        try:
            h = parse_header(data, pos)
        except InvalidBatch as exc:
            problems.append({"position": pos, "kind": "unparsable", "error": str(exc)})
            ok = False
            break
        if h.size > len(data) - pos:
            problems.append(
                {"position": pos, "kind": "torn_batch", "size": h.size, "left": len(data) - pos}
            )
            ok = False
            break
        batch = _batch_document(data, pos, h, records=records)
        ok = ok and batch["crc_valid"] and "records_error" not in batch
        batches.append(batch)
        starts[pos] = h.last_offset
        pos += h.size
    if indexes:
        segment["index"] = _offset_index_document(path, base, starts)
        ok = ok and all(e["matches_log"] for e in (segment["index"] or {}).get("entries", []))
        segment["timeindex"] = _time_index_document(path, base)
    segment["ok"] = ok
    return segment


def _batch_document(data: bytes, pos: int, h: Any, *, records: bool) -> dict[str, Any]:
    """The batch at `pos` (header `h`): its header fields, CRC check and, when asked, its
    decoded records (or "records_error")."""
    from protocol.records import InvalidBatch, decode_records, verify_crc

    batch: dict[str, Any] = {
        "position": pos,
        "base_offset": h.base_offset,
        "last_offset": h.last_offset,
        "record_count": h.records_count,
        "size": h.size,
        "leader_epoch": h.partition_leader_epoch,
        "first_timestamp": h.base_timestamp,
        "max_timestamp": h.max_timestamp,
        "producer_id": h.producer_id,
        "producer_epoch": h.producer_epoch,
        "base_sequence": h.base_sequence,
        "attributes": {
            "value": h.attributes,
            "compression": CODECS.get(h.compression, str(h.compression)),
            "timestamp_type": "log_append" if h.timestamp_type else "create",
            "transactional": bool(h.is_transactional),
            "control": bool(h.is_control),
        },
        "crc_valid": verify_crc(data, pos, h),
    }
    if records:
        try:
            batch["records"] = list(decode_records(data, pos))
        except InvalidBatch as exc:
            batch["records_error"] = str(exc)
    return batch


def _offset_index_document(path: Path, base: int, starts: dict[int, int]) -> dict[str, Any] | None:
    """The `.index` beside `path`: each entry and whether a batch of the log starts at its
    position with its offset as last offset (`starts`: position -> last offset); None when
    there is no such file."""
    index = path.with_suffix(".index")
    if not index.exists():
        return None
    raw = index.read_bytes()
    entries = [
        {"offset": base + rel, "position": p, "matches_log": starts.get(p) == base + rel}
        for rel, p in struct.iter_unpack(">ii", raw[: len(raw) - len(raw) % 8])
    ]
    return {
        "file": index.name,
        "bytes": len(raw),
        "whole_entries": len(raw) % 8 == 0,
        "entries": entries,
    }


def _time_index_document(path: Path, base: int) -> dict[str, Any] | None:
    """The `.timeindex` beside `path`, its entries; None when there is no such file."""
    tindex = path.with_suffix(".timeindex")
    if not tindex.exists():
        return None
    raw = tindex.read_bytes()
    return {
        "file": tindex.name,
        "bytes": len(raw),
        "whole_entries": len(raw) % 12 == 0,
        "entries": [
            {"timestamp": ts, "offset": base + rel}
            for ts, rel in struct.iter_unpack(">qi", raw[: len(raw) - len(raw) % 12])
        ],
    }


def print_segment(segment: dict[str, Any], path: Path) -> None:
    """The text form of `scan_segment`'s document (one line per batch, record, entry)."""
    print(
        f"== segment {segment['file']}: base offset {segment['base_offset']}, "
        f"{segment['bytes']} bytes"
    )
    for b in segment["batches"]:
        a = b["attributes"]
        flags = "".join(
            [
                " txn" if a["transactional"] else "",
                " ctl" if a["control"] else "",
                " logappend" if a["timestamp_type"] == "log_append" else "",
            ]
        )
        print(
            f"  {b['position']:>10}  offsets {b['base_offset']}-{b['last_offset']} "
            f"count {b['record_count']} size {b['size']} epoch {b['leader_epoch']} "
            f"ts {b['first_timestamp']}..{b['max_timestamp']} "
            f"pid {b['producer_id']}/{b['producer_epoch']} seq {b['base_sequence']} "
            f"codec {a['compression']} crc {'ok' if b['crc_valid'] else 'BAD'}{flags}"
        )
        for r in b.get("records", ()):
            print(
                f"              {r.offset} ts {r.timestamp} key {r.key!r} "
                f"value {r.value!r} headers {list(r.headers)}"
            )
        if "records_error" in b:
            print(f"              records undecodable: {b['records_error']}")
    for problem in segment["problems"]:
        pos, kind = problem["position"], problem["kind"]
        if kind == "torn":
            print(f"  {pos:>10}  TORN: {problem['bytes']} trailing bytes")
        elif kind == "unparsable":
            print(f"  {pos:>10}  UNPARSABLE: {problem['error']}")
        else:
            print(f"  {pos:>10}  TORN batch: {problem['size']} bytes, {problem['left']} left")
    if "index" not in segment:
        return
    index = segment["index"]
    if index is None:
        print(f"  -- {path.with_suffix('.index').name}: missing")
    else:
        print(
            f"  -- {index['file']}: {len(index['entries'])} entries"
            f"{'' if index['whole_entries'] else ' (length not a multiple of 8)'}"
        )
        for e in index["entries"]:
            print(
                f"     offset {e['offset']} -> position {e['position']}"
                f"{'' if e['matches_log'] else '  MISMATCH'}"
            )
    tindex = segment["timeindex"]
    if tindex is None:
        print(f"  -- {path.with_suffix('.timeindex').name}: missing")
    else:
        print(
            f"  -- {tindex['file']}: {len(tindex['entries'])} entries"
            f"{'' if tindex['whole_entries'] else ' (length not a multiple of 12)'}"
        )
        for e in tindex["entries"]:
            print(f"     timestamp {e['timestamp']} -> offset {e['offset']}")


def dump_segment(path: Path, *, records: bool, indexes: bool) -> bool:
    """Print one segment as text; whether it is sound."""
    segment = scan_segment(path, records=records, indexes=indexes)
    print_segment(segment, path)
    return bool(segment["ok"])


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def _record_json(record: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _text(record.key),
        "value": _text(record.value),
        "headers": [[k, _text(v)] for k, v in record.headers],
    }
    for field in ("key", "value"):
        raw = getattr(record, field)
        if raw is not None:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:  # not text: the exact bytes too
                document[f"{field}_base64"] = base64.b64encode(raw).decode()
    return document


def _checkpoint_json(text: str) -> dict[str, Any]:
    """leader-epoch-checkpoint: `version`, `count`, then `epoch start_offset` lines."""
    document: dict[str, Any] = {"text": text}
    lines = text.split()
    try:
        version, count = int(lines[0]), int(lines[1])
        pairs = [int(v) for v in lines[2 : 2 + 2 * count]]
    except (IndexError, ValueError):
        return document
    document["version"] = version
    document["entries"] = [
        {"epoch": pairs[i], "start_offset": pairs[i + 1]} for i in range(0, len(pairs) - 1, 2)
    ]
    return document


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, help="a partition directory <topic>-<n>")
    parser.add_argument("--records", action="store_true", help="decode every record")
    parser.add_argument("--no-index", action="store_true", help="skip the index files")
    parser.add_argument("--segment", type=int, help="only the segment with this base offset")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text for people (default) or one JSON document for scripts",
    )


def run(args: argparse.Namespace) -> int:
    d: Path = args.directory
    if not d.is_dir():
        print(f"wirebroker: error: {d}: not a directory", file=sys.stderr)
        return 2
    as_json = getattr(args, "format", "text") == "json"
    ok = True
    segments: list[dict[str, Any]] = []
    for path in sorted(d.glob("*.log")):
        if args.segment is not None and int(path.name[:20]) != args.segment:
            continue
        segment = scan_segment(path, records=args.records, indexes=not args.no_index)
        ok = ok and bool(segment["ok"])
        if as_json:
            for batch in segment["batches"]:
                if "records" in batch:
                    batch["records"] = [_record_json(r) for r in batch["records"]]
            segments.append(segment)
        else:
            print_segment(segment, path)
    files: dict[str, str] = {}
    for name in ("leader-epoch-checkpoint", "partition.metadata"):
        f = d / name
        if f.exists():
            files[name] = f.read_text(errors="replace")
            if not as_json:
                print(f"== {name}")
                print("  " + files[name].replace("\n", "\n  ").rstrip())
    snapshots = [
        {"file": snap.name, "bytes": snap.stat().st_size} for snap in sorted(d.glob("*.producers"))
    ]
    if as_json:
        checkpoint = files.get("leader-epoch-checkpoint")
        emit_json(
            {
                "directory": str(d),
                "ok": ok,
                "segments": segments,
                "leader_epoch_checkpoint": (
                    None if checkpoint is None else _checkpoint_json(checkpoint)
                ),
                "partition_metadata": files.get("partition.metadata"),
                "producer_snapshots": snapshots,
            }
        )
    else:
        for snap in snapshots:
            print(f"== producer snapshot {snap['file']}: {snap['bytes']} bytes")
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dump_log.py", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))
