"""Disk full: real producers against a broker whose data directory runs out of space.

Space (`make_space`):

- `TmpfsSpace` (preferred): `mount -t tmpfs -o size=8m tmpfs DIR`. Needs root with
  CAP_SYS_ADMIN; the broker's data directory is DIR/data, and "used space" is taken by
  512 KiB ballast files next to it, so freeing space is deleting ballast.
- `QuotaSpace` (fallback where mounting is refused): the broker runs under
  `quota_broker.py`, which caps the bytes written through the storage layer's FileSystem
  seam at the number in a control file; freeing space is raising that number.

`run_disk_full` (one scenario, every step bounded in time):

1. start the broker, create topic `full` (2 partitions, internal.segment.bytes 64 KiB, Kafka's
   config for small test segments, so segments roll while the disk fills), take all but
   ~2.5 MiB of the free space;
2. fill: four producers send concurrently (value ~0.5-2 KiB, unique key) until each has
   seen failed sends: kafka-python acks=all without retries (sees KAFKA_STORAGE_ERROR
   directly), kafka-python idempotent (retries until delivery.timeout.ms), confluent-kafka
   idempotent (retries until message.timeout.ms), confluent-kafka acks=1 without retries.
   Every send's outcome and the time it took are recorded;
3. while the disk is full: the broker answers Metadata, and a consumer reads back every
   record acknowledged so far;
4. free 512 KiB, let what is being retried through, fill again (`cycles` times): every
   producer must get acknowledgements again without a broker restart;
5. free 512 KiB, let every producer drain, close the retrying one, fill up again with the
   others; with the disk full, stop the broker (SIGTERM), free everything, start it again;
6. check: every segment of every partition scans clean (`logscan.scan_partition`) and
   `tools/dump_log.py` exits 0 for the topic's partitions; every acknowledged record is
   read back at its acknowledged offset with its key and value; no acknowledged key is
   stored twice; no send stayed unresolved; the broker accepts new records.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logscan import scan_partition, segment_bases

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from _broker import REPO_ROOT, BrokerProcess

__all__ = ["DiskFullReport", "QuotaSpace", "TmpfsSpace", "make_space", "run_disk_full"]

TOPIC = "full"
PARTITIONS = 2
TOPIC_CONFIGS = {"internal.segment.bytes": str(64 * 1024)}
FS_SIZE = 8 << 20
FREE_AT_START = 2560 << 10
CHUNK = 512 << 10
WINDOW = 64  # sends in flight per producer
PHASE_SECONDS = 40.0
CLIENT_TIMEOUT = 15.0
DELIVERY_TIMEOUT_MS = 4000
HANG_BOUND_S = 20.0
STALL_SECONDS = 1.5


# -- space ------------------------------------------------------------------------------------


class TmpfsSpace:
    mode = "tmpfs"

    def __init__(self, mount_dir: Path) -> None:
        self.mount_dir = mount_dir
        self.data_dir = mount_dir / "data"
        self.ballast: list[Path] = []
        self.description = f"tmpfs of {FS_SIZE >> 20} MiB (mount -t tmpfs -o size=8m)"

    def mount(self) -> bool:
        self.mount_dir.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(self.mount_dir)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return r.returncode == 0

    def free_bytes(self) -> int:
        st = os.statvfs(self.mount_dir)
        return st.f_bavail * st.f_frsize

    def fill_to(self, free: int) -> None:
        """Add ballast until about `free` bytes are left."""
        i = len(self.ballast)
        while self.free_bytes() - CHUNK >= free:
            path = self.mount_dir / f"ballast-{i}"
            with path.open("wb") as f:
                f.write(b"\xa5" * CHUNK)
            self.ballast.append(path)
            i += 1

    def free_chunk(self) -> None:
        if self.ballast:
            self.ballast.pop().unlink()

    def free_all(self) -> None:
        while self.ballast:
            self.free_chunk()

    def broker(self, log_path: Path) -> BrokerProcess:
        return BrokerProcess(self.data_dir, log_path=log_path)

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.mount_dir)], capture_output=True, timeout=30)


class _QuotaBroker(BrokerProcess):
    def __init__(self, data_dir: Path, quota_file: Path, log_path: Path) -> None:
        super().__init__(data_dir, log_path=log_path)
        self.quota_file = quota_file

    def command(self, port: int = 0) -> list[str]:
        cmd = super().command(port)
        launcher = str(Path(__file__).with_name("quota_broker.py"))
        return [cmd[0], launcher, str(self.quota_file), *cmd[3:]]  # drop "-m wirebroker"


class QuotaSpace:
    mode = "seam"

    def __init__(self, workdir: Path, why: str) -> None:
        self.data_dir = workdir / "data"
        self.quota_file = workdir / "quota"
        self.quota = 1 << 40
        self.description = f"FileSystem seam with a byte quota (quota_broker.py; {why})"
        self.quota_file.write_text(str(self.quota))

    def used(self) -> int:
        total = 0
        for dirpath, _, files in os.walk(self.data_dir):
            for name in files:
                with suppress(OSError):
                    total += os.stat(os.path.join(dirpath, name)).st_size
        return total

    def _set(self, quota: int) -> None:
        self.quota = quota
        tmp = self.quota_file.with_suffix(".tmp")
        tmp.write_text(str(quota))
        tmp.replace(self.quota_file)

    def free_bytes(self) -> int:
        return max(self.quota - self.used(), 0)

    def fill_to(self, free: int) -> None:
        self._set(self.used() + free)

    def free_chunk(self) -> None:
        self._set(self.quota + CHUNK)

    def free_all(self) -> None:
        self._set(1 << 40)

    def broker(self, log_path: Path) -> BrokerProcess:
        return _QuotaBroker(self.data_dir, self.quota_file, log_path)

    def close(self) -> None:
        pass


def make_space(workdir: Path, force_seam: bool = False) -> TmpfsSpace | QuotaSpace:
    """A tmpfs when it can be mounted (root with CAP_SYS_ADMIN), else the seam quota."""
    if force_seam:
        return QuotaSpace(workdir, "asked for")
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return QuotaSpace(workdir, "not root: no tmpfs mount")
    space = TmpfsSpace(workdir / "mnt")
    if space.mount():
        return space
    return QuotaSpace(workdir, "mount -t tmpfs was refused")


# -- producers --------------------------------------------------------------------------------


@dataclass
class Outcome:
    key: bytes
    crc: int
    partition: int
    offset: int  # -1 when it failed
    error: str  # "" when acknowledged
    seconds: float


@dataclass
class Ledger:
    """Every send of every producer (thread safe)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    outcomes: list[Outcome] = field(default_factory=list)
    in_flight: Counter[str] = field(default_factory=Counter)
    sent: Counter[str] = field(default_factory=Counter)

    def record(self, who: str, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)
            self.in_flight[who] -= 1


