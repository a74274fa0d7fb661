#!/usr/bin/env python3
"""The load client of bench_broker.py: one workload per run, in its own process.

    python tools/bench/_load.py WORKLOAD --bootstrap HOST:PORT [options]   -> one JSON line

Uses confluent-kafka (librdkafka); kafka-python saturates long before the brokers do. Runs in a
process of its own so the broker, the client and the driver (which samples the broker's memory)
never share an interpreter. Workloads:

  create      --topic T --partitions N [--replication-factor R] [--config K=V ...]
              CreateTopics (replication 1 unless R); {"seconds"}
  produce     --topic T --count N --size S --acks A
              N records of S random bytes (one payload reused), partition 0, linger.ms 5,
              batch.size 1 MB, no compression, not idempotent; clock from the first produce()
              to the end of flush() (every record acknowledged). {"seconds", "records",
              "bytes", "busiest_thread_cpu"}: the last, the most CPU seconds one of this
              process's threads used in that time (what the client needs of one CPU)
  consume     --topic T --count N [--queue-backoff-ms B]
              assign partition 0 at offset 0 (no group join) and consume until N records
              arrived; clock from assign() to the Nth record. With B, fetch.queue.backoff.ms=B
              (librdkafka's default 1000 ms: once its local queue holds queued.min.messages
              (100,000) records or queued.max.messages.kbytes (64 MiB), the fetcher sleeps that
              long, even when the application empties the queue much sooner).
  latency     --topic T --count N --size S --acks A
              sequential: produce one record, flush, repeat (linger.ms 0); the time of each
              produce()+flush() in microseconds, after 200 untimed warm-up records.
  e2e         --topic T --rate R --seconds D --size S
              a consumer (assigned at the end of the empty topic, fetch.wait.max.ms 500) in
              this process and a producer (linger.ms 0, acks 1, `e2e-producer`) in a child
              process; R records/s for D s, each carrying its send time (CLOCK_MONOTONIC); the
              latency of each record (send -> consumer), microseconds; the first second is
              dropped (warm-up).

A delivery error or a consumer error makes the workload fail (exit status 1, the error on
stderr): a broker that loses data must not look fast.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import time
from typing import Any

from _peers import busiest_thread, thread_cpu_seconds
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient, NewTopic

_BATCH_BYTES = 1_000_000


def _client_config() -> dict[str, Any]:
    """Settings for every client of this process (`BENCH_CLIENT_CONFIG`, a JSON object, e.g.
    security.protocol=SSL and ssl.ca.location: bench_tls.py)."""
    extra: dict[str, Any] = json.loads(os.environ.get("BENCH_CLIENT_CONFIG") or "{}")
    return extra


def _producer(bootstrap: str, acks: str, linger_ms: int) -> tuple[Producer, list[str]]:
    """A producer and the list its failed deliveries and fatal errors are appended to (only
    failures are reported: a callback per record would cost the client, not the broker)."""
    errors: list[str] = []

    def on_error(err: KafkaError) -> None:
        if err.fatal():
            errors.append(str(err))

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "linger.ms": linger_ms,
        "batch.size": _BATCH_BYTES,
        "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_097_151,
        "compression.type": "none",
        "enable.idempotence": False,
        "message.timeout.ms": 120_000,
        "error_cb": on_error,
        "on_delivery": on_delivery,
        "delivery.report.only.error": True,
    }
    conf.update(_client_config())
    return Producer(conf), errors


def create(args: argparse.Namespace) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": args.bootstrap} | _client_config())
    t0 = time.perf_counter()
    configs = dict(item.split("=", 1) for item in args.config)
    topic = NewTopic(args.topic, args.partitions, args.replication_factor, config=configs)
    futures = admin.create_topics([topic], operation_timeout=60, request_timeout=60)
    for fut in futures.values():
        fut.result(timeout=120)
    return {"seconds": time.perf_counter() - t0}


def produce(args: argparse.Namespace) -> dict[str, Any]:
    producer, errors = _producer(args.bootstrap, args.acks, 5)
    producer.list_topics(args.topic, timeout=30)  # connected, metadata known
    value = os.urandom(args.size)
    topic, count = args.topic, args.count
    p = producer.produce
    threads0 = thread_cpu_seconds(os.getpid())
    t0 = time.perf_counter()
    i = 0
    while i < count:
        try:
            p(topic, value, partition=0)
            i += 1
        except BufferError:
            producer.poll(0.005)
    left = producer.flush(300)
    seconds = time.perf_counter() - t0
    busiest = busiest_thread(threads0, thread_cpu_seconds(os.getpid()))
    if left or errors:
        raise SystemExit(f"produce: {left} unflushed, errors {errors[:3]}")
    return {
        "seconds": seconds,
        "records": count,
        "bytes": count * args.size,
        "busiest_thread_cpu": busiest,
    }


def _consumer(bootstrap: str, extra: dict[str, Any] | None = None) -> Consumer:
    # confluent-kafka insists on a group.id even for assign(); librdkafka then looks up the
    # coordinator, so bench_broker.py warms each broker up with a consumer first (wirebroker
    # creates __consumer_offsets on the first FindCoordinator)
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{os.getpid()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    }
    conf.update(extra or {})
    conf.update(_client_config())
    conf.update(json.loads(os.environ.get("BENCH_CONSUMER_CONFIG", "{}")))
    return Consumer(conf)


def consume(args: argparse.Namespace) -> dict[str, Any]:
    extra = {}
    if args.queue_backoff_ms is not None:
        extra["fetch.queue.backoff.ms"] = args.queue_backoff_ms
    consumer = _consumer(args.bootstrap, extra)
    try:
        consumer.list_topics(args.topic, timeout=30)
        got = 0
        nbytes = 0
        t0 = time.perf_counter()
        consumer.assign([TP(args.topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 300
        while got < args.count:
            if time.monotonic() > deadline:
                raise SystemExit(f"consume: {got} of {args.count} records after 300 s")
            # consume(n, t) waits for n records or t: never ask for more than are left
            for msg in consumer.consume(min(10_000, args.count - got), 1.0):
                err = msg.error()
                if err is not None:
                    raise SystemExit(f"consume: {err}")
                got += 1
                nbytes += len(msg.value())
        seconds = time.perf_counter() - t0
    finally:
        consumer.close()
    return {"seconds": seconds, "records": got, "bytes": nbytes}


def latency(args: argparse.Namespace) -> dict[str, Any]:
    producer, errors = _producer(args.bootstrap, args.acks, 0)
    producer.list_topics(args.topic, timeout=30)
    value = os.urandom(args.size)
    samples: list[float] = []
    clock = time.perf_counter_ns
    for i in range(200 + args.count):
        t0 = clock()
        producer.produce(args.topic, value, partition=0)
        producer.flush(30)
        if i >= 200:
            samples.append((clock() - t0) / 1000)
    if errors:
        raise SystemExit(f"latency: errors {errors[:3]}")
    return {"samples_us": samples}


def e2e(args: argparse.Namespace) -> dict[str, Any]:
    """Consumer here; the producer in a child process (`e2e-producer`), so neither waits for the
    other's GIL. Send and receive times are CLOCK_MONOTONIC (time.monotonic_ns), which is the
    same clock in every process of the machine."""
    consumer = _consumer(args.bootstrap, {"fetch.wait.max.ms": 500, "fetch.min.bytes": 1})
    consumer.list_topics(args.topic, timeout=30)
    consumer.assign([TP(args.topic, 0, OFFSET_END)])
    # let the consumer resolve OFFSET_END and park its first long poll
    for _ in range(20):
        consumer.poll(0.05)
    total = int(args.rate * args.seconds)
    cmd = [sys.executable, __file__, "e2e-producer", "--bootstrap", args.bootstrap]
    cmd += ["--topic", args.topic, "--rate", str(args.rate), "--seconds", str(args.seconds)]
    cmd += ["--size", str(args.size)]
    producer = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        text=True,
    )
    clock = time.monotonic_ns
    received: list[tuple[int, int]] = []
    problems: list[str] = []
    deadline = time.monotonic() + args.seconds + 60
    try:
        while len(received) < total and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is None:
                if producer.poll() not in (None, 0):
                    break
                continue
            now = clock()
            if msg.error() is not None:
                problems.append(str(msg.error()))
                continue
            received.append((struct.unpack_from(">q", msg.value())[0], now))
    finally:
        out, _ = producer.communicate(timeout=60)
        consumer.close()
    start = json.loads(out.strip().splitlines()[-1])["start_ns"] if out.strip() else 0
    if problems or producer.returncode or len(received) < total:
        raise SystemExit(f"e2e: received {len(received)} of {total}; {problems[:3]}")
    warm = start + 1_000_000_000
    samples = [(recv - sent) / 1000 for sent, recv in received if sent >= warm]
    return {"samples_us": samples}


def e2e_producer(args: argparse.Namespace) -> dict[str, Any]:
    """`args.rate` records/s for `args.seconds`, each starting with its send time."""
    producer, errors = _producer(args.bootstrap, "1", 0)
    producer.list_topics(args.topic, timeout=30)
    pad = b"." * max(0, args.size - 8)
    interval_ns = int(1e9 / args.rate)
    total = int(args.rate * args.seconds)
    clock = time.monotonic_ns
    start = clock()
    for i in range(total):
        delay = start + i * interval_ns - clock()
        if delay > 0:
            time.sleep(delay / 1e9)
        producer.produce(args.topic, struct.pack(">q", clock()) + pad, partition=0)
        producer.poll(0)
    left = producer.flush(30)
    if left or errors:
        raise SystemExit(f"e2e-producer: {left} unflushed, errors {errors[:3]}")
    return {"start_ns": start}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bench_broker load client")
    parser.add_argument(
        "workload", choices=["create", "produce", "consume", "latency", "e2e", "e2e-producer"]
    )
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--replication-factor", type=int, default=1)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--queue-backoff-ms", type=int, default=None)
    args = parser.parse_args(argv)
    func = {"create": create, "produce": produce, "consume": consume, "latency": latency}
    func["e2e"] = e2e
    func["e2e-producer"] = e2e_producer
    result = func[args.workload](args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
