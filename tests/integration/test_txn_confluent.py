"""Transactions with confluent-kafka 2.16 (librdkafka) against a wirebroker subprocess (issue 14).

What passing proves (stories in `_txn.py`): librdkafka's transactional producer
(`init_transactions`, `begin_transaction`, `send_offsets_to_transaction`, `commit_transaction`,
`abort_transaction`: FindCoordinator TRANSACTION, InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn) commits and aborts; librdkafka's consumer with
`isolation.level=read_committed` never returns aborted records and with `read_uncommitted` does
(kafka-python cross-checks both); offsets sent to a transaction become the group's committed
offsets only on commit; a second producer with the same transactional id fences the first
(librdkafka raises a fatal error: `_FENCED` / PRODUCER_FENCED / INVALID_PRODUCER_EPOCH).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from _broker import BrokerProcess
from _group_procs import admin_client, committed_offsets, create_topic
from _txn import PARTITIONS, check_isolation, transform, txn_values
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

pytestmark = pytest.mark.compat

TIMEOUT = 30.0
INPUTS = 20


def _producer(bootstrap: str, transactional_id: str | None = None) -> Producer:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "linger.ms": 5,
        "message.timeout.ms": int(TIMEOUT * 1000),
    }
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
        config["transaction.timeout.ms"] = 60_000
    return Producer(config)


def _send_all(producer: Producer, topic: str, values: list[bytes]) -> None:
    errors: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for i, value in enumerate(values):
        producer.produce(
            topic, value=value, key=b"k%d" % i, partition=i % PARTITIONS, on_delivery=on_delivery
        )
        producer.poll(0)
    assert producer.flush(TIMEOUT) == 0
    assert errors == []


def _own_values(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    """Every value of `topic` read by librdkafka's consumer with `isolation.level` = isolation,
    up to the end offsets (ListOffsets in that isolation level), sorted."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "wirebroker-assign-only",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": isolation,
            "fetch.wait.max.ms": 100,
        }
    )
    out: list[bytes] = []
    try:
        tps = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)]
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT)[1]
            for p in range(PARTITIONS)
        }
        consumer.assign(tps)
        deadline = time.monotonic() + TIMEOUT
        while True:
            positions = {tp.partition: tp.offset for tp in consumer.position(tps)}
            if all(positions[p] >= ends[p] for p in ends):
                return sorted(out)
            assert time.monotonic() < deadline, (positions, ends, len(out))
            for msg in consumer.consume(num_messages=500, timeout=0.2):
                if msg.error() is not None:
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    continue
                out.append(msg.value())
    finally:
        consumer.close()


def _check(bootstrap: str, topic: str, committed: list[bytes], aborted: list[bytes]) -> None:
    assert _own_values(bootstrap, topic, "read_committed") == sorted(committed)
    assert _own_values(bootstrap, topic, "read_uncommitted") == sorted(committed + aborted)
    check_isolation(bootstrap, topic, committed, aborted)


def test_commit_abort_commit_isolation(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "ck-txn-iso"
    create_topic(bootstrap, topic, PARTITIONS)
    first, aborted, second = (txn_values("iso", t) for t in ("c1", "a1", "c2"))

    producer = _producer(bootstrap, "ck-iso")
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    _send_all(producer, topic, first)
    producer.commit_transaction(TIMEOUT)
    producer.begin_transaction()
    _send_all(producer, topic, aborted)
    producer.abort_transaction(TIMEOUT)
    producer.begin_transaction()
    _send_all(producer, topic, second)
    producer.commit_transaction(TIMEOUT)
    assert producer.flush(TIMEOUT) == 0

    _check(bootstrap, topic, first + second, aborted)


def test_consume_transform_produce_with_offsets(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    source, sink, group = "ck-ctp-in", "ck-ctp-out", "ck-ctp-group"
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    inputs = txn_values("ctp", "in", INPUTS)
    _send_all(_producer(bootstrap), source, inputs)

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "fetch.wait.max.ms": 100,
        }
    )
    producer = _producer(bootstrap, "ck-ctp")
    try:
        producer.init_transactions(TIMEOUT)
        consumer.subscribe([source])
        records: list[Any] = []
        deadline = time.monotonic() + TIMEOUT
        while len(records) < INPUTS:
            assert time.monotonic() < deadline, f"read {len(records)} of {INPUTS}"
            for msg in consumer.consume(num_messages=INPUTS, timeout=0.2):
                assert msg.error() is None, msg.error()
                records.append(msg)
        positions = [
            TopicPartition(source, p, max(m.offset() for m in records if m.partition() == p) + 1)
            for p in range(PARTITIONS)
        ]
        producer.begin_transaction()
        _send_all(producer, sink, [transform(m.value()) for m in records])
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), TIMEOUT)
        producer.commit_transaction(TIMEOUT)

        want = {(source, tp.partition): (tp.offset, "") for tp in positions}
        admin = admin_client(bootstrap)
        try:
            assert committed_offsets(admin, group) == want
            producer.begin_transaction()
            _send_all(producer, sink, [b"aborted-output"])
            producer.send_offsets_to_transaction(
                [TopicPartition(source, p, 1) for p in range(PARTITIONS)],
                consumer.consumer_group_metadata(),
                TIMEOUT,
            )
            producer.abort_transaction(TIMEOUT)
            assert committed_offsets(admin, group) == want
        finally:
            admin.close()
    finally:
        consumer.close()

    _check(bootstrap, sink, [transform(v) for v in inputs], [b"aborted-output"])


def test_second_producer_fences_the_first(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "ck-txn-fence"
    create_topic(bootstrap, topic, PARTITIONS)
    zombie_values, winner_values = txn_values("fence", "zombie"), txn_values("fence", "winner")

    zombie = _producer(bootstrap, "ck-fence")
    zombie.init_transactions(TIMEOUT)
    zombie.begin_transaction()
    _send_all(zombie, topic, zombie_values)

    winner = _producer(bootstrap, "ck-fence")
    winner.init_transactions(TIMEOUT)
    winner.begin_transaction()
    _send_all(winner, topic, winner_values)
    winner.commit_transaction(TIMEOUT)

    with pytest.raises(KafkaException) as excinfo:
        zombie.commit_transaction(TIMEOUT)
    error = excinfo.value.args[0]
    assert error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ), error
    assert error.fatal(), error

    _check(bootstrap, topic, winner_values, zombie_values)
