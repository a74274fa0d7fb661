"""The client-neutral scenarios: one function per case, run against any `Adapter`.

A case sets its stage with the oracle (`wire.Wire`, this repository's own protocol code,
never the client under test), drives the client through the adapter, and checks the outcome
twice where it can: what the client reports, and what the broker really stored (read back by
the oracle: bytes, offsets, codecs, timestamp types, producer ids, committed offsets).

Outcome: returning a string is a pass (the string is a note for the report); raising
`AssertionError` (or any other exception) is a failure; raising `Unsupported` is "n/a".
Every case uses topic and group names of its own (`Ctx.name`), so one broker serves a whole
client run. Case ids are stable: they are the lines of `compat/<client>/passing.txt`.

Cases (id: what passing proves):
    roundtrip.create_time       keys, headers (repeated keys, null value), explicit CreateTime
                                timestamps, null and empty values, arbitrary bytes, explicit
                                partitions: produced, stored and consumed byte for byte, in
                                order, at contiguous offsets from 0
    roundtrip.log_append_time   a LogAppendTime topic: the broker's clock replaces the
                                client's timestamp, and the consumer sees type LogAppendTime
    compression.<codec>         gzip / snappy / lz4 / zstd: the client really compressed (the
                                stored batches carry the codec) and reads its batches back
    idempotent.retries          a proxy loses Produce responses; the idempotent producer
                                retries; the partition holds each record exactly once, in
                                order, from one producer id
    group.rebalance_commit_resume   2-3 members share 4 partitions (disjoint, complete),
                                rebalance on join and on leave, commit synchronously; a new
                                member of the group resumes at the committed offsets
    admin.*                     create topic with configs, create partitions, describe and
                                alter configs, list/describe/delete groups, offsets by
                                timestamp, delete records, delete topic, each checked by the
                                oracle
    max_message.under / .over   a record just under a topic's max.message.bytes is stored;
                                one above gets MESSAGE_TOO_LARGE in bounded time (no hang)
    auto_create                 producing to an unknown topic creates it (num.partitions)
    metadata.100_topics         the client's metadata lists 100 topics / 200 partitions
    legacy.message_format_v0 / _v1  a client set up for a pre-0.10 / 0.10 broker (no
                                ApiVersions; Produce v0-2 with message format v0 / v1): the
                                round trip works, or the client gets a clear, immediate error
                                (not a hang, nothing stored) -- the note says which
    failover.kill_leader        (cluster row only) acks=all to a replicated partition; the
                                leader is killed with SIGKILL; the client goes on producing
                                with its own retries and finds the new leader by itself; every
                                acknowledged record is stored once, in order, and consumed

Rows. Every case runs in the single-broker row (`runner CLIENT`: one `wirebroker serve`) and
in the cluster row (`runner CLIENT --cluster`: 3 brokers and a ZooKeeper, `cluster.py`)
unless `Case.not_in` names the row with the reason it does not apply. In the cluster row the
oracle creates every topic with replication factor 3 (and waits for three in-sync replicas),
the adapter's admin calls create topics with replication factor 3 (`Adapter.replication_factor`),
the brokers run with `min.insync.replicas=2`, `default.replication.factor=3` and a
replicated `__consumer_offsets`, and the clients bootstrap from all three brokers: each
client finds partition leaders and group coordinators on other brokers by itself. Cases whose
outcome depends on the replication factor check it too (a topic the client or the broker
created has replicas on every broker).

The consumer group protocol's rows (`runner CLIENT --group-protocol consumer [--cluster]`,
rows "consumer" and "cluster-consumer"; clients whose adapter lists "consumer" in
`Adapter.group_protocols`): the cases with `Case.groups` (group members: the group case and
the admin group cases) again, every member with `group.protocol=consumer` (KIP-848: the
broker assigns, its `group.consumer.*` settings give the session and heartbeat timing).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Protocol, TypeVar

from compat.oracle.kafka import ApacheKafka, ApacheKafkaCluster
from compat.scenarios.api import Adapter, ClientError, Member, Rec, Unsupported
from compat.scenarios.broker import Broker
from compat.scenarios.cluster import Cluster
from compat.scenarios.faultproxy import FaultProxy
from compat.scenarios.wire import EARLIEST, LATEST, Marker, PartitionView, StoredRecord, Wire
from protocol.records import RecordSpec

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class ProxiedKafka:
    """An Apache Kafka of its own behind a `FaultProxy` (it advertises the proxy's address),
    started in a background thread as soon as it is made: a Kafka takes 10-20 s to start on
    this machine, so the runner makes one ahead of `idempotent.retries` in the oracle row and
    the cases before it run meanwhile. `ready()` waits for it (bounded) and points the proxy
    at it; `close()` stops both."""

    def __init__(self, timeout: float = 180.0) -> None:
        self.proxy = FaultProxy(drop=set())
        advertised = f"PLAINTEXT://127.0.0.1:{self.proxy.port}"
        self.kafka = ApacheKafka(overrides={"advertised.listeners": advertised})
        self.timeout = timeout
        self._started = threading.Event()
        self._error: BaseException | None = None
        threading.Thread(target=self._start, name="proxied-kafka", daemon=True).start()

    def _start(self) -> None:
        try:
            self.kafka.start(timeout=self.timeout)
        except BaseException as exc:
            self._error = exc
        finally:
            self._started.set()

    def ready(self) -> str:
        if not self._started.wait(self.timeout + 10):
            raise AssertionError(f"the proxied Apache Kafka did not start in {self.timeout} s")
        if self._error is not None:
            raise self._error
        self.proxy.upstream = ("127.0.0.1", self.kafka.port)
        return self.kafka.bootstrap

    def close(self) -> None:
        self._started.wait(self.timeout + 10)
        self.proxy.close()
        self.kafka.stop()


class _Process(Protocol):
    """A broker process of a cluster row (wirebroker's `Broker`, Apache Kafka's node)."""

    def is_running(self) -> bool: ...
    def exit_status(self) -> str | None: ...


SETTLE_S = 10.0
T = TypeVar("T")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Ctx:
    """What a case gets: the adapter, the broker's address (a cluster: all the brokers'), a
    scratch dir, unique names; in the cluster row the cluster itself (to kill a broker)."""

    adapter: Adapter
    bootstrap: str
    workdir: Path
    _seq: count[int]
    cluster: Cluster | ApacheKafkaCluster | None = None
    tag: str = ""  # the run's tag, in every name (the oracle row: Kafka outlives a run)
    oracle: bool = False  # the broker is Apache Kafka (compat/oracle), not wirebroker
    standby: ProxiedKafka | None = None  # the oracle row: started ahead for idempotent.retries

    @property
    def replication_factor(self) -> int:
        return 1 if self.cluster is None else self.cluster.size

    def name(self, prefix: str) -> str:
        tag = f"{self.tag}-" if self.tag else ""
        return f"{self.adapter.name.replace('-', '')}-{tag}{prefix}-{next(self._seq)}"

    @contextlib.contextmanager
    def broker_behind_proxy(self, drop: set[int]) -> Iterator[tuple[FaultProxy, str]]:
        """A broker of its own, of the row's kind (wirebroker; Apache Kafka in the oracle
        row, the runner's `standby` if it started one ahead), behind a `FaultProxy` that
        loses the Produce responses `drop`: the broker advertises the proxy's address, so
        every connection a client opens goes through the proxy. Yields (proxy, the broker's
        own address); both are stopped (and the broker's data removed) at the end."""
        if self.oracle:
            standby = self.standby or ProxiedKafka()
            try:
                direct = standby.ready()
                standby.proxy.drop = set(drop)
                yield standby.proxy, direct
            finally:
                standby.close()
            return
        proxy = FaultProxy(drop)
        listeners = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}
        broker = Broker(self.workdir / f"behind-proxy-{next(self._seq)}", listeners)
        try:
            direct = broker.start()
            proxy.upstream = ("127.0.0.1", broker.port)
            yield proxy, direct
        finally:
            proxy.close()
            broker.stop()

    def wire(self) -> Wire:
        return Wire(self.bootstrap, replication_factor=self.replication_factor)

    def settled(self, read: Callable[[], T], ok: Callable[[T], bool]) -> T:
        """`read()` until `ok(value)`, for up to SETTLE_S seconds. A change a client made
        through the controller (new partitions, altered configs) is answered once it is
        committed, and a broker applies it a moment later: Apache Kafka's brokers (even the
        single combined node of the oracle row) apply the metadata log asynchronously, and a
        wirebroker in the cluster row applies a change made elsewhere through a ZooKeeper
        watch; so the oracle's read may see the old value for a moment. (One wirebroker
        answers for its own change at once.) The last value read is returned; the case asserts
        on it."""
        value = read()
        deadline = time.monotonic() + SETTLE_S
        while not ok(value) and time.monotonic() < deadline:
            time.sleep(0.05)
            value = read()
        return value

    def log(self, line: str) -> None:
        """A line for the run's log, not the results (timings, broker ids: they vary)."""
        print(f"       | {line}", flush=True)

    def check_replicated(self, topic: str) -> None:
        """In the cluster row: every partition of `topic` has `replication_factor` replicas
        on distinct brokers (a topic the client or the broker created)."""
        if self.cluster is None:
            return
        rf = self.replication_factor
        with self.wire() as w:
            views = w.partitions(topic)
        for p, view in sorted(views.items()):
            assert len(set(view.replicas)) == rf, f"{topic}-{p}: replicas {view.replicas}, not {rf}"


