#!/usr/bin/env python3
"""The cost of the admin listener: produce throughput and latency with `/metrics` scraped every
second, against the same broker without the admin listener, in the same run (issue 16).

    .venv/bin/python tools/bench/bench_admin.py [--sessions 4] [--pairs 3] [--count 500000]
                                                [--write-docs docs/benchmarks.md]

Two brokers run side by side for the whole session (`python -m wirebroker serve --port 0
--data-dir TMP`; the second with `--admin-port 0`, its /metrics GET every second by a thread
from start to end). Each pair runs the same slice against each broker in turn, the order
alternating from pair to pair: `_load.py produce` (N x 100 B, acks=1: throughput) and
`_load.py latency` (sequential produce+flush, acks=1: p50, p99), and reads the broker's CPU
time (/proc/PID/task/*/schedstat, ns) around each. Short alternating slices on long-lived
brokers expose both to the same background load (this machine is shared), which whole runs
one after the other do not. Reported: the median of each measure per broker, the ratio of
every pair and the median ratio (admin / none: < 1 is slower for rates, > 1 is slower for
latencies and CPU), and the latency percentiles over all the samples of each broker.
Also: the time of one scrape, and of `RequestStats.record` (what every request pays, admin
listener or not) against the time of a whole request.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import timeit
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
LOAD = str(Path(__file__).resolve().parent / "_load.py")
START, END = "<!-- bench_admin:start -->", "<!-- bench_admin:end -->"
sys.path.insert(0, str(REPO_ROOT))


class Broker:
    def __init__(self, data: Path, admin: bool) -> None:
        cmd = [sys.executable, "-m", "wirebroker", "serve", "--port", "0", "--data-dir", str(data)]
        if admin:
            cmd += ["--admin-port", "0"]
        self.proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.admin_url = ""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("wirebroker admin on "):
                self.admin_url = line.split()[-1]
            if line.startswith("wirebroker ready on "):
                self.bootstrap = line.split()[-1]
                return
        raise RuntimeError("broker exited before ready")

    def cpu_seconds(self) -> float:
        """CPU time of all the broker's threads so far (schedstat: nanoseconds, not ticks)."""
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):  # a thread just ended
                total += int((task / "schedstat").read_text().split()[0])
        return total / 1e9

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


