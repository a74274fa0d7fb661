#!/usr/bin/env python3
"""Development aid for the consume path: confluent-kafka consume rate of several brokers in
one run, rounds alternating, and what each broker answers per Fetch.

    python tools/bench/_consume_trace.py --side main --side kafka --rounds 3
    python tools/bench/_consume_trace.py --side old=/work/wt/old --side main --size 10240 \\
        --count 100000 --rounds 3
    python tools/bench/_consume_trace.py --side main --trace --py-spy /tmp/spy

A side is `kafka` (Apache Kafka 4.4, `_kafka_peer.py`), `NAME` (wirebroker of this
checkout) or `NAME=DIR` (wirebroker of the checkout at DIR, e.g. a `git worktree` of an older
commit). Per round and side: a fresh broker, the warm-up bench_broker.py does (20,000 x 100 B
produced and consumed: __consumer_offsets, a first segment), `--count` x `--size` produced
acks=1 (linger.ms 5, batch.size 1 MB, `_load.py produce`), then `--consumes` timed consumes
of that topic from offset 0 (`_load.py consume`, assign, fetch.queue.backoff.ms=10), each
with the broker's CPU seconds over it. Reported per side: the medians (min-max) of records/s,
MB/s and broker CPU ms per MB. `--batch-records N`: the topic is produced in batches of N
records (linger.ms 2000, batch.num.messages N), so every broker holds the same batches (with
linger.ms 5 their sizes follow each broker's produce timing: 80-280 KB medians seen).

`--trace`: one more consume per round with librdkafka's `debug=protocol,fetch` log (not
timed: the log slows the client), from which the script takes each Fetch exchange: response
bytes, round trip (librdkafka's rtt: request sent -> response read), the gap from one
response to the next request, and how often librdkafka held its fetcher back because
fetch.queue.backoff.ms's queue was full ("Fetch backoff for 10ms: Local: Queue full").
`--py-spy DIR`: py-spy records each wirebroker during its first timed consume (raw stacks,
`DIR/NAME-rROUND.txt`; needs py-spy on PATH).

`--java`: Kafka's own tools instead of confluent-kafka (`_perf_tools`): the topic produced
by kafka-producer-perf-test (acks=1, its defaults: batch.size 16 KiB, so one 10 KiB record per
batch), each consume a kafka-consumer-perf-test in a new group (the Java consumer: one Fetch
in flight, 1 MiB per partition). No warm-up topic, no trace.

    python tools/bench/_consume_trace.py --java --side main --side kafka --size 10240 \
        --count 100000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import _perf_tools
from _kafka_peer import start_kafka
from _peers import REPO_ROOT, start_wirebroker

LOAD = str(Path(__file__).resolve().parent / "_load.py")
SENT = re.compile(r"^%\d\|([\d.]+)\|.*Sent FetchRequest \(v(\d+), (\d+) bytes")
RECEIVED = re.compile(
    r"^%\d\|([\d.]+)\|.*Received FetchResponse \(v\d+, (\d+) bytes, CorrId \d+, rtt ([\d.]+)ms"
)
QUEUE_FULL = re.compile(r"Fetch backoff for \d+ms: Local: Queue full")


def load(bootstrap: str, workload: str, env: dict[str, str] | None = None, **options: Any) -> Any:
    """One `_load.py` workload in a new process: (JSON result, stderr)."""
    cmd = [sys.executable, LOAD, workload, "--bootstrap", bootstrap]
    for key, value in options.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO_ROOT, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{workload} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def batch_sizes(workdir: Path, topic: str) -> dict[str, float]:
    """Batches of `topic`-0 as stored (Kafka's and wirebroker's segment files share the
    format: base offset int64, length int32): count and median / min / max size in bytes."""
    sizes: list[int] = []
    for path in sorted(workdir.glob(f"**/{topic}-0/*.log")):
        data = path.read_bytes()
        pos = 0
        while len(data) - pos >= 12:
            length = int.from_bytes(data[pos + 8 : pos + 12], "big")
            sizes.append(12 + length)
            pos += 12 + length
    if not sizes:
        return {"batches": 0}
    return {
        "batches": len(sizes),
        "batch_bytes_median": statistics.median(sizes),
        "batch_bytes_min": min(sizes),
        "batch_bytes_max": max(sizes),
    }


def parse_trace(stderr: str) -> dict[str, float]:
    """Per-Fetch figures from librdkafka's debug log (module doc)."""
    sent: list[float] = []
    got: list[tuple[float, int, float]] = []
    backoffs = 0
    for line in stderr.splitlines():
        if m := SENT.match(line):
            sent.append(float(m.group(1)))
        elif m := RECEIVED.match(line):
            got.append((float(m.group(1)), int(m.group(2)), float(m.group(3))))
        elif QUEUE_FULL.search(line):
            backoffs += 1
    big = [g for g in got if g[1] > 10_000]  # answers with records, not the empty tail ones
    gaps = []
    for t_recv, _size, _rtt in big:
        later = [t for t in sent if t >= t_recv]
        if later:
            gaps.append((later[0] - t_recv) * 1000)
    if not big:
        return {"fetches": len(got)}
    span = big[-1][0] - big[0][0]
    return {
        "fetches": len(got),
        "fetches_with_records": len(big),
        "resp_bytes_median": statistics.median(g[1] for g in big),
        "resp_bytes_min": min(g[1] for g in big),
        "rtt_ms_median": statistics.median(g[2] for g in big),
        "rtt_ms_p90": sorted(g[2] for g in big)[int(len(big) * 0.9)],
        "gap_ms_median": statistics.median(gaps) if gaps else float("nan"),
        "fetches_per_s": len(big) / span if span > 0 else float("nan"),
        "queue_full_backoffs": backoffs,
    }