def wait_until(what: str, cond: Callable[[], bool], timeout: float, step: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)


def _spec(rec: Rec) -> RecordSpec:
    return RecordSpec(rec.key, rec.value, rec.headers, rec.timestamp)


def _show(rec: Rec) -> str:
    def short(b: bytes | None) -> str:
        return "null" if b is None else repr(b if len(b) <= 24 else b[:24] + b"...")

    return f"(key={short(rec.key)} value={short(rec.value)} headers={list(rec.headers)})"


# -- round trip -------------------------------------------------------------------------------
def _roundtrip_records(caps: frozenset[str], n: int, partitions: int, base_ts: int) -> list[Rec]:
    out = []
    for i in range(n):
        if "binary" in caps:
            key: bytes | None = bytes([i, 0, 255]) + b"key\xc3\xa9\xff"
            value: bytes | None = bytes(range(256))[i:] + b"\x00\n\r" + bytes([i])
        else:
            key = f"key-{i}-\u00e9".encode()
            value = f"value {i} caf\u00e9 \u2603 ".encode() * (i % 4 + 1)
        if "null_key" in caps and i % 10 == 3:
            key = None
        if i % 11 == 4:
            value = b""
        if "null_value" in caps and i % 7 == 5:
            value = None
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if "headers" in caps:
            headers = (("trace", f"t{i}".encode()), ("dup", b"first"), ("dup", b"second"))
            if i % 5 == 1:
                headers += (("empty", b""),)
            if "header_null" in caps and i % 6 == 2:
                headers += (("nullh", None),)
        ts = base_ts + i * 1000 if "timestamp" in caps else None
        out.append(Rec(key, value, headers, ts, partition=i % partitions))
    return out


def _check_same(where: str, got: list[Rec], want: list[Rec], *, check_ts: bool) -> None:
    assert len(got) == len(want), f"{where}: {len(got)} records, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert (g.key, g.value) == (w.key, w.value), f"{where}[{i}]: {_show(g)} != {_show(w)}"
        assert tuple(g.headers) == tuple(w.headers), (
            f"{where}[{i}]: headers {list(g.headers)} != {list(w.headers)}"
        )
        if check_ts and w.timestamp is not None:
            assert g.timestamp == w.timestamp, f"{where}[{i}]: ts {g.timestamp} != {w.timestamp}"


