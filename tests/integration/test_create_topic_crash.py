"""kill -9 right after CreateTopics / CreatePartitions returned: the partitions are all there.

The broker runs as a subprocess. kafka-python's admin client creates a 200-partition topic;
as soon as the response is in, the broker is SIGKILLed (no flush, no clean-shutdown marker).
After a restart on the same data directory:

- Metadata lists the topic with all 200 partitions, and every partition directory exists;
- the last partition accepts a record at offset 0 and a consumer reads it back; the others
  are empty (end offset 0).

Then the topic grows to 260 partitions (CreatePartitions), the broker is killed again at once,
and after a restart Metadata shows 260 partitions and the last new one is writable, while the
record written before is still there.
"""

from __future__ import annotations

import os

import pytest
from _broker import BrokerProcess
from _clients import REQUEST_TIMEOUT_MS, read_to_end
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

pytestmark = [pytest.mark.slow, pytest.mark.compat]

TOPIC = "wide"
PARTITIONS = 200
GROWN = 260


def _admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS)


def _partitions(bootstrap: str) -> set[int]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, request_timeout_ms=REQUEST_TIMEOUT_MS
    )
    try:
        found = consumer.partitions_for_topic(TOPIC)
        return set(found or ())
    finally:
        consumer.close()


def _produce(bootstrap: str, partition: int, value: bytes) -> int:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", request_timeout_ms=REQUEST_TIMEOUT_MS
    )
    try:
        meta = producer.send(TOPIC, value=value, partition=partition).get(timeout=30)
        return int(meta.offset)
    finally:
        producer.close(timeout=10)


def _end_offsets(bootstrap: str, partitions: range) -> dict[int, int]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, request_timeout_ms=REQUEST_TIMEOUT_MS
    )
    try:
        tps = [TopicPartition(TOPIC, p) for p in partitions]
        ends = consumer.end_offsets(tps, timeout_ms=REQUEST_TIMEOUT_MS)
        return {tp.partition: off for tp, off in ends.items()}
    finally:
        consumer.close()


def _partition_dirs(broker: BrokerProcess) -> set[int]:
    out = set()
    for root, dirs, _files in os.walk(broker.data_dir):
        for name in dirs:
            topic, _, index = name.rpartition("-")
            if topic == TOPIC and index.isdigit():
                out.add(int(index))
        if root != str(broker.data_dir):
            dirs.clear()
    return out


def test_kill9_right_after_create_keeps_every_partition(broker: BrokerProcess) -> None:
    with _admin(broker.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    broker.kill9()

    bootstrap = broker.restart()
    assert _partitions(bootstrap) == set(range(PARTITIONS))
    assert _partition_dirs(broker) == set(range(PARTITIONS))
    last = PARTITIONS - 1
    assert _produce(bootstrap, last, b"after-crash") == 0
    ends = _end_offsets(bootstrap, range(PARTITIONS))
    assert ends == {p: 1 if p == last else 0 for p in range(PARTITIONS)}
    got = read_to_end(bootstrap, TOPIC, [last])
    assert [r.value for r in got[last]] == [b"after-crash"]

    with _admin(bootstrap) as admin:
        admin.create_partitions({TOPIC: NewPartitions(GROWN)})
    broker.kill9()

    bootstrap = broker.restart()
    assert _partitions(bootstrap) == set(range(GROWN))
    assert _partition_dirs(broker) == set(range(GROWN))
    assert _produce(bootstrap, GROWN - 1, b"grown") == 0
    got = read_to_end(bootstrap, TOPIC, [last, GROWN - 1])
    assert [r.value for r in got[last]] == [b"after-crash"]
    assert [r.value for r in got[GROWN - 1]] == [b"grown"]