class Scraper(threading.Thread):
    """GET /metrics every second until stopped; keeps each scrape's time and size."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url + "metrics"
        self.times: list[float] = []
        self.size = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            t0 = time.perf_counter()
            with urllib.request.urlopen(self.url, timeout=10) as resp:
                self.size = len(resp.read())
            self.times.append(time.perf_counter() - t0)
            self._done.wait(1.0)

    def stop(self) -> None:
        self._done.set()
        self.join()


def load(workload: str, bootstrap: str, *args: str) -> dict[str, Any]:
    cmd = [sys.executable, LOAD, workload, "--bootstrap", bootstrap, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def measure(broker: Broker, workload: str, count: int, topic: str) -> tuple[dict[str, Any], float]:
    """One workload slice against `broker`: its result and the broker CPU seconds it took."""
    cpu0 = broker.cpu_seconds()
    result = load(
        workload, broker.bootstrap, "--topic", topic, "--count", str(count),
        "--size", "100", "--acks", "1",
    )  # fmt: skip
    return result, broker.cpu_seconds() - cpu0


def scrape_cpu_ms(broker: Broker, n: int = 50) -> float:
    """Broker CPU per /metrics scrape: `n` scrapes back to back, nothing else running."""
    cpu0 = broker.cpu_seconds()
    for _ in range(n):
        with urllib.request.urlopen(broker.admin_url + "metrics", timeout=10) as resp:
            resp.read()
    return (broker.cpu_seconds() - cpu0) / n * 1000


class Session:
    """Two fresh brokers side by side (one with the admin listener, scraped every second);
    `pairs` slices alternate between them (module docstring)."""

    def __init__(self, count: int, latency_count: int, scrape: bool, same: bool) -> None:
        self.count, self.latency_count = count, latency_count
        self.scrape, self.same = scrape and not same, same
        self.runs: list[tuple[dict[str, float], dict[str, float]]] = []
        self.pooled: dict[bool, list[float]] = {False: [], True: []}
        self.scrape_times: list[float] = []
        self.scrape_bytes = 0
        self.scrape_cpu_ms = 0.0

    def run(self, pairs: int) -> None:
        with tempfile.TemporaryDirectory(prefix="bench-admin-") as tmp:
            brokers = {
                False: Broker(Path(tmp) / "none", False),
                True: Broker(Path(tmp) / "admin", not self.same),
            }
            scraper = Scraper(brokers[True].admin_url)
            try:
                for broker in brokers.values():
                    load("create", broker.bootstrap, "--topic", "t", "--partitions", "1")
                    load("create", broker.bootstrap, "--topic", "lat", "--partitions", "1")
                    measure(broker, "produce", self.count // 4, "t")  # warm-up, untimed
                if self.scrape:
                    scraper.start()
                for i in range(pairs):
                    order = (False, True) if i % 2 == 0 else (True, False)
                    got = {admin: self._slice(brokers[admin], admin) for admin in order}
                    self.runs.append((got[False], got[True]))
                    print(
                        f"pair: none {got[False]['rate']:,.0f} rec/s p99 "
                        f"{got[False]['p99_ms']:.3f} ms | admin {got[True]['rate']:,.0f} rec/s "
                        f"p99 {got[True]['p99_ms']:.3f} ms",
                        flush=True,
                    )
                if scraper.is_alive():
                    scraper.stop()
                if not self.same:
                    self.scrape_cpu_ms = scrape_cpu_ms(brokers[True])
            finally:
                if scraper.is_alive():
                    scraper.stop()
                for broker in brokers.values():
                    broker.stop()
        self.scrape_times, self.scrape_bytes = scraper.times, scraper.size

    def _slice(self, broker: Broker, admin: bool) -> dict[str, float]:
        produced, cpu = measure(broker, "produce", self.count, "t")
        lat, lat_cpu = measure(broker, "latency", self.latency_count, "lat")
        samples = sorted(lat["samples_us"])
        self.pooled[admin].extend(samples)
        return {
            "rate": produced["records"] / produced["seconds"],
            "cpu_us_per_rec": cpu / self.count * 1e6,
            "p50_ms": samples[len(samples) // 2] / 1000,
            "p99_ms": samples[int(len(samples) * 0.99)] / 1000,
            "cpu_us_per_req": lat_cpu / (self.latency_count + 200) * 1e6,
        }


def run_pairs(
    args: argparse.Namespace,
) -> tuple[list[tuple[dict[str, float], dict[str, float]]], dict[str, float]]:
    """`--sessions` sessions of `--pairs` pairs each: fresh processes per session, so that one
    broker process that happens to be faster than the other (it happens on a shared machine)
    does not decide the result."""
    sessions = []
    for _ in range(args.sessions):
        session = Session(args.count, args.latency_count, not args.no_scrape, args.same)
        session.run(args.pairs)
        sessions.append(session)
    runs = [r for s in sessions for r in s.runs]
    times = [t for s in sessions for t in s.scrape_times]
    out = {
        "scrapes": len(times),
        "scrape_ms": statistics.median(times or [0.0]) * 1000,
        "scrape_bytes": max(s.scrape_bytes for s in sessions),
        "scrape_cpu_ms": statistics.median(s.scrape_cpu_ms for s in sessions),
    }
    for admin, name in ((False, "none"), (True, "admin")):
        everything = sorted(t for s in sessions for t in s.pooled[admin])
        out[f"pooled_p99_{name}"] = everything[int(len(everything) * 0.99)] / 1000
        out[f"pooled_p999_{name}"] = everything[int(len(everything) * 0.999)] / 1000
    return runs, out


def record_cost_us() -> float:
    from wirebroker.handlers.stats import RequestStats

    stats = RequestStats()
    body = {"responses": [], "throttle_time_ms": 0}
    n = 200_000
    t = min(timeit.repeat(lambda: stats.record(0, 9, 0.0003, body), number=n, repeat=5))
    return t / n * 1e6


def render(
    runs: list[tuple[dict[str, float], dict[str, float]]],
    scrapes: dict[str, float],
    args: argparse.Namespace,
) -> str:
    def med(variant: int, key: str) -> float:
        return statistics.median(r[variant][key] for r in runs)

    def ratios(key: str) -> list[float]:
        return [r[1][key] / r[0][key] for r in runs]

    cost = record_cost_us()
    load_avg = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = [
        ("produce 100 B, acks=1", "rec/s", "rate", "ratio >= 0.95"),
        ("produce latency p50", "ms", "p50_ms", ""),
        ("produce latency p99", "ms", "p99_ms", "ratio <= 1.05"),
        ("broker CPU per record produced", "us", "cpu_us_per_rec", "ratio <= 1.05"),
        ("broker CPU per latency request", "us", "cpu_us_per_req", ""),
    ]
    lines = [
        START,
        "## Issue 16: the admin listener's cost (`tools/bench/bench_admin.py`)",
        "",
        f"Command: `python tools/bench/bench_admin.py --sessions {args.sessions} --pairs "
        f"{args.pairs} --count {args.count} "
        f"--latency-count {args.latency_count} --write-docs docs/benchmarks.md`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
        f"Machine: {os.cpu_count()} CPUs, {platform.machine()}, Python "
        f"{platform.python_version()}; load average after the run {load_avg} (other work "
        "shared the machine)  ",
        f"{args.sessions} sessions x {args.pairs} pairs. A session starts two brokers side by "
        "side, one without the admin listener and one with `--admin-port 0` whose `/metrics` a "
        "thread scrapes every second for the whole session; each pair runs the same slice "
        f"(produce {args.count:,} x 100 B, then {args.latency_count:,} sequential produce+flush "
        "for latency) against each broker in turn, the order alternating. Median over all "
        "pairs; ratio = admin / none per pair (all listed) and their median.",
        "",
        "| measure | unit | no admin listener | /metrics every 1 s | ratio per pair | median "
        "ratio | target |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for name, unit, key, target in rows:
        base, admin, rs = med(0, key), med(1, key), ratios(key)
        median_ratio = statistics.median(rs)
        ok = ""
        if target:
            limit = float(target.split()[-1])
            met = median_ratio >= limit if ">=" in target else median_ratio <= limit
            ok = f"{target} {'met' if met else 'NOT met'}"
        fmt = "{:,.0f}" if unit == "rec/s" else "{:.3f}"
        lines.append(
            f"| {name} | {unit} | {fmt.format(base)} | {fmt.format(admin)} | "
            f"{', '.join(f'{r:.3f}' for r in rs)} | {median_ratio:.3f} | {ok} |"
        )
    p50_us = med(0, "p50_ms") * 1000
    pooled = [scrapes[f"pooled_p99_{v}"] for v in ("none", "admin")]
    pooled3 = [scrapes[f"pooled_p999_{v}"] for v in ("none", "admin")]
    lines += [
        f"| produce latency p99, all samples pooled | ms | {pooled[0]:.3f} | {pooled[1]:.3f} "
        f"| | {pooled[1] / pooled[0]:.3f} | |",
        f"| produce latency p99.9, all samples pooled | ms | {pooled3[0]:.3f} | "
        f"{pooled3[1]:.3f} | | {pooled3[1] / pooled3[0]:.3f} | |",
        "",
        f"Direct costs: one scrape of /metrics costs the broker {scrapes['scrape_cpu_ms']:.2f} ms "
        f"of CPU (50 back to back, median of the sessions; {int(scrapes['scrape_bytes']):,} "
        f"bytes; {scrapes['scrape_ms']:.1f} ms HTTP round trip while loaded), i.e. "
        f"{scrapes['scrape_cpu_ms'] / 10:.2f}% of one CPU at one scrape per second. "
        f"`RequestStats.record` (every request pays it, admin listener or not): {cost:.2f} us, "
        f"against ~{p50_us:.0f} us for a produce round trip (p50 above): "
        f"{cost / p50_us * 100:.2f}% of it.",
        END,
    ]
    return "\n".join(lines)


def write_docs(path: Path, section: str) -> None:
    text = path.read_text(encoding="utf-8")
    if START in text:
        pattern = re.escape(START) + ".*?" + re.escape(END)
        text = re.sub(pattern, lambda _: section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=3, help="pairs per session")
    parser.add_argument("--count", type=int, default=500_000, help="records produced per slice")
    parser.add_argument("--latency-count", type=int, default=3_000)
    parser.add_argument(
        "--no-scrape", action="store_true", help="admin listener on, never scraped (a control)"
    )
    parser.add_argument(
        "--same", action="store_true", help="both brokers without the admin listener (A/A)"
    )
    parser.add_argument("--write-docs", type=Path)
    args = parser.parse_args()
    runs, scrapes = run_pairs(args)
    section = render(runs, scrapes, args)
    print(section)
    if args.write_docs:
        write_docs(args.write_docs, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
