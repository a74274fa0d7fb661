"""Exactly-once under kill -9: a transactional consume-transform-produce application, brokers
SIGKILLed while it runs, and the checker that proves every input is in the read_committed
output exactly once.

Workload (confluent-kafka / librdkafka, threads of the test process):

- a feeder: an idempotent acks=all producer writing ``b"in-<seq:09d>"`` round-robin over the
  partitions of topic ``eos-in`` at `rate` records/s until the chaos is over;
- the application (`EosApp`): a group consumer of ``eos-in`` (read_committed, no auto commit)
  and a transactional producer (``transactional.id=eos-app``). Per transaction it consumes up
  to `batch` records, writes ``b"out|<partition>|<offset>|" + input value`` to the same
  partition of ``eos-out``, sends the consumed positions to the transaction and commits. On an
  error it does what Kafka's documentation prescribes: a retriable error retries the commit; an
  abortable one aborts the transaction; a fatal one (fenced, or a commit whose outcome stays
  unknown) replaces the producer (InitProducerId completes or aborts whatever the old one left
  behind). After an abort or a replacement the consumer rewinds to the group's committed
  offsets (OffsetFetch with require_stable: librdkafka waits out pending transactional offsets).
- the chaos (`Target`): seeded `random.Random(seed)`; before each kill `uniform(min_gap,
  max_gap)` seconds, then (bounded: 5 s) until the app has a transaction open, then SIGKILL
  and restart, then (bounded: PROGRESS_S, else a "stall") until the app commits again;
  the single broker (`SingleBroker`) is killed, or in a
  3-broker ZooKeeper cluster of the broker that is the app's transaction coordinator at that
  moment (`ClusterBrokers`, FindCoordinator key type TRANSACTION), restarted once ZooKeeper has
  dropped its registration.

After the last kill the feeder stops, the app drains to the end of ``eos-in`` (bounded), one
more kill -9 and restart (so the read-back only sees what survived a crash), then:

    inputs          records in ``eos-in`` (read_uncommitted: the feeder is not transactional)
    input_lost      acknowledged feeder records missing from ``eos-in`` (a broker fault)
    output          records in ``eos-out`` as a read_committed consumer sees them
    missing         inputs with no output record                     (must be 0)
    duplicates      inputs with more than one output record          (must be 0)
    foreign         read_committed output records that name no input (must be 0)
    reorders        per partition, output records whose input offsets go backwards (must be 0)
    aborted_seen    records a read_uncommitted consumer sees beyond the committed ones: the
                    aborted work (> 0 shows that the kills really hit open transactions)
    offsets_ok      the group's committed offsets equal the end of ``eos-in``
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent / "cluster"), str(_HERE.parent / "integration")]

from _broker import BrokerProcess  # noqa: E402

IN, OUT, GROUP, TXN_ID = "eos-in", "eos-out", "eos-app", "eos-app"
PARTITIONS = 3
#: librdkafka bounds: long enough to ride out a broker restart, short enough to fail a test.
MESSAGE_TIMEOUT_MS = 60_000
CALL_TIMEOUT_S = 30.0
#: After a restart the app must commit a transaction within this many seconds (else a stall).
PROGRESS_S = 60.0
#: Settings of every librdkafka client here. librdkafka 2.16's re-bootstrap (KIP-1102, on by
#: default) starts as soon as every known broker refuses connections -- at once when the only
#: broker is down -- and decommissions the broker handles; a transactional request in flight
#: then stays attached to a terminating handle and send_offsets_to_transaction() blocks past
#: its timeout, for ever (compat/confluent-kafka/FINDINGS.md). Kafka would meet the same.
#: reconnect.backoff.max.ms: librdkafka's default (10 s) keeps a client away from a broker
#: that is back after 1 s for up to 10 s, longer than a consumer's session.
LIBRDKAFKA: dict[str, Any] = {
    "metadata.recovery.strategy": "none",
    "reconnect.backoff.max.ms": 1000,
    "log_level": 2,
}
#: Settings of the app's transactional producer on top of LIBRDKAFKA. librdkafka 2.16
#: decommissions a broker that a Metadata answer no longer lists (a killed one, as Kafka
#: answers) but keeps it cached as the group coordinator; send_offsets_to_transaction()
#: then waits for that handle to come up, which it never does, and is driven again only by
#: some other broker's state change -- not by its own timeout (librdkafka #5511, #5456;
#: compat/confluent-kafka/FINDINGS.md). With a connection to every broker
#: (enable.sparse.connections=false) and a metadata refresh every second, the restarted
#: broker's new handle connects within about a second of its return, and that state change
#: sends the request to the group coordinator found anew.
TXN_PRODUCER: dict[str, Any] = {
    "enable.sparse.connections": False,
    "topic.metadata.refresh.interval.ms": 1000,
}
#: $WIREBROKER_EOS_DEBUG: librdkafka `debug` contexts for the app's consumer (to stderr).
CONSUMER_DEBUG = os.environ.get("WIREBROKER_EOS_DEBUG")
#: $WIREBROKER_EOS_PRODUCER_DEBUG: librdkafka `debug` contexts for the app's producer.
PRODUCER_DEBUG = os.environ.get("WIREBROKER_EOS_PRODUCER_DEBUG")


@dataclass
class EosReport:
    seed: int
    mode: str = "single"
    kills: int = 0
    kill_targets: list[str] = field(default_factory=list)
    kills_mid_txn: int = 0
    #: restarts after which the app committed nothing within PROGRESS_S (must be 0)
    stalls: int = 0
    restart_s: list[float] = field(default_factory=list)
    fed: int = 0
    fed_acked: int = 0
    inputs: int = 0
    input_lost: int = 0
    output: int = 0
    missing: int = 0
    duplicates: int = 0
    foreign: int = 0
    reorders: int = 0
    aborted_seen: int = 0
    offsets_ok: bool = False
    txns_committed: int = 0
    txns_aborted: int = 0
    commit_retries: int = 0
    producers_replaced: int = 0
    rewinds: int = 0
    drained: bool = False
    duration_s: float = 0.0
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.missing == 0
            and self.duplicates == 0
            and self.foreign == 0
            and self.reorders == 0
            and self.input_lost == 0
            and self.offsets_ok
            and self.drained
            and self.stalls == 0
        )

    def summary(self) -> str:
        worst = max(self.restart_s, default=0.0)
        lines = [
            f"EOS {self.mode} seed={self.seed}: kills={self.kills} ({', '.join(self.kill_targets)})"
            f" restart max {worst:.2f} s, duration {self.duration_s:.1f} s;"
            f" {self.kills_mid_txn} kills while the app had a transaction open;"
            f" {self.stalls} stalls",
            f"  inputs={self.inputs} (fed {self.fed}, acked {self.fed_acked}, lost"
            f" {self.input_lost}) output(read_committed)={self.output} missing={self.missing}"
            f" duplicates={self.duplicates} foreign={self.foreign} reorders={self.reorders}"
            f" offsets_ok={self.offsets_ok} drained={self.drained}",
            f"  txns committed={self.txns_committed} aborted={self.txns_aborted} commit"
            f" retries={self.commit_retries} producers replaced={self.producers_replaced}"
            f" rewinds={self.rewinds} aborted records seen by read_uncommitted="
            f"{self.aborted_seen}",
        ]
        lines += [f"  e.g. {e}" for e in self.examples[:10]]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# targets: what gets killed
# ------------------------------------------------------------------------------------------


class Target(Protocol):
    bootstrap: str

    def kill_and_restart(self, rng: random.Random) -> str:
        """SIGKILL one broker and start it again; a short description of what was killed."""
        ...

    def close(self) -> None: ...


class SingleBroker:
    """One broker subprocess, restarted on its data dir and port after each kill."""

    mode = "single"

    def __init__(self, workdir: Path, overrides: dict[str, str] | None = None) -> None:
        self.proc = BrokerProcess(
            workdir / "data", log_path=workdir / "broker-stderr.log", overrides=overrides
        )
        self.bootstrap = self.proc.start()

    def create_topics(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics(
            [NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in (IN, OUT)],
            request_timeout=CALL_TIMEOUT_S,
        )
        for f in futures.values():
            f.result(timeout=CALL_TIMEOUT_S)

    def kill_and_restart(self, rng: random.Random) -> str:
        self.proc.kill9()
        time.sleep(rng.uniform(0.0, 0.3))
        self.proc.restart(same_port=True)
        return "broker"

    def close(self) -> None:
        self.proc.close()


#: Cluster settings: RF 3 everywhere with min ISR 2, fast failure detection.
CLUSTER_OVERRIDES = {
    "zookeeper.session.timeout.ms": "3000",
    "replica.lag.time.max.ms": "2000",
    "min.insync.replicas": "2",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
}


class ClusterBrokers:
    """Three brokers on a ZooKeeper; each kill hits the app's transaction coordinator."""

    mode = "cluster"

    def __init__(self, workdir: Path, zk_connect: str) -> None:
        from _cluster import ClusterProcesses

        self.cluster = ClusterProcesses(
            zk_connect, workdir, brokers=3, overrides=CLUSTER_OVERRIDES
        ).start()
        self.bootstrap = self.cluster.bootstrap

    def create_topics(self) -> None:
        for topic in (IN, OUT):
            self.cluster.create_topic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})

    def coordinator(self) -> int:
        import _wire

        deadline = time.monotonic() + CALL_TIMEOUT_S
        while True:
            for i in self.cluster.live():
                try:
                    resp = _wire.request(
                        self.cluster.address(i), 10, 3, {"key": TXN_ID, "key_type": 1}
                    )
                except OSError:
                    continue
                if resp.error_code == 0 and resp.node_id in self.cluster.live():
                    return int(resp.node_id)
            assert time.monotonic() < deadline, "no transaction coordinator found"
            time.sleep(0.1)

    def kill_and_restart(self, rng: random.Random) -> str:
        victim = self.coordinator()
        self.cluster.kill9(victim)
        self.cluster.wait_unregistered(victim)
        self.cluster.restart(victim)
        return f"coordinator {victim}"

    def close(self) -> None:
        self.cluster.close()


