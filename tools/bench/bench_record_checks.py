#!/usr/bin/env python3
"""What reading every produced record would cost: the broker as it is against the same broker
with each batch's records read while validating (`_checked_broker.py` variants), rounds
alternating on the same machine.

    .venv/bin/python tools/bench/bench_record_checks.py [--rounds 5] [--quick]

Kafka's LogValidator reads every record of a produced batch (decompressing compressed ones)
and refuses garbage inside a batch whose CRC is right (INVALID_RECORD, or
UNKNOWN_SERVER_ERROR for a corrupt compressed stream); wirebroker reads records only where one
may be refused (a compacted topic, timestamps out of the header's window: docs/log.md). This
measures, per variant (`as-is`, `framing`, `every-record`; see `_checked_broker.py`):

  produce 100 B / 10 KiB   confluent-kafka (`_load.py produce`, acks=1, linger.ms 5,
                           batch.size 1 MB, no compression): records/s and the broker's CPU
                           seconds for the run
  raw <records> <codec>    no client library: the same pre-encoded Produce v9 request (one
                           batch of about 1 MB of records before compression, acks=1) sent N
                           times with 5 in flight (`_raw.py`): the broker's CPU milliseconds
                           per MB of records (uncompressed size) and MB/s

Each round starts one fresh broker per variant, in the order given, and runs every workload
against it; the table shows the median over the rounds with the (min-max) range, and the ratio
of the medians to the first variant's. The load average before and after is printed: other
work on the machine moves every figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _raw
from _peers import REPO_ROOT, Broker, bytecode_env, machine_line
from bench_broker import load

from protocol.codec import decode_response
from protocol.records import RecordSpec, build_batch

CHECKED = str(Path(__file__).resolve().parent / "_checked_broker.py")
VARIANTS = ("as-is", "framing", "every-record")
KIB10 = 10 * 1024
BATCH_BYTES = 1_000_000


def start(variant: str, workdir: Path) -> Broker:
    cmd = [sys.executable, CHECKED, variant, "serve", "--port", "0"]
    cmd += ["--data-dir", str(workdir / f"data-{variant}")]
    return Broker(
        f"wirebroker ({variant})",
        cmd,
        workdir / f"{variant}.log",
        ready_line=True,
        env_update=bytecode_env(),
        root=REPO_ROOT,
    )


def _values(size: int, compressible: bool, count: int) -> list[bytes]:
    if not compressible:
        value = os.urandom(size)
        return [value] * count
    out = []
    for i in range(count):
        text = f'{{"id": {i:08d}, "user": "user-{i % 977:05d}", "amount": {i % 10007}.25, '
        out.append((text + '"ok": true, "pad": "' + "x" * size)[:size].encode())
    return out


def raw_batch(size: int, codec: int) -> tuple[bytes, int]:
    """One batch of about BATCH_BYTES of `size`-byte records, compressed with `codec`
    (compressible text when compressed); -> (batch, uncompressed record bytes)."""
    count = max(1, BATCH_BYTES // (size + 10))
    values = _values(size, codec != 0, count)
    now = int(time.time() * 1000)
    specs = [RecordSpec(None, v, timestamp=now) for v in values]
    return build_batch(specs, compression=codec, base_timestamp=now), count * size


def raw_produce(broker: Broker, topic: str, batch: bytes, data_mb: float, n: int) -> dict:
    frames = [_raw._produce_frame(topic, batch, cid) for cid in range(n)]
    _raw._pipeline(broker.port, frames[:5], _raw.WINDOW)  # warm-up
    c0 = broker.cpu_seconds()
    seconds, responses = _raw._pipeline(broker.port, frames, _raw.WINDOW)
    cpu_s = broker.cpu_seconds() - c0
    for frame in responses[:2] + responses[-2:]:
        _cid, resp = decode_response(0, 9, frame)
        code = resp.responses[0].partition_responses[0].error_code
        if code != 0:
            raise RuntimeError(f"raw produce to {topic}: error code {code}")
    mb = data_mb * n
    return {"cpu_ms_per_mb": cpu_s * 1000 / mb, "mb_s": mb / seconds}


Record = Callable[[str, float], None]


def run_round(broker: Broker, counts: dict[str, int], record: Record) -> None:
    for size, label in ((100, "100 B"), (KIB10, "10 KiB")):
        topic = f"p{size}"
        load(broker, "create", topic=topic)
        c0 = broker.cpu_seconds()
        r = load(broker, "produce", topic=topic, count=counts[label], size=size, acks=1)
        record(f"produce {counts[label]:,} x {label}, records/s", r["records"] / r["seconds"])
        record(f"... broker CPU s ({label})", broker.cpu_seconds() - c0)
    raw = ((100, 0, "none"), (KIB10, 0, "none"), (100, 3, "lz4"), (100, 4, "zstd"))
    for size, codec, name in raw:
        topic = f"raw-{size}-{name}"
        load(broker, "create", topic=topic)
        batch, data = raw_batch(size, codec)
        r = raw_produce(broker, topic, batch, data / 1e6, counts["raw"])
        label = f"raw {size if size < KIB10 else '10 KiB'}{' B' if size < KIB10 else ''} {name}"
        record(f"{label}: broker CPU ms per MB of records", r["cpu_ms_per_mb"])
        record(f"{label}: MB/s", r["mb_s"])


def table(variants: list[str], results: dict[str, dict[str, list[float]]]) -> str:
    base = variants[0]
    head = "| figure | " + " | ".join(variants) + " |"
    lines = [head, "|---" * (len(variants) + 1) + "|"]
    for key in results[base]:
        cells = []
        base_median = statistics.median(results[base][key])
        for v in variants:
            values = results[v][key]
            median = statistics.median(values)
            cell = f"{median:,.3g} ({min(values):,.3g}-{max(values):,.3g})"
            if v != base:
                cell += f" x{median / base_median:.2f}"
            cells.append(cell)
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer records and requests")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    counts = (
        {"100 B": 200_000, "10 KiB": 20_000, "raw": 60}
        if args.quick
        else {"100 B": 500_000, "10 KiB": 50_000, "raw": 150}
    )
    results: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-record-checks-") as tmp:
        for rnd in range(args.rounds):
            for variant in variants:
                work = Path(tmp) / f"{rnd}-{variant}"
                broker = start(variant, work)
                try:

                    def record(key: str, value: float, v: str = variant) -> None:
                        results[v].setdefault(key, []).append(value)

                    run_round(broker, counts, record)
                finally:
                    broker.stop()
                print(f"round {rnd + 1}/{args.rounds} {variant}: done", file=sys.stderr)
    load_after = os.getloadavg()
    print(machine_line())
    print(f"load average {load_before} before, {load_after} after; {args.rounds} rounds\n")
    print(table(variants, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
