"""The Java client (kafka-clients 4.4.0) over SSL, mTLS, SASL_PLAINTEXT and SASL_SSL (issue 34).

One JVM for the whole module: the driver of compat/java-client (`JavaClientAdapter`), given
each case's client settings with its `configure` op, as an application's properties file
would give them (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
`ssl.truststore.type=PEM`, `ssl.keystore.type=PEM`). One secured broker per security protocol
(`wirebroker.testing.BrokerHandle`; every SASL broker accepts PLAIN and both SCRAMs); a case
reaches it with its own settings through a labelled bootstrap (`host:port#label`, the label
stays in the driver).

What passing proves: KafkaProducer and KafkaConsumer round-trip records over SSL (Java's PEM
truststore), mTLS (a PEM keystore; the principal is the certificate's subject), and PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 over SASL_PLAINTEXT and SASL_SSL; a wrong password or an
unknown user is the Java client's SaslAuthenticationException (SASL_AUTHENTICATION_FAILED).
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from _secured import Secured, secured_brokers

from compat.scenarios.api import ClientError, Rec
from compat.scenarios.runner import load_adapter
from wirebroker.testing import BrokerHandle
from wirebroker.testing._security import USERS

pytestmark = pytest.mark.compat

TIMEOUT = 20.0
MTLS_PRINCIPAL = "User:CN=wirebroker-client,O=wirebroker"
MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
CASES = [
    ("SSL", None),
    ("SSL", "mTLS"),
    *[(p, m) for p in ("SASL_PLAINTEXT", "SASL_SSL") for m in MODULES],
]

brokers = pytest.fixture(scope="module", name="brokers")(secured_brokers)


@pytest.fixture(scope="module")
def java() -> Iterator[Any]:
    """The Java client's driver (one JVM for the module)."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("the Java client needs a JDK 17+ (and Maven for its jars), as compat/oracle")
    adapter = load_adapter("java-client")("127.0.0.1:1")
    try:
        yield adapter
    finally:
        adapter.close()


def _broker(brokers: Secured, security: str) -> BrokerHandle:
    if (security, "") not in brokers:
        brokers[security, ""] = BrokerHandle(security=security, log_level="INFO").start()
    return brokers[security, ""]


def _settings(
    handle: BrokerHandle, mechanism: str | None, user: str = "alice", password: str | None = None
) -> dict[str, str]:
    """The Java client's properties for `handle`'s secured listener."""
    assert handle.secured is not None
    out = {"security.protocol": handle.secured.protocol}
    certs = handle.secured.cert_dir
    if certs is not None:
        out |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem")}
    if mechanism == "mTLS":
        assert certs is not None
        out |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": (certs / "client.pem").read_text(),
            "ssl.keystore.key": (certs / "client.key").read_text(),
        }
    elif mechanism is not None:
        secret = USERS[user] if password is None else password
        out |= {
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{MODULES[mechanism]} required username="{user}" '
            f'password="{secret}";',
        }
    return out


def _log_has(handle: BrokerHandle, text: str) -> bool:
    assert handle.log_path is not None
    deadline = time.monotonic() + TIMEOUT
    while text not in handle.log_path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling a file another process writes: no event to wait on
    return True


@pytest.mark.parametrize(("security", "mechanism"), CASES)
def test_java_client_round_trip(
    brokers: Secured, java: Any, security: str, mechanism: str | None
) -> None:
    handle = _broker(brokers, security)
    bootstrap = f"{handle.bootstrap}#{mechanism}"
    java.configure(bootstrap, _settings(handle, mechanism))
    topic = handle.create_topic(f"java-{security.lower()}-{uuid.uuid4().hex[:8]}")
    records = [Rec(f"k{i}".encode(), f"{mechanism}-{i}".encode()) for i in range(5)]
    acks = java.produce(topic, records, bootstrap=bootstrap, timeout_s=TIMEOUT)
    assert [a.offset for a in acks] == [0, 1, 2, 3, 4]
    got = java.read(bootstrap, topic, 5, timeout_s=TIMEOUT)
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]
    if mechanism == "mTLS":
        assert _log_has(handle, f"TLS client {MTLS_PRINCIPAL} on listener SSL")
    elif mechanism is not None:
        assert _log_has(handle, f"authenticated User:alice on listener {security}")


@pytest.mark.parametrize(
    ("security", "mechanism", "user", "password"),
    [
        ("SASL_SSL", "SCRAM-SHA-256", "alice", "wrong"),
        ("SASL_PLAINTEXT", "PLAIN", "alice", "wrong"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-512", "mallory", "alice-secret"),
    ],
)
def test_java_client_bad_credentials_are_sasl_authentication_exception(
    brokers: Secured, java: Any, security: str, mechanism: str, user: str, password: str
) -> None:
    handle = _broker(brokers, security)
    bootstrap = f"{handle.bootstrap}#bad-{mechanism}-{user}"
    java.configure(bootstrap, _settings(handle, mechanism, user, password))
    topic = handle.create_topic(f"java-bad-{uuid.uuid4().hex[:8]}")
    with pytest.raises(ClientError) as failed:
        java.produce(topic, [Rec(b"k", b"v")], bootstrap=bootstrap, timeout_s=TIMEOUT)
    assert failed.value.code == "SASL_AUTHENTICATION_FAILED"
    assert "org.apache.kafka.common.errors.SaslAuthenticationException" in failed.value.raw
    assert _log_has(handle, "Failed authentication with")
