"""Client quota accuracy: how close a throttled client's rate stays to its quota (issue 34's
"a producer above its byte rate is throttled to within 10% of it over 30 s"), on wirebroker
and, in the same run, on Apache Kafka 4.4 (`--no-kafka` to skip it).

Not a test, not part of the broker. Each round starts each broker fresh (alternating,
wirebroker first), creates a one-partition topic, sets two quotas with AlterClientQuotas
(client id `bench-qp`: producer_byte_rate; client id `bench-qc`: consumer_byte_rate; both
`--quota` bytes/s) and runs, with confluent-kafka (librdkafka) in this process:

    produce   as fast as the client can, `--seconds` long, 1,000-byte records (linger.ms 5,
              a 256 KiB queue so that the client cannot run far ahead of its acks); the rate
              is the acknowledged record bytes over the whole run and over its part after
              `--warmup` seconds (the first quota window lets a burst through, as Kafka's
              does)
    consume   an unthrottled producer first writes 1.5 x quota x seconds; then a consumer
              reads from offset 0 for `--seconds` (fetch.max.bytes 1 MiB,
              max.partition.fetch.bytes 256 KiB); its rate the same way

Both brokers run with their default quota windows (Kafka's quota.window.num 11 x
quota.window.size.seconds 1). Rates count record values only: the batches' own bytes, which
the broker counts too, make a client's value rate slightly lower than its quota. Ratios are
rate / quota; the median of the rounds is printed with the range.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _kafka_peer import kafka_peer_line, start_kafka
from _peers import machine_line, start_wirebroker
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat.scenarios.wire import Wire
from protocol.api import ApiKey

TOPIC = "bench-quota"
RECORD = 1000
PRODUCER_ID, CONSUMER_ID = "bench-qp", "bench-qc"


def set_quotas(bootstrap: str, quota: int) -> None:
    entries = [
        (PRODUCER_ID, "producer_byte_rate"),
        (CONSUMER_ID, "consumer_byte_rate"),
    ]
    body = {
        "entries": [
            {
                "entity": [{"entity_type": "client-id", "entity_name": client}],
                "ops": [{"key": key, "value": float(quota), "remove": False}],
            }
            for client, key in entries
        ],
        "validate_only": False,
    }
    with Wire(bootstrap) as wire:
        answer = wire.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, body)
    errors = [(e.error_code, e.error_message) for e in answer.entries if e.error_code]
    if errors:
        raise RuntimeError(f"AlterClientQuotas: {errors}")


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(TOPIC, 1, 1)], request_timeout=30)
    futures[TOPIC].result(timeout=60)


def rates(events: list[tuple[float, int]], seconds: float, warmup: float) -> tuple[float, float]:
    """(bytes/s over the run, bytes/s after `warmup`) of (time since start, bytes) events."""
    total = sum(n for t, n in events if t <= seconds)
    late = sum(n for t, n in events if warmup < t <= seconds)
    return total / seconds, late / (seconds - warmup)


def produce(bootstrap: str, seconds: float, warmup: float) -> dict[str, float]:
    acked: list[tuple[float, int]] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": PRODUCER_ID,
            "linger.ms": 5,
            "queue.buffering.max.kbytes": 256,
        }
    )
    start = time.monotonic()

    def delivered(err: object, msg: Any) -> None:
        if err is None:
            acked.append((time.monotonic() - start, len(msg.value())))

    value = b"p" * RECORD
    while time.monotonic() - start < seconds:
        try:
            producer.produce(TOPIC, value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(60)
    whole, late = rates(acked, seconds, warmup)
    return {"rate": whole, "late": late}


def fill(bootstrap: str, total: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = b"c" * RECORD
    for _ in range(total // RECORD + 1):
        while True:
            try:
                producer.produce(TOPIC, value)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("fill: records left unacknowledged")


def consume(bootstrap: str, seconds: float, warmup: float) -> dict[str, float]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": CONSUMER_ID,
            "group.id": "bench-quota",
            "enable.auto.commit": False,
            "fetch.max.bytes": 1 << 20,
            "max.partition.fetch.bytes": 256 << 10,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got: list[tuple[float, int]] = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        for msg in consumer.consume(1000, 0.2):
            if msg.error() is None:
                got.append((time.monotonic() - start, len(msg.value() or b"")))
    consumer.close()
    whole, late = rates(got, seconds, warmup)
    return {"rate": whole, "late": late}


def one_broker(
    start: Callable[[Path], Any], workdir: Path, args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    broker = start(workdir)
    try:
        create_topic(broker.bootstrap)
        set_quotas(broker.bootstrap, args.quota)
        out = {"produce": produce(broker.bootstrap, args.seconds, args.warmup)}
        fill(broker.bootstrap, int(1.5 * args.quota * args.seconds))
        out["consume"] = consume(broker.bootstrap, args.seconds, args.warmup)
        return out
    finally:
        broker.stop()


def _starters(args: argparse.Namespace) -> dict[str, Callable[[Path], Any]]:
    """How each broker is started: with `--window-num`, both with that quota.window.num."""
    settings = {} if args.window_num is None else {"quota.window.num": str(args.window_num)}
    out: dict[str, Callable[[Path], Any]] = {
        "wirebroker": lambda w: start_wirebroker(w, [f"{k}={v}" for k, v in settings.items()])
    }
    if args.kafka:
        out["Apache Kafka"] = lambda w: start_kafka(w, settings or None)
    return out


def render(results: dict[str, list[dict[str, dict[str, float]]]], args: argparse.Namespace) -> str:
    window = "" if args.window_num is None else f" --window-num {args.window_num}"
    lines = [
        f"`python tools/bench/bench_quotas.py --rounds {args.rounds} --seconds {args.seconds:g}"
        f" --quota {args.quota}{window}{'' if args.kafka else ' --no-kafka'}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
        f"Machine: {machine_line()}  ",
    ]
    if args.kafka:
        lines.append(f"Peer: {kafka_peer_line()}  ")
    lines += [
        "",
        f"| broker | client | rate / quota over {args.seconds:g} s | after the first "
        f"{args.warmup:g} s | rounds |",
        "|---|---|---:|---:|---:|",
    ]
    for name, rounds in results.items():
        for workload, quota_kind in (("produce", "producer"), ("consume", "consumer")):
            whole = [r[workload]["rate"] / args.quota for r in rounds]
            late = [r[workload]["late"] / args.quota for r in rounds]
            lines.append(
                f"| {name} | {quota_kind}_byte_rate {args.quota:,} B/s | {_median(whole)} | "
                f"{_median(late)} | {len(rounds)} |"
            )
    return "\n".join(lines)


def _median(values: list[float]) -> str:
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:.3f}"
    return f"{mid:.3f} ({min(values):.3f}-{max(values):.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--quota", type=int, default=1 << 20, help="bytes/s (default 1 MiB)")
    parser.add_argument("--no-kafka", dest="kafka", action="store_false")
    parser.add_argument(
        "--window-num", type=int, help="quota.window.num of both brokers (default: theirs, 11)"
    )
    args = parser.parse_args(argv)
    brokers = _starters(args)
    results: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in brokers}
    with tempfile.TemporaryDirectory(prefix="bench-quotas-") as tmp:
        for r in range(args.rounds):
            for name, start in brokers.items():
                out = one_broker(start, Path(tmp) / f"{name.split()[-1].lower()}-{r}", args)
                results[name].append(out)
                print(f"round {r + 1} {name}: {out}", file=sys.stderr, flush=True)
    print(render(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
