"""KIP-368 re-authentication with real clients over real sockets (issue 34).

One broker (`BrokerHandle(security="SASL_PLAINTEXT")`, its SASL listener also the
inter-broker one) with `connections.max.reauth.ms=1500`: SaslAuthenticate v1+ answers a
session lifetime of 1.5 s, and a connection whose session ended is closed at its next request
that does not re-authenticate (tests/oracle/test_sasl_session_expiry.py: the raw client, against
Kafka 4.4 too). Not 1000: as Kafka, the broker lets a connection start a re-authentication at
most once a second, and librdkafka re-authenticates at 90% of the lifetime, 900 ms after the
last one, which is refused (ILLEGAL_SASL_STATE; librdkafka then reconnects).

What passing proves: confluent-kafka (librdkafka re-authenticates at 90% of the lifetime) with
PLAIN, SCRAM-SHA-512 and OAUTHBEARER, and kafka-python 3.0.12 (85-95%) with SCRAM-SHA-256, keep
producing for several lifetimes with every record acknowledged and stored; the broker logged
several authentications from one client port (the client re-authenticated on its connection),
its /metrics counted more successful authentications than there were connections, and no
session expired. Transactions over those lifetimes commit, and the broker's own client (the
markers, sent through the inter-broker listener) re-authenticates too: no session expired.
"""

from __future__ import annotations

import re
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from admin_listener import parse_metrics
from confluent_kafka import Producer
from kafka import KafkaProducer

from wirebroker.testing import BrokerHandle

pytestmark = pytest.mark.compat

LIFETIME_S = 1.5
LIFETIMES = 3.2  # how long each client keeps producing, in lifetimes: 2 re-authentications
TIMEOUT = 30.0
AUTHENTICATED = re.compile(r"authenticated User:alice on listener SASL_PLAINTEXT from (\S+)")
EXPIRED = "the SASL session of"


@pytest.fixture(scope="module")
def handle() -> Iterator[BrokerHandle]:
    overrides = {"connections.max.reauth.ms": int(LIFETIME_S * 1000)}
    with BrokerHandle(security="SASL_PLAINTEXT", overrides=overrides, log_level="INFO") as broker:
        yield broker


def _log(handle: BrokerHandle) -> str:
    assert handle.log_path is not None
    return handle.log_path.read_text(errors="replace")


def _successes(handle: BrokerHandle) -> int:
    assert handle.admin_url is not None
    with urllib.request.urlopen(handle.admin_url + "/metrics", timeout=10) as resp:
        metrics = parse_metrics(resp.read().decode())
    return sum(
        value
        for (name, _labels), value in metrics.items()
        if name == "wirebroker_successful_authentications_total"
    )


def _per_connection(log: str) -> Counter[str]:
    """Successful authentications per client address (host:port: one connection)."""
    return Counter(AUTHENTICATED.findall(log))


def _wait_for(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling a file another process writes: no event to wait on
    return True


def _confluent(handle: BrokerHandle, topic: str, mechanism: str) -> int:
    """Produce one record at a time (each awaited) for LIFETIMES lifetimes; the count."""
    config: dict[str, Any] = dict(handle.client_config)
    if mechanism == "OAUTHBEARER":
        for key in ("sasl.username", "sasl.password"):
            config.pop(key, None)
        config |= {
            "sasl.oauthbearer.config": "principal=alice",
            "enable.sasl.oauthbearer.unsecure.jwt": "true",
        }
    producer = Producer(config | {"sasl.mechanism": mechanism, "linger.ms": 0})
    errors: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    sent = 0
    end = time.monotonic() + LIFETIMES * LIFETIME_S
    while time.monotonic() < end:
        producer.produce(topic, f"r-{sent}".encode(), on_delivery=delivered)
        sent += 1
        assert producer.flush(TIMEOUT) == 0  # acknowledged before the next one
    assert errors == []
    return sent


def _kafka_python(handle: BrokerHandle, topic: str, mechanism: str) -> int:
    config = handle.kafka_python_config | {"sasl_mechanism": mechanism}
    producer = KafkaProducer(**config, request_timeout_ms=10_000, linger_ms=0)
    sent = 0
    try:
        end = time.monotonic() + LIFETIMES * LIFETIME_S
        while time.monotonic() < end:
            producer.send(topic, f"r-{sent}".encode()).get(timeout=TIMEOUT)
            sent += 1
    finally:
        producer.close(timeout=5)
    return sent


CASES = [
    ("confluent", "PLAIN"),
    ("confluent", "SCRAM-SHA-512"),
    ("confluent", "OAUTHBEARER"),
    ("kafka-python", "SCRAM-SHA-256"),
]


@pytest.mark.parametrize(("client", "mechanism"), CASES)
def test_a_producer_reauthenticates_across_lifetimes(
    handle: BrokerHandle, client: str, mechanism: str
) -> None:
    topic = handle.create_topic(f"reauth-{uuid.uuid4().hex[:8]}")
    log_before, successes_before = len(_log(handle)), _successes(handle)
    produce = _confluent if client == "confluent" else _kafka_python
    sent = produce(handle, topic, mechanism)
    assert sent > 0 and len(handle.read_to_end(topic)) == sent  # every record stored

    def reauthenticated() -> bool:  # one connection authenticated at least 3 times
        return max(_per_connection(_log(handle)[log_before:]).values(), default=0) >= 3

    assert _wait_for(reauthenticated), _log(handle)[log_before:]
    new = _log(handle)[log_before:]
    connections = len(_per_connection(new))
    assert _successes(handle) - successes_before > connections
    assert EXPIRED not in new


def test_transactions_across_lifetimes_and_the_brokers_own_client(handle: BrokerHandle) -> None:
    """Commits (the markers go through the broker's own client over the SASL listener) for
    several lifetimes: all committed, no session expired, the broker's client included."""
    topic = handle.create_topic(f"reauth-txn-{uuid.uuid4().hex[:8]}")
    log_before = len(_log(handle))
    producer = Producer(handle.client_config | {"transactional.id": f"t-{uuid.uuid4().hex}"})
    producer.init_transactions(TIMEOUT)
    committed = 0
    end = time.monotonic() + LIFETIMES * LIFETIME_S
    while time.monotonic() < end:
        producer.begin_transaction()
        producer.produce(topic, f"tx-{committed}".encode())
        producer.commit_transaction(TIMEOUT)
        committed += 1
    # each commit wrote a marker after its record
    assert len(handle.read_to_end(topic)) == committed
    assert _wait_for(lambda: max(_per_connection(_log(handle)[log_before:]).values()) >= 3)
    assert EXPIRED not in _log(handle)[log_before:]
