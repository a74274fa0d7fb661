"""The admin listener on a real broker process (`--admin-port 0`), driven by kafka-python.

A topic is created, produced to and consumed by a group; /metrics then shows the topic's bytes
and the group's lag, /api/state the same, / renders them; a malformed request gets 400 and the
broker goes on serving both listeners.
"""

from __future__ import annotations

import json
import socket
import urllib.request

from _broker import BrokerProcess
from admin_listener import Samples, admin_url, group_member, parse_metrics
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

TOPIC = "admin-demo"
GROUP = "admin-group"


def get(url: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, resp.headers.get("content-type"), resp.read()


def metrics(url: str) -> Samples:
    _, ctype, body = get(url + "metrics")
    assert ctype.startswith("text/plain; version=0.0.4")
    return parse_metrics(body.decode())


def test_metrics_and_state_show_a_topic_and_a_group(admin_broker: BrokerProcess) -> None:
    url = admin_url(admin_broker.stdout_lines)
    bootstrap = admin_broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(20):
        producer.send(TOPIC, b"v%03d" % i, partition=0)
    producer.flush()
    producer.close()
    with group_member(
        bootstrap, TOPIC, GROUP, "admin-test-consumer", expect=20, commit={0: 5}, poll_ms=500
    ) as got:
        assert got == 20

        m = metrics(url)
        topic = (("topic", TOPIC),)
        assert m[("wirebroker_topic_bytes_in_total", topic)] > 20 * 4
        assert m[("wirebroker_topic_bytes_out_total", topic)] > 20 * 4
        p0 = (("partition", "0"), ("topic", TOPIC))
        assert m[("wirebroker_partition_log_end_offset", p0)] == 20
        assert m[("wirebroker_partition_high_watermark", p0)] == 20
        assert m[("wirebroker_partition_log_size_bytes", p0)] > 0
        lag = (("group", GROUP), ("partition", "0"), ("topic", TOPIC))
        assert m[("wirebroker_group_lag", lag)] == 15
        assert m[("wirebroker_group_members", (("group", GROUP),))] == 1
        assert m[("wirebroker_group_state", (("group", GROUP), ("state", "Stable")))] == 1
        produce = [
            k for k in m if k[0] == "wirebroker_requests_total" and ("api", "Produce") in k[1]
        ]
        assert produce and sum(m[k] for k in produce) >= 1
        assert m[("wirebroker_connections", ())] >= 1
        assert m[("process_resident_memory_bytes", ())] > 0
        assert m[("process_open_fds", ())] > 0

        _, ctype, body = get(url + "api/state")
        assert ctype == "application/json"
        state = json.loads(body)
        (t,) = [t for t in state["topics"] if t["name"] == TOPIC]
        assert [p["log_end_offset"] for p in t["partitions"]] == [20, 0]
        (g,) = [g for g in state["groups"] if g["group_id"] == GROUP]
        assert g["state"] == "Stable"
        assert [mb["client_id"] for mb in g["members"]] == ["admin-test-consumer"]
        assert {(o["partition"], o["lag"]) for o in g["offsets"]} == {(0, 15)}

        _, ctype, body = get(url)
        assert ctype.startswith("text/html")
        assert TOPIC.encode() in body and GROUP.encode() in body


def test_bad_requests_get_400_and_the_broker_keeps_serving(admin_broker: BrokerProcess) -> None:
    url = admin_url(admin_broker.stdout_lines)
    host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
    for raw in (b"\x16\x03\x01\x02\x00garbage\r\n\r\n", b"GET / HTTP/1.1\r\n\r\n"):
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(raw)
            assert sock.recv(4096).startswith(b"HTTP/1.1 400 ")
    status, _, _ = get(url + "metrics")
    assert status == 200
    admin = KafkaAdminClient(bootstrap_servers=admin_broker.bootstrap)
    try:
        admin.create_topics([NewTopic("after-bad-http", 1, 1)])
        assert "after-bad-http" in admin.list_topics()
    finally:
        admin.close()
