#!/usr/bin/env python3
"""Failover benchmark of a replicated wirebroker cluster (issue 12's figures).

Not a test. Starts its own ZooKeeper (Debian's package, as `wirebroker cluster` does) and
brokers on loopback, stops them at the end, prints a Markdown table (or JSON with --json).

    python tools/bench/bench_failover.py [--kills 20] [--quick] [--json] [--write-docs FILE]
    python tools/bench/bench_failover.py --only throughput [--pairs 3] [--json]  # the produce runs

Measures, in this order:

  cluster start        `python -m wirebroker cluster --brokers 3` as a user runs it: spawn ->
                       its `wirebroker cluster ready:` line (ZooKeeper up, 3 brokers ready,
                       registered, a controller elected); median of --starts runs (default 3),
                       and ZooKeeper's share (the launcher's "ZooKeeper on ... (N s)" line)
  kill -9 failover     ZooKeeper + 3 brokers with the brokers' DEFAULT settings (the session
                       timeout is the brokers' default unless --override sets it; the report
                       says which), a topic with 1 partition, RF 3, min.insync.replicas 2.
                       --kills times: SIGKILL the current leader of partition 0, then
                         produce: a probe sends a 1-record acks=all Produce (raw protocol, no
                           client library, 1 s broker timeout) to the broker it last found
                           leading, trying the next live broker on any error, until one is
                           acknowledged: kill -> that acknowledgement;
                         consume: a confluent-kafka consumer (assign, started once, never
                           restarted) -> the first probe record produced after the kill
                           reaches it;
                       then restart the killed broker on its port and wait for a full ISR.
                       p50 / p99 / max over the kills.
  SIGTERM failover     the same with SIGTERM (controlled shutdown) instead of SIGKILL.
  throughput           acks=all on a RF 3 topic (min.insync.replicas 2) of the 3-broker
                       cluster vs acks=1 on one broker (`wirebroker serve`, no ZooKeeper), for
                       100 B and 10 KiB records: tools/bench/_load.py's `produce` workload
                       (confluent-kafka, linger.ms 5, one partition; 200,000 x 100 B and
                       20,000 x 10 KiB, --quick a quarter of that), records/s and MB/s;
                       next to each pair's single-broker 10 KiB run, the same workload
                       against tools/bench/_python_ceiling.py (a minimal Python acks=all
                       leader pushing to two followers, none of Kafka's replication
                       protocol): the most a Python broker gets here, same minute;
                       for each 10 KiB run the CPU seconds per 100 MB of that side's
                       broker processes (/proc, all threads) and of the load client,
                       and the busiest single thread's (a broker's event loop, or one of
                       the client's): the bound a CPU per thread would set, whose ratio
                       projects the figure to a machine with enough CPUs;
                       and its `latency` workload (sequential produce+flush of 100 B records,
                       2,000, --quick 500): p50 / p99 ms.
                       The single broker runs next to the cluster (idle while the cluster
                       works), and the runs are made in --pairs pairs (default 3): per pair
                       and size, one cluster run and one single-broker run back to back
                       (which goes first alternates), each on a new topic. A ratio is taken
                       within each pair; the report gives the median of the pair ratios and
                       the median rates (JSON: every run). On a shared machine the load of
                       other processes changes within seconds: ratios of runs made seconds
                       apart are much steadier than those of runs made a minute apart.

Targets (issue 12): kill -9 p99 <= session timeout + 1 s; SIGTERM p99 < 1 s; acks=all RF 3
throughput >= 0.5x one broker's acks=1; start < 5 s.

--write-docs FILE replaces the section between the bench_failover markers of FILE.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import queue
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO_ROOT = BENCH.parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests" / "cluster"))  # the cluster test harness

import _pipeline  # noqa: E402
import _python_ceiling  # noqa: E402
import _wire  # noqa: E402
from _cluster import ClusterProcesses, wait_until  # noqa: E402
from _peers import (  # noqa: E402
    busiest_thread,
    cpu_seconds,
    free_port,
    machine_line,
    start_wirebroker,
    thread_cpu_seconds,
    write_section,
)
from bench_broker import load, quantile  # noqa: E402

from wirebroker.coordination.zk_server import ZooKeeperServer  # noqa: E402

START_MARK = "<!-- bench_failover:start -->"
END_MARK = "<!-- bench_failover:end -->"
TOPIC = "failover"
KIB10 = 10 * 1024


# --------------------------------------------------------------------------------------------
# cluster start
# --------------------------------------------------------------------------------------------


def time_cluster_start(overrides: list[str]) -> dict[str, float]:
    """One `wirebroker cluster --brokers 3` run: seconds to its ready line (and ZooKeeper's)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-failover-start-"))
    cmd = [sys.executable, "-m", "wirebroker", "cluster", "--brokers", "3"]
    for item in overrides:
        cmd += ["--override", item]
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(REPO_ROOT))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[tuple[str, str | None]] = queue.Queue()

    def pump(name: str, stream: Any) -> None:
        for line in stream:
            lines.put((name, line))
        lines.put((name, None))

    assert proc.stdout is not None and proc.stderr is not None
    threading.Thread(target=pump, args=("out", proc.stdout), daemon=True).start()
    threading.Thread(target=pump, args=("err", proc.stderr), daemon=True).start()
    ready = zk = float("nan")
    err: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while ready != ready:
            name, line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                raise RuntimeError(f"wirebroker cluster exited early: {''.join(err)[-2000:]}")
            if name == "err":
                err.append(line)
                if line.startswith("wirebroker cluster: ZooKeeper on ") and "(" in line:
                    zk = float(line.rsplit("(", 1)[1].split()[0])
            elif line.startswith("wirebroker cluster ready: "):
                ready = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    return {"ready": ready, "zookeeper": zk}


