"""Consumer fetch sessions (KIP-227) with real clients over real sockets.

kafka-python 3.x keeps an incremental fetch session per broker (its FetchSessionHandler, as
the Java client); librdkafka 2.x does not (every Fetch is a full one: session 0, epoch -1).

What passing proves: a kafka-python consumer of many partitions gets a session (session id
!= 0) from a wirebroker process; after the first, full, answer the incremental answers carry
only partitions with records (or a new high watermark), not the idle ones; consumption is
complete and in order on every partition, including records produced while it polls; the
broker's /metrics shows the session and its partitions. confluent-kafka's consumer still
reads everything (sessionless) and makes no session.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import pytest
from _broker import BrokerProcess
from _clients import REQUEST_TIMEOUT_MS
from admin_listener import admin_url, parse_metrics
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.consumer.fetcher import Fetcher

pytestmark = pytest.mark.compat

PARTITIONS = 40
BUSY = (3, 17, 29)  # the partitions that get records
PER_PARTITION = 30
DEADLINE_S = 30.0


def _metrics(url: str) -> dict[Any, float]:
    import urllib.request

    with urllib.request.urlopen(url + "metrics", timeout=10) as resp:
        return parse_metrics(resp.read().decode())


def _produce(bootstrap: str, topic: str, start: int, n: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for i in range(start, start + n):
            for p in BUSY:
                producer.send(topic, b"%d-%d" % (p, i), partition=p)
        producer.flush(timeout=REQUEST_TIMEOUT_MS / 1000)
    finally:
        producer.close(timeout=5)


def _consume(
    consumer: KafkaConsumer, got: dict[int, list[bytes]], until: int, sent: list[Any]
) -> None:
    """Poll until every busy partition holds `until` records (sent: answers seen)."""
    deadline = time.monotonic() + DEADLINE_S
    while any(len(got[p]) < until for p in BUSY):
        assert time.monotonic() < deadline, {p: len(got[p]) for p in BUSY}
        for tp, records in consumer.poll(timeout_ms=200).items():
            got[tp.partition].extend(r.value for r in records)


def _topic_with_records(broker: BrokerProcess, topic: str) -> tuple[str, str]:
    """`topic` created with PER_PARTITION records in each busy partition: (bootstrap, the
    admin listener's URL)."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    admin.close()
    _produce(broker.bootstrap, topic, 0, PER_PARTITION)
    return broker.bootstrap, admin_url(broker.stdout_lines)


def test_a_kafka_python_consumer_gets_an_incremental_session(
    admin_broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = "fsess"
    bootstrap, url = _topic_with_records(admin_broker, topic)

    answers: list[tuple[int, int, set[int]]] = []  # (request epoch, session id, partitions)
    real = Fetcher._handle_fetch_response

    def recording(self: Any, node_id: Any, fetch_offsets: Any, send_time: Any, response: Any):
        handler = self._session_handlers.get(node_id)
        epoch = handler.next_metadata.epoch if handler is not None else -1
        named = {p.partition_index for t in response.responses for p in t.partitions}
        answers.append((epoch, response.session_id, named))
        return real(self, node_id, fetch_offsets, send_time, response)

    monkeypatch.setattr(Fetcher, "_handle_fetch_response", recording)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    got: dict[int, list[bytes]] = defaultdict(list)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        _consume(consumer, got, PER_PARTITION, answers)
        deadline = time.monotonic() + DEADLINE_S
        while not any(epoch > 0 and not named for epoch, _s, named in answers):
            assert time.monotonic() < deadline, answers  # idle polls: empty answers
            assert not consumer.poll(timeout_ms=200)
        _produce(bootstrap, topic, PER_PARTITION, PER_PARTITION)  # while it polls
        _consume(consumer, got, 2 * PER_PARTITION, answers)
        m = _metrics(url)
        assert m[("wirebroker_fetch_sessions", ())] >= 1
        assert m[("wirebroker_fetch_session_partitions_cached", ())] >= PARTITIONS
    finally:
        consumer.close()

    for p in BUSY:  # complete and in order
        assert got[p] == [b"%d-%d" % (p, i) for i in range(2 * PER_PARTITION)]
    assert not any(got[p] for p in range(PARTITIONS) if p not in BUSY)
    full = [a for a in answers if a[0] == 0]
    assert full and full[0][1] != 0 and full[0][2] == set(range(PARTITIONS))
    sid = full[0][1]
    incremental = [named for epoch, s, named in answers if epoch > 0 and s == sid]
    assert len(incremental) >= 2 and len(incremental) == len(answers) - 1, answers
    # after the full answer, only the busy partitions ever come back
    assert all(named <= set(BUSY) for named in incremental), incremental
    assert any(not named for named in incremental)  # an idle poll: an empty answer


def test_librdkafka_consumes_everything_without_a_session(admin_broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTopicPartition

    topic = "fsess-rd"
    bootstrap, url = _topic_with_records(admin_broker, topic)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "fsess-rd", "enable.auto.commit": False}
    )
    got: dict[int, list[bytes]] = defaultdict(list)
    try:
        consumer.assign([CTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + DEADLINE_S
        while any(len(got[p]) < PER_PARTITION for p in BUSY):
            assert time.monotonic() < deadline
            for msg in consumer.consume(100, timeout=0.2):
                assert msg.error() is None
                got[msg.partition()].append(msg.value())
        assert _metrics(url)[("wirebroker_fetch_sessions", ())] == 0
    finally:
        consumer.close()
    for p in BUSY:
        assert got[p] == [b"%d-%d" % (p, i) for i in range(PER_PARTITION)]
