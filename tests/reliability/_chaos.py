"""kill -9 chaos: a workload against a broker subprocess that is SIGKILLed at random moments,
and the checker that proves no acknowledged record or commit was lost.

Workload (all against one `BrokerProcess`, restarted on the same data dir and the same port):

- producers (confluent-kafka / librdkafka, one thread each), every one writing payloads
  ``b"<name>-<seq:09d>|" + padding`` round-robin over the partitions of topic ``chaos``:
    * ``idem-all``   enable.idempotence=true, acks=all (librdkafka retries across the restart;
                     the broker must deduplicate by the producer state rebuilt from its log)
    * ``plain-1``    acks=1 without idempotence and with retries off. Kafka (and librdkafka)
                     refuse idempotence with acks other than all, so "acks=1" can only be the
                     non-idempotent kind; retries are off so that the client never re-sends a
                     record itself and every duplicate the checker finds is the broker's.
  A delivery callback records, for every acknowledged send, the (partition, offset) it got.
- a consumer group of two member processes (tests/integration/_group_procs.py, librdkafka)
  that poll and commit synchronously after every batch; a member that dies (librdkafka may
  surface a transport error as a message error) is replaced and counted.
- the chaos loop: seeded `random.Random(seed)`; before each kill it waits a random
  ``uniform(min_gap, max_gap)`` seconds, then SIGKILLs the broker, waits ``uniform(0, 0.3)``
  seconds and restarts it. Right after each restart the group's committed offsets are fetched
  (OffsetFetch, without joining) and compared with the highest commit acknowledged before the
  kill.

After the last kill the workload runs a little longer, producers flush, the group drains to the
end, the members leave, the broker is killed -9 once more and restarted (so the read-back only
sees what survived a crash), and every partition is read from offset 0 to its end.

Checker figures (`ChaosReport`; the same checker serves the multi-broker cluster chaos of
`_cluster_chaos.py`, which fills the figures marked [cluster] too):
    lost            acknowledged sends whose payload is not in the log at all (of producers
                    not named `weak`: acks=all ones)
    weak_lost       the same for the producers named `weak` (acks=1: Kafka allows losing them
                    when a leader fails over; counted and reported separately, not a violation)
    weak_reorders   per-producer sequence reorders of the `weak` producers (a non-idempotent
                    client with several requests in flight may reorder across a leader change;
                    informational)
    misplaced       acknowledged sends whose payload is in the log but not at the acked offset
                    (acknowledgements without an offset, which librdkafka's idempotent producer
                    gives after some retries, are only checked for presence: acked_no_offset)
    duplicates      payload ids found at more than one offset
    reorders        offsets not strictly increasing in a partition, plus, per (producer,
                    partition), a sequence number lower than one before it in the log
    commit_regressions
                    per partition, an acknowledged commit lower than an earlier acknowledged
                    one (by the members' monotonic clock), or a fetched committed offset after
                    a restart lower than the highest acknowledged before the kill
    group_missed    acknowledged records no group member ever received (informational: the
                    group drain is bounded)
    gaps            offsets missing between two records of a partition in the read-back (no
                    compaction, no transactions here: offsets are dense) [cluster]
    overwritten     an offset that held one record when a consumer read it and another (or
                    none, below the end) in the final read-back [cluster]
    divergent       replicas whose files differ below the smallest checkpointed high watermark
                    [cluster]
    epoch_regressions
                    a leader epoch (per partition, per observing broker or in ZooKeeper) or the
                    controller epoch lower than one observed before [cluster]
    not_healed      faults after which the cluster did not get back to every broker registered
                    and a full ISR within the bound [cluster]
    acks_after_fence
                    acks=all acknowledgements given by a broker at a leader epoch that
                    ZooKeeper had already superseded (a newer leader epoch of the partition
                    written before the acknowledgement arrived); informational: Kafka lets an
                    old leader answer for records that did reach the new leader [sim]
    fenced_acks_lost
                    the acknowledgements among those whose records are not all in the final
                    log at the acknowledged offsets: a fenced (zombie) leader acknowledged
                    records that were then lost (`check_fenced_acks`) [sim]
"""