@contextmanager
def py_spy(pid: int, out: Path | None) -> Iterator[None]:
    """py-spy record of `pid` while the block runs (nothing when `out` is None)."""
    if out is None:
        yield
        return
    cmd = ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "200"]
    proc = subprocess.Popen(
        [*cmd, "--output", str(out), "--nonblocking"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)  # py-spy attaches
        yield
    finally:
        proc.send_signal(2)
        proc.wait(timeout=30)


def start(side: str, workdir: Path) -> Any:
    if side == "kafka":
        return start_kafka(workdir)
    _name, _, root = side.partition("=")
    return start_wirebroker(
        workdir, [], bytecode_cache=True, root=Path(root).resolve() if root else REPO_ROOT
    )


def java_round(broker: Any, args: argparse.Namespace, record: Callable[[str, float], None]) -> None:
    """`--java`: kafka-producer-perf-test then `--consumes` kafka-consumer-perf-tests."""
    boot = broker.bootstrap
    load(boot, "create", topic="t")
    _perf_tools.producer_perf(boot, "t", args.count, args.size, "1")
    for i in range(args.consumes):
        cpu0 = broker.cpu_seconds()
        r = _perf_tools.consumer_perf(boot, "t", args.count, f"jc{i}")
        cpu = broker.cpu_seconds() - cpu0
        record("records/s", r["records_s"])
        record("MB/s", r["mb_s"])
        record("broker CPU ms/MB", cpu * 1000 / (args.count * args.size / 1e6))


def one_round(
    side: str, args: argparse.Namespace, rnd: int, record: Callable[[str, float], None]
) -> dict[str, float] | None:
    name = side.partition("=")[0]
    workdir = Path(tempfile.mkdtemp(prefix=f"ctrace-{name}-"))
    broker = start(side, workdir)
    try:
        if args.java:
            java_round(broker, args, record)
            return None
        boot = broker.bootstrap
        load(boot, "create", topic="warmup")
        load(boot, "produce", topic="warmup", count=20_000, size=100, acks="1")
        load(boot, "consume", topic="warmup", count=20_000)
        load(boot, "create", topic="t")
        penv = None
        if args.batch_records:  # the same batches on every broker: linger long, N per batch
            conf = {"linger.ms": 2000, "batch.num.messages": args.batch_records}
            penv = dict(os.environ, BENCH_CLIENT_CONFIG=json.dumps(conf))
        load(boot, "produce", env=penv, topic="t", count=args.count, size=args.size, acks="1")
        print(f"# {side} round {rnd} batches: {batch_sizes(workdir, 't')}", flush=True)
        for i in range(args.consumes):
            spy = None
            if args.py_spy is not None and i == 0 and side != "kafka":
                spy = args.py_spy / f"{name}-r{rnd}.txt"
            cpu0 = broker.cpu_seconds()
            with py_spy(broker.pid, spy):
                r, _ = load(boot, "consume", topic="t", count=args.count, queue_backoff_ms=10)
            cpu = broker.cpu_seconds() - cpu0
            mb = r["bytes"] / 1e6
            record("records/s", r["records"] / r["seconds"])
            record("MB/s", mb / r["seconds"])
            record("broker CPU ms/MB", cpu * 1000 / mb)
        if not args.trace:
            return None
        env = dict(os.environ, BENCH_CONSUMER_CONFIG=json.dumps({"debug": "protocol,fetch"}))
        opts = {"topic": "t", "count": args.count, "queue_backoff_ms": 10}
        _r, stderr = load(boot, "consume", env=env, **opts)
        if args.keep_trace is not None:
            (args.keep_trace / f"{name}-r{rnd}.log").write_text(stderr)
        return parse_trace(stderr)
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--side", action="append", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--consumes", type=int, default=2)
    parser.add_argument("--batch-records", type=int, default=0)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--keep-trace", type=Path, default=None)
    parser.add_argument("--py-spy", type=Path, default=None)
    parser.add_argument("--java", action="store_true")
    args = parser.parse_args(argv)
    for d in (args.keep_trace, args.py_spy):
        if d is not None:
            d.mkdir(parents=True, exist_ok=True)
    figures: dict[str, dict[str, list[float]]] = {s: {} for s in args.side}
    traces: dict[str, list[dict[str, float]]] = {s: [] for s in args.side}
    print(f"# load before: {os.getloadavg()}", flush=True)
    for rnd in range(args.rounds):
        for side in args.side:

            def record(key: str, value: float, side: str = side) -> None:
                figures[side].setdefault(key, []).append(value)

            trace = one_round(side, args, rnd, record)
            if trace is not None:
                traces[side].append(trace)
                print(f"# {side} round {rnd} trace: {json.dumps(trace)}", flush=True)
            last = {k: round(v[-1], 1) for k, v in figures[side].items()}
            print(f"# {side} round {rnd}: {last}", flush=True)
    print(f"# load after: {os.getloadavg()}")
    for side, values in figures.items():
        for key, samples in values.items():
            print(
                f"{side:>12}  {key:<18} median {statistics.median(samples):>12,.1f}"
                f"  ({min(samples):,.1f}-{max(samples):,.1f}, n={len(samples)})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
