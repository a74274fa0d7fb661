"""Crash and restart: acknowledged records survive `kill -9` and a clean SIGTERM restart.

The broker runs as a subprocess. A kafka-python producer streams numbered records to two
partitions and records every acknowledgement (partition, offset) from the delivery callbacks;
once enough are acknowledged the broker is SIGKILLed while more records are still in flight.
The producer is closed (its unacknowledged records fail: nothing can reach a dead broker), the
broker is restarted on the same data directory, and a group-less consumer reads every partition
to its end. Checked:

- every acknowledged record is there, exactly once, at the offset its acknowledgement named;
- each partition's records are in send order with contiguous offsets from 0 (records written
  but not acknowledged before the kill may or may not be there; since no retry can reach the
  dead broker, none is there twice);
- the recovered log accepts new records at the next offset;
- a second kill -9 / restart right after recovery changes nothing.

Run once with acks=1 (kafka-python then disables idempotence) and once with acks=all (the
idempotent default). A third test keeps an idempotent producer running through a kill -9 and a
restart on the same port: its retried batches must be deduplicated by the producer state the
broker rebuilds from its log, so everything sent is in the log exactly once. A clean SIGTERM
stop must exit 0 and keep everything.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest
from _broker import BrokerProcess
from _clients import read_to_end
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaTimeoutError
from leaked_sockets import MARKS as LEAKED_SOCKETS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.compat,
    # kafka-python 3.0.12 leaks the socket of every refused reconnect to the dead broker.
    *LEAKED_SOCKETS,
]

PARTITIONS = 2
MAX_SENDS = 200_000
KILL_AFTER_ACKS = 1500
VALUE_PAD = b"." * 100


def _value(i: int) -> bytes:
    return b"%08d" % i + VALUE_PAD


def _index(value: bytes) -> int:
    assert value.endswith(VALUE_PAD), value[:40]
    return int(value[:8])


def _create_topic(bootstrap: str, topic: str) -> None:
    with KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000) as admin:
        admin.create_topics({topic: {"num_partitions": PARTITIONS, "replication_factor": 1}})


def _producer(bootstrap: str, acks: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=acks,
        linger_ms=1,
        max_block_ms=5000,
        request_timeout_ms=2000,
        delivery_timeout_ms=4000,
        reconnect_backoff_max_ms=500,
    )


def _close(producer: KafkaProducer) -> None:
    """Close, aborting what is still pending.

    kafka-python's close(timeout) raises from its flush() when records are still pending (an
    idempotent producer keeps retrying a dead broker past delivery_timeout_ms) and then leaves
    its I/O thread running; abort the pending batches (their futures fail) and close again.
    """
    try:
        producer.close(timeout=3)
    except KafkaTimeoutError:
        producer._sender.force_close()
        producer._sender.join(10)
        producer.close(timeout=3)


class AckLog:
    """Delivery callbacks (run on the producer's I/O thread) record (index, partition, offset)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: dict[int, tuple[int, int]] = {}
        self.failed = 0
        self.enough = threading.Event()

    def track(self, future: Any, i: int) -> None:
        future.add_callback(self._on_ack, i)
        future.add_errback(self._on_error)

    def _on_ack(self, i: int, meta: Any) -> None:
        with self.lock:
            self.acked[i] = (meta.partition, meta.offset)
            if len(self.acked) >= KILL_AFTER_ACKS:
                self.enough.set()

    def _on_error(self, _exc: BaseException) -> None:
        with self.lock:
            self.failed += 1


def _check_log(bootstrap: str, topic: str, acked: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Assert the durability properties; returns each partition's end offset."""
    got = read_to_end(bootstrap, topic, range(PARTITIONS))
    found: dict[int, tuple[int, int]] = {}
    for p, records in got.items():
        assert [r.offset for r in records] == list(range(len(records))), f"partition {p}"
        indexes = [_index(r.value) for r in records]
        assert all(i % PARTITIONS == p for i in indexes)
        assert indexes == sorted(set(indexes)), f"partition {p}: out of order or duplicated"
        for r, i in zip(records, indexes, strict=True):
            found[i] = (p, r.offset)
    lost = sorted(i for i in acked if i not in found)
    assert lost == [], f"{len(lost)} acknowledged records lost, first {lost[:10]}"
    moved = {i: (acked[i], found[i]) for i in acked if acked[i] != found[i]}
    assert moved == {}, f"acknowledged records at other offsets: {list(moved.items())[:10]}"
    return {p: len(records) for p, records in got.items()}


@pytest.mark.parametrize("acks", [1, "all"])
def test_kill9_mid_stream_keeps_every_acknowledged_record(broker: BrokerProcess, acks: Any) -> None:
    topic = "crash"
    _create_topic(broker.bootstrap, topic)
    log = AckLog()
    producer = _producer(broker.bootstrap, acks)
    try:
        killer_done = threading.Event()

        def killer() -> None:
            if log.enough.wait(timeout=60):
                broker.kill9()
            killer_done.set()

        thread = threading.Thread(target=killer, name="broker-killer", daemon=True)
        thread.start()
        # Keep sending until the kill, so records are in flight when it happens.
        sent = 0
        while not killer_done.is_set() and sent < MAX_SENDS:
            log.track(producer.send(topic, value=_value(sent), partition=sent % PARTITIONS), sent)
            sent += 1
        thread.join(timeout=65)
        assert killer_done.is_set() and not broker.is_running(), "broker was never killed"
        with contextlib.suppress(KafkaTimeoutError):  # unacked records may still be pending
            producer.flush(timeout=6)
    finally:
        _close(producer)

    with log.lock:
        acked = dict(log.acked)
        failed = log.failed
    assert len(acked) >= KILL_AFTER_ACKS
    assert failed > 0, "no record was in flight at the kill: the test did not test a crash"

    broker.restart()
    ends = _check_log(broker.bootstrap, topic, acked)

    # The recovered log takes new records at its end.
    producer = _producer(broker.bootstrap, acks)
    try:
        extra = [
            producer.send(topic, value=_value(MAX_SENDS + p), partition=p)
            for p in range(PARTITIONS)
        ]
        metas = [f.get(timeout=10) for f in extra]
    finally:
        _close(producer)
    assert [m.offset for m in metas] == [ends[p] for p in range(PARTITIONS)]
    acked.update({MAX_SENDS + p: (p, ends[p]) for p in range(PARTITIONS)})

    # Crash again right after recovery: nothing changes.
    broker.kill9()
    broker.restart()
    ends_again = _check_log(broker.bootstrap, topic, acked)
    assert ends_again == {p: ends[p] + 1 for p in range(PARTITIONS)}


def test_idempotent_producer_rides_through_kill9(broker: BrokerProcess) -> None:
    """An idempotent producer keeps sending while the broker is killed and restarted.

    The broker comes back on the same port and data dir; the producer's in-flight batches are
    retried with their original producer id and sequence numbers. The broker must recognise
    the ones it had written before the crash (producer state rebuilt from the log) and append
    the others, so every record ends up acknowledged and in the log exactly once, in order.
    """
    topic = "rides-through"
    _create_topic(broker.bootstrap, topic)
    log = AckLog()
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        linger_ms=1,
        max_block_ms=5000,
        request_timeout_ms=2000,
        delivery_timeout_ms=60_000,  # long enough to outlast the outage
        reconnect_backoff_max_ms=200,
    )
    try:
        restarted = threading.Event()

        def crash_and_restart() -> None:
            if log.enough.wait(timeout=60):
                broker.kill9()
                broker.restart(same_port=True)
            restarted.set()

        thread = threading.Thread(target=crash_and_restart, name="broker-killer", daemon=True)
        thread.start()
        sent = 0
        while not restarted.is_set() and sent < MAX_SENDS:
            log.track(producer.send(topic, value=_value(sent), partition=sent % PARTITIONS), sent)
            sent += 1
        thread.join(timeout=90)
        assert restarted.is_set() and broker.is_running(), "broker was not restarted"
        for i in range(sent, sent + 200):  # and some more after the restart
            log.track(producer.send(topic, value=_value(i), partition=i % PARTITIONS), i)
        sent += 200
        producer.flush(timeout=45)
    finally:
        _close(producer)

    with log.lock:
        acked = dict(log.acked)
        failed = log.failed
    assert failed == 0, f"{failed} of {sent} records failed"
    assert len(acked) == sent
    ends = _check_log(broker.bootstrap, topic, acked)
    assert sum(ends.values()) == sent


def test_sigterm_restart_keeps_everything(broker: BrokerProcess) -> None:
    topic = "clean"
    _create_topic(broker.bootstrap, topic)
    producer = _producer(broker.bootstrap, "all")
    try:
        futures = [
            producer.send(topic, value=_value(i), partition=i % PARTITIONS) for i in range(1000)
        ]
        metas = [f.get(timeout=10) for f in futures]
    finally:
        _close(producer)
    acked = {i: (m.partition, m.offset) for i, m in enumerate(metas)}

    assert broker.stop() == 0, "SIGTERM should shut the broker down cleanly (exit code 0)"
    broker.start()
    assert _check_log(broker.bootstrap, topic, acked) == {0: 500, 1: 500}
    assert broker.stop() == 0
    broker.start()
    assert _check_log(broker.bootstrap, topic, acked) == {0: 500, 1: 500}
