"""Fault injection met by real clients (kafka-python): each fault, and the client riding it out
as it would against Kafka.

What passing proves: an idempotent producer (kafka-python, and librdkafka through
confluent-kafka) retries NOT_LEADER_OR_FOLLOWER exactly as many times as injected and its
record lands once; a group member finds its coordinator and joins
through COORDINATOR_NOT_AVAILABLE answers; a delay holds the request that long; a closed
connection is retried; an unreachable broker refuses connections until it is reachable again
and the waiting producer then delivers; dropped connections are re-established by a consumer.
The broker runs in a thread of the test process (`running(thread=True)`), its faults driven in
process (`BrokerHandle.faults`); the HTTP API is tested in test_faults_http.py.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _clients import REQUEST_TIMEOUT_MS
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaTimeoutError
from leaked_sockets import MARKS as LEAKED_SOCKETS

import wirebroker
from wirebroker.testing import BrokerHandle

pytestmark = [
    pytest.mark.compat,
    # kafka-python 3.0.12 leaks the socket of every refused reconnect (unreachable broker).
    *LEAKED_SOCKETS,
]


@pytest.fixture
def broker() -> Iterator[BrokerHandle]:
    with wirebroker.running(thread=True) as handle:
        yield handle


def _producer(bootstrap: str, **config: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap,
        max_block_ms=REQUEST_TIMEOUT_MS,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        delivery_timeout_ms=3 * REQUEST_TIMEOUT_MS,
        retry_backoff_ms=50,
        **config,
    )


def test_producer_retries_not_leader_three_times_then_succeeds(
    broker: BrokerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    broker.create_topic("orders")
    producer = _producer(broker.bootstrap, enable_idempotence=True)
    try:
        producer.partitions_for("orders")  # metadata first: the faults hit Produce only
        fault = broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic="orders")
        assert [f["id"] for f in broker.faults.list()] == [fault]
        metadata = producer.send("orders", b"once", partition=0).get(timeout=30)
    finally:
        producer.close()
    assert metadata.offset == 0
    assert broker.faults.list() == []  # all three were consumed
    injected = [
        r for r in caplog.records if r.levelname == "WARNING" and "injecting fault" in r.message
    ]
    assert len(injected) == 3, "every injected fault is logged at WARNING"
    assert [m.value for m in broker.read_to_end("orders")] == [b"once"]


def test_group_member_rides_out_coordinator_not_available(broker: BrokerHandle) -> None:
    broker.create_topic("events")
    broker.produce("events", [b"a", b"b", b"c"])
    faults = broker.faults
    faults.error("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=3)
    join = faults.error("JoinGroup", "COORDINATOR_NOT_AVAILABLE", count=2)
    consumer = KafkaConsumer(
        "events",
        bootstrap_servers=broker.bootstrap,
        group_id="riders",
        auto_offset_reset="earliest",
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        retry_backoff_ms=50,
        fetch_max_wait_ms=100,
    )
    seen: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(seen) < 3 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                seen += [r.value for r in records]
        consumer.commit()
    finally:
        consumer.close()
    assert seen == [b"a", b"b", b"c"]
    assert broker.faults.list() == [], f"faults not met: {join}"


def test_delay_holds_the_request(broker: BrokerHandle) -> None:
    broker.create_topic("slow")
    producer = _producer(broker.bootstrap)
    try:
        producer.partitions_for("slow")
        broker.faults.delay("Produce", 400, topic="slow")
        started = time.monotonic()
        producer.send("slow", b"late").get(timeout=30)
        took = time.monotonic() - started
    finally:
        producer.close()
    assert took >= 0.4
    assert [m.value for m in broker.read_to_end("slow")] == [b"late"]


def test_closed_connection_is_retried(broker: BrokerHandle) -> None:
    broker.create_topic("closing")
    producer = _producer(broker.bootstrap, enable_idempotence=True)
    try:
        producer.partitions_for("closing")
        broker.faults.close("Produce")
        producer.send("closing", b"after-close").get(timeout=30)
    finally:
        producer.close()
    assert broker.faults.list() == []
    assert [m.value for m in broker.read_to_end("closing")] == [b"after-close"]


def _refused(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(5)
        try:
            sock.connect((host, port))
        except ConnectionRefusedError:
            return True
        return False


def test_unreachable_then_reachable_with_a_reconnecting_producer(broker: BrokerHandle) -> None:
    broker.create_topic("cut")
    producer = _producer(broker.bootstrap, enable_idempotence=True, reconnect_backoff_ms=50)
    try:
        producer.send("cut", b"before").get(timeout=30)
        fault = broker.faults.unreachable()
        (listed,) = broker.faults.list()
        assert listed["id"] == fault and listed["kind"] == "unreachable"
        assert listed["hits"] >= 1  # the producer's connection was reset
        assert _refused(broker.host, broker.port)
        pending = producer.send("cut", b"during")
        with pytest.raises(KafkaTimeoutError):
            pending.get(timeout=0.5)  # nowhere to send it
        removed = broker.faults.reachable()
        assert [f["id"] for f in removed] == [fault]
        pending.get(timeout=30)
        producer.send("cut", b"after").get(timeout=30)
    finally:
        producer.close()
    assert not _refused(broker.host, broker.port)
    assert [m.value for m in broker.read_to_end("cut")] == [b"before", b"during", b"after"]


def test_dropped_connections_are_reestablished_by_a_consumer(broker: BrokerHandle) -> None:
    broker.create_topic("dropped")
    broker.produce("dropped", [b"1"])
    consumer = KafkaConsumer(
        "dropped",
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        reconnect_backoff_ms=50,
        fetch_max_wait_ms=100,
    )
    seen: list[bytes] = []

    def poll_until(n: int) -> None:
        deadline = time.monotonic() + 30
        while len(seen) < n and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)

    try:
        poll_until(1)
        assert broker.faults.drop_connections() >= 1
        broker.produce("dropped", [b"2"])
        poll_until(2)
    finally:
        consumer.close()
    assert seen == [b"1", b"2"]


def test_librdkafka_producer_retries_not_leader_three_times(broker: BrokerHandle) -> None:
    from confluent_kafka import Producer

    broker.create_topic("rd-orders")
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "retry.backoff.ms": 50,
            "message.timeout.ms": 30_000,
        }
    )
    producer.list_topics("rd-orders", timeout=10)
    broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic="rd-orders")
    delivered: list[Any] = []
    producer.produce(
        "rd-orders", b"once", partition=0, on_delivery=lambda err, msg: delivered.append(err)
    )
    assert producer.flush(30) == 0
    assert delivered == [None]
    assert broker.faults.list() == []
    assert [m.value for m in broker.read_to_end("rd-orders")] == [b"once"]


def test_refused_connections_spare_the_open_ones(broker: BrokerHandle) -> None:
    broker.create_topic("refusing")
    producer = _producer(broker.bootstrap)
    try:
        producer.send("refusing", b"1").get(timeout=30)
        fault = broker.faults.refuse_connections()
        assert _refused(broker.host, broker.port)
        producer.send("refusing", b"2").get(timeout=30)  # its connection is still up
        broker.faults.remove(fault)
        assert not _refused(broker.host, broker.port)
    finally:
        producer.close()
    assert [m.value for m in broker.read_to_end("refusing")] == [b"1", b"2"]


def test_a_partition_fault_spares_the_other_partitions_of_the_request(
    broker: BrokerHandle,
) -> None:
    from protocol.records import RecordSpec, build_batch

    broker.create_topic("split", partitions=2)
    broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", topic="split", partition=0)
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": "split",
                "partition_data": [
                    {"index": i, "records": build_batch([RecordSpec(None, b"p%d" % i, ())])}
                    for i in (0, 1)
                ],
            }
        ],
    }
    with broker.client() as client:
        answer = client.request((broker.host, broker.port), 0, 9, body)
    codes = {
        (t.name, p.index): p.error_code for t in answer.responses for p in t.partition_responses
    }
    assert codes == {("split", 0): 6, ("split", 1): 0}
    assert [(m.partition, m.value) for m in broker.read_to_end("split")] == [(1, b"p1")]