# ------------------------------------------------------------------------------------------
# workload
# ------------------------------------------------------------------------------------------


def input_value(seq: int) -> bytes:
    return b"in-%09d" % seq


def output_value(partition: int, offset: int, value: bytes) -> bytes:
    return b"out|%d|%d|" % (partition, offset) + value


def parse_output(value: bytes) -> tuple[int, int, bytes]:
    """(input partition, input offset, input value) of an output record."""
    _tag, p, o, rest = value.split(b"|", 3)
    return int(p), int(o), rest


class Feeder(threading.Thread):
    """Idempotent acks=all producer of the input records at `rate` records/s."""

    def __init__(self, bootstrap: str, rate: float) -> None:
        super().__init__(name="eos-feeder", daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer(
            {
                **LIBRDKAFKA,
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": MESSAGE_TIMEOUT_MS,
            }
        )
        self.rate, self.sent = rate, 0
        self.acked: set[bytes] = set()
        self.stop_event = threading.Event()

    def run(self) -> None:
        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                self.acked.add(msg.value())

        start = time.monotonic()
        while not self.stop_event.is_set():
            due = int((time.monotonic() - start) * self.rate)
            while self.sent < due:
                self.producer.produce(
                    IN,
                    value=input_value(self.sent),
                    partition=self.sent % PARTITIONS,
                    on_delivery=on_delivery,
                )
                self.sent += 1
            self.producer.poll(0.01)
        self.producer.flush(MESSAGE_TIMEOUT_MS / 1000 + 10)


class EosApp(threading.Thread):
    """The consume-transform-produce application (see the module doc)."""

    def __init__(self, bootstrap: str, report: EosReport, batch: int = 50) -> None:
        super().__init__(name="eos-app", daemon=True)
        self.bootstrap, self.report, self.batch = bootstrap, report, batch
        #: partition -> next offset to consume, as of the last committed transaction
        self.committed: dict[int, int] = {}
        #: set by the harness once the feeder is done: partition -> end offset of eos-in
        self.target: dict[int, int] | None = None
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.producer: Any = None
        #: True from begin_transaction until the commit or abort returned (read by the harness)
        self.in_txn = False

    # -- clients ------------------------------------------------------------------------
    def _new_producer(self) -> None:
        from confluent_kafka import KafkaException, Producer

        if self.producer is not None:
            self.report.producers_replaced += 1
        deadline = time.monotonic() + 3 * CALL_TIMEOUT_S
        while True:
            self.producer = Producer(
                {
                    **LIBRDKAFKA,
                    **TXN_PRODUCER,
                    "bootstrap.servers": self.bootstrap,
                    "transactional.id": TXN_ID,
                    "transaction.timeout.ms": 20_000,
                    "message.timeout.ms": 20_000,
                    "linger.ms": 5,
                    **({"debug": PRODUCER_DEBUG, "log_level": 7} if PRODUCER_DEBUG else {}),
                }
            )
            try:
                self.producer.init_transactions(CALL_TIMEOUT_S)
                return
            except KafkaException as e:
                if time.monotonic() > deadline:
                    raise
                self.report.examples.append(f"init_transactions: {e.args[0]}")

    def _new_consumer(self) -> Any:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                **LIBRDKAFKA,
                "bootstrap.servers": self.bootstrap,
                "group.id": GROUP,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 30_000,  # outlives a restart and the reconnect
                "heartbeat.interval.ms": 1000,
                "fetch.wait.max.ms": 100,
                **({"debug": CONSUMER_DEBUG, "log_level": 7} if CONSUMER_DEBUG else {}),
            }
        )
        consumer.subscribe([IN])
        return consumer

    def done(self) -> bool:
        target = self.target
        return target is not None and all(
            self.committed.get(p, 0) >= end for p, end in target.items()
        )

    # -- loop -----------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._new_producer()
            consumer = self._new_consumer()
            try:
                while not self.stop_event.is_set() and not self.done():
                    msgs = [
                        m
                        for m in consumer.consume(num_messages=self.batch, timeout=0.2)
                        if m.error() is None
                    ]
                    if msgs:
                        self._process(consumer, msgs)
            finally:
                consumer.close()
        except BaseException as e:  # reported by the harness
            self.error = e

    def _process(self, consumer: Any, msgs: list[Any]) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        positions: dict[int, int] = {}
        try:
            self.producer.begin_transaction()
            self.in_txn = True
            for m in msgs:
                p, o = m.partition(), m.offset()
                self.producer.produce(OUT, value=output_value(p, o, m.value()), partition=p)
                positions[p] = o + 1
            offsets = [TopicPartition(IN, p, o) for p, o in positions.items()]
            self.producer.send_offsets_to_transaction(
                offsets, consumer.consumer_group_metadata(), CALL_TIMEOUT_S
            )
            self._commit()
        except KafkaException as e:
            self._recover(consumer, e.args[0])
            return
        finally:
            self.in_txn = False
        self.report.txns_committed += 1
        self.committed.update(positions)

    def _commit(self) -> None:
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + 3 * CALL_TIMEOUT_S
        while True:
            try:
                self.producer.commit_transaction(CALL_TIMEOUT_S)
                return
            except KafkaException as e:
                err = e.args[0]
                if not err.retriable() or time.monotonic() > deadline:
                    raise
                self.report.commit_retries += 1

    def _recover(self, consumer: Any, err: Any) -> None:
        from confluent_kafka import KafkaException

        self.report.examples.append(f"recover from {err}")
        replace = err.fatal() or not err.txn_requires_abort()
        if not replace:
            try:
                self.producer.abort_transaction(CALL_TIMEOUT_S)
                self.report.txns_aborted += 1
            except KafkaException:
                replace = True
        if replace:
            self.report.txns_aborted += 1  # the new producer's InitProducerId ends it
            self._new_producer()
        self._rewind(consumer)

    def _rewind(self, consumer: Any) -> None:
        """Seek every assigned partition back to the group's committed offset."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaException

        self.report.rewinds += 1
        deadline = time.monotonic() + 3 * CALL_TIMEOUT_S
        while True:
            try:
                assigned = consumer.assignment()
                committed = consumer.committed(assigned, timeout=CALL_TIMEOUT_S)
                break
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
        for tp in committed:
            if tp.offset < 0:
                tp.offset = OFFSET_BEGINNING
            else:
                self.committed[tp.partition] = tp.offset
            consumer.seek(tp)


# ------------------------------------------------------------------------------------------
# checker
# ------------------------------------------------------------------------------------------


def read_all(bootstrap: str, topic: str, isolation: str) -> dict[int, list[tuple[int, bytes]]]:
    """{partition: [(offset, value), ...]} of `topic` up to its end in `isolation`."""
    from _clients import read_to_end

    got = read_to_end(bootstrap, topic, range(PARTITIONS), timeout=120.0, isolation_level=isolation)
    return {p: [(r.offset, r.value) for r in records] for p, records in got.items()}


def committed_offsets(bootstrap: str) -> dict[int, int]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        offsets = admin.list_group_offsets(GROUP)[GROUP]
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == IN}


def check(
    inputs: dict[int, list[tuple[int, bytes]]],
    committed_out: dict[int, list[tuple[int, bytes]]],
    uncommitted_out: dict[int, list[tuple[int, bytes]]],
    acked: set[bytes],
    group_offsets: dict[int, int],
    report: EosReport,
) -> None:
    """Fill the checker's figures of `report` (see the module doc)."""
    by_position = {(p, o): v for p, records in inputs.items() for o, v in records}
    report.inputs = len(by_position)
    present = set(by_position.values())
    report.input_lost = len(acked - present)
    seen: Counter[tuple[int, int]] = Counter()
    for p, records in committed_out.items():
        last = -1
        for _off, value in records:
            report.output += 1
            try:
                ip, io, iv = parse_output(value)
            except ValueError:
                report.foreign += 1
                continue
            if by_position.get((ip, io)) != iv or ip != p:
                report.foreign += 1
                report.examples.append(f"foreign output {value!r}")
                continue
            if io <= last:
                report.reorders += 1
            last = io
            seen[(ip, io)] += 1
    report.missing = sum(1 for key in by_position if seen[key] == 0)
    report.duplicates = sum(1 for n in seen.values() if n > 1)
    for key, n in seen.items():
        if n > 1 and len(report.examples) < 20:
            report.examples.append(f"input {key} is in the output {n} times")
    report.aborted_seen = sum(len(r) for r in uncommitted_out.values()) - report.output
    ends = {p: (records[-1][0] + 1 if records else 0) for p, records in inputs.items()}
    report.offsets_ok = all(group_offsets.get(p, 0) >= ends[p] for p in ends) and all(
        group_offsets.get(p, 0) <= ends[p] for p in ends
    )