from __future__ import annotations

import random
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from _broker import BrokerProcess
from _client_env import librdkafka_extra
from _group_procs import GroupWorker

TOPIC = "chaos"
GROUP = "chaos-group"
PARTITIONS = 3
PAD = b"." * 80

#: (name, librdkafka settings) of the producers.
PRODUCERS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("idem-all", {"enable.idempotence": True, "acks": "all"}),
    ("plain-1", {"enable.idempotence": False, "acks": 1, "retries": 0}),
)


def payload(name: str, seq: int) -> bytes:
    return b"%s-%09d|" % (name.encode(), seq) + PAD


def parse_payload(value: bytes) -> tuple[str, int]:
    head = value.split(b"|", 1)[0].decode()
    name, _, seq = head.rpartition("-")
    return name, int(seq)


@dataclass
class ChaosReport:
    seed: int
    kills: int = 0
    sends: int = 0
    acked: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    log_records: int = 0
    lost: int = 0
    misplaced: int = 0
    duplicates: int = 0
    reorders: int = 0
    commits: int = 0
    commit_checks: int = 0
    commit_regressions: int = 0
    group_missed: int = 0
    member_restarts: int = 0
    weak_lost: int = 0
    weak_acked: int = 0
    weak_reorders: int = 0
    acked_no_offset: int = 0
    gaps: int = 0
    overwritten: int = 0
    reads_checked: int = 0
    divergent: int = 0
    replicas_compared: int = 0
    epoch_regressions: int = 0
    epoch_samples: int = 0
    not_healed: int = 0
    acks_attributed: int = 0
    acks_after_fence: int = 0
    fenced_acks_lost: int = 0
    lost_ids: list[str] = field(default_factory=list)
    duplicate_ids: list[str] = field(default_factory=list)
    restart_s: list[float] = field(default_factory=list)
    duration_s: float = 0.0
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost or self.misplaced or self.duplicates or self.reorders or self.gaps
        ) and not (
            self.commit_regressions
            or self.overwritten
            or self.divergent
            or self.epoch_regressions
            or self.not_healed
            or self.fenced_acks_lost
        )

    def summary(self) -> str:
        return (
            f"seed {self.seed}: {self.kills} kills, {self.sends} sends, {self.acked} acked, "
            f"failed {dict(self.failed)}, log {self.log_records} records; lost {self.lost}, "
            f"misplaced {self.misplaced}, duplicates {self.duplicates}, reorders "
            f"{self.reorders}, commit regressions {self.commit_regressions} ({self.commits} "
            f"commits, {self.commit_checks} fetch checks), group missed {self.group_missed}, "
            f"member restarts {self.member_restarts}, {self.duration_s:.1f} s"
            + (
                f"; acks=1 lost {self.weak_lost} of {self.weak_acked} (and "
                f"{self.weak_reorders} out of order), acked without offset "
                f"{self.acked_no_offset}, gaps {self.gaps}, "
                f"overwritten {self.overwritten} ({self.reads_checked} reads), divergent "
                f"{self.divergent} ({self.replicas_compared} replica pairs), epoch "
                f"regressions {self.epoch_regressions} ({self.epoch_samples} samples), not "
                f"healed {self.not_healed}"
                if self.replicas_compared or self.epoch_samples
                else ""
            )
            + (
                f"; acks after fence {self.acks_after_fence}, fenced acks lost "
                f"{self.fenced_acks_lost} ({self.acks_attributed} attributed acks)"
                if self.acks_attributed
                else ""
            )
            + (f"\nexamples: {self.examples[:10]}" if self.examples else "")
        )