def roundtrip_create_time(ctx: Ctx) -> str:
    caps = ctx.adapter.capabilities
    topic = ctx.name("rt-ct")
    parts = 3
    with ctx.wire() as w:
        w.create_topic(topic, parts, {"message.timestamp.type": "CreateTime"})
    records = _roundtrip_records(caps, 30, parts, now_ms() - 3_600_000)
    deliveries = ctx.adapter.produce(topic, records)
    if deliveries is not None:
        assert len(deliveries) == len(records), f"{len(deliveries)} acks, {len(records)} sent"
    for p in range(parts):
        want = [r for r in records if r.partition == p]
        if deliveries is not None:
            acked = [
                (d.partition, d.offset)
                for d, r in zip(deliveries, records, strict=True)
                if r.partition == p
            ]
            assert acked == [(p, i) for i in range(len(want))], f"p{p}: acks {acked}"
        with ctx.wire() as w:
            stored = w.read(topic, p)
        stored_recs = [Rec(s.key, s.value, s.headers, s.timestamp) for s in stored]
        _check_same(f"stored p{p}", stored_recs, want, check_ts=True)
        assert [s.offset for s in stored] == list(range(len(want)))
        assert {s.timestamp_type for s in stored} == {0}, "stored as LogAppendTime"
        got = ctx.adapter.consume(topic, p, 0, len(want))
        _check_same(f"consumed p{p}", got, want, check_ts=True)
        assert [g.offset for g in got] == list(range(len(want))), "consumed offsets"
        assert [g.timestamp for g in got] == [s.timestamp for s in stored], "timestamps"
        types = {g.timestamp_type for g in got} - {None}
        assert types <= {0}, f"timestamp types {types}"
    used = sorted(
        caps & {"timestamp", "headers", "header_null", "null_value", "null_key", "binary"}
    )
    acks = "acks checked" if deliveries is not None else "the client reports no offsets"
    return f"30 records, 3 partitions, {acks}; features: " + (", ".join(used) or "text only")


def roundtrip_log_append_time(ctx: Ctx) -> str:
    caps = ctx.adapter.capabilities
    topic = ctx.name("rt-lat")
    with ctx.wire() as w:
        w.create_topic(topic, 2, {"message.timestamp.type": "LogAppendTime"})
    records = _roundtrip_records(caps, 10, 2, now_ms() - 86_400_000)
    before = now_ms()
    ctx.adapter.produce(topic, records)
    after = now_ms()
    for p in range(2):
        want = [r for r in records if r.partition == p]
        with ctx.wire() as w:
            stored = w.read(topic, p)
        _check_same(
            f"stored p{p}", [Rec(s.key, s.value, s.headers) for s in stored], want, check_ts=False
        )
        for s in stored:
            assert s.timestamp_type == 1, "stored batch is not LogAppendTime"
            assert before - 1000 <= s.timestamp <= after + 1000, (
                f"stored timestamp {s.timestamp} not the broker's clock [{before}, {after}]"
            )
        got = ctx.adapter.consume(topic, p, 0, len(want))
        _check_same(f"consumed p{p}", got, want, check_ts=False)
        assert [g.timestamp for g in got] == [s.timestamp for s in stored], (
            f"consumed timestamps {[g.timestamp for g in got]} != stored "
            f"{[s.timestamp for s in stored]}"
        )
        types = {g.timestamp_type for g in got}
        assert types <= {1, None}, f"consumer reports timestamp types {types}"
    reported = "reports the type" if "tstype" in caps else "does not expose the type"
    return f"broker time stamped on 10 records; the client {reported}"


# -- compression -------------------------------------------------------------------------------
def _compression(codec: str) -> Callable[[Ctx], str]:
    def case(ctx: Ctx) -> str:
        if codec not in ctx.adapter.codecs:
            note = ctx.adapter.codec_notes.get(codec, "")
            raise Unsupported(
                f"{ctx.adapter.name} cannot produce {codec}" + (f": {note}" if note else "")
            )
        topic = ctx.name(f"codec-{codec}")
        with ctx.wire() as w:
            w.create_topic(topic, 1)
        records = [
            Rec(f"k{i}".encode(), (f"{codec} record {i} " * 20).encode(), partition=0)
            for i in range(200)
        ]
        ctx.adapter.produce(topic, records, compression=codec)
        with ctx.wire() as w:
            stored = w.read(topic, 0)
        assert [(s.key, s.value) for s in stored] == [(r.key, r.value) for r in records], (
            "stored records differ"
        )
        codecs = {s.compression for s in stored}
        assert codecs == {CODECS[codec]}, f"stored batches use codecs {codecs}, not {codec}"
        got = ctx.adapter.consume(topic, 0, 0, len(records))
        assert [(g.key, g.value) for g in got] == [(r.key, r.value) for r in records], (
            "consumed records differ"
        )
        return f"200 records stored as {codec} batches"

    return case


# -- idempotence -------------------------------------------------------------------------------
def idempotent_retries(ctx: Ctx) -> str:
    if "idempotent" not in ctx.adapter.capabilities:
        raise Unsupported(f"{ctx.adapter.name} has no idempotent producer")
    with ctx.broker_behind_proxy(drop={2, 5}) as (proxy, direct):
        return _idempotent_via(ctx, proxy, direct)


def _idempotent_via(ctx: Ctx, proxy: FaultProxy, direct: str) -> str:
    topic = ctx.name("idem")
    with Wire(direct) as w:
        w.create_topic(topic, 1)
        w.ensure_producer_ids()  # the broker is new: the stage is set once it hands out ids
    via_proxy = f"127.0.0.1:{proxy.port}"
    sent = 0
    for _round in range(8):
        records = [Rec(None, str(sent + i).encode(), partition=0) for i in range(10)]
        ctx.adapter.produce(topic, records, idempotent=True, bootstrap=via_proxy, timeout_s=60)
        sent += 10
    with Wire(direct) as w:
        stored = w.read(topic, 0)
    values = [int(s.value or b"-1") for s in stored]
    dups = len(values) - len(set(values))
    assert values == list(range(sent)), (
        f"{len(values)} stored for {sent} sent ({dups} duplicates); first diff at "
        f"{next((i for i, v in enumerate(values) if v != i), len(values))}"
    )
    pids = {s.producer_id for s in stored}
    assert -1 not in pids, "batches carry no producer id: the producer was not idempotent"
    assert proxy.dropped >= 1, (
        f"no Produce response was lost ({proxy.produce_responses} seen): retry not exercised"
    )
    return (
        f"{sent} records, {proxy.dropped} Produce responses lost and retried, "
        f"{len(pids)} producer id(s), no duplicates, no gaps"
    )


