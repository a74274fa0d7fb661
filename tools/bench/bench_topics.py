#!/usr/bin/env python3
"""Topic creation at scale: a 3-broker cluster over a real ZooKeeper against one broker.

Not a test. Starts its own ZooKeeper (Debian's package, as `wirebroker cluster` does) and
brokers on loopback (the cluster tests' harness, tests/cluster/_cluster.py), stops them at the
end, prints a Markdown table (or JSON with --json).

    python tools/bench/bench_topics.py [--topics 100] [--partitions 2] [--rounds 1] [--json]

Per round, on a fresh 3-broker cluster (replication factor 3) and a fresh single broker
(`wirebroker serve` without ZooKeeper, replication factor 1), in the same run:

  batch        ONE CreateTopics request naming N topics of P partitions (timeout 60 s), sent
               to the controller (where Kafka's AdminClient sends it) / the single broker;
  one-by-one   N CreateTopics requests of one topic each, one after the other, each sent once
               the previous one was answered (what N runs of `kafka-topics.sh --create` or a
               loop of `admin.create_topics([t])` do);

and for each:

  answered     request sent -> the (last) CreateTopics response; every topic must be created
               (error code 0)
  ready        request sent -> every broker's Metadata (v12, all N topics) shows every
               partition with a leader and a full ISR (RF replicas in the ISR); polled every
               20 ms by one socket per broker
  broker CPU   user + system CPU seconds of the brokers (all 3, or the one) over `ready`
               (/proc/PID/stat): steadier than the wall times on a shared machine

The cluster runs with the cluster tests' DEFAULT_OVERRIDES (fast timeouts; none of them touch
topic creation) plus any --override. Ratios are cluster / single broker.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO_ROOT = BENCH.parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests" / "cluster"))  # the cluster test harness
sys.path.insert(0, str(REPO_ROOT / "tests" / "integration"))  # its broker process

import _wire  # noqa: E402
from _broker import BrokerProcess  # noqa: E402
from _cluster import DEFAULT_OVERRIDES, ClusterProcesses  # noqa: E402
from _peers import machine_line  # noqa: E402

from protocol.codec import decode_response, encode_request  # noqa: E402
from wirebroker.coordination.zk_server import ZooKeeperServer  # noqa: E402

READY_TIMEOUT_S = 120.0
POLL_S = 0.02


class Conn:
    """One blocking socket to a broker, requests one at a time."""

    def __init__(self, address: str) -> None:
        self.sock = socket.create_connection(_wire.split_address(address), 30)
        self.cid = 0

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        self.cid += 1
        self.sock.sendall(encode_request(api_key, version, self.cid, "bench-topics", body))
        (size,) = struct.unpack(">i", _wire._recv_exact(self.sock, 4))
        got, resp = decode_response(api_key, version, _wire._recv_exact(self.sock, size))
        assert got == self.cid
        return resp

    def close(self) -> None:
        self.sock.close()


def create_body(names: Sequence[str], partitions: int, rf: int) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": rf,
                "assignments": [],
                "configs": [],
            }
            for name in names
        ],
        "timeout_ms": 60_000,
        "validate_only": False,
    }


def create(conn: Conn, names: Sequence[str], partitions: int, rf: int) -> None:
    resp = conn.request(_wire.CREATE_TOPICS, 5, create_body(names, partitions, rf))
    bad = [(t.name, t.error_code, t.error_message) for t in resp.topics if t.error_code]
    if bad:
        raise RuntimeError(f"CreateTopics failed for {len(bad)} topics, e.g. {bad[:3]}")


def ready(conns: Sequence[Conn], names: Sequence[str], partitions: int, rf: int) -> bool:
    body = {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": False}
    for conn in conns:
        resp = conn.request(_wire.METADATA, 12, body)
        for t in resp.topics:
            if t.error_code or len(t.partitions) < partitions:
                return False
            for p in t.partitions:
                if p.error_code or p.leader_id < 0 or len(p.isr_nodes) < rf:
                    return False
    return True


def wait_ready(conns: Sequence[Conn], names: Sequence[str], partitions: int, rf: int) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready(conns, names, partitions, rf):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(names)} topics not ready after {READY_TIMEOUT_S} s")
        time.sleep(POLL_S)


def cpu_seconds(pids: Sequence[int | None]) -> float:
    """user + system CPU seconds of these processes so far (/proc/PID/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        if pid is None:
            continue
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def measure(
    admin: str,
    brokers: Sequence[str],
    n: int,
    partitions: int,
    rf: int,
    tag: str,
    kinds: Sequence[str] = ("batch", "one-by-one"),
    pids: Sequence[int | None] = (),
) -> dict[str, float]:
    """Both kinds of creation on one running cluster (or broker); seconds (wall, and CPU of
    the brokers `pids` together)."""
    out: dict[str, float] = {}
    conn = Conn(admin)
    conns = [Conn(a) for a in brokers]
    try:
        for kind in kinds:
            names = [f"{tag}-{kind}-{i:05d}" for i in range(n)]
            cpu0 = cpu_seconds(pids)
            t0 = time.perf_counter()
            if kind == "batch":
                create(conn, names, partitions, rf)
            else:
                for name in names:
                    create(conn, [name], partitions, rf)
            out[f"{kind} answered"] = time.perf_counter() - t0
            wait_ready(conns, names, partitions, rf)
            out[f"{kind} ready"] = time.perf_counter() - t0
            out[f"{kind} broker CPU"] = cpu_seconds(pids) - cpu0
    finally:
        for c in [conn, *conns]:
            c.close()
    return out


def cluster_round(
    zk: ZooKeeperServer,
    work: Path,
    n: int,
    partitions: int,
    overrides: dict[str, str],
    py_spy: Path | None = None,
    kinds: Sequence[str] = ("batch", "one-by-one"),
) -> dict[str, float]:
    cluster = ClusterProcesses(zk.connect_string, work / "cluster", brokers=3, overrides=overrides)
    spies: list[subprocess.Popen[bytes]] = []
    try:
        cluster.start()
        brokers = [cluster.address(i) for i in range(3)]
        controller = cluster.controller()
        if py_spy is not None:
            spies = start_spies(py_spy, {i: cluster.brokers[i].pid for i in range(3)}, controller)
        pids = [b.pid for b in cluster.brokers]
        return measure(cluster.address(controller), brokers, n, partitions, 3, "c", kinds, pids)
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
        cluster.close()


def start_spies(
    directory: Path, pids: dict[int, int | None], controller: int
) -> list[subprocess.Popen[bytes]]:
    """py-spy (raw format: `py-spy record --format raw`) on every broker, files named
    `broker-<i>[-controller].txt`; a second for py-spy to attach."""
    directory.mkdir(parents=True, exist_ok=True)
    spies = []
    for node, pid in pids.items():
        name = f"broker-{node}{'-controller' if node == controller else ''}.txt"
        cmd = [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid)]
        cmd += ["--format", "raw", "--rate", "100", "--nonblocking", "-o", str(directory / name)]
        spies.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1.0)
    return spies