def _value(key: bytes, n: int) -> bytes:
    return key + b":" + bytes([n % 251]) * (512 + (n * 7919) % 1536)


class Sender:
    """One producer client; `send` is asynchronous, outcomes go to the ledger."""

    #: True for a producer that retries a failed send until space returns (it never sees
    #: the error; a phase stops it once its window is full and nothing resolves)
    retries_until_space = False

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name = name
        self.ledger = ledger
        self.n = 0
        self.failures_seen = 0
        self.successes_seen = 0
        self.last_resolved = time.monotonic()
        self.abandoning = False

    def next_record(self) -> tuple[bytes, bytes, int]:
        key = f"{self.name}-{self.n}".encode()
        value = _value(key, self.n)
        partition = self.n % PARTITIONS
        self.n += 1
        return key, value, partition

    def _done(self, key: bytes, value: bytes, partition: int, t0: float, offset: int, err: str):
        self.last_resolved = time.monotonic()
        if err:
            self.failures_seen += 1
            if self.abandoning:
                err = "abandoned-at-close"
        else:
            self.successes_seen += 1
        out = Outcome(key, zlib.crc32(value), partition, offset, err, time.monotonic() - t0)
        self.ledger.record(self.name, out)

    def send(self) -> None:
        raise NotImplementedError

    def poll(self) -> None:
        pass

    def flush(self, timeout: float) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class KafkaPythonSender(Sender):
    def __init__(self, name: str, ledger: Ledger, bootstrap: str, **config: Any) -> None:
        from kafka import KafkaProducer

        super().__init__(name, ledger)
        config.setdefault("delivery_timeout_ms", DELIVERY_TIMEOUT_MS)
        self.retries_until_space = config["delivery_timeout_ms"] > 60_000
        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=2000, **config
        )

    def send(self) -> None:
        key, value, partition = self.next_record()
        t0 = time.monotonic()
        with self.ledger.lock:
            self.ledger.in_flight[self.name] += 1
            self.ledger.sent[self.name] += 1
        try:
            fut = self.producer.send(TOPIC, key=key, value=value, partition=partition)
        except Exception as exc:  # the accumulator refused it (buffer full, closed)
            self._done(key, value, partition, t0, -1, type(exc).__name__)
            return
        fut.add_callback(lambda md: self._done(key, value, partition, t0, md.offset, ""))
        fut.add_errback(
            lambda exc: self._done(
                key, value, partition, t0, -1, getattr(exc, "message", "") or type(exc).__name__
            )
        )

    def flush(self, timeout: float) -> None:
        with suppress(Exception):  # what is unresolved is counted from the ledger
            self.producer.flush(timeout=timeout)

    def close(self) -> None:
        try:
            self.producer.close(timeout=5)
        except Exception:  # give up on what is still retrying: those sends fail
            # (kafka-python's close() flushes first and raises when that times out; its
            # sender's force_close fails the pending futures)
            self.abandoning = True
            sender = getattr(self.producer, "_sender", None)
            if sender is not None:
                sender.force_close()


