"""A broker whose SSL listener has JKS stores made by Java's keytool at test time
(`ssl.keystore.type=JKS` with a key password of its own, `ssl.truststore.type=JKS`,
`ssl.client.auth=requested`): confluent-kafka produces and consumes over SSL trusting the
certificate keytool exported; the Java client (kafka-clients 4.4) does the same with JKS
stores of its own, as a Java application configures it (its truststore holds the broker's
certificate, its keystore the key the broker's JKS truststore trusts), and the broker logs its
certificate's subject as the principal (mTLS)."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from compat.scenarios.api import Rec
from compat.scenarios.runner import load_adapter
from wirebroker.testing import BrokerHandle

pytestmark = pytest.mark.compat

STORE, KEY, CLIENT = "store-secret", "key-secret", "client-secret"
PRINCIPAL = "User:CN=jks-client,O=keytool"
TIMEOUT = 20.0


def _keytool(*args: str) -> None:
    keytool = shutil.which("keytool")
    if keytool is None:
        pytest.skip("keytool (a JDK) is not installed")
    fast_start = ["-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"]  # a short-lived JVM
    subprocess.run([keytool, *fast_start, *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """broker.jks (key + self-signed certificate for 127.0.0.1), broker.pem (exported),
    client.jks (the Java client's key), client.pem (exported), trust.jks (the broker's
    truststore: client.pem), client-trust.jks (the Java client's truststore: broker.pem)."""
    d = tmp_path_factory.mktemp("jks")

    def pair(name: str, dname: str, store: str, key: str) -> None:
        _keytool(
            "-genkeypair", "-alias", name, "-keyalg", "RSA", "-keysize", "2048",
            "-dname", dname, "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2",
            "-storetype", "JKS", "-keystore", str(d / f"{name}.jks"),
            "-storepass", store, "-keypass", key,
        )  # fmt: skip
        _keytool(
            "-exportcert", "-rfc", "-alias", name, "-keystore", str(d / f"{name}.jks"),
            "-storepass", store, "-file", str(d / f"{name}.pem"),
        )  # fmt: skip

    def trust(store: str, pem: str) -> None:
        _keytool(
            "-importcert", "-noprompt", "-alias", pem, "-file", str(d / pem),
            "-storetype", "JKS", "-keystore", str(d / store), "-storepass", STORE,
        )  # fmt: skip

    pair("broker", "CN=localhost,O=keytool", STORE, KEY)
    pair("client", "CN=jks-client,O=keytool", CLIENT, CLIENT)
    trust("trust.jks", "client.pem")
    trust("client-trust.jks", "broker.pem")
    return d


@pytest.fixture(scope="module")
def broker(stores: Path) -> Iterator[BrokerHandle]:
    overrides = {
        "listeners": "SSL://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL,INTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.keystore.type": "JKS",
        "ssl.keystore.location": str(stores / "broker.jks"),
        "ssl.keystore.password": STORE,
        "ssl.key.password": KEY,
        "ssl.truststore.type": "JKS",
        "ssl.truststore.location": str(stores / "trust.jks"),
        "ssl.truststore.password": STORE,
        "ssl.client.auth": "requested",
    }
    with BrokerHandle(overrides=overrides, log_level="INFO").start() as handle:
        yield handle


def test_confluent_kafka_over_ssl_to_jks_stores(broker: BrokerHandle, stores: Path) -> None:
    topic = broker.create_topic(f"jks-{uuid.uuid4().hex[:8]}")
    config = {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(stores / "broker.pem"),
    }
    producer = Producer(config)
    for i in range(5):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer(config | {"group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(got) < 5 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert got == [f"v{i}".encode() for i in range(5)]


@pytest.fixture(scope="module")
def java() -> Iterator[Any]:
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("the Java client needs a JDK 17+ (and Maven for its jars), as compat/oracle")
    adapter = load_adapter("java-client")("127.0.0.1:1")
    try:
        yield adapter
    finally:
        adapter.close()


def test_java_client_with_jks_stores(broker: BrokerHandle, stores: Path, java: Any) -> None:
    bootstrap = f"{broker.bootstrap}#jks"
    java.configure(
        bootstrap,
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "JKS",
            "ssl.truststore.location": str(stores / "client-trust.jks"),
            "ssl.truststore.password": STORE,
            "ssl.keystore.type": "JKS",
            "ssl.keystore.location": str(stores / "client.jks"),
            "ssl.keystore.password": CLIENT,
            "ssl.key.password": CLIENT,
        },
    )
    topic = broker.create_topic(f"jks-java-{uuid.uuid4().hex[:8]}")
    records = [Rec(f"k{i}".encode(), f"java-{i}".encode()) for i in range(5)]
    acks = java.produce(topic, records, bootstrap=bootstrap, timeout_s=TIMEOUT)
    assert [a.offset for a in acks] == [0, 1, 2, 3, 4]
    got = java.read(bootstrap, topic, 5, timeout_s=TIMEOUT)
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]
    assert broker.log_path is not None
    assert f"TLS client {PRINCIPAL} on listener SSL" in broker.log_path.read_text()
