"""Torn and corrupt files: randomised offline surgery on real partition directories.

A *template* is a log directory holding one topic (2 partitions) written for real:

- `crash` / `clean`: written through `LogManager` + `PartitionLog` (small segments, index
  entries every 300 bytes, five codecs, idempotent and plain producers, non-monotonic
  timestamps, three leader epochs). `crash` is a copy taken while the logs are open, after a
  recovery-point checkpoint that lags the log end (what `kill -9` leaves); `clean` is a copy
  after `LogManager.close()` (clean-shutdown marker, current checkpoints).
- `broker-crash` / `broker-clean` (see `build_broker_templates`): written by the real broker
  subprocess from kafka-python producers, copied after `kill -9` and after a SIGTERM stop.

A *case* (seeded: `case_seed(run_seed, i)`) copies a template, picks a partition (the
victim) and applies 1-3 faults from `FAULTS` in a fixed order (data first, then indexes,
then checkpoints and the marker); each fault that applies adds one line to the case's
description. `run_case` then checks, against `logscan.scan_partition` (an independent reader):

1. `LogManager.load` succeeds;
2. every partition's log, read from its start as a consumer reads (1 byte, 1000 bytes,
   16 KiB or 1 MiB per read, drawn per case), serves exactly the valid prefix the scan
   found, byte for byte: either all of it (damage handled at load), or, when
   the damage lies in a part that load does not scan (below the recovery point after a clean
   shutdown), everything up to the damage and then `StorageError` with the log offline; then
   `LogManager.close()` + a second load must give the valid prefix (damage found at read,
   repaired at restart);
3. the log ends at the last valid batch, the indexes agree with a full scan and
   `offset_for_timestamp` agrees with a record scan (`logscan.check_consistency`);
4. every acknowledged record below the damage point is there with its key and value;
5. the log accepts a new batch at exactly the expected end offset.

Not generated: bit flips in a batch's baseOffset (bytes 0-7) and partitionLeaderEpoch (bytes
12-15). Record batch v2 leaves them outside the CRC because the broker rewrites them; an
upward flip of a base offset is a well-formed batch to any reader (Kafka's too). Index files
are damaged at file-system granularity (sectors, lengths, whole files), not edited entry by
entry: indexes carry no checksum (as in Kafka), so a plausible hand-edited entry can only be
found by reading the log it points into; a `.timeindex` cut at an entry boundary (fewer
entries) is likewise invisible without a scan and is not generated (indexes below the
recovery point were fsynced with their segment, so no crash produces one).
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from logscan import ScanResult, check_consistency, decode_batch, read_back, scan_partition

from protocol.records import RecordSpec, build_batch, iter_batches
from wirebroker.log import LogConfig, LogManager, OsFileSystem, PartitionLog, StorageError
from wirebroker.log.log_manager import CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_CHECKPOINT

__all__ = [
    "FAULTS",
    "Case",
    "CaseResult",
    "NoSyncFileSystem",
    "Template",
    "apply_faults",
    "build_log_templates",
    "case_seed",
    "check_loaded",
    "run_case",
]

TOPIC = "torn"
PARTITIONS = 2
NOW = 1_700_000_000_000
LOAD_NOW = NOW + 3_600_000

#: Config of the PartitionLog-built templates: ~10 segments per partition, index entries
#: every few batches, so faults land in earlier segments and between index entries.
LOG_CONFIG = LogConfig(segment_bytes=6000, index_interval_bytes=300)

Acked = dict[int, tuple[bytes | None, bytes | None]]  # offset -> (key, value)


class NoSyncFileSystem(OsFileSystem):
    """The real file system without fsync: these tests never simulate power loss of the
    page cache, and skipping fsync keeps 200 cases fast."""

    def fsync(self, fd: int) -> None:
        pass

    def fsync_dir(self, path: Path) -> None:
        pass


@dataclass
class Template:
    name: str
    root: Path  # a log directory holding TOPIC-0 .. TOPIC-(PARTITIONS-1)
    config: LogConfig
    acked: dict[int, Acked]  # partition -> acknowledged records
    clean: bool  # written by a clean shutdown (marker present)

    def configs(self, topic: str) -> LogConfig | None:
        return self.config if topic == TOPIC else None


def case_seed(run_seed: int, index: int) -> int:
    """The seed of case `index` of a run: a case replays alone with the same two numbers."""
    return (run_seed * 1_000_003 + index) & 0xFFFF_FFFF_FFFF


# -- templates --------------------------------------------------------------------------------


def _append_history(
    plogs: list[PartitionLog], rng: random.Random, first: int, last: int, total: int
) -> list[Acked]:
    """Append random batches number `first` to `last` - 1 (of `total`) spread over the logs;
    returns what was acknowledged. Batch i's producer sequence and epoch follow from i."""
    acked: list[Acked] = [{} for _ in plogs]
    ts = NOW + first * 25
    for i in range(first, last):
        p = rng.randrange(len(plogs))
        n = rng.choice((1, 1, 2, 3, 5, 8))
        ts += rng.randrange(1, 50)
        specs = []
        for j in range(n):
            rts = ts + rng.randrange(-30, 30)  # not monotonic inside or across batches
            key = None if rng.random() < 0.1 else f"k{i}.{j}".encode()
            value = f"v{i}.{j}:".encode() + rng.randbytes(rng.randrange(0, 180))
            specs.append(RecordSpec(key=key, value=value, timestamp=rts))
        idem = rng.random() < 0.5
        plog = plogs[p]
        entry = plog.producer_entry(1000 + p)
        seq = entry.batches[-1].last_seq + 1 if entry is not None and entry.batches else 0
        data = build_batch(
            specs,
            compression=rng.choice((0, 0, 1, 2, 3, 4)),
            base_timestamp=min(s.timestamp for s in specs if s.timestamp is not None),
            producer_id=1000 + p if idem else -1,
            producer_epoch=0 if idem else -1,
            base_sequence=seq if idem else -1,
        )
        epoch = 3 * i // total
        r = plog.append_as_leader(data, leader_epoch=epoch, now_ms=NOW)
        for j, spec in enumerate(specs):
            acked[p][r.first_offset + j] = (spec.key, spec.value)
    return acked