class ProducerThread(threading.Thread):
    """One confluent-kafka producer writing `rate` records per second until stopped."""

    def __init__(
        self,
        bootstrap: str,
        name: str,
        conf: dict[str, Any],
        rate: float,
        *,
        topic: str = TOPIC,
        partitions: int = PARTITIONS,
    ) -> None:
        super().__init__(name=f"producer-{name}", daemon=True)
        self.bootstrap, self.pname, self.conf, self.rate = bootstrap, name, conf, rate
        self.topic, self.partitions = topic, partitions
        #: ident -> (partition, time of produce(), time of the acknowledgement)
        self.times: dict[str, tuple[int, float, float]] = {}
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.sent = 0
        self.acked: dict[str, tuple[int, int]] = {}
        self.failed: Counter[str] = Counter()
        self.latencies: list[tuple[float, float]] = []  # (ack time, seconds)
        self.fatal: list[str] = []
        self.flush_timeout = 90.0

    def _producer(self) -> Any:
        from confluent_kafka import Producer

        conf = {
            "bootstrap.servers": self.bootstrap,
            "client.id": f"chaos-{self.pname}",
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            "retry.backoff.ms": 50,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "socket.timeout.ms": 10_000,
            "error_cb": self._on_error,
            "log_level": 0,  # the kills make librdkafka log every refused reconnect
        }
        conf.update(self.conf)
        conf.update(librdkafka_extra())
        return Producer(conf)

    def _on_error(self, err: Any) -> None:
        if err.fatal():
            with self.lock:
                self.fatal.append(str(err))

    def _callback(self, sent_at: float) -> Callable[[Any, Any], None]:
        def done(err: Any, msg: Any) -> None:
            now = time.monotonic()
            with self.lock:
                if err is not None:
                    self.failed[err.name()] += 1
                    return
                ident = msg.value().split(b"|", 1)[0].decode()
                # librdkafka may report a success without an offset (None): the record is
                # checked for presence, not for its place (ChaosReport.acked_no_offset)
                offset = msg.offset()
                self.acked[ident] = (int(msg.partition()), -1 if offset is None else int(offset))
                self.latencies.append((now, now - sent_at))
                self.times[ident] = (int(msg.partition()), sent_at, now)

        return done

    def _fatal(self, exc: Exception) -> None:
        """A fatal error raised (not only reported to error_cb): `run` starts a new producer.
        Anything else is raised again."""
        err = exc.args[0] if exc.args else None
        if not (hasattr(err, "fatal") and err.fatal()):
            raise exc
        with self.lock:
            self.fatal.append(str(err))

    def _poll(self, producer: Any, timeout: float) -> None:
        """`poll`; a fatal idempotence error it raises (confluent-kafka raises some there
        instead of only calling error_cb, e.g. OUT_OF_ORDER_SEQUENCE_NUMBER after an unclean
        election) makes `run` start a new producer, as the error callback does."""
        from confluent_kafka import KafkaException

        try:
            producer.poll(timeout)
        except KafkaException as exc:
            self._fatal(exc)

    def run(self) -> None:
        from confluent_kafka import KafkaException

        producer = self._producer()
        seq = 0
        started = time.monotonic()
        while not self.stop_event.is_set():
            if self.fatal:  # an idempotent producer in a fatal state: start a new one
                try:
                    producer.flush(5)
                except KafkaException as exc:  # its fatal error, raised again
                    with self.lock:
                        self.failed[f"flush {type(exc).__name__}"] += 1
                producer = self._producer()
                with self.lock:
                    self.fatal.clear()
            due = int((time.monotonic() - started) * self.rate)
            while seq < due and not self.stop_event.is_set():
                try:
                    producer.produce(
                        self.topic,
                        value=payload(self.pname, seq),
                        partition=seq % self.partitions,
                        on_delivery=self._callback(time.monotonic()),
                    )
                except BufferError:
                    self._poll(producer, 0.05)
                    continue
                except KafkaException as exc:  # fatal: produce refuses until a new producer
                    self._fatal(exc)
                    break
                seq += 1
                self.sent = seq
            self._poll(producer, 0.01)
        try:
            left = producer.flush(self.flush_timeout)
        except Exception as exc:  # a fatal idempotence error (after an unclean election)
            with self.lock:
                self.failed[f"flush {type(exc).__name__}"] += 1
            return
        if left:
            with self.lock:
                self.failed["unflushed"] += left


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10_000} | librdkafka_extra()
    )