class ConfluentSender(Sender):
    def __init__(self, name: str, ledger: Ledger, bootstrap: str, **config: Any) -> None:
        from confluent_kafka import Producer

        super().__init__(name, ledger)
        self.fatal: list[str] = []
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 5,
                "message.timeout.ms": DELIVERY_TIMEOUT_MS,
                "request.timeout.ms": 2000,
                "error_cb": lambda err: self.fatal.append(str(err)) if err.fatal() else None,
                **config,
            }
        )

    def send(self) -> None:
        from confluent_kafka import KafkaException

        key, value, partition = self.next_record()
        t0 = time.monotonic()
        with self.ledger.lock:
            self.ledger.in_flight[self.name] += 1
            self.ledger.sent[self.name] += 1

        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                self._done(key, value, partition, t0, -1, err.name())
            else:
                self._done(key, value, partition, t0, int(msg.offset()), "")

        try:
            self.producer.produce(
                TOPIC, key=key, value=value, partition=partition, on_delivery=on_delivery
            )
        except (BufferError, KafkaException) as exc:
            self._done(key, value, partition, t0, -1, type(exc).__name__)
        self.producer.poll(0)

    def poll(self) -> None:
        self.producer.poll(0)

    def flush(self, timeout: float) -> None:
        self.producer.flush(timeout)

    def close(self) -> None:
        self.producer.flush(5)