def run_eos(
    target: SingleBroker | ClusterBrokers,
    seed: int,
    kills: int,
    *,
    min_gap: float = 1.0,
    max_gap: float = 3.0,
    rate: float = 200.0,
    drain_s: float = 120.0,
    log: Callable[[str], None] = lambda _line: None,
) -> EosReport:
    """Run the workload against `target` with `kills` kill -9s; returns the checked report."""
    rng = random.Random(seed)
    report = EosReport(seed=seed, mode=target.mode)
    t0 = time.monotonic()
    target.create_topics()
    feeder = Feeder(target.bootstrap, rate)
    app = EosApp(target.bootstrap, report)
    feeder.start()
    app.start()
    try:
        for k in range(kills):
            time.sleep(rng.uniform(min_gap, max_gap))
            aim = time.monotonic() + 5.0  # aim at an open transaction (bounded)
            while not app.in_txn and time.monotonic() < aim:
                time.sleep(0.001)
            started = time.monotonic()
            report.kills_mid_txn += app.in_txn
            report.kill_targets.append(target.kill_and_restart(rng))
            report.kills += 1
            report.restart_s.append(time.monotonic() - started)
            # the next kill only once the app works again (a commit after this restart):
            # kills while it is still rejoining would measure the schedule, not the broker
            before, deadline = report.txns_committed, time.monotonic() + PROGRESS_S
            while report.txns_committed == before and time.monotonic() < deadline:
                time.sleep(0.05)
            if report.txns_committed == before:
                report.stalls += 1
                report.examples.append(f"no commit within {PROGRESS_S} s after kill {k + 1}")
            log(
                f"kill {k + 1}/{kills} ({report.kill_targets[-1]}): back in"
                f" {report.restart_s[-1]:.2f} s; {report.txns_committed} txns committed"
            )
            assert app.error is None and app.is_alive(), f"app died: {app.error!r}"
        time.sleep(rng.uniform(min_gap, max_gap))
        feeder.stop_event.set()
        feeder.join(timeout=MESSAGE_TIMEOUT_MS / 1000 + 30)
        report.fed, report.fed_acked = feeder.sent, len(feeder.acked)
        inputs = read_all(target.bootstrap, IN, "read_uncommitted")
        app.target = {p: (r[-1][0] + 1 if r else 0) for p, r in inputs.items()}
        app.join(timeout=drain_s)
        report.drained = app.done()
        app.stop_event.set()
        app.join(timeout=CALL_TIMEOUT_S)
        if app.error is not None:
            report.examples.append(f"app error: {app.error!r}")
        # one more crash: the read-back only sees what survived a kill -9
        report.kill_targets.append(target.kill_and_restart(rng))
        report.kills += 1
        inputs = read_all(target.bootstrap, IN, "read_uncommitted")
        check(
            inputs,
            read_all(target.bootstrap, OUT, "read_committed"),
            read_all(target.bootstrap, OUT, "read_uncommitted"),
            feeder.acked,
            committed_offsets(target.bootstrap),
            report,
        )
    finally:
        feeder.stop_event.set()
        app.stop_event.set()
        report.duration_s = time.monotonic() - t0
    return report