# -- consumer group -----------------------------------------------------------------------------
class _MemberThread:
    """Drives one `Member` from its own thread: poll in a loop, remember what it saw."""

    def __init__(self, ctx: Ctx, group: str, topic: str, client_id: str) -> None:
        self.client_id = client_id
        self.records: list[Rec] = []
        self.assigned: set[tuple[str, int]] = set()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._done = threading.Event()
        self._started = threading.Event()
        self._member: Member | None = None
        self._lock = threading.Lock()
        self._args = (ctx, group, topic, client_id)
        self._thread = threading.Thread(target=self._run, name=client_id, daemon=True)
        self._thread.start()
        if not self._started.wait(60):
            raise AssertionError(f"{client_id}: could not start a group member within 60 s")
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        ctx, group, topic, client_id = self._args
        try:
            self._member = ctx.adapter.group_member(group, [topic], client_id)
            self._started.set()
            while not self._stop.is_set():
                got = self._member.poll(0.2)
                assigned = self._member.assignment()
                with self._lock:
                    self.records += got
                    self.assigned = set(assigned)
        except BaseException as exc:
            self.error = exc
        finally:
            self._started.set()
            try:
                if self._member is not None:
                    self._member.close()
            except BaseException as exc:
                self.error = self.error or exc
            self._done.set()

    def snapshot(self) -> tuple[list[Rec], set[tuple[str, int]]]:
        if self.error is not None:
            raise AssertionError(f"{self.client_id} failed: {self.error!r}") from self.error
        with self._lock:
            return list(self.records), set(self.assigned)

    def stop(self, timeout: float = 60) -> None:
        self._stop.set()
        if not self._done.wait(timeout):
            raise AssertionError(f"{self.client_id} did not close within {timeout} s")
        if self.error is not None:
            raise AssertionError(f"{self.client_id} failed: {self.error!r}") from self.error


def _values(recs: list[Rec]) -> list[bytes]:
    return [r.value or b"" for r in recs]


def _produce_group_data(w: Wire, topic: str, parts: int, tag: str, per: int) -> set[bytes]:
    out = set()
    for p in range(parts):
        vals = [f"{tag}-p{p}-{i}".encode() for i in range(per)]
        w.produce(topic, p, [RecordSpec(None, v) for v in vals])
        out.update(vals)
    return out


def group_rebalance_commit_resume(ctx: Ctx) -> str:
    parts = 4
    topic = ctx.name("grp")
    group = ctx.name("group")
    all_tps = {(topic, p) for p in range(parts)}
    with ctx.wire() as w:
        w.create_topic(topic, parts)
        first = _produce_group_data(w, topic, parts, "a", 10)
    members: list[_MemberThread] = []
    try:
        # one member: every partition, every record
        a = _MemberThread(ctx, group, topic, "member-a")
        members.append(a)
        wait_until(
            "member-a to own 4 partitions and read 40 records",
            lambda: a.snapshot()[1] == all_tps and set(_values(a.snapshot()[0])) >= first,
            60,
        )
        # two more members join: a rebalance splits the partitions
        b = _MemberThread(ctx, group, topic, "member-b")
        members.append(b)
        c = _MemberThread(ctx, group, topic, "member-c")
        members.append(c)

        def split() -> bool:
            sets = [m.snapshot()[1] for m in members]
            union = set().union(*sets)
            return all(sets) and union == all_tps and sum(len(s) for s in sets) == parts

        wait_until("3 members with disjoint, complete, non-empty assignments", split, 60)
        owned = {m.client_id: m.snapshot()[1] for m in members}
        seen_before = {m.client_id: len(m.snapshot()[0]) for m in members}
        with ctx.wire() as w:
            second = _produce_group_data(w, topic, parts, "b", 5)

        def second_read() -> bool:
            got = set()
            for m in members:
                got.update(_values(m.snapshot()[0][seen_before[m.client_id] :]))
            return got >= second

        wait_until("the 20 new records to be read by the 3 members", second_read, 60)
        for m in members:
            for r in m.snapshot()[0][seen_before[m.client_id] :]:
                if r.value in second:
                    assert (topic, r.partition) in owned[m.client_id], (
                        f"{m.client_id} read partition {r.partition}, owns {owned[m.client_id]}"
                    )

        def committed_to_end() -> bool:
            with ctx.wire() as w:
                return w.committed(group, topic, list(range(parts))) == {
                    p: 15 for p in range(parts)
                }

        wait_until("committed offsets to reach 15 on every partition", committed_to_end, 30)
        # two members leave: the survivor gets every partition back
        c.stop()
        b.stop()
        wait_until("member-a to own all 4 partitions again", lambda: a.snapshot()[1] == all_tps, 60)
        a.stop()
        with ctx.wire() as w:
            state = w.groups().get(group)
            assert state == "Empty", f"group state after every member left: {state}"
            third = _produce_group_data(w, topic, parts, "c", 2)
        # a new member resumes at the committed offsets
        d = _MemberThread(ctx, group, topic, "member-d")
        members.append(d)
        wait_until(
            "member-d to read the 8 records produced after the commits",
            lambda: set(_values(d.snapshot()[0])) >= third,
            60,
        )
        time.sleep(1.0)  # anything re-delivered would show up now
        resumed = _values(d.snapshot()[0])
        assert sorted(resumed) == sorted(third), (
            f"member-d read {len(resumed)} records, expected exactly the 8 new ones: "
            f"{sorted(set(resumed) - third)[:5]} were already committed"
        )
        d.stop()
        return "3 members, 2 rebalances, commits checked by OffsetFetch, resume at commits"
    finally:
        for m in members:
            with contextlib.suppress(AssertionError):
                m.stop(timeout=20)