def _make_senders(bootstrap: str, ledger: Ledger) -> list[Sender]:
    # kafka-python's idempotent producer keeps its default delivery.timeout.ms (120 s): in
    # kafka-python 3.0.12, a retried batch that expires resets the producer id without
    # requesting a new one, and every later send then waits forever (a client bug, seen
    # with any broker); so it retries until space returns instead of expiring.
    return [
        KafkaPythonSender("kp-noretry", ledger, bootstrap, retries=0, enable_idempotence=False),
        KafkaPythonSender(
            "kp-idem", ledger, bootstrap, enable_idempotence=True, delivery_timeout_ms=120_000
        ),
        ConfluentSender("ck-idem", ledger, bootstrap, **{"enable.idempotence": True}),
        ConfluentSender("ck-acks1", ledger, bootstrap, acks=1, retries=0),
    ]


def _run_phase(senders: list[Sender], ledger: Ledger, want_failures: int) -> float:
    """All senders send concurrently until each saw `want_failures` failed sends since the
    phase began (bounded by PHASE_SECONDS); then flush. Returns the phase duration."""
    t_start = time.monotonic()
    deadline = t_start + PHASE_SECONDS
    errors: list[BaseException] = []

    def stalled(s: Sender) -> bool:
        now = time.monotonic()
        return (
            ledger.in_flight[s.name] >= WINDOW
            and now - s.last_resolved > STALL_SECONDS
            and now - t_start > STALL_SECONDS
        )

    def loop(s: Sender) -> None:
        base = s.failures_seen
        try:
            while time.monotonic() < deadline:
                if s.retries_until_space:
                    if stalled(s):
                        return  # its window is stuck retrying: the disk is full for it
                elif s.failures_seen - base >= want_failures:
                    break
                if ledger.in_flight[s.name] < WINDOW:
                    s.send()
                else:
                    s.poll()
                    time.sleep(0.002)
            s.flush(HANG_BOUND_S)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(s,), daemon=True) for s in senders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PHASE_SECONDS + HANG_BOUND_S + 10)
    assert not any(t.is_alive() for t in threads), "a producer thread hung"
    if errors:
        raise errors[0]
    return time.monotonic() - t_start


# -- checks -----------------------------------------------------------------------------------


def _metadata_ok(bootstrap: str) -> bool:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        return TOPIC in consumer.topics()
    finally:
        consumer.close()


