"""The /faults HTTP API of a broker subprocess (`wirebroker.running()`: admin listener on a free
port), with plain HTTP requests as curl would send them, and a real client meeting the fault.

What passing proves: the routes are mounted on the admin listener; POST validates its body
(400 with the reason), adds a fault (201) that a kafka-python producer meets and rides out,
GET lists it with its hits, DELETE removes one (404 after) or all; a single broker answers
move_leader and shrink_isr with 409; `BrokerHandle.faults` (over HTTP) makes the broker
unreachable and reachable again; the broker logs each injected fault at WARNING.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from _clients import REQUEST_TIMEOUT_MS
from kafka import KafkaProducer

import wirebroker
from wirebroker.testing import BrokerHandle

pytestmark = pytest.mark.compat


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerHandle]:
    with wirebroker.running() as handle:
        yield handle


def _http(broker: BrokerHandle, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    assert broker.admin_url is not None
    url = urlsplit(broker.admin_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if raw is not None else {}
        conn.request(method, path, body=raw, headers=headers)
        response = conn.getresponse()
        assert response.getheader("Content-Type") == "application/json"
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_add_meet_list_and_remove_over_http(broker: BrokerHandle) -> None:
    broker.create_topic("http-orders")
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        enable_idempotence=True,
        retry_backoff_ms=50,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        max_block_ms=REQUEST_TIMEOUT_MS,
    )
    try:
        producer.partitions_for("http-orders")
        status, answer = _http(
            broker,
            "POST",
            "/faults",
            {
                "kind": "error",
                "api_key": "Produce",
                "error_code": "NOT_LEADER_OR_FOLLOWER",
                "count": 2,
                "topic": "http-orders",
            },
        )
        assert status == 201, answer
        fault_id = answer["fault"]["id"]
        status, listed = _http(broker, "GET", "/faults")
        assert status == 200 and [f["id"] for f in listed["faults"]] == [fault_id]
        producer.send("http-orders", b"x").get(timeout=30)
    finally:
        producer.close()
    assert _http(broker, "GET", "/faults") == (200, {"faults": []})
    assert _http(broker, "DELETE", f"/faults/{fault_id}")[0] == 404
    status, answer = _http(broker, "POST", "/faults", {"kind": "delay", "delay_ms": 1})
    assert status == 201
    assert _http(broker, "DELETE", "/faults")[1]["removed"][0]["id"] == answer["fault"]["id"]
    assert [m.value for m in broker.read_to_end("http-orders")] == [b"x"]
    assert broker.log_path is not None
    log = broker.log_path.read_text()
    assert log.count(f"injecting fault {fault_id} ") == 2


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "not JSON"),
        ({"kind": "error", "api_key": "Produce"}, "needs 'error_code'"),
        ({"kind": "delay", "delay_ms": 5, "colour": "red"}, "unknown field(s) ['colour']"),
        ({"kind": "error", "error_code": "NOPE"}, "names no Kafka error"),
    ],
)
def test_bad_bodies_get_400_with_the_reason(broker: BrokerHandle, body: Any, reason: str) -> None:
    status, answer = _http(broker, "POST", "/faults", body)
    assert status == 400
    assert reason in answer["error"]


def test_cluster_faults_on_a_single_broker_are_409(broker: BrokerHandle) -> None:
    broker.create_topic("http-single")
    for body in (
        {"kind": "move_leader", "topic": "http-single", "partition": 0},
        {"kind": "shrink_isr", "topic": "http-single", "partition": 0},
    ):
        status, answer = _http(broker, "POST", "/faults", body)
        assert status == 409, answer
    assert _http(broker, "POST", "/faults", {**body, "topic": "nope"})[0] == 404


def test_unreachable_and_reachable_through_the_python_client(broker: BrokerHandle) -> None:
    faults = broker.faults
    fault_id = faults.unreachable()
    try:
        with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
            sock.connect((broker.host, broker.port))
        assert [f["kind"] for f in faults.list()] == ["unreachable"]
    finally:
        assert [f["id"] for f in faults.reachable()] == [fault_id]
    # answered once the listener is bound again: no retry needed
    socket.create_connection((broker.host, broker.port), timeout=5).close()
    assert broker.list_topics() is not None