def build_log_templates(workdir: Path, seed: int, batches: int = 260) -> list[Template]:
    """The `crash` and `clean` templates (see the module doc), written with PartitionLog."""
    rng = random.Random(seed)
    live = workdir / "live"
    lm = LogManager([live], fs=NoSyncFileSystem())
    lm.load(lambda t: LOG_CONFIG if t == TOPIC else None, NOW)
    plogs = [lm.create(TOPIC, p, LOG_CONFIG, NOW) for p in range(PARTITIONS)]
    split = batches * 2 // 3
    first = _append_history(plogs, rng, 0, split, batches)
    for plog in plogs:
        plog.flush()
    lm.checkpoint()  # the recovery point lags the appends that follow
    rest = _append_history(plogs, rng, split, batches, batches)
    acked = {p: {**first[p], **rest[p]} for p in range(PARTITIONS)}
    crash = workdir / "tmpl-crash"
    shutil.copytree(live, crash)  # the files as kill -9 leaves them (page cache included)
    lm.close()
    clean = workdir / "tmpl-clean"
    shutil.copytree(live, clean)
    shutil.rmtree(live)
    return [
        Template("crash", crash, LOG_CONFIG, acked, clean=False),
        Template("clean", clean, LOG_CONFIG, acked, clean=True),
    ]


# -- faults -----------------------------------------------------------------------------------