def _read_all(bootstrap: str) -> dict[tuple[int, int], tuple[bytes, int]]:
    """(partition, offset) -> (key, crc32 of value), every record up to the end offsets."""
    from kafka import KafkaConsumer, TopicPartition

    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=10_000,
        fetch_max_wait_ms=100,
    )
    out: dict[tuple[int, int], tuple[bytes, int]] = {}
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps, timeout_ms=10_000)
        deadline = time.monotonic() + 60
        while any(consumer.position(tp, timeout_ms=10_000) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"read-back did not reach {ends}"
            for tp, records in consumer.poll(timeout_ms=200).items():
                for r in records:
                    out[(tp.partition, r.offset)] = (r.key, zlib.crc32(r.value))
    finally:
        consumer.close(autocommit=False, timeout_ms=5000)
    return out


def _missing(ledger: Ledger, stored: dict[tuple[int, int], tuple[bytes, int]]) -> int:
    return sum(
        1
        for o in ledger.outcomes
        if not o.error and stored.get((o.partition, o.offset)) != (o.key, o.crc)
    )


@dataclass
class DiskFullReport:
    mode: str = ""
    space: str = ""
    sends: int = 0
    acked: int = 0
    failed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    unresolved: int = 0
    slowest_s: float = 0.0  # slowest send of the producers with bounded retries
    longest_retry_s: float = 0.0  # kafka-python idempotent: retried until space returned
    lost: int = 0
    lost_while_full: int = 0
    read_while_full: int = 0
    duplicates: int = 0
    cycles: int = 0
    resumed_cycles: int = 0
    segments_checked: int = 0
    corrupt_segments: int = 0
    dump_log_failures: int = 0
    partitions_checked: int = 0
    stop_exit_code: int | None = None
    offline_events: int = 0
    metadata_while_full: bool = False
    confluent_fatal: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Everything that breaks the disk-full contract (empty when it held)."""
        out = []
        if self.failed == 0:
            out.append("the disk never filled: no send failed")
        if self.lost:
            out.append(f"{self.lost} acknowledged records missing after the restart")
        if self.lost_while_full:
            out.append(f"{self.lost_while_full} acknowledged records unreadable while full")
        if self.duplicates:
            out.append(f"{self.duplicates} acknowledged keys stored twice")
        if self.unresolved:
            out.append(f"{self.unresolved} sends never resolved")
        if self.slowest_s > HANG_BOUND_S:
            out.append(f"a send took {self.slowest_s:.1f} s (bound {HANG_BOUND_S} s)")
        if self.resumed_cycles != self.cycles:
            out.append(f"appends resumed in {self.resumed_cycles}/{self.cycles} cycles")
        if self.corrupt_segments or self.dump_log_failures:
            out.append(
                f"{self.corrupt_segments} corrupt segments, {self.dump_log_failures} "
                "dump_log failures"
            )
        if not self.metadata_while_full:
            out.append("the broker did not answer Metadata while the disk was full")
        if self.confluent_fatal:
            out.append(f"confluent-kafka fatal errors: {self.confluent_fatal}")
        bad = set(self.errors) - {
            "KAFKA_STORAGE_ERROR",
            "KafkaStorageError",
            "_MSG_TIMED_OUT",
            "KafkaTimeoutError",
            "abandoned-at-close",
        }
        if bad:
            out.append(f"unexpected client errors: {sorted(bad)}")
        return out


def _check_files(data_dir: Path, report: DiskFullReport) -> None:
    for part in sorted(p for p in data_dir.iterdir() if p.is_dir()):
        if not any(part.glob("*.log")):
            continue
        report.segments_checked += len(segment_bases(part))
        if scan_partition(part).damage is not None:
            report.corrupt_segments += 1
        if part.name.startswith(f"{TOPIC}-"):
            report.partitions_checked += 1
            r = subprocess.run(
                [sys.executable, str(REPO_ROOT / "tools" / "dump_log.py"), str(part)],
                capture_output=True,
                timeout=120,
            )
            if r.returncode != 0:
                report.dump_log_failures += 1


def _cycles(
    space: TmpfsSpace | QuotaSpace,
    senders: list[Sender],
    ledger: Ledger,
    report: DiskFullReport,
    cycles: int,
) -> None:
    """`cycles` times: free a chunk of space, let every producer get an append in, fill the
    disk again; a cycle resumed when every producer had a new acknowledgement."""
    for _ in range(cycles):
        before = {s.name: s.successes_seen for s in senders}
        space.free_chunk()
        for s in senders:  # what is retrying goes first (it would lose the race)
            s.flush(HANG_BOUND_S)
        # then one send from each producer in turn, so each has its own append after the
        # space returned; in the concurrent phase alone the others may fill the chunk
        # before a producer without retries (ck-acks1) gets a send in
        for s in senders:
            s.send()
            s.flush(HANG_BOUND_S)
        _run_phase(senders, ledger, want_failures=3)
        report.cycles += 1
        stuck = [s.name for s in senders if s.successes_seen == before[s.name]]
        if stuck:
            report.notes.append(f"cycle {report.cycles}: no acknowledgement for {stuck}")
        else:
            report.resumed_cycles += 1


def _tally(ledger: Ledger, report: DiskFullReport) -> None:
    """The ledger's sends, acknowledgements, failures and latencies into `report`."""
    with ledger.lock:
        report.sends = sum(ledger.sent.values())
        report.acked = sum(1 for o in ledger.outcomes if not o.error)
        report.failed = sum(1 for o in ledger.outcomes if o.error)
        report.errors = Counter(o.error for o in ledger.outcomes if o.error)
        report.unresolved = report.sends - len(ledger.outcomes)
        report.slowest_s = max(
            (o.seconds for o in ledger.outcomes if not o.key.startswith(b"kp-idem")), default=0.0
        )
        report.longest_retry_s = max(
            (o.seconds for o in ledger.outcomes if o.key.startswith(b"kp-idem")), default=0.0
        )


def run_disk_full(workdir: Path, cycles: int = 2, force_seam: bool = False) -> DiskFullReport:
    """The scenario of the module doc; returns what happened (see `problems`)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    report = DiskFullReport()
    space = make_space(workdir, force_seam)
    report.mode, report.space = space.mode, space.description
    ledger = Ledger()
    proc = space.broker(workdir / "broker.log")
    senders: list[Sender] = []
    try:
        bootstrap = proc.start()
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        try:
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, topic_configs=TOPIC_CONFIGS)])
        finally:
            admin.close()
        space.fill_to(FREE_AT_START)
        senders = _make_senders(bootstrap, ledger)
        _run_phase(senders, ledger, want_failures=3)
        report.metadata_while_full = _metadata_ok(bootstrap)
        stored = _read_all(bootstrap)
        report.read_while_full = len(stored)
        report.lost_while_full = _missing(ledger, stored)
        _cycles(space, senders, ledger, report, cycles)
        # let the producer that retries until space returns finish, then fill up once more
        # without it, and stop the broker while the disk is full
        space.free_chunk()
        for s in senders:
            s.flush(HANG_BOUND_S)
        retrying = [s for s in senders if s.retries_until_space]
        senders = [s for s in senders if not s.retries_until_space]
        for s in retrying:
            s.close()
        _run_phase(senders, ledger, want_failures=3)
        for s in senders:
            s.flush(HANG_BOUND_S)
            if isinstance(s, ConfluentSender):
                report.confluent_fatal += s.fatal
            s.close()
        senders = []
        report.stop_exit_code = proc.stop()
        space.free_all()
        _check_files(space.data_dir, report)
        bootstrap = proc.start()
        stored = _read_all(bootstrap)
        report.lost = _missing(ledger, stored)
        acked_keys = {o.key for o in ledger.outcomes if not o.error}
        seen = Counter(k for k, _ in stored.values() if k in acked_keys)
        report.duplicates = sum(n - 1 for n in seen.values() if n > 1)
        extra = KafkaPythonSender("after", ledger, bootstrap)
        extra.send()
        extra.flush(CLIENT_TIMEOUT)
        extra.close()
        assert ledger.outcomes[-1].key.startswith(b"after") and not ledger.outcomes[-1].error, (
            "the restarted broker refused a new record"
        )
    finally:
        for s in senders:
            with suppress(Exception):
                s.close()
        proc.close()
        log_text = proc.log_text()
        report.offline_events = log_text.count("taking the log offline")
        space.close()
        shutil.rmtree(workdir / "data", ignore_errors=True)
    _tally(ledger, report)
    return report


def format_report(r: DiskFullReport) -> str:
    errs = ", ".join(f"{k} {v}" for k, v in r.errors.most_common())
    return "\n".join(
        [
            f"space: {r.space}",
            f"sends {r.sends}, acknowledged {r.acked}, failed {r.failed} ({errs})",
            f"unresolved {r.unresolved}, slowest send {r.slowest_s:.2f} s (bounded retries), "
            f"longest retry until space returned {r.longest_retry_s:.2f} s",
            f"read back while full: {r.read_while_full} records, {r.lost_while_full} acked missing",
            f"cycles resumed without restart: {r.resumed_cycles}/{r.cycles}",
            f"SIGTERM while full: exit code {r.stop_exit_code}; logs taken offline: "
            f"{r.offline_events}",
            f"after restart: {r.lost} acked missing, {r.duplicates} duplicates, "
            f"{r.corrupt_segments} corrupt of {r.segments_checked} segments, dump_log failed "
            f"on {r.dump_log_failures}/{r.partitions_checked} partitions",
            *r.notes,
        ]
    )
