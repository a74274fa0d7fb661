#!/usr/bin/env python3
"""Soak: a steady load on one broker for N minutes; broker RSS, errors and produce latency.

    python tools/reliability/soak.py [--minutes 10] [--rate 250] [--update-doc]

Workload (tests/reliability/_chaos.py pieces, no faults): two idempotent acks=all
confluent-kafka producers at `--rate` records/s each over topic `chaos` (3 partitions), a
group-less consumer reading everything from offset 0, and a two-member consumer group that
commits after every batch. Every 5 s the broker's VmRSS is read from /proc/PID/status.

Reported: RSS at the end of each minute (and the growth from the end of minute 1 to the end),
produce latency (send to delivery callback) p50/p99/max per minute, and errors: failed
deliveries, consumer errors, group member errors / failed commits / restarts, tracebacks in
the broker's stderr. With `--update-doc`, rewrites the "Soak" section of docs/reliability.md.
Not a test. Exit status 1 when there were errors or records were not all read.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "reliability"), str(ROOT), str(Path(__file__).parent)]

import _chaos  # noqa: E402
from _broker import BrokerProcess  # noqa: E402
from docsections import update_section  # noqa: E402

PRODUCERS = ("soak-a", "soak-b")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


class Reader(threading.Thread):
    """A group-less consumer reading the topic from offset 0 until stopped."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(name="soak-reader", daemon=True)
        self.bootstrap = bootstrap
        self.stop_event = threading.Event()
        self.records = 0
        self.errors: list[str] = []

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "soak-reader",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            }
        )
        c.assign([TopicPartition(_chaos.TOPIC, p, OFFSET_BEGINNING) for p in range(3)])
        while not self.stop_event.is_set():
            for m in c.consume(500, 0.5):
                if m.error() is not None:
                    self.errors.append(str(m.error()))
                else:
                    self.records += 1
        c.close()


def run(minutes: float, rate: float, workdir: Path) -> dict[str, Any]:
    broker = BrokerProcess(workdir / "data", log_path=workdir / "broker-stderr.log")
    bootstrap = broker.start()
    pid = broker.pid
    assert pid is not None
    _chaos.create_topic(bootstrap)
    conf = {"enable.idempotence": True, "acks": "all"}
    producers = [_chaos.ProducerThread(bootstrap, n, conf, rate) for n in PRODUCERS]
    reader = Reader(bootstrap)
    group = _chaos.Group(bootstrap, workdir)
    t0 = time.monotonic()
    for t in [*producers, reader]:
        t.start()
    rss: list[tuple[float, int]] = [(0.0, rss_kib(pid))]
    end = t0 + minutes * 60
    try:
        while time.monotonic() < end:
            time.sleep(min(5.0, max(0.0, end - time.monotonic())))
            rss.append((time.monotonic() - t0, rss_kib(pid)))
            group.heal()
        for t in producers:
            t.stop_event.set()
        for t in producers:
            t.join(timeout=120)
        sent = sum(t.sent for t in producers)
        acked = sum(len(t.acked) for t in producers)
        deadline = time.monotonic() + 30
        while reader.records < acked and time.monotonic() < deadline:
            time.sleep(0.2)
        reader.stop_event.set()
        reader.join(timeout=10)
        member_errors = len(group.events("error")) + len(group.events("garbage"))
        commit_failed = len(group.events("commit_failed"))
        restarts = group.restarts
        group.close()
    finally:
        for t in producers:
            t.stop_event.set()
        reader.stop_event.set()
        broker.close()
    tracebacks = broker.log_path.read_text(errors="replace").count("Traceback")
    failed: dict[str, int] = {}
    lat_by_min: dict[int, list[float]] = {}
    for t in producers:
        for k, v in t.failed.items():
            failed[k] = failed.get(k, 0) + v
        for at, secs in t.latencies:
            lat_by_min.setdefault(int((at - t0) // 60), []).append(secs * 1000)
    minutes_rows = []
    for m in sorted(lat_by_min):
        if m >= minutes:  # the tail of the flush after the run
            continue
        lats = lat_by_min[m]
        at_end = [kib for s, kib in rss if s <= (m + 1) * 60]
        minutes_rows.append(
            (m + 1, len(lats), pct(lats, 0.5), pct(lats, 0.99), max(lats), at_end[-1])
        )
    return {
        "minutes": minutes,
        "rate": rate,
        "sent": sent,
        "acked": acked,
        "read": reader.records,
        "failed": failed,
        "reader_errors": len(reader.errors),
        "member_errors": member_errors,
        "commit_failed": commit_failed,
        "member_restarts": restarts,
        "tracebacks": tracebacks,
        "rss": rss,
        "rows": minutes_rows,
    }


def doc_body(r: dict[str, Any], cmd: str, note: str) -> str:
    rows = "\n".join(
        f"| {m} | {n} | {p50:.1f} | {p99:.1f} | {mx:.1f} | {kib / 1024:.1f} |"
        for m, n, p50, p99, mx, kib in r["rows"]
    )
    rss = r["rss"]
    first = next((kib for s, kib in rss if s >= 60), rss[-1][1])
    growth = (rss[-1][1] - first) / 1024
    errors = (
        sum(r["failed"].values())
        + r["reader_errors"]
        + r["member_errors"]
        + r["commit_failed"]
        + r["tracebacks"]
    )
    ops = f"{r['sent']} sends, {r['minutes']:g} min"
    return f"""## Soak

Produced by `{cmd}`.{note}
Two idempotent acks=all confluent-kafka producers at {r["rate"]:g} records/s each (3
partitions, ~100-byte records), a group-less consumer reading from offset 0 and a two-member
consumer group committing after every batch, against one broker subprocess; no faults. RSS is
the broker's VmRSS, sampled every 5 s; latency is produce() to delivery callback.

- `errors: {errors} ({ops}; failed deliveries {sum(r["failed"].values())}, consumer errors \
{r["reader_errors"]}, member errors {r["member_errors"]}, failed commits {r["commit_failed"]}, \
member restarts {r["member_restarts"]}, broker tracebacks {r["tracebacks"]})`
- `acknowledged records not read back by the consumer: {max(0, r["acked"] - r["read"])} \
({r["acked"]} acknowledged, {r["read"]} read)`
- `broker RSS growth from the end of minute 1 to the end: {growth:+.1f} MiB \
({first / 1024:.1f} -> {rss[-1][1] / 1024:.1f} MiB, {len(rss)} samples)`

| minute | acks | p50 ms | p99 ms | max ms | RSS MiB at end |
|---|---|---|---|---|---|
{rows}
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=250.0, help="records/s per producer")
    ap.add_argument("--update-doc", action="store_true")
    ap.add_argument("--note", default="", help="a sentence appended to the doc's first line")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="wb-soak-") as tmp:
        r = run(args.minutes, args.rate, Path(tmp))
    cmd = f"python tools/reliability/soak.py --minutes {args.minutes:g} --rate {args.rate:g}"
    body = doc_body(r, cmd, f" {args.note}" if args.note else "")
    print(body)
    if args.update_doc:
        update_section("soak", body)
    bad = sum(r["failed"].values()) + r["reader_errors"] + r["member_errors"] + r["tracebacks"]
    return 1 if bad or r["read"] < r["acked"] else 0


if __name__ == "__main__":
    sys.exit(main())
