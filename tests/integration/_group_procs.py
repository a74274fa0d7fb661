"""Consumer-group member processes for the integration tests (one member per process).

Run as a script, this module is ONE group member:

    python _group_procs.py --client kafka-python|confluent-kafka
                           --bootstrap H:P --topic T --group G --name w1
                           [--session-timeout-ms 6000] [--heartbeat-interval-ms 500]
                           [--max-poll-records 50] [--max-seconds 120]
                           [--revoke-delay-s 0]

It subscribes to T in group G (auto commit off; the clients' default eager assignors: range
first), polls, and after every non-empty poll commits synchronously the offset after the last
record of each partition it got (metadata "by NAME"). It reports to the parent on stdout, one
JSON object per line, each with `t` = time.monotonic() (CLOCK_MONOTONIC is system-wide on
Linux, so the parent can compare it with its own clock):

    {"ev": "started", "name": N, "pid": PID}
    {"ev": "assigned", "gen": G, "member": MEMBER_ID, "partitions": [p, ...]}
    {"ev": "revoked", "gen": G, "partitions": [p, ...]}
    {"ev": "records", "gen": G, "records": [[p, offset, key_hex|null, value_hex|null], ...]}
    {"ev": "commit", "gen": G, "offsets": {"p": next_offset, ...}}
    {"ev": "commit_failed", "gen": G, "error": "..."}     (e.g. a rebalance raced the commit)
    {"ev": "closed"}                                       (after a clean close: LeaveGroup sent)
    {"ev": "error", "error": "..."}                        (unexpected exception; exit code 1)

`gen` is the generation the member joined with, read when the assignment callback runs
(kafka-python: its coordinator's private `_generation`; librdkafka: the serialized consumer
group metadata, see `_librdkafka_generation`); `revoked` carries the generation being given
up. A line "stop" on stdin (or stdin EOF) closes the consumer cleanly and exits 0;
`--max-seconds` bounds the life of a member whose parent vanished.

Imported, `GroupWorker` starts such a process and collects its events on a reader thread, and
`wait_until` polls a condition with a bounded deadline (short polling, no fixed sleeps).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

# --------------------------------------------------------------------------------------------
# parent side: data helpers shared by the group tests (kafka-python admin + producer)
# --------------------------------------------------------------------------------------------

#: Client timeouts (ms) for the helpers here.
REQUEST_TIMEOUT_MS = 10_000


def record_for(partition: int, i: int) -> tuple[bytes | None, bytes]:
    """The (key, value) of record number `i` of `partition`: unique, binary (not UTF-8)."""
    key = None if i % 5 == 4 else b"k\x00" + bytes([partition]) + i.to_bytes(4, "big")
    value = b"p%d-i%d|" % (partition, i) + bytes(
        (i * 37 + partition + j) % 256 for j in range(i % 23)
    )
    return key, value + b"\xff\xfe\x00"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = admin_client(bootstrap)
    try:
        admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1}})
    finally:
        admin.close()


def produce(
    bootstrap: str, topic: str, partitions: int, start: int, count: int
) -> dict[int, list[tuple[bytes | None, bytes]]]:
    """Write records start..start+count-1 (see `record_for`) to every partition, acks=all.

    Returns {partition: [(key, value), ...]} in send order; asserts each partition's
    acknowledged offsets are exactly start..start+count-1 (the topic held `start` records)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=5,
        max_block_ms=REQUEST_TIMEOUT_MS,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        delivery_timeout_ms=2 * REQUEST_TIMEOUT_MS,
    )
    sent: dict[int, list[tuple[bytes | None, bytes]]] = {p: [] for p in range(partitions)}
    futures: dict[int, list[Any]] = {p: [] for p in range(partitions)}
    try:
        for i in range(start, start + count):
            for p in range(partitions):
                key, value = record_for(p, i)
                sent[p].append((key, value))
                futures[p].append(producer.send(topic, key=key, value=value, partition=p))
        producer.flush(timeout=REQUEST_TIMEOUT_MS / 1000)
        for p in range(partitions):
            offsets = [f.get(timeout=REQUEST_TIMEOUT_MS / 1000).offset for f in futures[p]]
            assert offsets == list(range(start, start + count)), (p, offsets[:10])
    finally:
        producer.close(timeout=5)
    return sent


def admin_client(bootstrap: str) -> Any:
    """A kafka-python KafkaAdminClient with bounded requests (close it)."""
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS)


def committed_offsets(admin: Any, group: str) -> dict[tuple[str, int], tuple[int, str]]:
    """{(topic, partition): (offset, metadata)} of `group` (OffsetFetch, all partitions)."""
    result = admin.list_group_offsets(group)
    return {(tp.topic, tp.partition): (om.offset, om.metadata) for tp, om in result[group].items()}


# --------------------------------------------------------------------------------------------
# parent side: member processes
# --------------------------------------------------------------------------------------------