@dataclass
class FaultContext:
    rng: random.Random
    root: Path  # the log directory of the case
    victim: Path  # the damaged partition directory
    partition: int
    clean: bool  # the template was cleanly shut down

    def segments(self) -> list[Path]:
        return sorted(self.victim.glob("*.log"))

    def last_segment(self) -> Path:
        return self.segments()[-1]


def _batch_starts(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of the batches that parse from the start (lenient, no CRC)."""
    out = []
    try:
        for pos, h in iter_batches(data):
            out.append((pos, h.size))
    except Exception:
        pass
    return out


def _protected_positions(data: bytes) -> set[int]:
    """Bytes outside the CRC that a reader cannot check: baseOffset and leader epoch."""
    out: set[int] = set()
    for pos, _ in _batch_starts(data):
        out.update(range(pos, pos + 8))
        out.update(range(pos + 12, pos + 16))
    return out


def _flip_bits(ctx: FaultContext, path: Path) -> str | None:
    data = bytearray(path.read_bytes())
    if not data:
        return None
    skip = _protected_positions(bytes(data))
    flips = []
    for _ in range(ctx.rng.choice((1, 1, 2, 3))):
        for _try in range(100):
            pos = ctx.rng.randrange(len(data))
            if pos not in skip:
                break
        else:
            return None
        bit = ctx.rng.randrange(8)
        data[pos] ^= 1 << bit
        flips.append(f"{pos}.{bit}")
    path.write_bytes(bytes(data))
    return f"flip bit(s) {','.join(flips)} of {path.name} ({len(data)} bytes)"


def f_truncate_last_batch(ctx: FaultContext) -> str | None:
    path = ctx.last_segment()
    data = path.read_bytes()
    starts = _batch_starts(data)
    if not starts:
        return None
    pos, size = starts[-1]
    cut = pos + ctx.rng.randrange(1, size)
    os.truncate(path, cut)
    return f"truncate {path.name} to {cut} (inside its last batch at {pos}, {size} bytes)"


def f_truncate_anywhere(ctx: FaultContext) -> str | None:
    path = ctx.last_segment()
    size = path.stat().st_size
    if size == 0:
        return None
    cut = ctx.rng.randrange(size)
    os.truncate(path, cut)
    return f"truncate {path.name} from {size} to {cut}"


def f_flip_last(ctx: FaultContext) -> str | None:
    return _flip_bits(ctx, ctx.last_segment())


def f_flip_earlier(ctx: FaultContext) -> str | None:
    segs = [s for s in ctx.segments()[:-1] if s.stat().st_size > 0]
    if not segs:
        return None
    return _flip_bits(ctx, ctx.rng.choice(segs))


def f_zero_pages(ctx: FaultContext) -> str | None:
    """A power-loss pattern: a page-aligned tail range reads back as zeros."""
    path = ctx.last_segment()
    size = path.stat().st_size
    if size == 0:
        return None
    start = (ctx.rng.randrange(size) // 512) * 512
    end = min(size, start + ctx.rng.choice((512, 4096, 8192)))
    with path.open("r+b") as f:
        f.seek(start)
        f.write(b"\0" * (end - start))
    return f"zero bytes [{start}, {end}) of {path.name}"


def f_append_garbage(ctx: FaultContext) -> str | None:
    path = ctx.last_segment()
    data = path.read_bytes()
    starts = _batch_starts(data)
    rng = ctx.rng
    kinds = ["random", "zeros", "ones"]
    if starts:
        kinds += ["header-copy", "batch-copy", "next-offset-bad-crc"]
    kind = rng.choice(kinds)
    if kind == "random":
        junk = rng.randbytes(rng.randrange(1, 400))
    elif kind == "zeros":
        junk = b"\0" * rng.randrange(1, 5000)
    elif kind == "ones":
        junk = b"\xff" * rng.randrange(1, 300)
    else:
        pos, size = starts[-1]
        last = data[pos : pos + size]
        if kind == "header-copy":
            junk = last[: rng.randrange(1, 62)]
        elif kind == "batch-copy":
            junk = last  # base offset goes back
        else:  # a well-formed header continuing the offsets, with a broken body
            base = struct.unpack_from(">q", last, 0)[0]
            delta = struct.unpack_from(">i", last, 23)[0]
            body = bytearray(last)
            struct.pack_into(">q", body, 0, base + delta + 1)
            body[-1] ^= 0x5A
            junk = bytes(body)
    with path.open("ab") as f:
        f.write(junk)
    return f"append {len(junk)} bytes of {kind} garbage to {path.name}"


def _index_target(ctx: FaultContext, suffix: str) -> Path | None:
    paths = [p.with_suffix(suffix) for p in ctx.segments()]
    paths = [p for p in paths if p.exists()]
    return ctx.rng.choice(paths) if paths else None


def _delete_index(ctx: FaultContext, suffix: str) -> str | None:
    path = _index_target(ctx, suffix)
    if path is None:
        return None
    path.unlink()
    return f"delete {path.name}"


def _garble_index(ctx: FaultContext, suffix: str, entry: int) -> str | None:
    """Damage at file-system granularity: 512-byte sectors of garbage or zeros from an
    aligned offset, a torn length, junk entries appended, fewer entries, an empty file."""
    path = _index_target(ctx, suffix)
    if path is None:
        return None
    data = bytearray(path.read_bytes())
    rng = ctx.rng
    kinds = ["random-sectors", "zero-sectors", "odd-length", "junk", "empty"]
    if suffix == ".index":
        kinds.append("fewer-entries")
    kind = rng.choice(kinds)
    if kind in ("random-sectors", "zero-sectors") and data:
        start = rng.randrange(0, len(data), 512)
        n = min(len(data) - start, 512 * rng.randrange(1, 3))
        data[start : start + n] = rng.randbytes(n) if kind == "random-sectors" else b"\0" * n
    elif kind == "odd-length":
        data += rng.randbytes(rng.randrange(1, entry))
    elif kind == "fewer-entries" and data:
        data = data[: entry * rng.randrange(len(data) // entry + 1)]
    elif kind == "junk":
        data += rng.randbytes(entry * rng.randrange(1, 4))
    else:
        kind = "empty"
        data = bytearray()
    path.write_bytes(bytes(data))
    return f"garble {path.name}: {kind}"


def f_delete_index(ctx: FaultContext) -> str | None:
    return _delete_index(ctx, ".index")


def f_delete_timeindex(ctx: FaultContext) -> str | None:
    return _delete_index(ctx, ".timeindex")


def f_garble_index(ctx: FaultContext) -> str | None:
    return _garble_index(ctx, ".index", 8)


def f_garble_timeindex(ctx: FaultContext) -> str | None:
    return _garble_index(ctx, ".timeindex", 12)


def f_stale_recovery_point(ctx: FaultContext) -> str | None:
    path = ctx.root / RECOVERY_POINT_CHECKPOINT
    rng = ctx.rng
    kind = rng.choice(("older", "zero", "beyond-end", "garbage", "deleted"))
    if kind == "deleted":
        if path.exists():
            path.unlink()
        return "delete the recovery-point checkpoint"
    if kind == "garbage":
        path.write_bytes(rng.randbytes(rng.randrange(1, 60)))
        return "garble the recovery-point checkpoint"
    lines = path.read_text().splitlines() if path.exists() else ["0", "0"]
    entries = {}
    for line in lines[2:]:
        t, p, o = line.split()
        entries[(t, int(p))] = int(o)
    key = (TOPIC, ctx.partition)
    current = entries.get(key, 0)
    value = {"older": rng.randrange(current + 1), "zero": 0, "beyond-end": current + 10**6}[kind]
    entries[key] = value
    body = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    path.write_text("\n".join(body) + "\n")
    return f"recovery point of partition {ctx.partition}: {current} -> {value} ({kind})"


def f_clean_marker(ctx: FaultContext) -> str | None:
    path = ctx.root / CLEAN_SHUTDOWN_FILE
    if ctx.clean:
        if not path.exists():
            return None
        path.unlink()
        return "delete the clean-shutdown marker"
    path.write_bytes(b'{"version":0,"brokerEpoch":-1}')
    return "add a clean-shutdown marker that lies (the logs were not closed)"


def f_epoch_checkpoint(ctx: FaultContext) -> str | None:
    path = ctx.victim / "leader-epoch-checkpoint"
    if ctx.rng.random() < 0.5:
        if path.exists():
            path.unlink()
        return "delete leader-epoch-checkpoint"
    path.write_bytes(ctx.rng.randbytes(ctx.rng.randrange(1, 40)))
    return "garble leader-epoch-checkpoint"


def f_producer_snapshot(ctx: FaultContext) -> str | None:
    snaps = sorted(ctx.victim.glob("*.producers"))
    if not snaps:
        return None
    path = snaps[-1]
    data = bytearray(path.read_bytes())
    if data and ctx.rng.random() < 0.5:
        data[ctx.rng.randrange(len(data))] ^= 0xFF
        path.write_bytes(bytes(data))
        return f"flip a byte of {path.name}"
    os.truncate(path, ctx.rng.randrange(len(data) + 1))
    return f"truncate {path.name}"


Fault = Callable[[FaultContext], str | None]

#: (name, function, weight), in the order faults are applied within a case.
FAULTS: list[tuple[str, Fault, int]] = [
    ("truncate-last-batch", f_truncate_last_batch, 6),
    ("truncate-anywhere", f_truncate_anywhere, 3),
    ("flip-last-segment", f_flip_last, 5),
    ("flip-earlier-segment", f_flip_earlier, 5),
    ("zero-pages", f_zero_pages, 2),
    ("append-garbage", f_append_garbage, 5),
    ("delete-index", f_delete_index, 2),
    ("delete-timeindex", f_delete_timeindex, 2),
    ("garble-index", f_garble_index, 3),
    ("garble-timeindex", f_garble_timeindex, 3),
    ("stale-recovery-point", f_stale_recovery_point, 4),
    ("clean-marker", f_clean_marker, 4),
    ("epoch-checkpoint", f_epoch_checkpoint, 1),
    ("producer-snapshot", f_producer_snapshot, 1),
]


@dataclass
class Case:
    index: int
    seed: int
    template: str
    partition: int
    faults: list[tuple[str, str]] = field(default_factory=list)  # (name, what was done)

    def describe(self) -> str:
        lines = [f"case {self.index} (seed {self.seed}, template {self.template}, "]
        lines[0] += f"partition {self.partition}):"
        lines += [f"  - {name}: {what}" for name, what in self.faults]
        return "\n".join(lines)


def apply_faults(
    case: Case, root: Path, clean: bool, rng: random.Random, force: str | None = None
) -> None:
    """Draw 1-3 distinct faults (`force` among them when given) and apply them, in FAULTS
    order, to the copy at `root`."""
    count = rng.choice((1, 1, 2, 2, 3))
    names = [name for name, _, _ in FAULTS]
    weights = [w for _, _, w in FAULTS]
    chosen: set[str] = {force} if force else set()
    while len(chosen) < count:
        chosen.add(rng.choices(names, weights)[0])
    ctx = FaultContext(rng, root, root / f"{TOPIC}-{case.partition}", case.partition, clean)
    for name, fn, _ in FAULTS:
        if name in chosen:
            what = fn(ctx)
            if what is not None:
                case.faults.append((name, what))
    if not case.faults:  # nothing applied (e.g. an empty last segment): tear something
        what = f_append_garbage(ctx)
        assert what is not None
        case.faults.append(("append-garbage", what))


# -- checking ---------------------------------------------------------------------------------


@dataclass
class CaseResult:
    case: Case
    ok: bool = False
    error: str | None = None
    expected_end: int = -1
    found_at: str = ""  # "intact", "load" or "read" (offline at the damage, repaired at restart)
    acked_checked: int = 0
    acked_lost: int = 0
    batches_served: int = 0
    lookups: int = 0
    stage: str = ""  # the check that was running (the failed one when not ok)


def _records_of(batches: list[bytes]) -> dict[int, tuple[bytes | None, bytes | None]]:
    out = {}
    for data in batches:
        for r in decode_batch(data):
            out[r.offset] = (r.key, r.value)
    return out


def _load(root: Path, tmpl: Template) -> LogManager:
    lm = LogManager([root], fs=NoSyncFileSystem())
    lm.load(tmpl.configs, LOAD_NOW)
    return lm


def check_loaded(
    root: Path,
    tmpl: Template,
    scans: dict[int, ScanResult],
    result: CaseResult,
    fetch_bytes: int = 1,
) -> None:
    """Steps 1-5 of the module doc on the case directory `root`; fills `result`. The first
    read-back fetches `fetch_bytes` per read (1: one batch per read)."""
    result.stage = "load"
    lm = _load(root, tmpl)
    found_at = "load"
    try:
        result.stage = "serve"
        for p in range(PARTITIONS):
            plog = lm.get(TOPIC, p)
            assert plog is not None, f"partition {p} not loaded"
            scan = scans[p]
            served, err = read_back(plog, fetch_bytes)
            valid = [b.data for b in scan.batches]
            result.batches_served += len(served)
            assert served == valid[: len(served)], f"partition {p}: served bytes differ from scan"
            if err is not None:
                assert len(served) == len(valid), (
                    f"partition {p}: StorageError after {len(served)} of {len(valid)} valid "
                    f"batches: {err}"
                )
                assert plog.offline, f"partition {p}: StorageError but the log is online"
                found_at = "read"
            else:
                assert len(served) == len(valid), (
                    f"partition {p}: served {len(served)} batches, the valid prefix has "
                    f"{len(valid)}; log end {plog.log_end_offset}, expected {scan.end_offset}"
                )
        if found_at == "read":
            result.stage = "load"
            lm.close()
            lm = _load(root, tmpl)
        for p in range(PARTITIONS):
            plog = lm.get(TOPIC, p)
            assert plog is not None
            scan = scans[p]
            result.stage = "serve"
            served, err = read_back(plog)
            assert err is None, f"partition {p}: {err} after the restart"
            assert served == [b.data for b in scan.batches], f"partition {p}: served != scan"
            result.stage = "lookups"
            result.lookups += check_consistency(plog, scan)
            result.stage = "acked"
            got = _records_of(served)
            for offset, kv in tmpl.acked[p].items():
                if offset < scan.end_offset:
                    result.acked_checked += 1
                    if got.get(offset) != kv:
                        result.acked_lost += 1
            assert result.acked_lost == 0, f"partition {p}: {result.acked_lost} acked lost"
            result.stage = "append"
            extra = build_batch([(b"after", b"recovery")], base_timestamp=LOAD_NOW)
            r = plog.append_as_leader(extra, leader_epoch=7, now_ms=LOAD_NOW)
            assert r.first_offset == scan.end_offset, (r.first_offset, scan.end_offset)
            assert plog.read(r.first_offset, max_bytes=1 << 20)
        result.found_at = found_at
    finally:
        with suppress(StorageError):
            lm.close()


def forced_fault(index: int) -> str | None:
    """Cases 0 .. len(FAULTS)-1 each include one fault kind for sure, so every run covers
    every kind; later cases draw freely."""
    return FAULTS[index][0] if index < len(FAULTS) else None


def run_case(tmpl: Template, run_seed: int, index: int, workdir: Path) -> CaseResult:
    """Copy the template, damage it, check it (see the module doc). Never raises."""
    seed = case_seed(run_seed, index)
    rng = random.Random(seed)
    case = Case(index, seed, tmpl.name, rng.randrange(PARTITIONS))
    result = CaseResult(case)
    root = workdir / f"case-{index}"
    try:
        shutil.copytree(tmpl.root, root)
        apply_faults(case, root, tmpl.clean, rng, forced_fault(index))
        scans = {p: scan_partition(root / f"{TOPIC}-{p}") for p in range(PARTITIONS)}
        result.expected_end = scans[case.partition].end_offset
        check_loaded(root, tmpl, scans, result, rng.choice((1, 1000, 16384, 1 << 20)))
        if all(s.damage is None for s in scans.values()) and result.found_at == "load":
            result.found_at = "intact"
        result.ok = True
    except Exception as exc:  # a failed case is a finding: report it, keep going
        result.error = f"{result.stage or 'setup'}: {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result


# -- figures ----------------------------------------------------------------------------------


@dataclass
class Summary:
    cases: int = 0
    ok: int = 0
    faults: int = 0
    found: dict[str, int] = field(default_factory=dict)
    acked_checked: int = 0
    acked_lost: int = 0
    batches_served: int = 0
    lookups: int = 0
    by_fault: dict[str, list[int]] = field(default_factory=dict)  # name -> [cases, ok]
    by_template: dict[str, list[int]] = field(default_factory=dict)
    failed_stage: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def summarize(results: list[CaseResult]) -> Summary:
    s = Summary()
    for r in results:
        s.cases += 1
        s.ok += r.ok
        s.faults += len(r.case.faults)
        key = r.found_at if r.ok else "failed"
        s.found[key] = s.found.get(key, 0) + 1
        s.acked_checked += r.acked_checked
        s.acked_lost += r.acked_lost
        s.batches_served += r.batches_served
        s.lookups += r.lookups
        for name in {n for n, _ in r.case.faults}:
            row = s.by_fault.setdefault(name, [0, 0])
            row[0] += 1
            row[1] += r.ok
        row = s.by_template.setdefault(r.case.template, [0, 0])
        row[0] += 1
        row[1] += r.ok
        if not r.ok:
            stage = r.stage or "setup"
            s.failed_stage[stage] = s.failed_stage.get(stage, 0) + 1
            s.failures.append(f"{r.case.describe()}\n    {r.error}")
    return s


def figure_lines(s: Summary, b: Summary | None = None) -> list[str]:
    """The figures, in the `metric: value (N operations, K faults)` form."""
    ops = f"{s.cases} cases, {s.faults} faults"
    found = s.found
    failed = s.failed_stage
    lines = [
        f"torn-file cases recovered correctly: {s.ok}/{s.cases} ({ops})",
        f"broker start-ups (LogManager.load) that failed: {failed.get('load', 0)} ({ops})",
        "damage repaired at load / found at first read, repaired at restart / only index or "
        f"checkpoint damage: {found.get('load', 0)} / {found.get('read', 0)} / "
        f"{found.get('intact', 0)} ({ops})",
        f"cases serving anything but the valid prefix: {failed.get('serve', 0)} "
        f"({s.batches_served} batches read back, {s.faults} faults)",
        f"cases with a lookup disagreeing with a full scan: {failed.get('lookups', 0)} "
        f"({s.lookups} offset and timestamp lookups, {s.faults} faults)",
        f"acknowledged records lost below the damage point: {s.acked_lost} "
        f"({s.acked_checked} acknowledged records checked, {s.faults} faults)",
    ]
    if b is not None and b.cases:
        lines.append(
            "damaged logs served by the real broker exactly up to the damage "
            f"(kafka-python, confluent-kafka): {b.ok}/{b.cases} ({b.cases} cases, "
            f"{b.faults} faults, {b.batches_served} records read back)"
        )
    return lines
