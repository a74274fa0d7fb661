"""Connection creation rates on a real broker over real sockets (KIP-612): a listener's
`max.connection.creation.rate` delays the connection over it (the acceptor waits; the
client's request is answered late, not refused), an address over its ip
`connection_creation_rate` has its connection closed unanswered; each is one INFO line and a
`wirebroker_throttled_connections_total` count on /metrics. (The ip quota's answers, timing
included, are held to Kafka 4.4 by tests/oracle/test_connection_rate_quota.py.)"""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Iterator

import pytest

from protocol.api import ApiKey
from tests.oracle.test_connection_rate_quota import _alter, _api_versions, _call
from wirebroker.testing import BrokerHandle


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerHandle]:
    overrides = {
        "listener.name.plaintext.max.connection.creation.rate": "2",
        "quota.window.num": "2",  # rates over 1 s (2 windows of 1 s): quick to exceed
    }
    with BrokerHandle(overrides=overrides, log_level="INFO").start() as handle:
        yield handle


def _connect(handle: BrokerHandle, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(
        (handle.host, handle.port), timeout=10, source_address=(source, 0)
    )


def _metrics(handle: BrokerHandle) -> str:
    assert handle.admin_url is not None
    with urllib.request.urlopen(f"{handle.admin_url}/metrics", timeout=10) as answer:
        return str(answer.read().decode())


def test_over_the_listener_rate_a_connection_waits(broker: BrokerHandle) -> None:
    waits = []
    for _ in range(3):
        start = time.monotonic()
        with _connect(broker) as sock:
            assert _api_versions(sock) == 0  # answered, however late
        waits.append(time.monotonic() - start)
    # three within a second at 2/s (earlier connections only add): one waited, about 0.5 s
    assert max(waits) >= 0.3, waits
    assert broker.log_path is not None
    assert "listener PLAINTEXT: max.connection.creation.rate exceeded" in (
        broker.log_path.read_text()
    )
    assert 'wirebroker_throttled_connections_total{listener="PLAINTEXT",reason="listener"}' in (
        _metrics(broker)
    )


def test_over_the_ip_rate_a_connection_is_closed_unanswered(broker: BrokerHandle) -> None:
    _alter(broker.bootstrap, "127.0.0.3", 1.0)
    with _connect(broker, "127.0.0.3") as sock:
        assert _api_versions(sock) == 0
    with _connect(broker, "127.0.0.3") as sock, pytest.raises(OSError):
        _api_versions(sock)
    assert broker.log_path is not None
    log = broker.log_path.read_text()
    assert "connection from 127.0.0.3 on listener PLAINTEXT throttled" in log
    assert 'wirebroker_throttled_connections_total{listener="PLAINTEXT",reason="ip"} 1.0' in (
        _metrics(broker)
    )


def test_the_broker_wide_rate_is_a_dynamic_config() -> None:
    """max.connection.creation.rate set at run time (IncrementalAlterConfigs) delays the next
    connections on the client listener; the inter-broker listener is exempt, as in Kafka."""
    overrides = {
        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "quota.window.num": "2",
    }
    with BrokerHandle(overrides=overrides, log_level="INFO").start() as handle:
        with _connect(handle) as sock:
            set_rate = {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": "",
                        "configs": [
                            {
                                "name": "max.connection.creation.rate",
                                "config_operation": 0,
                                "value": "2",
                            }
                        ],
                    }
                ],
                "validate_only": False,
            }
            answer = _call(sock, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, set_rate)
            assert [r.error_code for r in answer.responses] == [0]  # type: ignore[attr-defined]
        waits = []
        for _ in range(4):
            start = time.monotonic()
            with _connect(handle) as sock:
                assert _api_versions(sock) == 0
            waits.append(time.monotonic() - start)
        assert max(waits) >= 0.3, waits
        assert 'wirebroker_throttled_connections_total{listener="PLAINTEXT",reason="broker"}' in (
            _metrics(handle)
        )
