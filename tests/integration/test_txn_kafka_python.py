"""Transactions with kafka-python 3.0 against a wirebroker subprocess (issue 14).

What passing proves (the stories are described in `_txn.py`): kafka-python's transactional
producer (FindCoordinator type TRANSACTION, InitProducerId with a transactional id,
AddPartitionsToTxn, Produce of transactional batches, AddOffsetsToTxn, TxnOffsetCommit, EndTxn)
commits and aborts; its read_committed consumer never sees aborted records and its
read_uncommitted consumer does; offsets sent to a transaction become the group's committed
offsets only when it commits; a second producer with the same transactional id fences the
first one and aborts its open transaction.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from _broker import BrokerProcess
from _clients import REQUEST_TIMEOUT_MS
from _group_procs import admin_client, committed_offsets, create_topic
from _txn import (
    PARTITIONS,
    check_isolation,
    kafka_python_producer,
    kafka_python_send_all,
    transform,
    txn_values,
)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as Errors
from kafka.structs import OffsetAndMetadata

pytestmark = pytest.mark.compat

TIMEOUT = 30.0
#: Input records per partition of the consume-transform-produce story.
PER_TXN_INPUT = 10


def _send_all(producer: KafkaProducer, topic: str, values: list[bytes]) -> None:
    kafka_python_send_all(producer, topic, values, keyed=True)


def test_commit_abort_commit_isolation(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "kp-txn-iso"
    create_topic(bootstrap, topic, PARTITIONS)
    first, aborted, second = (txn_values("iso", t) for t in ("c1", "a1", "c2"))

    producer = kafka_python_producer(bootstrap, "kp-iso")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        _send_all(producer, topic, first)
        producer.commit_transaction()

        producer.begin_transaction()
        _send_all(producer, topic, aborted)
        producer.abort_transaction()

        producer.begin_transaction()
        _send_all(producer, topic, second)
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)

    check_isolation(bootstrap, topic, first + second, aborted)


def test_open_transaction_hides_records_from_read_committed(broker: BrokerProcess) -> None:
    """While a transaction is open, read_committed stops at the LSO (before its first record)
    and read_uncommitted already sees it; after the commit both see it."""
    bootstrap, topic = broker.bootstrap, "kp-txn-open"
    create_topic(bootstrap, topic, PARTITIONS)
    committed, pending = txn_values("open", "c1"), txn_values("open", "p1")

    producer = kafka_python_producer(bootstrap, "kp-open")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        _send_all(producer, topic, committed)
        producer.commit_transaction()
        producer.begin_transaction()
        _send_all(producer, topic, pending)
        check_isolation(bootstrap, topic, committed, pending)
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)
    check_isolation(bootstrap, topic, committed + pending, [])


def _group_consumer(bootstrap: str, topic: str, group: str) -> KafkaConsumer:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        fetch_max_wait_ms=100,
    )
    consumer.subscribe([topic])
    return consumer


def _poll_n(consumer: KafkaConsumer, n: int) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + TIMEOUT
    while len(out) < n:
        assert time.monotonic() < deadline, f"read {len(out)} of {n} records"
        for records in consumer.poll(timeout_ms=200, max_records=n - len(out)).values():
            out.extend(records)
    return out


def test_consume_transform_produce_with_offsets(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    source, sink, group = "kp-ctp-in", "kp-ctp-out", "kp-ctp-group"
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    inputs = txn_values("ctp", "in", 2 * PER_TXN_INPUT)
    plain = kafka_python_producer(bootstrap, None)
    try:
        _send_all(plain, source, inputs)
    finally:
        plain.close(timeout=5)

    consumer = _group_consumer(bootstrap, source, group)
    producer = kafka_python_producer(bootstrap, "kp-ctp")
    try:
        producer.init_transactions()
        records = _poll_n(consumer, len(inputs))
        positions = {
            TopicPartition(source, p): OffsetAndMetadata(
                max(r.offset for r in records if r.partition == p) + 1, "", -1
            )
            for p in range(PARTITIONS)
        }
        producer.begin_transaction()
        _send_all(producer, sink, [transform(r.value) for r in records])
        producer.send_offsets_to_transaction(positions, consumer.group_metadata())
        producer.commit_transaction()

        admin = admin_client(bootstrap)
        try:
            want = {(source, tp.partition): (om.offset, "") for tp, om in positions.items()}
            assert committed_offsets(admin, group) == want

            # An aborted transaction with offsets (a rewind to 1) changes neither the
            # committed offsets nor the read_committed output.
            producer.begin_transaction()
            _send_all(producer, sink, [b"aborted-output"])
            producer.send_offsets_to_transaction(
                {tp: OffsetAndMetadata(1, "", -1) for tp in positions}, consumer.group_metadata()
            )
            producer.abort_transaction()
            assert committed_offsets(admin, group) == want
        finally:
            admin.close()
    finally:
        producer.close(timeout=5)
        consumer.close(autocommit=False, timeout_ms=5000)

    check_isolation(bootstrap, sink, [transform(v) for v in inputs], [b"aborted-output"])


def test_second_producer_fences_the_first(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "kp-txn-fence"
    create_topic(bootstrap, topic, PARTITIONS)
    zombie_values, winner_values = txn_values("fence", "zombie"), txn_values("fence", "winner")

    zombie = kafka_python_producer(bootstrap, "kp-fence")
    winner = kafka_python_producer(bootstrap, "kp-fence")
    try:
        zombie.init_transactions()
        zombie.begin_transaction()
        _send_all(zombie, topic, zombie_values)

        # The second init bumps the epoch and aborts the zombie's open transaction.
        winner.init_transactions()
        winner.begin_transaction()
        _send_all(winner, topic, winner_values)
        winner.commit_transaction()

        with pytest.raises(Errors.KafkaError) as excinfo:
            zombie.commit_transaction()
        assert isinstance(
            excinfo.value, (Errors.ProducerFencedError, Errors.InvalidProducerEpochError)
        ), repr(excinfo.value)
    finally:
        zombie.close(timeout=5)
        winner.close(timeout=5)

    check_isolation(bootstrap, topic, winner_values, zombie_values)
