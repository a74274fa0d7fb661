"""Existing clients against a broker that finalizes transaction.version 2 (KIP-890 part 2):
confluent-kafka (librdkafka) and kafka-python run commit, abort and offsets in a
transaction, a read_committed consumer reads exactly the committed records; the epoch each
client ends with (DescribeTransactions) shows whether it spoke TV2 (one bump per
transaction) or TV0/1 (the epoch of InitProducerId throughout).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import leaked_sockets
import pytest
from _broker import BrokerProcess
from _txn_raw import broker_with_topic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
import _wire
from _cluster import wait_until

from protocol.api import ApiKey

confluent_kafka = pytest.importorskip("confluent_kafka")
pytestmark = leaked_sockets.MARKS

TOPIC = "tv2-clients"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with broker_with_topic(tmp_path, TOPIC) as proc:
        yield proc


def describe(bootstrap: str, tid: str) -> tuple[str, int]:
    body = {"transactional_ids": [tid]}
    [s] = _wire.request(bootstrap, ApiKey.DESCRIBE_TRANSACTIONS, 0, body).transaction_states
    return str(s.transaction_state), int(s.producer_epoch)


def read_committed(bootstrap: str, group: str) -> list[bytes]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([TOPIC])
        values: list[bytes] = []
        empty = 0
        while empty < 3:
            msg = consumer.poll(1.0)
            if msg is None:
                empty += 1 if values else 0
                continue
            if msg.error() is None:
                values.append(msg.value())
        return sorted(values)
    finally:
        consumer.close()


def test_confluent_kafka_transactions(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "tv2-confluent"}
    )
    producer.init_transactions(30)
    _state, epoch0 = describe(bootstrap, "tv2-confluent")
    producer.begin_transaction()
    producer.produce(TOPIC, b"c1", partition=0)
    producer.produce(TOPIC, b"c2", partition=1)
    offsets = [confluent_kafka.TopicPartition(TOPIC, 0, 1)]
    group = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "tv2-g"})
    producer.send_offsets_to_transaction(offsets, group.consumer_group_metadata(), 30)
    group.close()
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(TOPIC, b"aborted", partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(TOPIC, b"c3", partition=1)
    producer.commit_transaction(30)
    wait_until(lambda: describe(bootstrap, "tv2-confluent")[0] == "CompleteCommit", 10, "commit")
    _state, epoch = describe(bootstrap, "tv2-confluent")
    # librdkafka 2.16 does not speak TV2 (no EndTxn v5): the epoch stays; with TV2 it is +3
    assert epoch in (epoch0, epoch0 + 3)
    assert read_committed(bootstrap, "tv2-reader") == [b"c1", b"c2", b"c3"]
    print(f"confluent-kafka {confluent_kafka.libversion()[0]}: epoch {epoch0} -> {epoch}")
