#!/usr/bin/env python3
"""One consumer of 1,000 partitions, with and without fetch sessions (KIP-227, issue 35):
the broker's CPU and the Fetch response bytes per second.

    .venv/bin/python tools/bench/bench_fetch_sessions.py [--partitions 1000] [--seconds 20]
                                                         [--rate 200] [--rounds 2]
                                                         [--write-docs docs/benchmarks.md]

Each round runs both modes, in alternating order from round to round, each on a fresh broker
(`python -m wirebroker serve --port 0 --data-dir TMP`): "sessions" with the defaults,
"no sessions" with `--override max.incremental.fetch.session.cache.slots=0` (Kafka's own way
to turn them off: no slot, so every INITIAL fetch is answered with session 0 and the client
keeps sending full fetches). One topic of `--partitions` partitions; a confluent-kafka
producer in a thread writes `--rate` records/s (100 B, spread over every partition in turn);
one kafka-python consumer (it keeps a fetch session per broker, as the Java client;
librdkafka 2.x makes none) is assigned every partition from the start. After a 3 s warm-up,
for `--seconds`: the broker's CPU seconds (utime + stime from /proc/PID/stat; the producer's
Produce requests included, the same in both modes), the bytes the consumer read off its
sockets (a Total on kafka-python's `bytes-received` sensor: Fetch answers, and the odd
Metadata), the Fetch answers and the partitions they carried, the records consumed. Reported
per mode: the median over rounds of each rate.

Then, without a client (`--raw-requests N`, 0: skipped): on a fresh broker, the same topic
with one record in every 40th partition, an idle consumer's Fetch of every partition at its
end (v12, max_wait_ms 0) sent N times sessionless (session 0, epoch -1) and N times as the
incremental fetch of a session (nothing named), in alternating chunks of 50 over one
socket: the broker's CPU ms per Fetch and the bytes per answer. This isolates what a session
saves the broker per Fetch from the client's pace (which sets the answers per second above).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- bench_fetch_sessions:start -->", "<!-- bench_fetch_sessions:end -->"
MODES = {"sessions": [], "no sessions": ["max.incremental.fetch.session.cache.slots=0"]}
WARMUP_S = 3.0


class Broker:
    def __init__(self, data: Path, overrides: list[str]) -> None:
        cmd = [sys.executable, "-m", "wirebroker", "serve", "--port", "0", "--data-dir", str(data)]
        for o in overrides:
            cmd += ["--override", o]
        self.proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        self.bootstrap = ""
        for line in self.proc.stdout:
            if line.startswith("wirebroker ready on "):
                self.bootstrap = line.split()[-1]
                break
        assert self.bootstrap, "the broker did not start"
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _produce(bootstrap: str, topic: str, partitions: int, rate: int, stop: threading.Event):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    value = b"x" * 100
    sent = 0
    started = time.monotonic()
    while not stop.is_set():
        due = int((time.monotonic() - started) * rate)
        while sent < due:
            producer.produce(topic, value, partition=sent % partitions)
            sent += 1
        producer.poll(0)
        stop.wait(0.02)
    producer.flush(10)


def run_mode(mode: str, args: argparse.Namespace) -> dict[str, float]:
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
    from kafka.admin import NewTopic
    from kafka.consumer.fetcher import Fetcher
    from kafka.metrics.stats.total import Total

    counts = {"answers": 0, "partitions": 0}
    real = Fetcher._handle_fetch_response

    def counting(self: Any, node_id: Any, offsets: Any, sent: Any, response: Any) -> Any:
        counts["answers"] += 1
        counts["partitions"] += sum(len(t.partitions) for t in response.responses)
        return real(self, node_id, offsets, sent, response)

    with tempfile.TemporaryDirectory(prefix="bench-fsess-") as tmp:
        broker = Broker(Path(tmp), MODES[mode])
        stop = threading.Event()
        producer = None
        consumer = None
        try:
            topic = "fsess-bench"
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
            admin.create_topics([NewTopic(topic, args.partitions, 1)])
            admin.close()
            producer = threading.Thread(
                target=_produce, args=(broker.bootstrap, topic, args.partitions, args.rate, stop)
            )
            producer.start()
            Fetcher._handle_fetch_response = counting  # type: ignore[method-assign]
            consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
            consumer.assign([TopicPartition(topic, p) for p in range(args.partitions)])
            consumer.seek_to_beginning()
            total = consumer._metrics.get_sensor("bytes-received")
            total.add(consumer._metrics.metric_name("bench-bytes-total", "bench"), Total())
            total_metric = consumer._metrics.metrics[
                consumer._metrics.metric_name("bench-bytes-total", "bench")
            ]
            end = time.monotonic() + WARMUP_S
            while time.monotonic() < end:
                consumer.poll(timeout_ms=100)
            before = (time.monotonic(), broker.cpu_s(), total_metric.value(), dict(counts))
            records = 0
            end = time.monotonic() + args.seconds
            while time.monotonic() < end:
                records += sum(len(r) for r in consumer.poll(timeout_ms=100).values())
            wall = time.monotonic() - before[0]
            answers = counts["answers"] - before[3]["answers"]
            parts = counts["partitions"] - before[3]["partitions"]
            cpu_per_s = (broker.cpu_s() - before[1]) / wall
            return {
                "cpu_per_s": cpu_per_s,
                "bytes_per_s": (total_metric.value() - before[2]) / wall,
                "answers_per_s": answers / wall,
                "partitions_per_answer": parts / max(1, answers),
                "records_per_s": records / wall,
                "cpu_ms_per_answer": 1000 * (broker.cpu_s() - before[1]) / max(1, answers),
                "bytes_per_answer": (total_metric.value() - before[2]) / max(1, answers),
            }
        finally:
            Fetcher._handle_fetch_response = real  # type: ignore[method-assign]
            stop.set()
            if consumer is not None:
                consumer.close()
            if producer is not None:
                producer.join()
            broker.close()


def _frame(topic: str, partitions: int, sid: int, epoch: int, cid: int) -> bytes:
    from protocol.codec import encode_request

    parts = [
        {
            "partition": p,
            "current_leader_epoch": -1,
            "fetch_offset": 1 if p % 40 == 0 else 0,
            "last_fetched_epoch": -1,
            "log_start_offset": -1,
            "partition_max_bytes": 1 << 20,
        }
        for p in range(partitions)
    ]
    named = epoch in (0, -1)
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 50 << 20,
        "isolation_level": 0,
        "session_id": sid,
        "session_epoch": epoch,
        "topics": [{"topic": topic, "partitions": parts}] if named else [],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return encode_request(1, 12, cid, "bench-fsess", body)


def _call(sock: Any, frame: bytes) -> bytes:
    sock.sendall(frame)
    size = int.from_bytes(_exact(sock, 4), "big")
    return _exact(sock, size)


def _exact(sock: Any, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def run_raw(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Broker CPU ms and bytes per Fetch: sessionless full fetches against incremental ones."""
    import socket

    from confluent_kafka import Producer
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    from protocol.codec import decode_response

    topic, n = "fsess-raw", args.partitions
    spent = {"full": [0.0, 0, 0], "incremental": [0.0, 0, 0]}
    with tempfile.TemporaryDirectory(prefix="bench-fsess-raw-") as tmp:
        broker = Broker(Path(tmp), [])
        try:
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
            admin.create_topics([NewTopic(topic, n, 1)])
            admin.close()
            producer = Producer({"bootstrap.servers": broker.bootstrap})
            for p in range(0, n, 40):
                producer.produce(topic, b"x" * 100, partition=p)
            producer.flush(30)
            host, port = broker.bootstrap.rsplit(":", 1)
            sock = socket.create_connection((host, int(port)), 30)
            sid = decode_response(1, 12, _call(sock, _frame(topic, n, 0, 0, 1)))[1].session_id
            assert sid != 0, "no session"
            epoch, cid = 1, 2
            for _chunk in range(max(1, args.raw_requests // 50)):
                for kind in ("full", "incremental"):
                    frames = []
                    for _ in range(50):
                        if kind == "full":
                            frames.append(_frame(topic, n, 0, -1, cid))
                        else:
                            frames.append(_frame(topic, n, sid, epoch, cid))
                            epoch += 1
                        cid += 1
                    cpu0 = broker.cpu_s()
                    size = sum(len(_call(sock, f)) for f in frames)
                    slot = spent[kind]
                    slot[0] += broker.cpu_s() - cpu0
                    slot[1] += len(frames)
                    slot[2] += size
            sock.close()
        finally:
            broker.close()
    return {
        k: {"cpu_ms_per_fetch": 1000 * v[0] / v[1], "bytes_per_answer": v[2] / v[1]}
        for k, v in spent.items()
    }


def render(
    args: argparse.Namespace,
    results: dict[str, list[dict[str, float]]],
    raw: dict[str, dict[str, float]] | None,
    load: str,
) -> str:
    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in results[mode])

    rows = [
        ("broker CPU (s per s)", "cpu_per_s", "{:.3f}"),
        ("Fetch response bytes per s (at the consumer)", "bytes_per_s", "{:,.0f}"),
        ("Fetch answers per s", "answers_per_s", "{:.1f}"),
        ("broker CPU ms per Fetch answer", "cpu_ms_per_answer", "{:.2f}"),
        ("bytes per Fetch answer", "bytes_per_answer", "{:,.0f}"),
        ("partitions per answer", "partitions_per_answer", "{:.1f}"),
        ("records consumed per s", "records_per_s", "{:.0f}"),
    ]
    lines = [
        START,
        "## Consumer fetch sessions (`tools/bench/bench_fetch_sessions.py`)",
        "",
        f"Command: `python tools/bench/bench_fetch_sessions.py --partitions {args.partitions} "
        f"--seconds {args.seconds:g} --rate {args.rate} --rounds {args.rounds} "
        f"--raw-requests {args.raw_requests} "
        "--write-docs docs/benchmarks.md`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
        f"Machine: {os.cpu_count()} CPUs, {platform.machine()}, Python "
        f"{platform.python_version()}; {load}  ",
        "",
        "One kafka-python consumer assigned every partition of a "
        f"{args.partitions}-partition topic, {args.rate} records/s produced across them; "
        "medians over the rounds (sessions: the defaults; no sessions: "
        "`max.incremental.fetch.session.cache.slots=0`).",
        "",
        "| | sessions | no sessions | no sessions / sessions |",
        "|---|---|---|---|",
    ]
    for label, key, fmt in rows:
        a, b = med("sessions", key), med("no sessions", key)
        ratio = f"{b / a:.1f}x" if a else "-"
        lines.append(f"| {label} | {fmt.format(a)} | {fmt.format(b)} | {ratio} |")
    if raw is not None:
        full, inc = raw["full"], raw["incremental"]
        lines += [
            "",
            f"Without a client: an idle consumer's Fetch of all {args.partitions} partitions "
            f"(at their ends, max_wait_ms 0), {args.raw_requests} of each kind alternating "
            "in chunks of 50 on one socket:",
            "",
            "| | incremental (session) | full (sessionless) | full / incremental |",
            "|---|---|---|---|",
            f"| broker CPU ms per Fetch | {inc['cpu_ms_per_fetch']:.2f} | "
            f"{full['cpu_ms_per_fetch']:.2f} | "
            f"{full['cpu_ms_per_fetch'] / inc['cpu_ms_per_fetch']:.1f}x |",
            f"| bytes per answer | {inc['bytes_per_answer']:,.0f} | "
            f"{full['bytes_per_answer']:,.0f} | "
            f"{full['bytes_per_answer'] / inc['bytes_per_answer']:.0f}x |",
        ]
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_docs(path: Path, text: str) -> None:
    doc = path.read_text()
    if START in doc:
        doc = doc[: doc.index(START)] + text + doc[doc.index(END) + len(END) + 1 :]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=int, default=200, help="records/s produced")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--raw-requests", type=int, default=200, help="0: no raw part")
    parser.add_argument("--write-docs", type=Path)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO_ROOT))
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for n in range(args.rounds):
        order = list(MODES) if n % 2 == 0 else list(reversed(MODES))
        for mode in order:
            got = run_mode(mode, args)
            print(mode, {k: round(v, 3) for k, v in got.items()}, flush=True)
            results[mode].append(got)
    raw = run_raw(args) if args.raw_requests > 0 else None
    if raw is not None:
        print("raw", raw, flush=True)
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    load = f"load average {load_before} before the run, {load_after} after"
    text = render(args, results, raw, load)
    print(text)
    if args.write_docs:
        write_docs(args.write_docs, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
