"""kafka-python 3.x against a wirebroker subprocess: produce, consume (assign), admin.

What passing proves: kafka-python's default producer (idempotent: InitProducerId, sequence
numbers) can write keyed records with headers and null values to several partitions and a
group-less consumer reads exactly those bytes back, in order, at contiguous offsets; the admin
client can create (with configs), describe (configs and topics), list and delete topics; a
producer's metadata request auto-creates a topic with the broker's num.partitions.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from _broker import BrokerFactory, BrokerProcess
from _clients import REQUEST_TIMEOUT_MS, read_to_end
from kafka import KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import InvalidTopicError, TopicAlreadyExistsError

pytestmark = pytest.mark.compat

PARTITIONS = 3


def _producer(bootstrap: str, **config: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap,
        max_block_ms=REQUEST_TIMEOUT_MS,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        delivery_timeout_ms=2 * REQUEST_TIMEOUT_MS,
        **config,
    )


def _admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS)


def _records(n: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]:
    """(key, value, headers) covering: binary bytes, empty bytes, null key, null value."""
    out: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]] = []
    for i in range(n):
        key: bytes | None = f"key-{i}".encode() if i % 5 else None
        value: bytes | None = bytes([i % 256]) * (i % 37) + b"\x00\xff" + str(i).encode()
        if i % 7 == 3 and key is not None:
            value = None  # a tombstone (kafka-python wants a key or a value)
        elif i % 11 == 4:
            value = b""
        headers = [("idx", str(i).encode()), ("bin", bytes(range(i % 17)))] if i % 3 else []
        out.append((key, value, headers))
    return out


def test_idempotent_produce_and_assign_consume(broker: BrokerProcess) -> None:
    topic = "kp-data"
    with _admin(broker.bootstrap) as admin:
        admin.create_topics({topic: {"num_partitions": PARTITIONS, "replication_factor": 1}})
    producer = _producer(broker.bootstrap)
    sent = _records(300)
    try:
        futures = [
            producer.send(topic, key=k, value=v, headers=h, partition=i % PARTITIONS)
            for i, (k, v, h) in enumerate(sent)
        ]
        producer.flush(timeout=REQUEST_TIMEOUT_MS / 1000)
        metas = [f.get(timeout=REQUEST_TIMEOUT_MS / 1000) for f in futures]
    finally:
        producer.close(timeout=5)

    # Acknowledged offsets: per partition 0, 1, 2, ... in send order.
    for p in range(PARTITIONS):
        offsets = [m.offset for i, m in enumerate(metas) if i % PARTITIONS == p]
        assert offsets == list(range(len(offsets))), f"partition {p}: {offsets[:20]}"
        assert all(m.partition == p for i, m in enumerate(metas) if i % PARTITIONS == p)

    got = read_to_end(broker.bootstrap, topic, range(PARTITIONS))
    for p in range(PARTITIONS):
        expected = [r for i, r in enumerate(sent) if i % PARTITIONS == p]
        records = got[p]
        assert [r.offset for r in records] == list(range(len(expected)))
        assert [(r.key, r.value, list(r.headers)) for r in records] == expected
        assert all(r.topic == topic and r.partition == p for r in records)


def test_producer_metadata_auto_creates_topic(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(**{"num.partitions": "4"})
    topic = "kp-auto-created"
    producer = _producer(broker.bootstrap)
    try:
        meta = producer.send(topic, value=b"first").get(timeout=REQUEST_TIMEOUT_MS / 1000)
        assert producer.partitions_for(topic) == {0, 1, 2, 3}
    finally:
        producer.close(timeout=5)
    assert meta.offset == 0
    got = read_to_end(broker.bootstrap, topic, range(4))
    assert [r.value for recs in got.values() for r in recs] == [b"first"]
    assert [r.value for r in got[meta.partition]] == [b"first"]


def _wait_until(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def test_admin_topic_lifecycle(broker: BrokerProcess) -> None:
    with _admin(broker.bootstrap) as admin:
        result = admin.create_topics(
            {
                "kp-admin": {
                    "num_partitions": 2,
                    "replication_factor": 1,
                    "configs": {"retention.ms": "3600000", "cleanup.policy": "delete"},
                },
                "kp-admin-default": {},
            }
        )
        assert {t["name"]: t["error_code"] for t in result["topics"]} == {
            "kp-admin": 0,
            "kp-admin-default": 0,
        }

        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics({"kp-admin": {"num_partitions": 1}})
        with pytest.raises(InvalidTopicError):
            admin.create_topics({"bad/name": {"num_partitions": 1}})

        assert {"kp-admin", "kp-admin-default"} <= set(admin.list_topics())
        described = {t["name"]: t for t in admin.describe_topics(["kp-admin", "kp-admin-default"])}
        parts = sorted(described["kp-admin"]["partitions"], key=lambda p: p["partition_index"])
        assert [p["partition_index"] for p in parts] == [0, 1]
        assert all(p["error_code"] == 0 and p["leader_id"] >= 0 for p in parts)
        assert len(described["kp-admin-default"]["partitions"]) == 1  # num.partitions default

        resource = ConfigResource(ConfigResourceType.TOPIC, "kp-admin")
        modified = admin.describe_configs([resource])["topic"]["kp-admin"]
        assert modified["retention.ms"]["value"] == "3600000"
        assert modified["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert "segment.bytes" not in modified  # only overrides with the default filter
        everything = admin.describe_configs([resource], config_filter="all")["topic"]["kp-admin"]
        assert everything["segment.bytes"]["value"] == "1073741824"
        assert everything["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
        assert everything["cleanup.policy"]["value"] == "delete"

        deleted = admin.delete_topics(["kp-admin"])
        assert [t["error_code"] for t in deleted["topics"]] == [0]
        assert _wait_until(lambda: "kp-admin" not in admin.list_topics())
        assert "kp-admin-default" in admin.list_topics()
