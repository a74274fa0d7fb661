"""Shared parts of the per-client transaction tests (tests/integration/test_txn_*.py).

Every client's test runs the same four stories against a wirebroker subprocess, each in the
client's own transactional API, and reads the outcome back with the client's own consumer in
both isolation levels (plus, as a client-neutral cross-check, kafka-python's):

- commit / abort / commit: read_committed sees exactly the two committed transactions' records,
  read_uncommitted sees all three transactions' records; no control record reaches the user;
- consume-transform-produce: records read by a group consumer are transformed and written in a
  transaction together with the group's offsets (send offsets to the transaction); after the
  commit the output is visible and the group's committed offsets (OffsetFetch) are exactly the
  positions; an aborted transaction with offsets leaves both the output and the offsets as
  they were;
- fencing: a second producer with the same transactional id fences the first (its open
  transaction is aborted; its next commit fails with a fenced / epoch error), and only the
  second producer's committed records are visible to read_committed.

The record values are distinct ASCII strings `<story>-<txn>-<i>` so that the expected sets can
be written down and compared whatever the partitioning.
"""

from __future__ import annotations

import time
from typing import Any

from _clients import REQUEST_TIMEOUT_MS, read_to_end
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

#: Records per transaction and partitions per topic in every story.
PER_TXN = 12
PARTITIONS = 2
#: Seconds kafka_python_send_all waits for the flush and for each acknowledgement.
SEND_TIMEOUT = 30.0


def txn_values(story: str, txn: str, n: int = PER_TXN) -> list[bytes]:
    """The values of transaction `txn` of `story`: b"<story>-<txn>-<i>" for i < n."""
    return [f"{story}-{txn}-{i}".encode() for i in range(n)]


def transform(value: bytes) -> bytes:
    """The consume-transform-produce stories' transformation (output = f(input))."""
    return b"out:" + value[::-1]


def kafka_python_values(bootstrap: str, topic: str, isolation_level: str) -> list[bytes]:
    """Every value of `topic` (all PARTITIONS) as kafka-python reads it, sorted."""
    got = read_to_end(bootstrap, topic, range(PARTITIONS), isolation_level=isolation_level)
    return sorted(r.value for records in got.values() for r in records)


def check_isolation(
    bootstrap: str, topic: str, committed: list[bytes], aborted: list[bytes]
) -> None:
    """kafka-python's cross-check of a topic: read_committed == committed, read_uncommitted ==
    committed + aborted (both as sorted lists: duplicates would show)."""
    assert kafka_python_values(bootstrap, topic, "read_committed") == sorted(committed)
    assert kafka_python_values(bootstrap, topic, "read_uncommitted") == sorted(committed + aborted)


def read_values(
    bootstrap: str | list[str],
    topic: str,
    partitions: int,
    isolation_level: str,
    *,
    expect_at_least: int = 0,
    timeout: float = 20.0,
    **consumer_config: Any,
) -> list[bytes]:
    """Every value of `topic` (partitions 0..partitions-1) as a kafka-python consumer with
    `isolation_level` reads it, sorted: polled until at least `expect_at_least` values are
    read and every position reached the end offset, asked again each round (read_committed:
    the LSO, which moves as transactions end), or until `timeout` seconds pass."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation_level,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        **consumer_config,
    )
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning()
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=300).values():
                out += [r.value for r in records]
            ends = consumer.end_offsets(tps)
            if len(out) >= expect_at_least and all(consumer.position(tp) >= ends[tp] for tp in tps):
                break
        return sorted(out)
    finally:
        consumer.close()


def kafka_python_producer(bootstrap: str, transactional_id: str | None) -> KafkaProducer:
    """A kafka-python producer, transactional when `transactional_id` is set."""
    config: dict[str, Any] = {}
    if transactional_id is not None:
        config["transactional_id"] = transactional_id
    return KafkaProducer(
        bootstrap_servers=bootstrap,
        max_block_ms=REQUEST_TIMEOUT_MS,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        delivery_timeout_ms=2 * REQUEST_TIMEOUT_MS,
        linger_ms=5,
        **config,
    )


def kafka_python_send_all(
    producer: KafkaProducer, topic: str, values: list[bytes], *, keyed: bool = False
) -> None:
    """Send `values` (value i to partition i % PARTITIONS, with key b"k<i>" when `keyed`),
    flush, and check every acknowledgement."""
    futures = [
        producer.send(topic, value=v, key=b"k%d" % i if keyed else None, partition=i % PARTITIONS)
        for i, v in enumerate(values)
    ]
    producer.flush(timeout=SEND_TIMEOUT)
    for future in futures:
        future.get(timeout=SEND_TIMEOUT)
