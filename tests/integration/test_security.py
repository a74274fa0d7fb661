"""TLS and SASL listeners with real clients over real sockets (issue 34).

Each secured broker is a `wirebroker.testing.BrokerHandle(security=...)` subprocess (the same
settings as the pytest plugin's `@pytest.mark.kafka_broker(security=...)`): the secured
listener first, an INTERNAL PLAINTEXT one for the handle's helpers, a throwaway CA. Its log
(INFO) is where the principal of each connection is checked.

What passing proves: kafka-python, confluent-kafka (librdkafka) and aiokafka produce and read
back over SSL, mTLS (principal = the certificate subject, RFC 2253), SASL_PLAINTEXT and
SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; the broker's own inter-broker client
(transaction markers) authenticates over the secured listener; a wrong password or an unknown
user gets SASL_AUTHENTICATION_FAILED and one log line; Metadata before authentication closes
the connection as Kafka does; a plaintext client on a TLS listener and a TLS client on a
plaintext one are closed with one clear log line, and the broker goes on serving.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from _secured import secured_brokers
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

from protocol.api import ApiKey
from protocol.codec import encode_request
from wirebroker.testing import BrokerHandle

pytestmark = pytest.mark.compat

TIMEOUT = 20.0
MTLS_PRINCIPAL = "User:CN=wirebroker-client,O=wirebroker"


def _start(security: str, mechanism: str = "PLAIN") -> BrokerHandle:
    return BrokerHandle(security=security, sasl_mechanism=mechanism, log_level="INFO").start()


brokers = pytest.fixture(scope="module", name="brokers")(secured_brokers)


def _broker(
    brokers: dict[tuple[str, str], BrokerHandle], security: str, mechanism: str = "PLAIN"
) -> BrokerHandle:
    key = (security, mechanism)
    if key not in brokers:
        brokers[key] = _start(security, mechanism)
    return brokers[key]


def _log(handle: BrokerHandle) -> str:
    assert handle.log_path is not None
    return handle.log_path.read_text(errors="replace")


def _wait_log(handle: BrokerHandle, text: str, count: int = 1) -> str:
    deadline = time.monotonic() + TIMEOUT
    while True:
        log = _log(handle)
        if log.count(text) >= count or time.monotonic() > deadline:
            return log
        time.sleep(0.05)  # polling a file another process writes: no event to wait on


# -- the three clients -------------------------------------------------------------------------
def _kafka_python(handle: BrokerHandle, topic: str, **extra: Any) -> list[bytes]:
    config = handle.kafka_python_config | extra
    producer = KafkaProducer(**config, request_timeout_ms=10_000)
    try:
        for i in range(5):
            producer.send(topic, f"kp-{i}".encode()).get(timeout=TIMEOUT)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(
        topic, **config, auto_offset_reset="earliest", consumer_timeout_ms=int(TIMEOUT * 1000)
    )
    got: list[bytes] = []
    try:
        for message in consumer:
            got.append(message.value)
            if len(got) == 5:
                break
        return got
    finally:
        consumer.close()


def _confluent(handle: BrokerHandle, topic: str) -> list[bytes]:
    config = handle.client_config
    producer = Producer(config)
    for i in range(5):
        producer.produce(topic, f"ck-{i}".encode())
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer(
        config | {"group.id": f"g-{uuid.uuid4().hex}", "auto.offset.reset": "earliest"}
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < 5 and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def _aiokafka_config(handle: BrokerHandle) -> dict[str, Any]:
    config = dict(handle.kafka_python_config)
    cafile = config.pop("ssl_cafile", None)
    config.pop("ssl_check_hostname", None)
    if cafile is not None:
        config["ssl_context"] = create_ssl_context(cafile=cafile)
    return config


def _aiokafka(handle: BrokerHandle, topic: str) -> list[bytes]:
    async def run() -> list[bytes]:
        config = _aiokafka_config(handle)
        async with asyncio.timeout(TIMEOUT):
            producer = AIOKafkaProducer(**config)
            await producer.start()
            try:
                for i in range(5):
                    await producer.send_and_wait(topic, f"ak-{i}".encode())
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(topic, **config, auto_offset_reset="earliest")
            await consumer.start()
            got: list[bytes] = []
            try:
                while len(got) < 5:
                    batch = await consumer.getmany(timeout_ms=1000)
                    got += [m.value for msgs in batch.values() for m in msgs]
            finally:
                await consumer.stop()
            return got

    return asyncio.run(run())


CLIENTS = {"kafka-python": _kafka_python, "confluent": _confluent, "aiokafka": _aiokafka}
CASES = [
    ("SSL", "PLAIN"),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
]


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize(("security", "mechanism"), CASES)
def test_produce_and_consume(
    brokers: dict[tuple[str, str], BrokerHandle], security: str, mechanism: str, client: str
) -> None:
    handle = _broker(brokers, security, mechanism)
    topic = handle.create_topic(f"sec-{client}-{uuid.uuid4().hex[:8]}")
    got = CLIENTS[client](handle, topic)
    prefix = {"kafka-python": "kp", "confluent": "ck", "aiokafka": "ak"}[client]
    assert got == [f"{prefix}-{i}".encode() for i in range(5)]
    # the helpers' INTERNAL listener saw nothing of it: Metadata answered the secured address
    assert handle.helper_bootstrap != handle.bootstrap
    if "SASL" in security:
        assert "authenticated User:alice on listener " + security in _log(handle)


def test_mtls_principal_is_the_certificate_subject(
    brokers: dict[tuple[str, str], BrokerHandle],
) -> None:
    handle = _broker(brokers, "SSL")
    assert handle.secured is not None and handle.secured.cert_dir is not None
    certs = handle.secured.cert_dir
    topic = handle.create_topic(f"mtls-{uuid.uuid4().hex[:8]}")
    got = _kafka_python(
        handle,
        topic,
        ssl_certfile=str(certs / "client.pem"),
        ssl_keyfile=str(certs / "client.key"),
    )
    assert len(got) == 5
    log = _wait_log(handle, f"TLS client {MTLS_PRINCIPAL} on listener SSL")
    assert f"TLS client {MTLS_PRINCIPAL} on listener SSL" in log


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
def test_bad_credentials_fail_with_one_log_line(
    brokers: dict[tuple[str, str], BrokerHandle], user: str, password: str
) -> None:
    handle = _broker(brokers, "SASL_PLAINTEXT")
    before = _log(handle).count("Failed authentication with")
    config = handle.kafka_python_config | {
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }
    with pytest.raises(KafkaError):
        KafkaProducer(
            **config, request_timeout_ms=5000, max_block_ms=5000, bootstrap_timeout_ms=5000
        )
    log = _wait_log(handle, "Failed authentication with", before + 1)
    failed = [line for line in log.splitlines() if "Failed authentication with" in line]
    assert failed[before:] and "Invalid username or password" in failed[before]
    # the broker still serves everyone else
    assert handle.create_topic(f"after-fail-{uuid.uuid4().hex[:8]}")


def _raw(address: str, data: bytes, tls: ssl.SSLContext | None = None) -> bytes:
    """Send `data` on a new connection, return what comes back until the broker closes."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        conn: socket.socket = sock
        if tls is not None:
            conn = tls.wrap_socket(sock, server_hostname="localhost")
        conn.sendall(data)
        out = b""
        try:
            while chunk := conn.recv(65536):
                out += chunk
        except (ConnectionResetError, ssl.SSLError):
            pass
        return out


