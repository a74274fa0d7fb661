#!/usr/bin/env python3
"""A replicated cluster against Apache Kafka's: 3 wirebroker brokers (ZooKeeper) and 3 Apache
Kafka 4.4 nodes (KRaft), in the same run.

Not a test. Each round starts one cluster, measures everything below, stops it; then the
other (which goes first alternates). Both run with their defaults as shipped (wirebroker:
`wirebroker serve` defaults, zookeeper.session.timeout.ms 6000, one throwaway ZooKeeper;
Kafka: `_kafka_cluster.py`, broker.session.timeout.ms 9000, -Xmx1G each); every topic has
replication factor 3 and min.insync.replicas 2.

    python tools/bench/bench_cluster.py [--rounds 3] [--kills 5] [--quick] [--write-docs FILE]

  start              spawn -> every broker lists every broker (wirebroker: ZooKeeper already
                     up; Kafka: its log dirs formatted first, untimed)
  produce            `_load.py produce` (confluent-kafka, linger.ms 5, one partition), acks=all,
                     200,000 x 100 B and 20,000 x 10 KiB (--quick a quarter): records/s, MB/s
  latency            `_load.py latency`, sequential 100 B acks=all produce+flush: p50 / p99
  kill -9 failover   --kills times: SIGKILL the leader of a 1-partition topic, then
                     bench_failover's probe (raw 1-record acks=all Produce to the broker last
                     seen leading, the next live one on any error) until one is acknowledged,
                     and its consumer until that record arrives; the victim restarted, the ISR
                     full again before the next (`bench_failover.failover_rounds`)
  SIGTERM failover   the same with SIGTERM (controlled shutdown)
Failover figures pool every stop of every round (p50 / p99 of them); the rest are medians of
the rounds with (min-max). Ratios are wirebroker / Kafka.

Targets (issue 36): produce throughput >= 0.7x Kafka's cluster; failover p99 <= Kafka's.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from _kafka_cluster import KafkaCluster
from _peers import REPO_ROOT, machine_line, write_section
from bench_broker import _loadavg, load, quantile
from bench_failover import ClusterProcesses, failover_rounds

from wirebroker.coordination.zk_server import ZooKeeperServer

START_MARK = "<!-- bench_cluster:start -->"
END_MARK = "<!-- bench_cluster:end -->"
KIB10 = 10 * 1024
TOPIC = "failover"  # the topic bench_failover's prober and consumer use
SIDES = ("wirebroker", "kafka")
TITLES = {"wirebroker": "wirebroker", "kafka": "Apache Kafka"}


class WirebrokerCluster:
    """ZooKeeper + 3 `wirebroker serve` with their defaults (tests/cluster/_cluster.py)."""

    def __init__(self, workdir: Path) -> None:
        self.zk = ZooKeeperServer()
        self.zk.start()
        self.cluster = ClusterProcesses(self.zk.connect_string, workdir, base_overrides={})

    def start(self) -> ClusterProcesses:
        return self.cluster.start(timeout=60)

    def close(self) -> None:
        try:
            self.cluster.close()
        finally:
            self.zk.stop()


def _round(side: str, workdir: Path, args: argparse.Namespace, samples: dict) -> None:
    def record(key: str, value: float) -> None:
        samples.setdefault(key, {}).setdefault(side, []).append(value)

    holder: Any = WirebrokerCluster(workdir) if side == "wirebroker" else KafkaCluster(workdir)
    t0 = time.perf_counter()
    try:
        cluster = holder.start()
        record("start", time.perf_counter() - t0)
        target = SimpleNamespace(bootstrap=cluster.bootstrap, name=side)
        config = {"replication_factor": 3, "config": "min.insync.replicas=2"}
        for size, count, tag in ((100, args.small, "p100"), (KIB10, args.large, "p10k")):
            load(target, "create", topic=tag, **config)
            r = load(target, "produce", topic=tag, count=count, size=size, acks="all")
            record(tag, r["records"] / r["seconds"])
            record(f"{tag}_mb", r["bytes"] / r["seconds"] / 1e6)
        load(target, "create", topic="lat", **config)
        lat = load(target, "latency", topic="lat", count=args.latency, size=100, acks="all")
        record("lat_p50", quantile(lat["samples_us"], 0.5) / 1000)
        record("lat_p99", quantile(lat["samples_us"], 0.99) / 1000)
        load(target, "create", topic=TOPIC, **config)
        cluster.wait_full_isr(TOPIC, 1, timeout=60)
        for how in ("kill9", "sigterm"):
            out = failover_rounds(cluster, args.kills, how, sys.stderr)
            for kind in ("produce", "consume"):
                samples.setdefault(f"{how}_{kind}", {}).setdefault(side, []).extend(out[kind])
    finally:
        holder.close()


MEASURES = [
    ("start", "cluster start (3 brokers)", "s", ""),
    ("p100", "produce 100 B, acks=all, RF 3", "rec/s", ">= 0.7x"),
    ("p100_mb", "... MB/s", "MB/s", ""),
    ("p10k", "produce 10 KiB, acks=all, RF 3", "rec/s", ">= 0.7x"),
    ("p10k_mb", "... MB/s", "MB/s", ""),
    ("lat_p50", "produce latency p50 (100 B, acks=all)", "ms", ""),
    ("lat_p99", "produce latency p99", "ms", ""),
]
FAILOVER = [
    ("kill9_produce", "kill -9 of the leader -> first acks=all produce"),
    ("kill9_consume", "kill -9 of the leader -> that record consumed"),
    ("sigterm_produce", "SIGTERM of the leader -> first acks=all produce"),
    ("sigterm_consume", "SIGTERM of the leader -> that record consumed"),
]


def _fmt(value: float, unit: str) -> str:
    if value != value:
        return "-"
    if unit == "rec/s":
        return f"{value:,.0f}"
    return f"{value:.3f}" if value < 10 else f"{value:,.1f}"


def _cell(values: list[float], unit: str) -> str:
    if not values:
        return "-"
    mid = _fmt(statistics.median(values), unit)
    if len(values) < 2:
        return mid
    return f"{mid} ({_fmt(min(values), unit)}-{_fmt(max(values), unit)})"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if a == a and b == b and b else "-"


def render(samples: dict, meta: dict[str, Any]) -> str:
    lines = [
        "## Replicated cluster against Apache Kafka's",
        "",
        f"Command: `{meta['command']}`  ",
        f"Date: {meta['date']}  ",
        f"Machine: {meta['machine']}; load average {meta.get('load_before', '?')} before the "
        f"run, {meta.get('load_after', '?')} after  ",
        f"Rounds: {meta['rounds']} per cluster, alternating; {meta['kills']} stops of each "
        "kind per round. Medians of the rounds (min-max); failover p50 / p99 of every stop. "
        "Ratio = wirebroker / Kafka.",
        "",
        "| measure | unit | wirebroker | Apache Kafka | ratio | target |",
        "|---|---|---:|---:|---:|---|",
    ]
    for key, label, unit, target in MEASURES:
        wb, kf = samples.get(key, {}).get("wirebroker", []), samples.get(key, {}).get("kafka", [])
        mw = statistics.median(wb) if wb else float("nan")
        mk = statistics.median(kf) if kf else float("nan")
        verdict = ""
        if target and mw == mw and mk == mk:
            ok = mw / mk >= float(target.split()[1].rstrip("x"))
            verdict = f"{target} " + ("met" if ok else "**missed**")
        lines.append(
            f"| {label} | {unit} | {_cell(wb, unit)} | {_cell(kf, unit)} | {_ratio(mw, mk)} "
            f"| {verdict} |"
        )
    for key, label in FAILOVER:
        wb, kf = samples.get(key, {}).get("wirebroker", []), samples.get(key, {}).get("kafka", [])
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            qw, qk = quantile(wb, q), quantile(kf, q)
            verdict = ""
            if name == "p99" and qw == qw and qk == qk:
                verdict = "<= Kafka's " + ("met" if qw <= qk else "**missed**")
            lines.append(
                f"| {label}, {name} (n={len(wb)}/{len(kf)}) | s | {_fmt(qw, 's')} "
                f"| {_fmt(qk, 's')} | {_ratio(qw, qk)} | {verdict} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kills", type=int, default=5, help="stops of each kind per round")
    parser.add_argument("--quick", action="store_true", help="a quarter of the records")
    parser.add_argument("--write-docs", type=Path, help="update this Markdown file's section")
    args = parser.parse_args(argv)
    scale = 4 if args.quick else 1
    args.small, args.large, args.latency = 200_000 // scale, 20_000 // scale, 2_000 // scale
    meta = {
        "command": "python tools/bench/bench_cluster.py " + " ".join(argv or sys.argv[1:]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_line(),
        "rounds": args.rounds,
        "kills": args.kills,
    }
    samples: dict[str, dict[str, list[float]]] = {}
    meta["load_before"] = _loadavg()
    for r in range(args.rounds):
        for side in SIDES if r % 2 == 0 else SIDES[::-1]:
            workdir = Path(tempfile.mkdtemp(prefix=f"bench-cluster-{side}-"))
            try:
                print(f"round {r + 1}: {side}", file=sys.stderr, flush=True)
                _round(side, workdir, args, samples)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
    meta["load_after"] = _loadavg()
    section = render(samples, meta)
    print(section)
    if args.write_docs:
        write_section(args.write_docs, section, START_MARK, END_MARK)
    return 0


assert REPO_ROOT
if __name__ == "__main__":
    sys.exit(main())