# -- admin -----------------------------------------------------------------------------------
def _rf_note(ctx: Ctx) -> str:
    return "" if ctx.cluster is None else f", replication factor {ctx.replication_factor}"


def admin_create_topic_configs(ctx: Ctx) -> str:
    topic = ctx.name("adm-create")
    configs = {
        "retention.ms": "3600000",
        "max.message.bytes": "200000",
        "cleanup.policy": "compact",
    }
    ctx.adapter.create_topic(topic, 3, configs)
    with ctx.wire() as w:
        meta = ctx.settled(lambda: w.topics([topic]), lambda m: m == {topic: 3})
        assert meta == {topic: 3}, f"metadata: {meta}"
        stored = ctx.settled(
            lambda: w.topic_configs(topic),
            lambda c: all(c.get(k) == v for k, v in configs.items()),
        )
    for k, v in configs.items():
        assert stored.get(k) == v, f"{k} is {stored.get(k)!r}, expected {v!r}"
    ctx.check_replicated(topic)
    return "3 partitions, 3 configs" + _rf_note(ctx)


def admin_create_partitions(ctx: Ctx) -> str:
    topic = ctx.name("adm-parts")
    with ctx.wire() as w:
        w.create_topic(topic, 2)
    ctx.adapter.create_partitions(topic, 5)
    with ctx.wire() as w:
        meta = ctx.settled(lambda: w.topics([topic]), lambda m: m == {topic: 5})
        assert meta == {topic: 5}, f"metadata: {meta}"
    wait_until(
        "the client's metadata to show 5 partitions",
        lambda: ctx.adapter.list_topics().get(topic) == 5,
        20,
        step=0.5,
    )
    ctx.check_replicated(topic)
    return "2 -> 5 partitions" + _rf_note(ctx)


def admin_describe_configs(ctx: Ctx) -> str:
    topic = ctx.name("adm-describe")
    with ctx.wire() as w:
        w.create_topic(topic, 1, {"retention.ms": "7200000"})
        truth = w.topic_configs(topic)
    got = ctx.adapter.describe_topic_configs(topic)
    assert got.get("retention.ms") == "7200000", f"retention.ms = {got.get('retention.ms')!r}"
    for key in ("cleanup.policy", "max.message.bytes", "segment.bytes"):
        assert got.get(key) == truth[key], f"{key} = {got.get(key)!r}, broker says {truth[key]!r}"
    return f"{len(got)} configs described"


def admin_alter_configs(ctx: Ctx) -> str:
    topic = ctx.name("adm-alter")
    with ctx.wire() as w:
        w.create_topic(topic, 1, {"retention.ms": "7200000"})
    ctx.adapter.alter_topic_configs(topic, {"retention.ms": "1800000"})
    with ctx.wire() as w:
        value = ctx.settled(
            lambda: w.topic_configs(topic).get("retention.ms"), lambda v: v == "1800000"
        )
    assert value == "1800000", f"retention.ms is {value!r} after the alter"
    return "retention.ms altered"


def _live_group(ctx: Ctx) -> tuple[str, str, _MemberThread]:
    topic = ctx.name("adm-grp")
    group = ctx.name("adm-group")
    with ctx.wire() as w:
        w.create_topic(topic, 2)
        _produce_group_data(w, topic, 2, "x", 1)
    m = _MemberThread(ctx, group, topic, "admin-member")
    wait_until("the member to be assigned both partitions", lambda: len(m.snapshot()[1]) == 2, 60)
    return topic, group, m


def admin_list_groups(ctx: Ctx) -> str:
    _topic, group, m = _live_group(ctx)
    try:
        listed = ctx.adapter.list_groups()
        assert group in listed, f"{group} not in {sorted(listed)[:10]}"
    finally:
        m.stop()
    return "live group listed"


def admin_describe_groups(ctx: Ctx) -> str:
    topic, group, m = _live_group(ctx)
    try:
        info = ctx.adapter.describe_group(group)
        assert info.state == "Stable", f"state {info.state!r}"
        assert info.protocol_type in ("consumer", ""), f"protocol type {info.protocol_type!r}"
        assert len(info.members) == 1, f"{len(info.members)} members"
        [member] = info.members
        want = {(topic, 0), (topic, 1)}
        assert member.assignment == want, f"assignment {member.assignment} != {want}"
    finally:
        m.stop()
    return "state, member and its assignment described"


def admin_delete_groups(ctx: Ctx) -> str:
    _topic, group, m = _live_group(ctx)
    m.stop()
    ctx.adapter.delete_group(group)
    with ctx.wire() as w:
        groups = w.groups()
    assert group not in groups, f"{group} still listed ({groups[group]})"
    return "empty group deleted"


def admin_list_offsets_by_timestamp(ctx: Ctx) -> str:
    topic = ctx.name("adm-ts")
    t0 = now_ms() - 60_000
    with ctx.wire() as w:
        w.create_topic(topic, 1)
        for i in range(3):
            ts = t0 + i * 10_000
            w.produce(topic, 0, [RecordSpec(None, b"a", (), ts), RecordSpec(None, b"b", (), ts)])
    cases = {t0: 0, t0 + 1: 2, t0 + 10_000: 2, t0 + 15_000: 4, t0 + 20_000: 4}
    for ts, want in cases.items():
        got = ctx.adapter.offset_for_time(topic, 0, ts)
        assert got == want, f"offset for timestamp t0+{ts - t0} is {got}, expected {want}"
    future = ctx.adapter.offset_for_time(topic, 0, now_ms() + 3_600_000)
    assert future is None, f"a timestamp after every record gave offset {future}, not none"
    return "5 lookups and one past the end"


def admin_delete_records(ctx: Ctx) -> str:
    topic = ctx.name("adm-delrec")
    with ctx.wire() as w:
        w.create_topic(topic, 1)
        w.produce(topic, 0, [RecordSpec(None, str(i).encode()) for i in range(10)])
    low = ctx.adapter.delete_records(topic, 0, 4)
    assert low == 4, f"low watermark reported {low}"
    with ctx.wire() as w:
        assert w.list_offset(topic, 0, EARLIEST) == 4
        assert w.list_offset(topic, 0, LATEST) == 10
        assert [s.value for s in w.read(topic, 0, 4)] == [str(i).encode() for i in range(4, 10)]
    return "log start offset moved to 4"