def test_metadata_before_authentication_closes(
    brokers: dict[tuple[str, str], BrokerHandle],
) -> None:
    handle = _broker(brokers, "SASL_PLAINTEXT")
    frame = encode_request(int(ApiKey.METADATA), 12, 1, "raw", {"topics": None})
    assert _raw(handle.bootstrap, bytes(frame)) == b""  # closed without an answer
    log = _wait_log(handle, "Unexpected Kafka request of type METADATA during SASL handshake.")
    assert "Unexpected Kafka request of type METADATA during SASL handshake." in log


def test_plaintext_client_on_tls_port_and_tls_client_on_plaintext_port(
    brokers: dict[tuple[str, str], BrokerHandle],
) -> None:
    handle = _broker(brokers, "SSL")
    frame = bytes(encode_request(int(ApiKey.API_VERSIONS), 0, 1, "raw", {}))
    assert _raw(handle.bootstrap, frame) == b""
    log = _wait_log(handle, "a client without TLS on an SSL / SASL_SSL listener?")
    assert "TLS handshake failed" in log
    tls = ssl.create_default_context()
    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    with pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
        _raw(handle.helper_bootstrap, b"", tls=tls)
    log = _wait_log(handle, "it sent a TLS handshake to a listener without TLS")
    assert "it sent a TLS handshake to a listener without TLS" in log
    # neither affected the broker: a TLS client still works
    assert len(_kafka_python(handle, handle.create_topic(f"after-{uuid.uuid4().hex[:8]}"))) == 5