# --------------------------------------------------------------------------------------------
# failover
# --------------------------------------------------------------------------------------------


class ProbeConsumer:
    """A confluent-kafka consumer of partition 0 in a thread: value -> receive time."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer

        self.seen: dict[bytes, float] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-failover-unused",
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
                "fetch.wait.max.ms": 100,
                "reconnect.backoff.max.ms": 200,
                "topic.metadata.refresh.interval.ms": 1_000,
                "log_level": 2,  # no line per refused reconnect to the stopped broker
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from confluent_kafka import OFFSET_END, TopicPartition

        self.consumer.assign([TopicPartition(TOPIC, 0, OFFSET_END)])
        while not self.stopping.is_set():
            for msg in self.consumer.consume(100, 0.1):
                if msg.error() is None:
                    now = time.monotonic()
                    with self.lock:
                        self.seen.setdefault(msg.value(), now)

    def received(self, value: bytes) -> float | None:
        with self.lock:
            return self.seen.get(value)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(30)
        self.consumer.close()


class Prober:
    """acks=all probes of partition 0 over the raw protocol (see the module doc)."""

    def __init__(self, cluster: ClusterProcesses) -> None:
        self.cluster = cluster
        self.seq = 0
        self.target = cluster.leader(TOPIC, 0)
        #: (sent, answered, broker, error code) of each probe that got an answer (monotonic)
        self.attempts: list[tuple[float, float, int, int]] = []

    def once(self) -> bytes | None:
        """One probe to the current guess; its value when acknowledged, else None (and the
        guess moves to the next live broker)."""
        self.seq += 1
        value = f"probe-{self.seq:09d}".encode()
        try:
            if self.target in self.cluster.live():
                sent = time.monotonic()
                code, _ = _wire.produce(
                    self.cluster.address(self.target), TOPIC, 0, [value], timeout_ms=1000
                )
                self.attempts.append((sent, time.monotonic(), self.target, code))
                if code == 0:
                    return value
        except OSError:
            pass
        live = self.cluster.live()
        later = [i for i in live if i > self.target]
        self.target = (later or live)[0]
        return None

    def until_acked(self, timeout: float = 120.0) -> tuple[bytes, float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.once()
            if value is not None:
                return value, time.monotonic()
            time.sleep(0.005)  # a round over dead or non-leader brokers: pace the retries
        raise RuntimeError(f"no acks=all produce succeeded within {timeout} s")


_LOG_TIME = "%Y-%m-%d %H:%M:%S"


def _log_lines(path: Path, since: float) -> list[tuple[float, str]]:
    """(wall time, line) of the lines of a log written at or after `since` (time.time()).
    Brokers log "YYYY-mm-dd HH:MM:SS,mmm LEVEL name: msg" (local time); ZooKeeper's
    slf4j-simple lines start the same way when started with showDateTime (see _ZK_OPTIONS)."""
    out = []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        stamp = line[:23]
        try:
            t = time.mktime(time.strptime(stamp[:19], _LOG_TIME)) + int(stamp[20:23]) / 1000
        except (ValueError, IndexError):
            continue
        if t >= since - 0.001:
            out.append((t, line))
    return out


def _first(lines: list[tuple[float, str]], *needles: str) -> float | None:
    for t, line in lines:
        if all(n in line for n in needles):
            return t
    return None


#: slf4j-simple with timestamps, so the bench can read when ZooKeeper expired a session.
_ZK_OPTIONS = (
    "-Xms16m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
)

#: The steps of one failover, in order (see Tracer.steps).
STEPS = (
    "expired",  # ZooKeeper's "Expiring session" log line for the victim's session
    "ids_watch",  # the bench's own /brokers/ids watch sees the victim gone
    "controller",  # the controller's log line "<topic>-0: leader N" (state written)
    "state_watch",  # the bench's own watch on the state znode sees the new leader
    "leader_applies",  # the new leader's "leader at epoch" line (make_leader applied)
    "follower_applies",  # the other follower's "following N" line
    "probe_sent",  # the probe that was acknowledged: sent
    "acked",  # the probe's first acknowledged acks=all produce
)


STEP_LABELS = {
    "expired": "ZooKeeper expires the session (its log)",
    "ids_watch": "/brokers/ids watch: the broker gone",
    "controller": "controller writes the new state (its log)",
    "state_watch": "state znode watch: the new leader",
    "leader_applies": "new leader applies it (its log)",
    "follower_applies": "follower follows the new leader (its log)",
    "probe_sent": "the acknowledged probe sent",
    "acked": "first acks=all produce acknowledged",
}


class Tracer:
    """Timestamps of each step of a failover, from the bench's own ZooKeeper watches (kazoo,
    wall clock) and from the log lines of the brokers and of ZooKeeper."""

    def __init__(self, cluster: ClusterProcesses, zk: ZooKeeperServer, log: Any) -> None:
        from kazoo.recipe.watchers import ChildrenWatch, DataWatch

        self.cluster = cluster
        self.zk = zk
        self.log = log
        self.events: list[tuple[float, str, Any]] = []
        self.lock = threading.Lock()
        state = f"/brokers/topics/{TOPIC}/partitions/0/state"

        def on_ids(children: list[str]) -> None:
            with self.lock:
                self.events.append((time.time(), "ids", set(children)))

        def on_state(data: bytes | None, _stat: Any) -> None:
            leader = json.loads(data)["leader"] if data else None
            with self.lock:
                self.events.append((time.time(), "state", leader))

        ChildrenWatch(cluster.zk, "/brokers/ids", on_ids)
        DataWatch(cluster.zk, state, on_state)
        self.rounds: list[dict[str, float]] = []

    def steps(self, victim: int, t0: float, acked: float) -> dict[str, float]:
        """Seconds after the kill (t0, wall) of each of STEPS that was seen."""
        out: dict[str, float] = {}
        with self.lock:
            events = [e for e in self.events if e[0] >= t0]
        for t, kind, value in events:
            if kind == "ids" and str(victim) not in value and "ids_watch" not in out:
                out["ids_watch"] = t - t0
            if kind == "state" and value not in (None, victim) and "state_watch" not in out:
                out["state_watch"] = t - t0
        new_leader = None
        for _t, kind, value in events:
            if kind == "state" and value not in (None, victim):
                new_leader = value
                break
        zk_log = _log_lines(self.zk.members[0].log_path, t0)
        expired = _first(zk_log, "Expiring session", "exceeded")
        if expired is not None:
            out["expired"] = expired - t0
        for i, broker in enumerate(self.cluster.brokers):
            if i == victim:
                continue
            lines = _log_lines(broker.log_path, t0)
            t = _first(lines, "wirebroker.controller", f"{TOPIC}-0: leader ")
            if t is not None:
                out["controller"] = t - t0
            if i == new_leader:
                t = _first(lines, f"{TOPIC}-0: leader at epoch")
                if t is not None:
                    out["leader_applies"] = t - t0
            elif new_leader is not None:
                t = _first(lines, f"{TOPIC}-0: following {new_leader}")
                if t is not None:
                    out["follower_applies"] = t - t0
        out["acked"] = acked - t0
        self.rounds.append(out)
        return out

    @staticmethod
    def line(steps: dict[str, float]) -> str:
        return ", ".join(f"{k} {steps[k]:.3f}" for k in STEPS if k in steps)


def failover_rounds(
    cluster: ClusterProcesses, kills: int, how: str, log: Any, tracer: Tracer | None = None
) -> dict[str, Any]:
    """`kills` rounds of: stop the leader of partition 0 (`how`: kill9 | sigterm), time the
    first acknowledged and the first consumed probe, restart it, wait for a full ISR.
    With a `tracer`, also the time of each failover step (out["steps"]: one dict a round)."""
    prober = Prober(cluster)
    consumer = ProbeConsumer(cluster.bootstrap)
    out: dict[str, Any] = {"produce": [], "consume": [], "steps": []}
    try:
        # the consumer starts at the end: probe until it has received one (it is positioned)
        wait_until(
            lambda: prober.until_acked(30) and consumer.seen,
            60,
            "the consumer's first probe record",
            interval=0.1,
        )
        for k in range(kills):
            victim = cluster.leader(TOPIC, 0)
            prober.target = victim
            value, _ = prober.until_acked(30)
            t0, t0_wall = time.monotonic(), time.time()
            if how == "kill9":
                cluster.kill9(victim)
            else:
                cluster.sigterm(victim)
            value, acked = prober.until_acked()
            got = wait_until(lambda v=value: consumer.received(v), 120, "the probe consumed")
            out["produce"].append(acked - t0)
            out["consume"].append(got - t0)
            if how == "sigterm":
                cluster.wait_exit(victim, 60)
            print(
                f"  {how} #{k + 1}: broker {victim}; produce {acked - t0:.3f} s, "
                f"consume {got - t0:.3f} s",
                file=log,
                flush=True,
            )
            if tracer is not None:
                steps = tracer.steps(victim, t0_wall, t0_wall + (acked - t0))
                sent = prober.attempts[-1][0]
                steps["probe_sent"] = sent - t0
                last = [a for a in prober.attempts if a[0] >= t0][-6:]
                print(
                    "    last probes (sent, answered, broker, code): "
                    + "; ".join(f"{a - t0:.3f} {b - t0:.3f} {n} {c}" for a, b, n, c in last),
                    file=log,
                    flush=True,
                )
                out["steps"].append(steps)
                print(f"    steps (s after the signal): {Tracer.line(steps)}", file=log, flush=True)
            cluster.restart(victim)
            cluster.wait_full_isr(TOPIC, 1, timeout=60)
    finally:
        consumer.close()
    return out


# --------------------------------------------------------------------------------------------
# throughput
# --------------------------------------------------------------------------------------------


def warm_page_cache(directory: Path, mib: int) -> None:
    """Write `mib` MiB into a file in `directory` and delete it: the page cache's next pages
    are then pages just freed by the guest, not pages a VM with free page reporting gave
    back to its host (which the host must fault in again, at several ms per MB). The effect
    lasts some seconds; `--warm-mib` runs it before every produce run, for both sides."""
    path = directory / "warm.tmp"
    block = b"\0" * (1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(mib):
            os.write(fd, block)
    finally:
        os.close(fd)
        path.unlink()


def throughput(
    targets: dict[str, tuple[str, str, int]],
    pairs: int,
    sizes: dict[str, int],
    warm: tuple[Path, int] | None = None,
    pipeline_dir: Path | None = None,
    ceiling: str | None = None,
    pids: dict[str, list[int]] | None = None,
) -> dict[str, Any]:
    """`targets`: name -> (bootstrap, acks, replication factor), "cluster" and "single".
    `pids`: name -> the broker processes of that target; with them every 10 KiB run also
    records the CPU seconds per 100 MB of those brokers (`{name}_cpu10k`, /proc, all threads)
    and of the load client (`{name}_client10k`, the finished child's rusage): on a machine
    whose CPUs both sides fill, the throughput ratio is the ratio of these sums.
    `pairs` rounds; per round and size, each target once, back to back, the first one
    alternating. `warm` (directory, MiB): `warm_page_cache` before every run. With
    `pipeline_dir`, each round also runs tools/bench/_pipeline.py's kernel-only pipeline with
    1 and 3 copies of the 10 KiB run's bytes (the machine's floor, same minute). With
    `ceiling` (the bootstrap of tools/bench/_python_ceiling.py), each round's 10 KiB runs
    include that minimal Python broker (acks=all, RF 3) next to the single broker's run.
    Returns the medians (the keys `render` reads) and every run; `produce_latency` adds the
    latency keys."""
    runs: dict[str, list[float]] = {}
    order = list(targets)
    for pair in range(pairs):
        names = order if pair % 2 == 0 else order[::-1]
        if pipeline_dir is not None:
            total = sizes["large"] * KIB10
            for rf in (1, 3) if pair % 2 == 0 else (3, 1):
                pipe = _pipeline.run(rf, total, pipeline_dir)
                runs.setdefault(f"pipe{rf}_mb", []).append(pipe["mb_s"])
                runs.setdefault(f"pipe{rf}_cpu", []).append(pipe["cpu_per_100mb"])
        for size, count, tag in ((100, sizes["small"], "100"), (KIB10, sizes["large"], "10k")):
            run_names = list(names)
            if tag == "10k" and ceiling is not None:  # next to the single broker's run
                run_names = [*run_names, "ceiling"] if pair % 2 == 0 else ["ceiling", *run_names]
            for name in run_names:
                topic = f"tp-{tag}-{name}-{pair}"
                if name == "ceiling":
                    target = SimpleNamespace(bootstrap=ceiling, name=name)
                    acks = "all"  # no topics to create: it serves any topic name
                else:
                    bootstrap, acks, rf = targets[name]
                    target = SimpleNamespace(bootstrap=bootstrap, name=name)
                    config = {"config": "min.insync.replicas=2"} if rf > 1 else {}
                    load(target, "create", topic=topic, replication_factor=rf, **config)
                if warm is not None:
                    warm_page_cache(*warm)
                procs = (pids or {}).get(name, []) if tag == "10k" else []
                cpu_before = sum(map(cpu_seconds, procs))
                threads_before = [thread_cpu_seconds(pid) for pid in procs]
                client_before = _children_cpu()
                r = load(target, "produce", topic=topic, count=count, size=size, acks=acks)
                if procs:
                    per_100mb = 1e8 / r["bytes"]
                    broker_cpu = sum(map(cpu_seconds, procs)) - cpu_before
                    client_cpu = _children_cpu() - client_before
                    runs.setdefault(f"{name}_cpu{tag}", []).append(broker_cpu * per_100mb)
                    runs.setdefault(f"{name}_client{tag}", []).append(client_cpu * per_100mb)
                    busiest = max(
                        r["busiest_thread_cpu"],
                        *(
                            busiest_thread(before, thread_cpu_seconds(pid))
                            for pid, before in zip(procs, threads_before, strict=True)
                        ),
                    )
                    runs.setdefault(f"{name}_busiest{tag}", []).append(busiest * per_100mb)
                runs.setdefault(f"{name}_p{tag}", []).append(r["records"] / r["seconds"])
                runs.setdefault(f"{name}_p{tag}_mb", []).append(r["bytes"] / r["seconds"] / 1e6)
    results: dict[str, Any] = {k: statistics.median(v) for k, v in runs.items()}
    for tag in ("100", "10k"):
        ratios = [
            c / s for c, s in zip(runs[f"cluster_p{tag}"], runs[f"single_p{tag}"], strict=True)
        ]
        results[f"ratio_p{tag}"] = statistics.median(ratios)
        runs[f"ratio_p{tag}"] = ratios
    if "cluster_busiest10k" in runs:
        # throughput is at most 100 MB per the busiest thread's CPU seconds per 100 MB
        ratios = [
            s / c
            for c, s in zip(runs["cluster_busiest10k"], runs["single_busiest10k"], strict=True)
        ]
        results["ratio_busiest"] = statistics.median(ratios)
        runs["ratio_busiest"] = ratios
    if ceiling is not None:
        ratios = [c / s for c, s in zip(runs["ceiling_p10k"], runs["single_p10k"], strict=True)]
        results["ratio_ceiling"] = statistics.median(ratios)
        runs["ratio_ceiling"] = ratios
    if pipeline_dir is not None:
        ratios = [t / o for t, o in zip(runs["pipe3_mb"], runs["pipe1_mb"], strict=True)]
        results["ratio_pipe"] = statistics.median(ratios)
        runs["ratio_pipe"] = ratios
    results["pairs"] = pairs
    results["runs"] = runs
    return results


def _children_cpu() -> float:
    """User + system CPU seconds of this process's finished (waited-for) children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def produce_latency(
    targets: dict[str, tuple[str, str, int]], sizes: dict[str, int]
) -> dict[str, float]:
    """p50 / p99 ms of `_load.py`'s sequential `latency` workload on each target (run with
    nothing else started by the bench: the ceiling is stopped by then)."""
    results: dict[str, float] = {}
    for name, (bootstrap, acks, rf) in targets.items():
        target = SimpleNamespace(bootstrap=bootstrap, name=name)
        config = {"config": "min.insync.replicas=2"} if rf > 1 else {}
        topic = f"lat-{name}"
        load(target, "create", topic=topic, replication_factor=rf, **config)
        lat = load(target, "latency", topic=topic, count=sizes["latency"], size=100, acks=acks)
        results[f"{name}_lat_p50"] = quantile(lat["samples_us"], 0.5) / 1000
        results[f"{name}_lat_p99"] = quantile(lat["samples_us"], 0.99) / 1000
    return results


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def _stats(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan"), "n": 0}
    return {
        "p50": quantile(samples, 0.5),
        "p99": quantile(samples, 0.99),
        "max": max(samples),
        "n": len(samples),
    }


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def render(r: dict[str, Any]) -> str:
    st = r["session_timeout_s"]
    lines = [
        "## Replicated cluster: failover, start-up, replication cost",
        "",
        f"Command: `{r['command']}`  ",
        f"Date: {r['date']}  ",
        f"Machine: {r['machine']}  ",
        f"Brokers: 3 + ZooKeeper on loopback; ZooKeeper session timeout {st:g} s "
        f"({r['session_source']}); {r['kills']} stops of the leader of a 1-partition topic "
        "(RF 3, min.insync.replicas 2) per kind",
    ]
    stops: list[str] = []
    for how, label in (("kill9", "kill -9"), ("sigterm", "SIGTERM (controlled shutdown)")):
        for what in ("produce", "consume"):
            s = r[f"{how}_{what}"]
            if not s["n"]:
                continue  # not measured (--only throughput, --no-sigterm)
            target = ""
            if what == "produce":
                limit = st + 1 if how == "kill9" else 1.0
                target = f"<= {limit:g} s " + _verdict(s["p99"] <= limit)
            first = "acks=all produce" if what == "produce" else "record consumed"
            stops.append(
                f"| {label}: signal -> first {first} (s) | {s['p50']:.3f} | {s['p99']:.3f} "
                f"| {s['max']:.3f} | {target} |"
            )
    if stops:
        lines += ["", "| measure | p50 | p99 | max | target |", "|---|---:|---:|---:|---|", *stops]
    for how, label in (("kill9", "kill -9"), ("sigterm", "SIGTERM")):
        steps = r.get(f"{how}_steps")
        if not steps or not any(s["n"] for s in steps.values()):
            continue
        lines += [
            "",
            f"| {label}: step, seconds after the signal | p50 | p99 | max | n |",
            "|---|---:|---:|---:|---:|",
        ]
        for step in STEPS:
            s = steps[step]
            if s["n"]:
                lines.append(
                    f"| {STEP_LABELS[step]} | {s['p50']:.3f} | {s['p99']:.3f} | {s['max']:.3f} "
                    f"| {s['n']} |"
                )
    start = r["start"]
    if start["n"]:  # not measured with --only throughput
        lines += [
            "",
            "| measure | value | target |",
            "|---|---:|---|",
            f"| `wirebroker cluster --brokers 3`: spawn -> ready line (median of {start['n']}) "
            f"| {start['ready']:.2f} s | < 5 s {_verdict(start['ready'] < 5)} |",
            f"| ... of which ZooKeeper up | {start['zookeeper']:.2f} s | |",
        ]
    t = r["throughput"]
    if t:
        lines += [
            "",
            f"| produce (confluent-kafka, 1 partition; medians of {t.get('pairs', 1)} "
            "same-run pairs) | 3 brokers RF 3 acks=all | 1 broker acks=1 | ratio | target |",
            "|---|---:|---:|---:|---|",
        ]
        for tag, label in (
            ("100", f"{r['sizes']['small']:,} x 100 B"),
            ("10k", f"{r['sizes']['large']:,} x 10 KiB"),
        ):
            c, s1 = t[f"cluster_p{tag}"], t[f"single_p{tag}"]
            ratio = t.get(f"ratio_p{tag}", c / s1)
            lines.append(
                f"| {label}, records/s | {c:,.0f} ({t[f'cluster_p{tag}_mb']:.1f} MB/s) | "
                f"{s1:,.0f} ({t[f'single_p{tag}_mb']:.1f} MB/s) | {ratio:.2f} | "
                f">= 0.5x {_verdict(ratio >= 0.5)} |"
            )
        if "pipe1_mb" in t:
            lines.append(
                f"| the machine's floor: {r['sizes']['large'] * KIB10 / 1e6:.0f} MB through a "
                "kernel-only pipeline (tools/bench/_pipeline.py: 1 MiB writes, sendfile to the "
                f"followers, no protocol), MB/s | {t['pipe3_mb']:.0f} (3 copies) | "
                f"{t['pipe1_mb']:.0f} (1 copy) | {t['ratio_pipe']:.2f} | |"
            )
        if "ceiling_p10k" in t:
            lines.append(
                "| the most a Python broker gets here: tools/bench/_python_ceiling.py (acks=all, "
                "3 copies pushed by sendfile, CRCs checked; no Kafka Fetch, high watermark or "
                "index work), 10 KiB, MB/s | "
                f"{t['ceiling_p10k_mb']:.0f} (minimal RF 3) | {t['single_p10k_mb']:.0f} | "
                f"{t['ratio_ceiling']:.2f} | |"
            )
        if "cluster_cpu10k" in t:
            lines.append(
                "| CPU seconds per 100 MB in the 10 KiB runs (/proc, all threads): the brokers "
                "(+ the client) | "
                f"{t['cluster_cpu10k']:.2f} (+ {t['cluster_client10k']:.2f}) | "
                f"{t['single_cpu10k']:.2f} (+ {t['single_client10k']:.2f}) | | |"
            )
        if "cluster_busiest10k" in t:
            lines.append(
                "| ... the busiest thread's (a broker's event loop or the client's): with a CPU "
                "per thread, 100 MB could take no less; the ratio of these bounds: the 10 KiB "
                "ratio projected to a machine with a CPU per thread | "
                f"{t['cluster_busiest10k']:.2f} | {t['single_busiest10k']:.2f} | "
                f"{t['ratio_busiest']:.2f} | |"
            )
        lines += [
            f"| produce latency p50 (100 B, sequential) | {t['cluster_lat_p50']:.2f} ms | "
            f"{t['single_lat_p50']:.2f} ms | | |",
            f"| produce latency p99 | {t['cluster_lat_p99']:.2f} ms | "
            f"{t['single_lat_p99']:.2f} ms | | |",
        ]
    lines += [
        "",
        "Produce unavailability: a raw acks=all probe (1 record) to the broker last found "
        "leading, moving to the next live broker on any error; from the signal to the first "
        "acknowledgement. Consume: a confluent-kafka consumer assigned to the partition (never "
        "restarted), from the signal to the arrival of the first probe record produced after "
        "it. After each stop the broker is restarted and the ISR is full again before the next.",
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def _session_timeout(overrides: dict[str, str]) -> tuple[float, str]:
    key = "zookeeper.session.timeout.ms"
    if key in overrides:
        return int(overrides[key]) / 1000, "--override"
    from wirebroker.config import BROKER_CONFIGS

    d = BROKER_CONFIGS.get(key)
    if d is None or d.default is None:
        return float("nan"), "the brokers' default (unknown to wirebroker.config)"
    return int(str(d.default)) / 1000, "the brokers' default"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="stops per kind (default 20)")
    parser.add_argument("--starts", type=int, default=3, help="cluster start runs (default 3)")
    parser.add_argument("--quick", action="store_true", help="5 kills, smaller loads")
    parser.add_argument("--no-throughput", action="store_true", help="skip the produce runs")
    parser.add_argument("--no-sigterm", action="store_true", help="skip the SIGTERM rounds")
    parser.add_argument(
        "--only",
        choices=["throughput"],
        help="throughput: only the produce runs (no start timing, no stops)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="broker config for every broker (repeatable)",
    )
    parser.add_argument(
        "--pairs", type=int, default=3, help="throughput: same-run pairs per size (default 3)"
    )
    parser.add_argument(
        "--warm-mib",
        type=int,
        default=0,
        help="throughput: write and delete this many MiB before every produce run (see "
        "warm_page_cache; 0: off)",
    )
    parser.add_argument(
        "--keep", type=Path, help="work in this directory and keep it (broker and ZK logs)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--write-docs", type=Path, help="update this Markdown file's section")
    args = parser.parse_args(argv)
    kills = 5 if args.quick and args.kills == 20 else args.kills
    sizes = {"small": 200_000, "large": 20_000, "latency": 2_000}
    if args.quick:
        sizes = {"small": 50_000, "large": 5_000, "latency": 500}
    overrides = dict(item.split("=", 1) for item in args.override)
    session, source = _session_timeout(overrides)
    log = sys.stderr
    result: dict[str, Any] = {
        "command": "python tools/bench/bench_failover.py " + " ".join(argv or sys.argv[1:]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_line(),
        "kills": kills,
        "session_timeout_s": session,
        "session_source": source,
        "sizes": sizes,
    }

    only_throughput = args.only == "throughput"
    if only_throughput:
        args.no_throughput = False
        kills = result["kills"] = 0
    starts = []
    if not only_throughput:
        print("cluster start ...", file=log, flush=True)
        starts = [time_cluster_start(args.override) for _ in range(args.starts)]
    result["start"] = {
        "ready": statistics.median(s["ready"] for s in starts) if starts else float("nan"),
        "zookeeper": statistics.median(s["zookeeper"] for s in starts) if starts else float("nan"),
        "n": len(starts),
        "runs": starts,
    }

    work = Path(tempfile.mkdtemp(prefix="bench-failover-", dir=args.keep))
    zk = ZooKeeperServer(java_options=_ZK_OPTIONS)
    zk.start()
    try:
        if args.keep is not None:
            # ZooKeeper's directory goes at stop(): keep its log with the brokers'
            atexit_copy = zk.members[0].log_path
        cluster = ClusterProcesses(
            zk.connect_string, work, brokers=3, overrides=overrides, base_overrides={}
        )
        try:
            cluster.start()
            cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
            tracer = Tracer(cluster, zk, log)
            for how in ("kill9", "sigterm"):
                if only_throughput or (how == "sigterm" and args.no_sigterm):
                    result[f"{how}_produce"] = result[f"{how}_consume"] = _stats([])
                    continue
                print(f"{how} x {kills} ...", file=log, flush=True)
                rounds = failover_rounds(cluster, kills, how, log, tracer)
                result[f"{how}_produce"] = _stats(rounds["produce"])
                result[f"{how}_consume"] = _stats(rounds["consume"])
                result[f"{how}_steps"] = {
                    step: _stats([r[step] for r in rounds["steps"] if step in r]) for step in STEPS
                }
                result[f"{how}_samples"] = rounds
            result["throughput"] = {}
            if not args.no_throughput:
                print(
                    f"throughput: 3 brokers RF 3 acks=all vs 1 broker acks=1, {args.pairs} pairs",
                    file=log,
                    flush=True,
                )
                single_dir = work / "single"
                single_dir.mkdir()
                broker = start_wirebroker(single_dir, [], port=free_port())
                try:
                    targets = {
                        "cluster": (cluster.bootstrap, "all", 3),
                        "single": (broker.bootstrap, "1", 1),
                    }
                    warm = (work, args.warm_mib) if args.warm_mib else None
                    pipe_dir = work / "pipeline"
                    pipe_dir.mkdir()
                    ceiling_dir = work / "ceiling"
                    ceiling_dir.mkdir()
                    ceiling = _python_ceiling.CeilingProcess(ceiling_dir)
                    try:
                        pids = {
                            "cluster": [b.pid for b in cluster.brokers if b.pid is not None],
                            "single": [broker.pid],
                        }
                        result["throughput"] = throughput(
                            targets, args.pairs, sizes, warm, pipe_dir, ceiling.bootstrap, pids
                        )
                    finally:
                        ceiling.stop()
                    result["throughput"].update(produce_latency(targets, sizes))
                    result["throughput"]["warm_mib"] = args.warm_mib
                finally:
                    broker.stop()
        finally:
            cluster.close()
    finally:
        if args.keep is not None:
            shutil.copy(atexit_copy, work / "zookeeper.log")
        zk.stop()
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(render(result))
    if args.write_docs:
        write_section(args.write_docs, render(result), START_MARK, END_MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