def single_round(
    work: Path,
    n: int,
    partitions: int,
    overrides: dict[str, str],
    kinds: Sequence[str] = ("batch", "one-by-one"),
) -> dict[str, float]:
    settings = dict(DEFAULT_OVERRIDES)
    settings.pop("zookeeper.session.timeout.ms", None)
    settings.update(overrides)
    broker = BrokerProcess(work / "single", log_path=work / "single.log", overrides=settings)
    try:
        address = broker.start()
        return measure(address, [address], n, partitions, 1, "s", kinds, [broker.pid])
    finally:
        broker.kill9()
        broker.close()


def render(result: dict[str, Any]) -> str:
    n, p = result["topics"], result["partitions"]
    lines = [
        f"### Topic creation: {n} topics x {p} partitions ({result['date']})",
        "",
        f"`{result['command']}`; {result['machine']}; medians of {result['rounds']} round(s).",
        "",
        "| | 3 brokers, RF 3 | 1 broker, RF 1 | ratio |",
        "|---|---:|---:|---:|",
    ]
    for kind in ("batch", "one-by-one"):
        for what in ("answered", "ready", "broker CPU"):
            key = f"{kind} {what}"
            c, s = result["cluster"][key], result["single"][key]
            lines.append(f"| {key} | {c:.2f} s | {s:.2f} s | {c / s:.1f}x |")
    lines.append("")
    lines.append(
        "batch: one CreateTopics of all topics; one-by-one: one CreateTopics per topic, "
        "sequential. answered: until the (last) response; ready: until every broker's "
        "Metadata shows every partition led with a full ISR; broker CPU: user + system "
        "seconds of all brokers (3 or 1) from the request to ready."
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=100, help="N topics (default 100)")
    parser.add_argument("--partitions", type=int, default=2, help="P per topic (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (fresh brokers each)")
    parser.add_argument("--no-single", action="store_true", help="only the cluster")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="broker config"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument(
        "--py-spy",
        type=Path,
        metavar="DIR",
        help="sample every cluster broker with py-spy during the creations (one round, no "
        "single broker); raw stacks in DIR",
    )
    parser.add_argument(
        "--kinds",
        nargs="+",
        choices=["batch", "one-by-one"],
        default=["batch", "one-by-one"],
        help="which creations (with --py-spy; default both)",
    )
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work dir kept (broker logs)")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.override)
    log = sys.stderr
    runs: dict[str, list[dict[str, float]]] = {"cluster": [], "single": []}
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-topics-"))
    work.mkdir(parents=True, exist_ok=True)
    zk = ZooKeeperServer()
    zk.start()
    try:
        for r in range(args.rounds):
            rdir = work / f"round-{r}"
            rdir.mkdir()
            print(f"round {r + 1}: 3 brokers ...", file=log, flush=True)
            runs["cluster"].append(
                cluster_round(
                    zk, rdir, args.topics, args.partitions, overrides, args.py_spy, args.kinds
                )
            )
            if args.py_spy:
                break
            print(f"  {runs['cluster'][-1]}", file=log, flush=True)
            if not args.no_single and not args.py_spy:
                print(f"round {r + 1}: 1 broker ...", file=log, flush=True)
                runs["single"].append(
                    single_round(rdir, args.topics, args.partitions, overrides, args.kinds)
                )
                print(f"  {runs['single'][-1]}", file=log, flush=True)
    finally:
        zk.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result: dict[str, Any] = {
        "command": "python tools/bench/bench_topics.py " + " ".join(argv or sys.argv[1:]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_line(),
        "topics": args.topics,
        "partitions": args.partitions,
        "rounds": args.rounds,
        "runs": runs,
    }
    for side, samples in runs.items():
        if samples:
            result[side] = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.no_single or args.py_spy or len(args.kinds) < 2:
        print(json.dumps(result["cluster"], indent=2))
    else:
        print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