def admin_delete_topic(ctx: Ctx) -> str:
    topic = ctx.name("adm-del")
    with ctx.wire() as w:
        w.create_topic(topic, 2)
    ctx.adapter.delete_topic(topic)

    def gone() -> bool:
        with ctx.wire() as w:
            return w.topics([topic]) == {}

    wait_until("the topic to disappear from metadata", gone, 10)
    return "topic deleted"


def _quickly(took: float) -> str:
    """A duration for a note: whole seconds, so results files do not flap on a busy machine
    (the exact time is in the run's log line)."""
    return "within 1 s" if took < 1 else f"after {took:.0f} s"


# -- message size ------------------------------------------------------------------------------
LIMIT = 100_000


def _sized_topic(ctx: Ctx, prefix: str) -> str:
    topic = ctx.name(prefix)
    with ctx.wire() as w:
        w.create_topic(topic, 1, {"max.message.bytes": str(LIMIT)})
    return topic


def max_message_under(ctx: Ctx) -> str:
    topic = _sized_topic(ctx, "size-under")
    value = os.urandom(LIMIT - 300)  # batch overhead: 61-byte header + ~20 bytes of record
    ctx.adapter.produce(topic, [Rec(None, value, partition=0)])
    with ctx.wire() as w:
        stored = w.read(topic, 0)
    assert [s.value for s in stored] == [value], "stored value differs"
    return f"{len(value)}-byte value under max.message.bytes={LIMIT}"


def max_message_over(ctx: Ctx) -> str:
    topic = _sized_topic(ctx, "size-over")
    value = os.urandom(LIMIT + 50_000)
    start = time.monotonic()
    try:
        ctx.adapter.produce(topic, [Rec(None, value, partition=0)], timeout_s=60)
    except ClientError as exc:
        took = time.monotonic() - start
        assert exc.code == "MESSAGE_TOO_LARGE", f"error {exc.code} ({exc.raw})"
        assert took < 30, f"the error took {took:.1f} s"
        with ctx.wire() as w:
            assert w.list_offset(topic, 0, LATEST) == 0, "something was stored"
        return f"MESSAGE_TOO_LARGE {_quickly(took)}"
    raise AssertionError(f"a {len(value)}-byte record was accepted by a {LIMIT}-byte topic")


# -- topics and metadata -----------------------------------------------------------------------
def auto_create(ctx: Ctx) -> str:
    topic = ctx.name("auto")
    with ctx.wire() as w:
        assert w.topics([topic]) == {}
    ctx.adapter.produce(topic, [Rec(b"k", b"auto-created")])
    with ctx.wire() as w:
        meta = w.topics([topic])
        assert meta == {topic: 1}, f"metadata {meta} (num.partitions=1)"
        assert [s.value for s in w.read(topic, 0)] == [b"auto-created"]
    ctx.check_replicated(topic)
    return "created by the producer's metadata request" + _rf_note(ctx)


def metadata_100_topics(ctx: Ctx) -> str:
    prefix = ctx.name("meta")
    names = [f"{prefix}-{i:03d}" for i in range(100)]
    with ctx.wire() as w:
        w.create_topics(names, 2)
    listed = ctx.adapter.list_topics()
    missing = [n for n in names if n not in listed]
    assert not missing, f"{len(missing)} topics missing, e.g. {missing[:3]}"
    wrong = {n: listed[n] for n in names if listed[n] != 2}
    assert not wrong, f"partition counts {dict(list(wrong.items())[:3])}"
    return "100 topics / 200 partitions listed"


# -- old clients -------------------------------------------------------------------------------
def _legacy(message_format: int) -> Callable[[Ctx], str]:
    def case(ctx: Ctx) -> str:
        if "legacy" not in ctx.adapter.capabilities:
            note = ctx.adapter.legacy_note
            raise Unsupported(
                f"{ctx.adapter.name} cannot be set up as a pre-0.10 client"
                + (f": {note}" if note else "")
            )
        topic = ctx.name(f"legacy-v{message_format}")
        with ctx.wire() as w:
            w.create_topic(topic, 1)
        values = [f"legacy {i}".encode() for i in range(5)]
        start = time.monotonic()
        try:
            got = ctx.adapter.legacy_round_trip(topic, message_format, values)
        except ClientError as exc:
            took = time.monotonic() - start
            assert exc.code == "UNSUPPORTED_VERSION", f"unclear error {exc.code}: {exc.raw}"
            assert took < 30, f"the error took {took:.1f} s"
            with ctx.wire() as w:
                assert w.list_offset(topic, 0, LATEST) == 0, "something was stored"
            return f"clear error: {exc.code} {_quickly(took)} ({exc.raw[:100]})"
        assert got == values, f"read back {got}"
        return "round trip works"

    return case


# -- failover (cluster row) -------------------------------------------------------------------
FAILOVER_ROUNDS = 4  # rounds of 25 records after the kill (one before it)
FAILOVER_RESENDS = 2  # the case re-sends a round the client gave up on, at most this often
FAILOVER_ATTEMPT_S = 25  # each produce call: an election takes ~5 s (session timeout 4 s)


