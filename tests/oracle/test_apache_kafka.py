"""The oracle itself (compat/oracle): a real Apache Kafka 4.4 that answers as Kafka does, that
a client and Kafka's own tools use, and whose answers the other suites can trust."""

from __future__ import annotations

import itertools
import uuid

from kafka import KafkaConsumer, KafkaProducer

from compat.oracle.kafka import run_tool
from compat.scenarios.wire import Wire
from protocol.api import ApiKey


def test_it_is_apache_kafka_4_4(apache_kafka: str) -> None:
    with Wire(apache_kafka) as wire:
        versions = wire.call(
            ApiKey.API_VERSIONS,
            3,
            {"client_software_name": "test", "client_software_version": "1"},
        )
    keys = {a.api_key: (a.min_version, a.max_version) for a in versions.api_keys}
    # Kafka 4.x: Produce v0 is advertised (KAFKA-18659) and Fetch starts at v4 (KIP-896);
    # ConsumerGroupHeartbeat (68) and ShareFetch (78) exist; no LeaderAndIsr (4, removed).
    assert keys[0][0] == 0 and keys[1][0] == 4
    assert 68 in keys and 78 in keys and 4 not in keys
    features = {f.name: f.max_version_level for f in versions.finalized_features}
    assert features["metadata.version"] >= 27  # 4.4's metadata versions


def test_a_client_round_trip(apache_kafka: str) -> None:
    topic = f"oracle-roundtrip-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=apache_kafka, acks="all")
    producer.send(topic, key=b"k", value=b"v").get(timeout=60)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=apache_kafka,
        auto_offset_reset="earliest",
        consumer_timeout_ms=60_000,
    )
    got = [(m.key, m.value) for m in itertools.islice(consumer, 1)]
    consumer.close()
    assert got == [(b"k", b"v")]


def test_kafka_tools_run_against_it(apache_kafka: str) -> None:
    topic = f"oracle-tool-{uuid.uuid4().hex[:8]}"
    created = run_tool(
        "org.apache.kafka.tools.TopicCommand",
        ["--bootstrap-server", apache_kafka, "--create", "--topic", topic, "--partitions", "2"],
    )
    assert created.returncode == 0, created.stderr
    listed = run_tool(
        "org.apache.kafka.tools.TopicCommand", ["--bootstrap-server", apache_kafka, "--list"]
    )
    assert listed.returncode == 0, listed.stderr
    assert topic in listed.stdout.split()