def wait_until(predicate: Callable[[], Any], timeout: float, what: str | Callable[[], str]) -> Any:
    """Poll `predicate` every 50 ms until it returns something truthy; AssertionError after
    `timeout` seconds (the message is `what`, or what `what()` returns then)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            message = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout} s: {message}")
        time.sleep(0.05)


class GroupWorker:
    """One member process (this file run as a script); its events accumulate in `events`."""

    def __init__(
        self,
        *,
        bootstrap: str,
        topic: str,
        group: str,
        name: str,
        log_dir: Path,
        client: str = "kafka-python",
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 500,
        max_poll_records: int = 50,
        max_seconds: float = 120.0,
        revoke_delay_s: float = 0.0,
    ) -> None:
        self.name = name
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.stderr_path = Path(log_dir) / f"worker-{name}.stderr"
        self._stderr: IO[str] = self.stderr_path.open("w", encoding="utf-8")
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--client",
            client,
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--name",
            name,
            "--session-timeout-ms",
            str(session_timeout_ms),
            "--heartbeat-interval-ms",
            str(heartbeat_interval_ms),
            "--max-poll-records",
            str(max_poll_records),
            "--max-seconds",
            str(max_seconds),
            "--revoke-delay-s",
            str(revoke_delay_s),
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, name=f"worker-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                line = line.strip()
                if not line:
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    event = {"ev": "garbage", "line": line}
                with self._lock:
                    self.events.append(event)
        except (OSError, ValueError):
            pass

    # -- views ------------------------------------------------------------------------------
    def snapshot(self, kind: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if kind is None or e["ev"] == kind]

    def last_assignment(self) -> dict[str, Any] | None:
        assigned = self.snapshot("assigned")
        return assigned[-1] if assigned else None

    def errors(self) -> list[dict[str, Any]]:
        return self.snapshot("error") + self.snapshot("garbage")

    def stderr_tail(self, chars: int = 4000) -> str:
        self._stderr.flush()
        text = self.stderr_path.read_text(errors="replace")
        return text[-chars:]

    def describe(self) -> str:
        kinds: dict[str, int] = {}
        for e in self.snapshot():
            kinds[e["ev"]] = kinds.get(e["ev"], 0) + 1
        return (
            f"worker {self.name} (pid {self.proc.pid}, exit {self.proc.poll()}): events {kinds}, "
            f"last assignment {self.last_assignment()}, errors {self.errors()[:3]}\n"
            f"stderr tail:\n{self.stderr_tail(1500)}"
        )

    # -- lifecycle --------------------------------------------------------------------------
    def kill9(self) -> float:
        """SIGKILL the member (no LeaveGroup, no commit); returns time.monotonic() of the kill."""
        t = time.monotonic()
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        return t

    def stop(self, timeout: float = 20.0) -> int | None:
        """Ask for a clean close (LeaveGroup); SIGKILL if it does not exit within `timeout`."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("stop\n")
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except (OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        return self.proc.returncode

    def close(self) -> None:
        """Kill if still running and release the files; safe to call twice."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        self._stderr.close()


# --------------------------------------------------------------------------------------------
# child side (the member process)
# --------------------------------------------------------------------------------------------


#: kafka-python 3.0.12 can orphan a JoinGroup/SyncGroup in flight when poll() times out during
#: a rebalance it started itself (a leader whose metadata snapshot changed after it assigned):
#: need_rejoin() turns False once the in-flight join recomputes the snapshot, so no later poll
#: collects the join's result and the member never takes its assignment (it is expired after
#: session.timeout.ms). A poll timeout longer than a join normally takes (members rejoin within
#: one heartbeat interval) keeps the join inside one poll() call.
POLL_TIMEOUT_MS = 1000


def _emit(event: dict[str, Any]) -> None:
    event["t"] = time.monotonic()
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _parse_args(argv: list[str]) -> Any:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--client", choices=("kafka-python", "confluent-kafka", "confluent-848"), required=True
    )
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=500)
    parser.add_argument("--max-poll-records", type=int, default=50)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    # confluent members: the revoke callback returns this long after its "revoked" event (a
    # member busy in its callback, its revocation not yet acknowledged: mid-reconciliation)
    parser.add_argument("--revoke-delay-s", type=float, default=0.0)
    return parser.parse_args(argv)


def _hex(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def _kafka_python_member(args: Any, stop: threading.Event) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=f"wb-{args.name}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        max_poll_records=args.max_poll_records,
        request_timeout_ms=10_000,
        fetch_max_wait_ms=100,
        retry_backoff_ms=50,
    )
    state: dict[str, int] = {"gen": -1}

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            parts = sorted(tp.partition for tp in revoked)
            _emit({"ev": "revoked", "gen": state["gen"], "partitions": parts})

        def on_partitions_assigned(self, assigned: Any) -> None:
            gen = consumer._coordinator._generation  # private: kafka-python has no accessor
            state["gen"] = int(gen.generation_id)
            parts = sorted(tp.partition for tp in assigned)
            _emit(
                {
                    "ev": "assigned",
                    "gen": state["gen"],
                    "member": gen.member_id,
                    "partitions": parts,
                }
            )

        def on_partitions_lost(self, lost: Any) -> None:
            self.on_partitions_revoked(lost)

    deadline = time.monotonic() + args.max_seconds
    consumer.subscribe([args.topic], listener=Listener())
    while not stop.is_set() and time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=POLL_TIMEOUT_MS)
        if not batch:
            continue
        gen = state["gen"]
        records = []
        offsets = {}
        for tp, recs in batch.items():
            records += [[r.partition, r.offset, _hex(r.key), _hex(r.value)] for r in recs]
            offsets[tp] = OffsetAndMetadata(recs[-1].offset + 1, f"by {args.name}", -1)
        _emit({"ev": "records", "gen": gen, "records": records})
        try:
            consumer.commit(offsets=offsets, timeout_ms=10_000)
        except KafkaError as exc:
            _emit({"ev": "commit_failed", "gen": gen, "error": repr(exc)})
        else:
            committed = {str(tp.partition): o.offset for tp, o in offsets.items()}
            _emit({"ev": "commit", "gen": gen, "offsets": committed})
    consumer.close(autocommit=False, timeout_ms=10_000)


def _librdkafka_generation(cgmd: bytes) -> int:
    """The generation id in librdkafka's serialized consumer group metadata.

    librdkafka exposes the generation only there (`consumer_group_metadata()`, meant for
    transactional producers): b"CGMDv2:" + int32 generation id (host byte order) + group id
    NUL + member id NUL + ... (rd_kafka_consumer_group_metadata_write, librdkafka 2.x)."""
    magic = b"CGMDv2:"
    assert cgmd.startswith(magic), cgmd[:16]
    return int.from_bytes(cgmd[len(magic) : len(magic) + 4], sys.byteorder, signed=True)


def _confluent_member(args: Any, stop: threading.Event) -> None:
    from _client_env import librdkafka_extra
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    settings: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": f"wb-{args.name}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms,
        "fetch.wait.max.ms": 100,
        "socket.timeout.ms": 10_000,
    }
    if args.client == "confluent-848":  # KIP-848: the broker sets session and heartbeat times
        del settings["session.timeout.ms"], settings["heartbeat.interval.ms"]
        settings["group.protocol"] = "consumer"
    consumer = Consumer(settings | librdkafka_extra())
    state: dict[str, int] = {"gen": -1}

    def on_assign(c: Any, parts: list[Any]) -> None:
        state["gen"] = _librdkafka_generation(c.consumer_group_metadata())
        _emit(
            {
                "ev": "assigned",
                "gen": state["gen"],
                "member": c.memberid(),
                "partitions": sorted(tp.partition for tp in parts),
            }
        )

    def on_revoke(_c: Any, parts: list[Any]) -> None:
        parts_ = sorted(tp.partition for tp in parts)
        _emit({"ev": "revoked", "gen": state["gen"], "partitions": parts_})
        if parts_ and args.revoke_delay_s > 0:
            stop.wait(args.revoke_delay_s)

    deadline = time.monotonic() + args.max_seconds
    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not stop.is_set() and time.monotonic() < deadline:
        msgs = consumer.consume(num_messages=args.max_poll_records, timeout=POLL_TIMEOUT_MS / 1000)
        if not msgs:
            continue
        gen = state["gen"]
        records = []
        last: dict[int, int] = {}
        for m in msgs:
            if m.error() is not None:
                raise KafkaException(m.error())
            partition, offset = int(m.partition() or 0), int(m.offset() or 0)
            records.append([partition, offset, _hex(m.key()), _hex(m.value())])
            last[partition] = offset
        _emit({"ev": "records", "gen": gen, "records": records})
        offsets = [TopicPartition(args.topic, p, o + 1, f"by {args.name}") for p, o in last.items()]
        try:
            result = consumer.commit(offsets=offsets, asynchronous=False)
            errors = [tp.error for tp in result if tp.error is not None]
            if errors:
                raise KafkaException(errors[0])
        except KafkaException as exc:
            _emit({"ev": "commit_failed", "gen": gen, "error": repr(exc)})
        else:
            committed = {str(tp.partition): tp.offset for tp in offsets}
            _emit({"ev": "commit", "gen": gen, "offsets": committed})
    consumer.close()


def _member(argv: list[str]) -> int:
    args = _parse_args(argv)
    stop = threading.Event()

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    _emit({"ev": "started", "name": args.name, "pid": os.getpid()})
    try:
        if args.client == "kafka-python":
            _kafka_python_member(args, stop)
        else:
            _confluent_member(args, stop)
    except Exception as exc:  # report anything unexpected to the parent, then fail
        _emit({"ev": "error", "error": repr(exc)})
        raise
    _emit({"ev": "closed"})
    return 0


if __name__ == "__main__":
    sys.exit(_member(sys.argv[1:]))
