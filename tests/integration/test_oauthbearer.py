"""SASL OAUTHBEARER with real clients over real sockets, and the authentication counters over
HTTP (issue 34).

Each broker is a `BrokerHandle(security=..., sasl_mechanism="OAUTHBEARER")` subprocess, the
pytest plugin's secured broker: Kafka's unsecured validator on the secured listener, which is
also the inter-broker listener (the broker's own client presents an unsecured token there).

What passing proves: confluent-kafka (librdkafka's `sasl.oauthbearer.config=principal=alice`
unsecured token) and kafka-python (a `sasl_oauth_token_provider`) produce and read back over
SASL_PLAINTEXT and SASL_SSL as User:alice; a token without `sub` (librdkafka's, with
`principalClaimName=azp`) is refused with the RFC 7628 error exchange (one log line with the
validator's reason) and the broker goes on serving; /metrics (over HTTP) counts the successful
and failed authentications of the listener and mechanism. Expired tokens: the unit tests (an
injected clock) and tests/oracle/test_oauthbearer_authentication.py.
"""

from __future__ import annotations

import urllib.request
import uuid
from typing import Any

import pytest
from _secured import secured_brokers
from admin_listener import parse_metrics
from confluent_kafka import KafkaException, Producer
from test_security import _broker, _confluent, _kafka_python, _log, _wait_log

from wirebroker.testing import BrokerHandle

pytestmark = pytest.mark.compat

brokers = pytest.fixture(scope="module", name="brokers")(secured_brokers)
CLIENTS = {"kafka-python": _kafka_python, "confluent": _confluent}


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("security", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_produce_and_consume_with_an_unsecured_token(
    brokers: dict[tuple[str, str], BrokerHandle], security: str, client: str
) -> None:
    handle = _broker(brokers, security, "OAUTHBEARER")
    topic = handle.create_topic(f"oauth-{client}-{uuid.uuid4().hex[:8]}")
    got = CLIENTS[client](handle, topic)
    assert len(got) == 5
    assert f"authenticated User:alice on listener {security}" in _log(handle)


def _metrics(handle: BrokerHandle) -> Any:
    assert handle.admin_url is not None
    with urllib.request.urlopen(handle.admin_url + "/metrics", timeout=10) as resp:
        return parse_metrics(resp.read().decode())


def test_a_token_without_sub_is_refused_and_counted(
    brokers: dict[tuple[str, str], BrokerHandle],
) -> None:
    handle = _broker(brokers, "SASL_PLAINTEXT", "OAUTHBEARER")
    labels = (("listener", "SASL_PLAINTEXT"), ("mechanism", "OAUTHBEARER"))
    before = _metrics(handle)
    failed_before = before.get(("wirebroker_failed_authentications_total", labels), 0)
    lines_before = _log(handle).count("Failed authentication with")
    # librdkafka's unsecured token names alice in another claim: no `sub`
    config = handle.client_config | {
        "sasl.oauthbearer.config": "principal=alice principalClaimName=azp"
    }
    producer = Producer(config)
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=2)  # refused: it cannot succeed
    log = _wait_log(handle, "Failed authentication with", lines_before + 1)
    failed = [line for line in log.splitlines() if "Failed authentication with" in line]
    assert '{"status":"invalid_token"}' in failed[lines_before]
    assert "No principal name in JWT claim: sub" in failed[lines_before]
    after = _metrics(handle)
    assert after[("wirebroker_failed_authentications_total", labels)] >= failed_before + 1
    # the broker goes on serving; the good client logs in and is counted
    topic = handle.create_topic(f"oauth-after-{uuid.uuid4().hex[:8]}")
    assert len(_confluent(handle, topic)) == 5
    ok = _metrics(handle)[("wirebroker_successful_authentications_total", labels)]
    assert ok >= before.get(("wirebroker_successful_authentications_total", labels), 0) + 1
