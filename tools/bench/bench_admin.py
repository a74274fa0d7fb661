#!/usr/bin/env python3
"""The cost of the admin listener: produce throughput and latency with `/metrics` scraped every
second, against the same broker without the admin listener, in the same run (issue 16).

    .venv/bin/python tools/bench/bench_admin.py [--pairs 5] [--count 1000000]
                                                [--write-docs docs/benchmarks.md]

Each pair runs both variants (their order alternates from pair to pair), each on a fresh broker
(`python -m wirebroker serve --port 0 --data-dir TMP`, plus `--admin-port 0` for the admin
variant): create a topic, then `_load.py produce` (N x 100 B, acks=1: throughput) and
`_load.py latency` (sequential produce+flush, acks=1: p50, p99). In the admin variant a thread
GETs /metrics every second for the whole run (the broker also holds `__consumer_offsets`, 50
partitions, so each scrape walks 51 partitions). Reported: the median of each measure per
variant, the ratio of every pair and the median ratio (admin / none: < 1 is slower for rates,
> 1 is slower for latencies), and the broker's CPU time (user + system, from /proc) for the
whole run, which other load on the machine disturbs far less than wall-clock rates. Also: the
time of one scrape, and of `RequestStats.record` (what every request pays, admin listener or
not) against the time of a whole request.
"""

from __future__ import annotations

import argparse
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
        """user + system CPU time of the broker process so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

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


def one_run(admin: bool, count: int, latency_count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-admin-") as tmp:
        broker = Broker(Path(tmp) / "data", admin)
        scraper = Scraper(broker.admin_url) if admin else None
        try:
            load("create", broker.bootstrap, "--topic", "t", "--partitions", "1")
            if scraper is not None:
                scraper.start()
            produced = load(
                "produce", broker.bootstrap, "--topic", "t", "--count", str(count),
                "--size", "100", "--acks", "1",
            )  # fmt: skip
            lat = load(
                "latency", broker.bootstrap, "--topic", "t", "--count", str(latency_count),
                "--size", "100", "--acks", "1",
            )  # fmt: skip
            cpu = broker.cpu_seconds()
        finally:
            if scraper is not None:
                scraper.stop()
            broker.stop()
    samples = sorted(lat["samples_us"])
    out = {
        "rate": produced["records"] / produced["seconds"],
        "p50_ms": samples[len(samples) // 2] / 1000,
        "p99_ms": samples[int(len(samples) * 0.99)] / 1000,
        "cpu_s": cpu,
    }
    if scraper is not None:
        out["scrapes"] = len(scraper.times)
        out["scrape_ms"] = statistics.median(scraper.times) * 1000
        out["scrape_bytes"] = scraper.size
    return out


def record_cost_us() -> float:
    from wirebroker.handlers.stats import RequestStats

    stats = RequestStats()
    body = {"responses": [], "throttle_time_ms": 0}
    n = 200_000
    t = min(timeit.repeat(lambda: stats.record(0, 9, 0.0003, body), number=n, repeat=5))
    return t / n * 1e6


def render(runs: list[tuple[dict[str, float], dict[str, float]]], args: argparse.Namespace) -> str:
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
        ("broker CPU time, whole run", "s", "cpu_s", "ratio <= 1.05"),
    ]
    lines = [
        START,
        "## Issue 16: the admin listener's cost (`tools/bench/bench_admin.py`)",
        "",
        f"Command: `python tools/bench/bench_admin.py --pairs {args.pairs} --count {args.count} "
        f"--latency-count {args.latency_count} --write-docs docs/benchmarks.md`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
        f"Machine: {os.cpu_count()} CPUs, {platform.machine()}, Python "
        f"{platform.python_version()}; load average after the run {load_avg} (other work "
        "shared the machine)  ",
        f"Pairs: {args.pairs}, each a fresh broker without the admin listener and a fresh broker "
        "with `--admin-port 0` and `/metrics` scraped every second during the whole run, in "
        "alternating order; median over the pairs, ratio = admin / none per pair (all listed) "
        "and their median.",
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
        fmt = "{:,.0f}" if unit == "rec/s" else "{:.3f}" if unit == "ms" else "{:.2f}"
        lines.append(
            f"| {name} | {unit} | {fmt.format(base)} | {fmt.format(admin)} | "
            f"{', '.join(f'{r:.3f}' for r in rs)} | {median_ratio:.3f} | {ok} |"
        )
    p50_us = med(0, "p50_ms") * 1000
    lines += [
        "",
        f"One scrape of /metrics (51 partitions): median {med(1, 'scrape_ms'):.1f} ms, "
        f"{int(med(1, 'scrape_bytes')):,} bytes; {int(med(1, 'scrapes'))} scrapes per run. "
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
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--count", type=int, default=1_000_000, help="records produced per run")
    parser.add_argument("--latency-count", type=int, default=10_000)
    parser.add_argument("--write-docs", type=Path)
    args = parser.parse_args()
    runs = []
    for i in range(args.pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        got = {admin: one_run(admin, args.count, args.latency_count) for admin in order}
        none, admin = got[False], got[True]
        runs.append((none, admin))
        print(
            f"pair {i + 1}: none {none['rate']:,.0f} rec/s p99 {none['p99_ms']:.3f} ms "
            f"CPU {none['cpu_s']:.2f} s | admin {admin['rate']:,.0f} rec/s p99 "
            f"{admin['p99_ms']:.3f} ms CPU {admin['cpu_s']:.2f} s ({admin['scrapes']} scrapes)",
            flush=True,
        )
    section = render(runs, args)
    print(section)
    if args.write_docs:
        write_docs(args.write_docs, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