def failover_kill_leader(ctx: Ctx) -> str:
    """acks=all to an RF 3 partition (min.insync.replicas=2); SIGKILL its leader between two
    produce calls; the client keeps producing with its own retries and metadata refreshes (a
    round the client gives up on is re-sent by the case, up to FAILOVER_RESENDS times, and
    counted in the note); the killed broker is restarted at the end (it must rejoin the ISR).

    Checks: a new leader is elected; every acknowledged record is stored at the new leader, in
    the order sent; nothing is stored that was not sent; with an idempotent producer no record
    acknowledged at the first attempt is stored twice; the client consumes exactly what is
    stored from the new leader; the old leader catches up and is in the ISR again."""
    cluster = ctx.cluster
    assert cluster is not None, "the failover case needs the cluster row"
    caps = ctx.adapter.capabilities
    idempotent = "idempotent" in caps
    topic = ctx.name("failover")
    with ctx.wire() as w:
        w.create_topic(topic, 1, {"min.insync.replicas": "2"})
        # the consume below may go through a group (kafkajs has no other consumer), and with
        # a broker down the offsets topic (replication factor 3) cannot be created: it must
        # exist before the kill, whatever cases ran before this one (`--only`)
        w.ensure_offsets_topic()
        old = w.leader(topic, 0)
    sent: set[bytes] = set()
    acked: list[bytes] = []
    exact: set[bytes] = set()  # acknowledged without a re-send by the case
    resends: list[str] = []

    def produce_round(n: int) -> None:
        values = [f"round{n}-{i:02d}".encode() for i in range(25)]
        sent.update(values)
        for attempt in range(FAILOVER_RESENDS + 1):
            recs = [Rec(None, v, partition=0) for v in values]
            try:
                ctx.adapter.produce(
                    topic, recs, idempotent=idempotent, timeout_s=FAILOVER_ATTEMPT_S
                )
            except ClientError as exc:
                nodes: Sequence[_Process] = cluster.brokers
                others_down = [
                    f"broker {i} ({b.exit_status()})"
                    for i, b in enumerate(nodes)
                    if i != old and not b.is_running()
                ]
                assert not others_down, f"{', '.join(others_down)} stopped during the case"
                if attempt == FAILOVER_RESENDS:
                    raise AssertionError(
                        f"round {n} still failing after {FAILOVER_RESENDS} re-sends: {exc}"
                    ) from exc
                resends.append(f"round {n}: {exc.code}")
                continue
            acked.extend(values)
            if attempt == 0:
                exact.update(values)
            return

    produce_round(0)
    cluster.kill9(old)
    killed_at = time.monotonic()
    recovered_after: float | None = None
    try:
        for n in range(1, FAILOVER_ROUNDS + 1):
            produce_round(n)
            if recovered_after is None:
                recovered_after = time.monotonic() - killed_at
        with ctx.wire() as w:
            wait_until(
                f"a new leader of {topic}-0 (was broker {old})",
                lambda: w.leader(topic, 0) not in (old, -1),
                30,
            )
            new = w.leader(topic, 0)
            stored = w.read(topic, 0)
        got = ctx.adapter.consume(topic, 0, 0, len(stored), timeout_s=45)
    finally:
        cluster.restart(old)
    values = [s.value or b"" for s in stored]
    missing = [v for v in acked if v not in set(values)]
    assert not missing, (
        f"{len(missing)} acknowledged records lost after the failover, e.g. {missing[:3]}"
    )
    alien = [v for v in values if v not in sent]
    assert not alien, f"stored records never sent: {alien[:3]}"
    first_seen: dict[bytes, int] = {}
    for i, v in enumerate(values):
        first_seen.setdefault(v, i)
    positions = [first_seen[v] for v in acked]
    assert positions == sorted(positions), "acknowledged records stored out of order"
    dups = sorted({v for v in values if values.count(v) > 1})
    if idempotent:
        twice = [v for v in dups if v in exact]
        assert not twice, f"idempotent producer: {len(twice)} records stored twice: {twice[:3]}"
    assert [s.offset for s in stored] == list(range(len(stored))), "stored offsets not contiguous"
    assert [g.value for g in got] == values, (
        f"the client consumed {len(got)} records from the new leader, {len(stored)} are stored"
    )
    assert [g.offset for g in got] == list(range(len(stored))), "consumed offsets"
    with ctx.wire() as w:
        wait_until(
            f"broker {old} back in the ISR of {topic}-0",
            lambda: old in w.partitions(topic).get(0, PartitionView(-1, -1, (), ())).isr,
            30,
        )
    ctx.log(
        f"leader {old} killed, new leader {new}; produce acknowledged again "
        f"{recovered_after or 0:.1f} s after the kill; re-sends: {resends or 'none'}; "
        f"duplicates: {len(dups)}"
    )
    producer = "idempotent producer" if idempotent else "producer"
    note = (
        f"{len(acked)} records acknowledged by the {producer} (acks=all) across a kill -9 of "
        "the leader: all stored in order and consumed from the new leader; the old leader "
        "rejoined the ISR"
    )
    return note  # re-sends (if any) are in the log line above: a note must not flap


# -- transactions --------------------------------------------------------------------------------
TXN_PARTITIONS = 2
TXN_RECORDS = 10