def create_topic(bootstrap: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)  # kept referenced: a collected handle fails its futures
    futures = admin.create_topics([NewTopic(TOPIC, partitions, 1)])
    futures[TOPIC].result(timeout=20)
    del admin


def fetch_committed(bootstrap: str, partitions: int = PARTITIONS) -> dict[int, int]:
    """The group's committed offsets (OffsetFetch through a consumer that never joins)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
        result = consumer.committed(tps, timeout=20)
        return {tp.partition: tp.offset for tp in result if tp.offset >= 0}
    finally:
        consumer.close()


def read_log(bootstrap: str, partitions: int = PARTITIONS) -> dict[int, list[tuple[int, bytes]]]:
    """Every (offset, value) of every partition, from 0 to the end offset at the start."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"chaos-read-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
        | librdkafka_extra()
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), 20)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        pos = {p: 0 for p in range(partitions)}
        deadline = time.monotonic() + 60
        while any(pos[p] < ends[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                raise AssertionError(f"read-back stuck at {pos}, ends {ends}")
            for m in consumer.consume(500, 1.0):
                if m.error() is not None:
                    continue
                p, off = int(m.partition() or 0), int(m.offset() or 0)
                if off < ends[p]:
                    out[p].append((off, m.value() or b""))
                pos[p] = max(pos[p], off + 1)
        return out
    finally:
        consumer.close()


def ident_of(value: bytes) -> str:
    """The payload id ``<name>-<seq:09d>`` of a record value."""
    return value.split(b"|", 1)[0].decode()


def check_log(
    log: dict[int, list[tuple[int, bytes]]],
    acked: dict[str, tuple[int, int]],
    report: ChaosReport,
    *,
    weak: tuple[str, ...] = (),
    dense: bool = False,
) -> None:
    """Fill lost / misplaced / duplicates / reorders of `report` (see the module docstring);
    the losses of the producers named in `weak` go to weak_lost; `dense`: count the offsets
    missing between two records (and before the first one) as gaps."""
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for p, records in log.items():
        last_offset = -1
        last_seq: dict[str, int] = {}
        for off, value in records:
            report.log_records += 1
            if off <= last_offset:
                report.reorders += 1
                report.examples.append(f"p{p}: offset {off} after {last_offset}")
            elif dense and off != last_offset + 1:
                report.gaps += off - last_offset - 1
                report.examples.append(f"p{p}: gap {last_offset + 1}..{off - 1}")
            last_offset = off
            name, seq = parse_payload(value)
            if name in last_seq and seq < last_seq[name] and name in weak:
                report.weak_reorders += 1
            elif name in last_seq and seq < last_seq[name]:
                report.reorders += 1
                report.examples.append(f"p{p}@{off}: {name} seq {seq} after {last_seq[name]}")
            last_seq[name] = max(seq, last_seq.get(name, -1))
            where[f"{name}-{seq:09d}"].append((p, off))
    for ident, places in where.items():
        if len(places) > 1:
            report.duplicates += len(places) - 1
            report.duplicate_ids.append(ident)
            report.examples.append(f"duplicate {ident} at {places}")
    for ident, place in acked.items():
        found = where.get(ident)
        if ident.rpartition("-")[0] in weak:
            report.weak_acked += 1
            if not found:
                report.weak_lost += 1
                continue
        if not found:
            report.lost += 1
            report.lost_ids.append(ident)
            report.examples.append(f"lost {ident} acked at {place}")
        elif place[1] < 0:
            report.acked_no_offset += 1
        elif place not in found:
            report.misplaced += 1
            report.examples.append(f"{ident} acked at {place}, found at {found}")


def check_reads(
    log: dict[int, list[tuple[int, bytes]]],
    reads: list[tuple[int, int, str]],
    report: ChaosReport,
) -> None:
    """Every (partition, offset, payload id) a consumer read must be what the final read-back
    holds at that offset: a record read and later replaced (or gone, below the end) means a
    consumer saw data that the cluster then threw away."""
    final = {p: {off: ident_of(v) for off, v in records} for p, records in log.items()}
    seen: set[tuple[int, int, str]] = set()
    for p, off, ident in reads:
        if (p, off, ident) in seen:
            continue
        seen.add((p, off, ident))
        report.reads_checked += 1
        now = final.get(p, {}).get(off)
        if now != ident:
            report.overwritten += 1
            report.examples.append(f"p{p}@{off}: read {ident}, final read-back has {now}")


@dataclass(frozen=True)
class Ack:
    """One acknowledged acks=all Produce, attributed: `broker` answered it for `partition`
    while leader at `epoch`; the client got it at time `t` (any clock shared with the epoch
    history); `records` are the (offset, payload id) pairs it acknowledged."""

    broker: int
    partition: int
    epoch: int
    t: float
    records: tuple[tuple[int, str], ...]


def check_fenced_acks(
    acks: list[Ack],
    epochs: list[tuple[int, int, float]],
    log: dict[int, list[tuple[int, bytes]]],
    report: ChaosReport,
) -> None:
    """Acknowledgements by a fenced leader (see the module docstring).

    `epochs` is ZooKeeper's leader epoch history: (partition, leader epoch, time the state
    znode first held it). An ack at epoch E of partition p is *after fence* when some epoch
    > E of p was written strictly before the ack's time: the broker answered as a leader that
    the controller had already replaced. It is a violation (`fenced_acks_lost`) only when
    some record it acknowledged is not in the final `log` at the acknowledged offset; an old
    leader whose records did reach the new leader before it stepped down answered honestly.
    Such a loss is also counted by `check_log` as lost or misplaced: this figure says who
    gave the acknowledgement (a zombie), not only that it was broken."""
    first_written: dict[tuple[int, int], float] = {}
    for p, epoch, t in epochs:
        key = (p, epoch)
        first_written[key] = min(t, first_written.get(key, t))
    final = {p: {off: ident_of(v) for off, v in records} for p, records in log.items()}
    for ack in acks:
        report.acks_attributed += 1
        newer = [
            (epoch, t)
            for (p, epoch), t in first_written.items()
            if p == ack.partition and epoch > ack.epoch and t < ack.t
        ]
        if not newer:
            continue
        report.acks_after_fence += 1
        held = final.get(ack.partition, {})
        missing = [(off, ident) for off, ident in ack.records if held.get(off) != ident]
        if missing:
            epoch, t = min(newer, key=lambda e: e[1])
            report.fenced_acks_lost += 1
            report.examples.append(
                f"fenced ack: b{ack.broker} acked p{ack.partition} epoch {ack.epoch} at "
                f"{ack.t:.3f} after epoch {epoch} was written at {t:.3f}; missing {missing[:3]}"
            )


def check_commits(events: list[dict[str, Any]], report: ChaosReport) -> dict[int, int]:
    """Acknowledged commits (all members, by time) must not go backwards; returns the highest
    acknowledged commit per partition."""
    high: dict[int, int] = {}
    for e in sorted(events, key=lambda e: e["t"]):
        for part, offset in e["offsets"].items():
            p = int(part)
            report.commits += 1
            if offset < high.get(p, -1):
                report.commit_regressions += 1
                report.examples.append(f"commit p{p} {offset} after {high[p]}")
            high[p] = max(high.get(p, -1), offset)
    return high


def partition_story(members: list[tuple[str, list[dict[str, Any]]]], p: int) -> list[str]:
    """What the members did with partition `p`, in time order (for a failure report): each
    assignment or revocation naming it, each run of records read from it (first..last
    offset within one generation), each commit of it. `members`: (name, events)."""
    lines: list[tuple[float, str]] = []
    for name, events in members:
        run: list[Any] | None = None  # [t0, first, last, gen]
        for e in events:
            ev = e["ev"]
            if ev == "records":
                offs = [int(r[1]) for r in e["records"] if int(r[0]) == p]
                if not offs:
                    continue
                if run is not None and run[3] == e["gen"] and min(offs) == run[2] + 1:
                    run[2] = max(offs)
                    continue
                if run is not None:
                    lines.append((run[0], f"{name} gen {run[3]} read {run[1]}..{run[2]}"))
                run = [e["t"], min(offs), max(offs), e["gen"]]
            elif ev in ("assigned", "revoked") and p in e["partitions"]:
                lines.append((e["t"], f"{name} gen {e['gen']} {ev} {e['partitions']}"))
            elif ev == "commit" and str(p) in e["offsets"]:
                lines.append((e["t"], f"{name} gen {e['gen']} commit {e['offsets'][str(p)]}"))
        if run is not None:
            lines.append((run[0], f"{name} gen {run[3]} read {run[1]}..{run[2]}"))
    lines.sort(key=lambda x: x[0])
    t0 = lines[0][0] if lines else 0.0
    out: list[str] = []
    last = ""
    for t, text in lines:
        line = f"+{t - t0:.2f}s {text}"
        if " commit " in text and text.split(" commit ")[0] == last.split(" commit ")[0]:
            out[-1] = line  # consecutive commits of one member: the last one
        else:
            out.append(line)
        last = text
    return out


def commit_start(bootstrap: str, partitions: int = PARTITIONS) -> None:
    """Commit offset 0 of every partition for `GROUP` before its members start.

    So that no member ever asks for a logical offset (auto.offset.reset): librdkafka 2.16
    restarts the offset query of a partition that was unassigned while its ListOffsets was
    in flight (`rd_kafka_toppar_handle_Offset` retries on an outdated answer whatever the
    fetch state), the unassigned partition then fetches in the background from offset 0, and
    when it is assigned again those stale records reach the application ahead of the
    committed position (seen as a member committing offset 50 after 1876 was committed, with
    `debug=cgrp,fetch`: "outdated offset response: (re)starting offset query timer", "changed
    fetch state stopped -> offset-query"). A client race of the first rebalance, the same
    against any broker; with committed offsets there is no offset query to race."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False}
        | librdkafka_extra()
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                consumer.commit(
                    offsets=[TopicPartition(TOPIC, p, 0) for p in range(partitions)],
                    asynchronous=False,
                )
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()


class Group:
    """Two member processes; a member that died is replaced (and counted). The group's
    offsets start committed at 0 (`commit_start`)."""

    def __init__(self, bootstrap: str, log_dir: Path, members: int = 2) -> None:
        self.bootstrap, self.log_dir = bootstrap, log_dir
        self.workers: list[GroupWorker] = []
        self.retired: list[GroupWorker] = []
        self.restarts = 0
        commit_start(bootstrap)
        for i in range(members):
            self.workers.append(self._spawn(f"m{i}"))

    def _spawn(self, name: str) -> GroupWorker:
        return GroupWorker(
            bootstrap=self.bootstrap,
            topic=TOPIC,
            group=GROUP,
            name=name,
            log_dir=self.log_dir,
            client="confluent-kafka",
            max_seconds=3600,
        )

    def heal(self) -> None:
        for i, w in enumerate(self.workers):
            if w.proc.poll() is not None:
                self.retired.append(w)
                self.restarts += 1
                self.workers[i] = self._spawn(f"{w.name}r{self.restarts}")

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [e for w in self.workers + self.retired for e in w.snapshot(kind)]

    def story(self, p: int) -> list[str]:
        """`partition_story` of partition `p` over every member, current and retired."""
        return partition_story([(w.name, w.snapshot()) for w in self.workers + self.retired], p)

    def close(self) -> None:
        for w in self.workers:
            w.stop(timeout=15)
        for w in self.workers + self.retired:
            w.close()


def run_chaos(
    workdir: Path,
    seed: int,
    kills: int,
    *,
    min_gap: float = 1.0,
    max_gap: float = 3.0,
    rate: float = 300.0,
    log: Callable[[str], None] = lambda _line: None,
) -> ChaosReport:
    """Run the workload with `kills` SIGKILLs of the broker; returns the checked report."""
    rng = random.Random(seed)
    report = ChaosReport(seed=seed)
    t0 = time.monotonic()
    broker = BrokerProcess(workdir / "data", log_path=workdir / "broker-stderr.log")
    bootstrap = broker.start()
    producers: list[ProducerThread] = []
    group: Group | None = None
    try:
        create_topic(bootstrap)
        producers = [ProducerThread(bootstrap, n, c, rate) for n, c in PRODUCERS]
        for t in producers:
            t.start()
        group = Group(bootstrap, workdir)
        acked_high: dict[int, int] = {}
        for k in range(kills):
            time.sleep(rng.uniform(min_gap, max_gap))
            acked_high = check_commits(group.events("commit"), ChaosReport(seed=seed))
            broker.kill9()
            report.kills += 1
            time.sleep(rng.uniform(0.0, 0.3))
            started = time.monotonic()
            broker.restart(same_port=True)
            report.restart_s.append(time.monotonic() - started)
            fetched = fetch_committed(bootstrap)
            for p, high in acked_high.items():
                report.commit_checks += 1
                if fetched.get(p, -1) < high:
                    report.commit_regressions += 1
                    report.examples.append(
                        f"after kill {k + 1}: committed p{p} {fetched.get(p)} < acked {high}"
                    )
            group.heal()
            log(f"kill {k + 1}/{kills}: restart {report.restart_s[-1]:.2f} s")
        time.sleep(rng.uniform(min_gap, max_gap))
        for t in producers:
            t.stop_event.set()
        for t in producers:
            t.join(timeout=120)
        acked: dict[str, tuple[int, int]] = {}
        for t in producers:
            with t.lock:
                acked.update(t.acked)
                report.failed.update(t.failed)
            report.sends += t.sent
        report.acked = len(acked)
        # let the group reach the end (bounded), then leave
        from confluent_kafka import Consumer, TopicPartition

        probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-probe"})
        ends = {
            p: probe.get_watermark_offsets(TopicPartition(TOPIC, p), 20)[1]
            for p in range(PARTITIONS)
        }
        probe.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            group.heal()
            reached = check_commits(group.events("commit"), ChaosReport(seed=seed))
            if all(reached.get(p, 0) >= ends[p] for p in range(PARTITIONS)):
                break
            time.sleep(0.2)
        group.close()
        final_high = check_commits(group.events("commit"), report)
        report.member_restarts = group.restarts
        received = {
            bytes.fromhex(r[3]).split(b"|", 1)[0].decode()
            for e in group.events("records")
            for r in e["records"]
        }
        report.group_missed = sum(1 for ident in acked if ident not in received)
        group = None
        # one more crash: the read-back only sees what survived a kill -9
        broker.kill9()
        broker.restart(same_port=True)
        fetched = fetch_committed(bootstrap)
        for p, high in final_high.items():
            report.commit_checks += 1
            if fetched.get(p, -1) < high:
                report.commit_regressions += 1
                report.examples.append(f"final: committed p{p} {fetched.get(p)} < acked {high}")
        check_log(read_log(bootstrap), acked, report)
    finally:
        for t in producers:
            t.stop_event.set()
        if group is not None:
            for w in group.workers + group.retired:
                w.close()
        broker.close()
    report.duration_s = time.monotonic() - t0
    return report