def test_sasl_handshake_on_a_plaintext_listener_is_illegal_sasl_state(
    brokers: dict[tuple[str, str], BrokerHandle],
) -> None:
    handle = _broker(brokers, "SSL")
    frame = bytes(encode_request(int(ApiKey.SASL_HANDSHAKE), 1, 9, "raw", {"mechanism": "PLAIN"}))
    host, _, port = handle.helper_bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(frame)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        body = sock.recv(size, socket.MSG_WAITALL)
    correlation, error = struct.unpack_from(">ih", body)
    assert (correlation, error) == (9, 34)  # ILLEGAL_SASL_STATE, as Kafka on PLAINTEXT


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"])
def test_transaction_markers_cross_the_secured_inter_broker_listener(
    brokers: dict[tuple[str, str], BrokerHandle], mechanism: str
) -> None:
    """The broker writes a commit's markers through its own broker client, over its
    inter-broker listener (here the SASL_SSL one): TLS + SASL client side."""
    handle = _broker(brokers, "SASL_SSL", mechanism)
    topic = handle.create_topic(f"txn-{uuid.uuid4().hex[:8]}")
    producer = Producer(handle.client_config | {"transactional.id": f"t-{uuid.uuid4().hex}"})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"tx-{i}".encode())
    producer.commit_transaction(TIMEOUT)
    consumer = Consumer(
        handle.client_config
        | {
            "group.id": f"g-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    assert got == [f"tx-{i}".encode() for i in range(3)]


def test_serve_tls_selfsigned_prints_what_a_client_needs(tmp_path: Path) -> None:
    """`wirebroker serve --tls-selfsigned DIR`: the files and settings are printed, the SSL
    listener's address is printed before the ready line, and a client using exactly the
    printed CA file produces over TLS."""
    from _broker import BrokerProcess

    certs = tmp_path / "certs"
    proc = BrokerProcess(
        tmp_path / "data",
        extra_args=["--tls-selfsigned", str(certs), "--tls-port", "0"],
    )
    proc.start()
    try:
        out = "".join(proc.stdout_lines)
        assert f"ssl_cafile='{certs / 'ca.pem'}'" in out
        assert f"ssl.ca.location={certs / 'ca.pem'}" in out
        [line] = [x for x in proc.stdout_lines if x.startswith("wirebroker listener SSL on ")]
        address = line.split(" on ")[1].strip()
        producer = KafkaProducer(
            bootstrap_servers=address,
            security_protocol="SSL",
            ssl_cafile=str(certs / "ca.pem"),
            request_timeout_ms=10_000,
        )
        producer.send("selfsigned", b"x").get(timeout=TIMEOUT)
        producer.close(timeout=5)
    finally:
        proc.close()
