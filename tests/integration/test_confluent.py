"""confluent-kafka 2.16 (librdkafka) against a wirebroker subprocess.

What passing proves: librdkafka's producer (acks=all by default, idempotence off) writes batches
compressed with each codec it ships (gzip, snappy, lz4, zstd); the broker stores them as they
came (the batches in the segment files carry the codec in their attributes) and a consumer
reads back exactly the bytes sent, in order, at contiguous offsets; AdminClient creates (with
configs), lists and deletes topics.

librdkafka turns lz4 on only when the broker advertises FindCoordinator (its probe for Kafka
>= 0.8.2) and otherwise sends lz4-configured batches uncompressed; the lz4 case checks for
whichever the broker's ApiVersions implies, so it demands real lz4 batches once the group
coordinator is served.

Consuming without groups: librdkafka's Consumer needs a `group.id`, but with `assign()` at an
explicit logical offset (OFFSET_BEGINNING) and no commits (`enable.auto.commit=false`) it never
needs offsets from the group coordinator, so fetching works whether or not the broker serves
FindCoordinator.
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from _broker import BrokerProcess
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.compat

TIMEOUT = 15.0
PARTITIONS = 2
#: Record batch v2 attributes: int16 at byte 21 of the batch; its low 3 bits are the codec.
CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
FIND_COORDINATOR = 10


def _create_topic(bootstrap: str, name: str, partitions: int, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=configs)],
        request_timeout=TIMEOUT,
    )
    futures[name].result(timeout=TIMEOUT)


def _records(n: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]] | None]]:
    out: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]] | None]] = []
    for i in range(n):
        key = None if i % 6 == 0 else f"k{i}".encode()
        value: bytes | None = (f"value {i} ".encode() * (1 + i % 40)) + bytes([i % 256, 0, 255])
        if i % 9 == 5:
            value = None
        headers = [("n", str(i).encode()), ("empty", b"")] if i % 4 == 1 else None
        out.append((key, value, headers))
    return out


def _produce(bootstrap: str, topic: str, records: list[Any], **config: Any) -> list[Any]:
    """Produce every record (record i to partition i % PARTITIONS); returns delivered msgs."""
    delivered: list[Any] = [None] * len(records)
    errors: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,  # several records per batch, so compression has something to do
            "message.timeout.ms": int(TIMEOUT * 1000),
            **config,
        }
    )

    def report(i: int) -> Any:
        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append((i, err))
            delivered[i] = msg

        return on_delivery

    for i, (key, value, headers) in enumerate(records):
        producer.produce(
            topic,
            value=value,
            key=key,
            headers=headers,
            partition=i % PARTITIONS,
            on_delivery=report(i),
        )
        producer.poll(0)
    remaining = producer.flush(TIMEOUT)
    assert remaining == 0, f"{remaining} records not delivered within {TIMEOUT} s"
    assert errors == []
    return delivered


def _consume(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, list[Any]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "wirebroker-assign-only",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
        }
    )
    out: dict[int, list[Any]] = {p: [] for p in counts}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in counts])
        deadline = time.monotonic() + TIMEOUT
        while any(len(out[p]) < n for p, n in counts.items()):
            assert time.monotonic() < deadline, f"read {[len(v) for v in out.values()]}"
            for msg in consumer.consume(num_messages=500, timeout=0.5):
                assert msg.error() is None, msg.error()
                partition = msg.partition()
                assert partition is not None
                out[partition].append(msg)
    finally:
        consumer.close()
    return out


def _stored_codecs(data_dir: Path, topic: str, partition: int) -> list[int]:
    """The codec of every batch in the partition's segment files, in order."""
    codecs = []
    for segment in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        data = segment.read_bytes()
        pos = 0
        while pos + 61 <= len(data):  # baseOffset int64, batchLength int32, ...
            (length,) = struct.unpack_from(">i", data, pos + 8)
            (attributes,) = struct.unpack_from(">h", data, pos + 21)
            codecs.append(attributes & 0x07)
            pos += 12 + length
    return codecs


def _advertised_api_keys(bootstrap: str) -> set[int]:
    """API keys in the broker's ApiVersions v0 response (raw socket, no client library)."""
    host, _, port = bootstrap.rpartition(":")
    client_id = b"wirebroker-test"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = sock.recv(65536)
            assert chunk, "connection closed before the ApiVersions response"
            data += chunk
    _correlation, error, count = struct.unpack_from(">ihi", data, 4)
    assert error == 0
    return {struct.unpack_from(">h", data, 14 + 6 * i)[0] for i in range(count)}


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_produce_consume(broker: BrokerProcess, codec: str) -> None:
    topic = f"cf-{codec}"
    _create_topic(broker.bootstrap, topic, PARTITIONS)
    sent = _records(200)
    delivered = _produce(broker.bootstrap, topic, sent, **{"compression.type": codec})

    counts = {p: len(sent[p::PARTITIONS]) for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        offsets = [delivered[i].offset() for i in range(p, len(sent), PARTITIONS)]
        assert offsets == list(range(counts[p])), f"partition {p}: {offsets[:20]}"

    got = _consume(broker.bootstrap, topic, counts)
    for p in range(PARTITIONS):
        msgs = got[p]
        assert [m.offset() for m in msgs] == list(range(counts[p]))
        assert [(m.key(), m.value(), m.headers()) for m in msgs] == sent[p::PARTITIONS]

    # librdkafka sends a batch uncompressed when compressing does not make it smaller, and
    # enables lz4 only when the broker advertises FindCoordinator (its test for Kafka >= 0.8.2).
    expected = CODEC_IDS[codec]
    if codec == "lz4" and FIND_COORDINATOR not in _advertised_api_keys(broker.bootstrap):
        expected = 0
    for p in range(PARTITIONS):
        codecs = _stored_codecs(broker.data_dir, topic, p)
        assert expected in codecs and set(codecs) <= {0, expected}, codecs


def test_admin_create_list_delete(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics(
        [
            NewTopic(
                "cf-admin-a",
                num_partitions=3,
                replication_factor=1,
                config={"retention.ms": "60000"},
            ),
            NewTopic("cf-admin-b", num_partitions=1, replication_factor=1),
        ],
        request_timeout=TIMEOUT,
    )
    for f in futures.values():
        assert f.result(timeout=TIMEOUT) is None

    again = admin.create_topics([NewTopic("cf-admin-b", num_partitions=1)], request_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as excinfo:
        again["cf-admin-b"].result(timeout=TIMEOUT)
    assert excinfo.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    topics = admin.list_topics(timeout=TIMEOUT).topics
    assert len(topics["cf-admin-a"].partitions) == 3
    assert len(topics["cf-admin-b"].partitions) == 1

    deleted = admin.delete_topics(["cf-admin-a"], request_timeout=TIMEOUT)
    assert deleted["cf-admin-a"].result(timeout=TIMEOUT) is None
    deadline = time.monotonic() + 5
    while "cf-admin-a" in admin.list_topics(timeout=TIMEOUT).topics:
        assert time.monotonic() < deadline, "deleted topic still listed after 5 s"
        time.sleep(0.05)
    assert "cf-admin-b" in admin.list_topics(timeout=TIMEOUT).topics