def txn_commit_abort(ctx: Ctx) -> str:
    """Three transactions of one transactional producer: commit, abort, commit. The oracle
    finds every record in the log in transactional batches of one producer id and the markers
    COMMIT, ABORT, COMMIT in every partition, each after its transaction's records; the
    client's read_committed consumer gets exactly the committed records (the last transaction
    is a committed one, so an aborted record delivered by mistake would take the place of a
    committed one), its read_uncommitted consumer gets all of them."""
    topic = ctx.name("txn")
    with ctx.wire() as w:
        w.create_topic(topic, TXN_PARTITIONS)
        # the transaction log is created on first use; a partition leader that cannot find
        # its coordinator yet answers a transactional Produce NOT_ENOUGH_REPLICAS (KIP-890,
        # as Kafka does), and kafkajs then re-sends the batches that were written too
        w.ensure_txn_state_topic()

    def txn(tag: str) -> list[Rec]:
        return [
            Rec(b"k%d" % i, f"{tag}-{i}".encode(), partition=i % TXN_PARTITIONS)
            for i in range(TXN_RECORDS)
        ]

    c1, a1, c2 = txn("c1"), txn("a1"), txn("c2")
    ctx.adapter.transactional_produce(
        topic, [(c1, True), (a1, False), (c2, True)], transactional_id=ctx.name("txnid")
    )

    def values(recs: list[Rec], p: int) -> list[bytes | None]:
        return [r.value for r in recs if r.partition == p]

    # EndTxn is answered once the decision is logged; the markers follow (as on Kafka), so
    # the oracle waits until each partition holds its three markers.
    logs: dict[int, tuple[list[StoredRecord], list[Marker]]] = {}

    def all_markers() -> bool:
        with ctx.wire() as w:
            logs.update({p: w.read_log(topic, p) for p in range(TXN_PARTITIONS)})
        return all(len(markers) >= 3 for _, markers in logs.values())

    wait_until("the transactions' markers", all_markers, timeout=30.0)
    for p, (stored, markers) in logs.items():
        where = f"{topic}-{p}"
        assert [s.value for s in stored] == values(c1 + a1 + c2, p), f"{where}: log {stored}"
        assert all(s.transactional for s in stored), f"{where}: non-transactional batches"
        pids = {s.producer_id for s in stored} | {m.producer_id for m in markers}
        assert len(pids) == 1 and -1 not in pids, f"{where}: producer ids {pids}"
        assert [m.commit for m in markers] == [True, False, True], f"{where}: markers {markers}"
        per = TXN_RECORDS // TXN_PARTITIONS
        ends = [stored[per * (i + 1) - 1].offset for i in range(3)]
        assert all(e < m.offset for e, m in zip(ends, markers, strict=True)), (
            f"{where}: markers {markers} not after their transactions (last records {ends})"
        )

    for p in range(TXN_PARTITIONS):
        want = values(c1 + c2, p)
        got = ctx.adapter.consume(topic, p, 0, len(want), read_committed=True)
        assert [r.value for r in got] == want, f"read_committed {topic}-{p}: {got}"
        want_all = values(c1 + a1 + c2, p)
        got = ctx.adapter.consume(topic, p, 0, len(want_all), read_committed=False)
        assert [r.value for r in got] == want_all, f"read_uncommitted {topic}-{p}: {got}"
    return (
        f"commit, abort, commit of {TXN_RECORDS} records over {TXN_PARTITIONS} partitions: "
        "markers COMMIT/ABORT/COMMIT in each; read_committed got the committed records only, "
        "read_uncommitted all"
    )


SINGLE_BROKER = "single"
CLUSTER = "cluster"
ROWS = (SINGLE_BROKER, CLUSTER)
#: The consumer group protocol's rows (`runner --group-protocol consumer`): the group cases
#: of the single-broker and cluster rows again, every member with `group.protocol=consumer`
#: (KIP-848). Their files: passing-consumer.txt, passing-cluster-consumer.txt, ...
CONSUMER = "consumer"
CLUSTER_CONSUMER = "cluster-consumer"
GROUP_PROTOCOL_ROWS = {CONSUMER: SINGLE_BROKER, CLUSTER_CONSUMER: CLUSTER}  # -> base row


def row_of(cluster: bool, group_protocol: str = "classic") -> str:
    """The row a run makes: its brokers (one or a cluster) and its members' group protocol."""
    base = CLUSTER if cluster else SINGLE_BROKER
    if group_protocol == "classic":
        return base
    return {SINGLE_BROKER: CONSUMER, CLUSTER: CLUSTER_CONSUMER}[base]


def base_row(row: str) -> str:
    """The brokers of a row: SINGLE_BROKER or CLUSTER."""
    return GROUP_PROTOCOL_ROWS.get(row, row)


def group_protocol_of(row: str) -> str:
    """The `group.protocol` of a row's group members: "consumer" or "classic"."""
    return "consumer" if row in GROUP_PROTOCOL_ROWS else "classic"


@dataclass(frozen=True)
class Case:
    id: str
    run: Callable[[Ctx], str]
    not_in: dict[str, str] = field(default_factory=dict)  # row -> why the case does not apply
    groups: bool = False  # it runs group members (also in the consumer protocol's rows)

    def applies(self, row: str) -> bool:
        if row in GROUP_PROTOCOL_ROWS and not self.groups:
            return False
        return base_row(row) not in self.not_in


_ONLY_CLUSTER = {SINGLE_BROKER: "needs replicas on other brokers to fail over to"}

CASES: list[Case] = [
    Case("roundtrip.create_time", roundtrip_create_time),
    Case("roundtrip.log_append_time", roundtrip_log_append_time),
    *[Case(f"compression.{c}", _compression(c)) for c in CODECS],
    Case(
        "idempotent.retries",
        idempotent_retries,
        {
            CLUSTER: "the fault proxy stands in front of one broker that advertises the proxy's "
            "address; in a cluster the advertised addresses are also the replication path. "
            "Idempotent retries across a leader change: failover.kill_leader"
        },
    ),
    Case("group.rebalance_commit_resume", group_rebalance_commit_resume, groups=True),
    Case("admin.create_topic_configs", admin_create_topic_configs),
    Case("admin.create_partitions", admin_create_partitions),
    Case("admin.describe_configs", admin_describe_configs),
    Case("admin.alter_configs", admin_alter_configs),
    Case("admin.list_groups", admin_list_groups, groups=True),
    Case("admin.describe_groups", admin_describe_groups, groups=True),
    Case("admin.delete_groups", admin_delete_groups, groups=True),
    Case("admin.list_offsets_by_timestamp", admin_list_offsets_by_timestamp),
    Case("admin.delete_records", admin_delete_records),
    Case("admin.delete_topic", admin_delete_topic),
    Case("max_message.under", max_message_under),
    Case("max_message.over", max_message_over),
    Case("auto_create", auto_create),
    Case(
        "metadata.100_topics",
        metadata_100_topics,
        {
            CLUSTER: "what it checks does not depend on replication (one Metadata response "
            "listing 100 topics; every cluster case reads multi-broker Metadata), and 600 "
            "replicas cost 5-12 s per client to create (the controller elects new partitions "
            "one at a time), too much for the row's time budget"
        },
    ),
    Case("legacy.message_format_v0", _legacy(0)),
    Case("legacy.message_format_v1", _legacy(1)),
    Case("failover.kill_leader", failover_kill_leader, _ONLY_CLUSTER),
    Case("txn.commit_abort", txn_commit_abort),
]


def cases_of(row: str) -> list[Case]:
    """The cases of one row, in CASES order."""
    return [c for c in CASES if c.applies(row)]
