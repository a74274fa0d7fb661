#!/usr/bin/env python3
"""Where a replicated produce spends its CPU (a development aid, not a test).

    python tools/bench/_repl_profile.py [--rounds 3] [--size 100] [--count 200000]
                                        [--acks all] [--py-spy DIR] [--override K=V ...]

Starts ZooKeeper and 3 brokers (the brokers' default settings), creates an RF 3 topic with
min.insync.replicas 2, and runs tools/bench/_load.py's `produce` workload --rounds times.
For each round: records/s, and the CPU seconds (user + system, /proc/PID/stat) each broker
spent per 100 MB produced, the leader's and the two followers' apart. CPU per byte is what
a shared 2-CPU machine turns into throughput, and it is much less noisy than a wall clock
when other processes run. With --py-spy DIR, the last round is sampled with py-spy on the
leader and one follower (collapsed stacks, `DIR/leader.txt`, `DIR/follower.txt`; 250 samples
a second, or $SPY_RATE).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parent
REPO_ROOT = BENCH.parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests" / "cluster"))

from _cluster import ClusterProcesses  # noqa: E402
from bench_broker import load  # noqa: E402

from wirebroker.coordination.zk_server import ZooKeeperServer  # noqa: E402


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of `pid` so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def io_counts(pid: int) -> dict[str, int]:
    """/proc/PID/io: syscr / syscw (read and write system calls, sockets included)."""
    with open(f"/proc/{pid}/io", encoding="ascii") as f:
        return {k: int(v) for k, v in (line.split(": ") for line in f)}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--acks", default="all")
    parser.add_argument("--py-spy", type=Path)
    parser.add_argument("--perf", type=Path, help="perf record -g the last round into DIR")
    parser.add_argument("--override", action="append", default=[])
    parser.add_argument("--single", action="store_true", help="one broker, RF 1 (acks as given)")
    args = parser.parse_args()
    if args.single:
        return single(args)
    overrides = dict(item.split("=", 1) for item in args.override)
    work = Path(tempfile.mkdtemp(prefix="repl-profile-"))
    zk = ZooKeeperServer()
    zk.start()
    try:
        cluster = ClusterProcesses(
            zk.connect_string, work, brokers=3, overrides=overrides, base_overrides={}
        )
        try:
            cluster.start()
            topic = "prof"
            cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
            leader = cluster.leader(topic, 0)
            followers = [i for i in range(3) if i != leader]
            pids = {i: cluster.brokers[i].pid for i in range(3)}
            target = SimpleNamespace(bootstrap=cluster.bootstrap, name="cluster")
            for rnd in range(args.rounds):
                spies = []
                if args.py_spy and rnd == args.rounds - 1:
                    args.py_spy.mkdir(parents=True, exist_ok=True)
                    for name, node in (("leader", leader), ("follower", followers[0])):
                        spies.append(
                            subprocess.Popen(
                                [
                                    str(Path(sys.executable).parent / "py-spy"),
                                    "record",
                                    "--pid",
                                    str(pids[node]),
                                    "--format",
                                    "raw",
                                    "--rate",
                                    os.environ.get("SPY_RATE", "250"),
                                    "--nonblocking",
                                    "--gil",
                                    "-o",
                                    str(args.py_spy / f"{name}.txt"),
                                ],
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                            )
                        )
                    time.sleep(1.0)
                if args.perf and rnd == args.rounds - 1:
                    args.perf.mkdir(parents=True, exist_ok=True)
                    for name, node in (("leader", leader), ("follower", followers[0])):
                        spies.append(
                            subprocess.Popen(
                                [
                                    "perf",
                                    "record",
                                    "-e",
                                    "cpu-clock",
                                    "-g",
                                    "-p",
                                    str(pids[node]),
                                    "-o",
                                    str(args.perf / f"{name}.data"),
                                ],
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                            )
                        )
                    time.sleep(0.5)
                before = {i: cpu_seconds(p) for i, p in pids.items()}
                io_before = {i: io_counts(p) for i, p in pids.items()}
                client_before = children_cpu()
                r = load(
                    target,
                    "produce",
                    topic=topic,
                    count=args.count,
                    size=args.size,
                    acks=args.acks,
                )
                after = {i: cpu_seconds(p) for i, p in pids.items()}
                io_after = {i: io_counts(p) for i, p in pids.items()}
                client = children_cpu() - client_before
                for spy in spies:
                    spy.send_signal(2)
                    spy.wait(30)
                mb = r["bytes"] / 1e8
                user = {i: (after[i][0] - before[i][0]) / mb for i in pids}
                sys_ = {i: (after[i][1] - before[i][1]) / mb for i in pids}

                def fmt(i: int, user: dict = user, sys_: dict = sys_) -> str:
                    return f"{user[i] + sys_[i]:.2f} ({user[i]:.2f}u {sys_[i]:.2f}s)"

                fol = " ".join(fmt(f) for f in followers)
                total = sum(user.values()) + sum(sys_.values())
                print(
                    f"round {rnd + 1}: {r['records'] / r['seconds']:,.0f} rec/s "
                    f"{r['bytes'] / r['seconds'] / 1e6:.1f} MB/s; CPU s per 100 MB: "
                    f"leader {fmt(leader)} followers {fol} brokers {total:.2f} "
                    f"client {client / mb:.2f}",
                    flush=True,
                )

                def calls(
                    i: int, key: str, a: dict = io_after, b: dict = io_before, mb: float = mb
                ) -> float:
                    return (a[i][key] - b[i][key]) / mb

                print(
                    "  system calls per 100 MB (reads/writes, sockets included): leader "
                    f"{calls(leader, 'syscr'):,.0f}/{calls(leader, 'syscw'):,.0f} followers "
                    + " ".join(
                        f"{calls(f, 'syscr'):,.0f}/{calls(f, 'syscw'):,.0f}" for f in followers
                    ),
                    flush=True,
                )
        finally:
            cluster.close()
    finally:
        zk.stop()
        if not os.environ.get("REPL_PROFILE_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    return 0


def single(args: argparse.Namespace) -> int:
    from _peers import free_port, start_wirebroker

    work = Path(tempfile.mkdtemp(prefix="repl-profile-"))
    broker = start_wirebroker(work, args.override, port=free_port())
    try:
        target = SimpleNamespace(bootstrap=broker.bootstrap, name="single")
        load(target, "create", topic="prof", replication_factor=1)
        for rnd in range(args.rounds):
            spy = None
            if args.perf and rnd == args.rounds - 1:
                args.perf.mkdir(parents=True, exist_ok=True)
                spy = subprocess.Popen(
                    [
                        "perf",
                        "record",
                        "-e",
                        "cpu-clock",
                        "-g",
                        "-p",
                        str(broker.pid),
                        "-o",
                        str(args.perf / "single.data"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(0.5)
            before = cpu_seconds(broker.pid)
            client_before = children_cpu()
            r = load(
                target, "produce", topic="prof", count=args.count, size=args.size, acks=args.acks
            )
            after = cpu_seconds(broker.pid)
            if spy is not None:
                spy.send_signal(2)
                spy.wait(30)
            client = children_cpu() - client_before
            mb = r["bytes"] / 1e8
            u, s = (after[0] - before[0]) / mb, (after[1] - before[1]) / mb
            print(
                f"round {rnd + 1}: {r['records'] / r['seconds']:,.0f} rec/s "
                f"{r['bytes'] / r['seconds'] / 1e6:.1f} MB/s; CPU s per 100 MB: "
                f"broker {u + s:.2f} ({u:.2f}u {s:.2f}s) client {client / mb:.2f}",
                flush=True,
            )
    finally:
        broker.stop()
        if not os.environ.get("REPL_PROFILE_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
