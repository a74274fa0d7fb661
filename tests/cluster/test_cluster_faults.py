"""Cluster faults over the admin HTTP API on a real 3-broker cluster with a real ZooKeeper:
move_leader and shrink_isr, met by kafka-python clients.

What passing proves: move_leader (asked of any broker) moves a partition's leadership through
the controller (a reassignment to the same replicas, target first, then a preferred election),
ZooKeeper shows the new leader at a higher leader epoch, and a producer that wrote to the old
leader follows the new one (NOT_LEADER_OR_FOLLOWER, a metadata refresh) without losing or
duplicating a record; shrink_isr, asked of the leader, takes the followers out of the ISR in
ZooKeeper and keeps them out (acks=all with min.insync.replicas=2 waits: NOT_ENOUGH_REPLICAS is
retriable) until the fault is removed, when they rejoin and the waiting record is delivered; a
broker that does not lead answers 409 naming the leader; a leader made unreachable (still in
ZooKeeper, so still the leader) stalls its producers until its leadership is moved, and they
then deliver to the successor, found through the other brokers' metadata.
"""

from __future__ import annotations

from collections.abc import Callable

import _wire
import pytest
from _cluster import ClusterProcesses, wait_until
from admin_listener import admin_url
from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError

from protocol.errors import ErrorCode
from wirebroker.testing.client import WireClient
from wirebroker.testing.faults import FaultRequestError, Faults

TOPIC = "faulty"


def _faults(cluster: ClusterProcesses) -> dict[int, Faults]:
    """Each broker's fault control, from the admin line it printed at start."""
    out = {}
    for node_id, broker in enumerate(cluster.brokers):
        out[node_id] = Faults.http(admin_url(broker.stdout_lines))
    return out


def _start(cluster_factory: Callable[..., ClusterProcesses]) -> ClusterProcesses:
    cluster = cluster_factory(**{"admin.listeners": "127.0.0.1:0"})
    cluster.create_topic(
        TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"}
    )
    cluster.wait_full_isr(TOPIC, 1)
    return cluster


def _producer(cluster: ClusterProcesses) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=cluster.bootstrap,
        acks="all",
        enable_idempotence=True,
        retry_backoff_ms=50,
        request_timeout_ms=10_000,
        delivery_timeout_ms=60_000,
        max_block_ms=10_000,
    )


def _values(cluster: ClusterProcesses) -> list[bytes | None]:
    with WireClient(cluster.bootstrap) as client:
        return [m.value for m in client.read_to_end(TOPIC)]


def test_move_leader_and_a_producer_follows(
    cluster_factory: Callable[..., ClusterProcesses],
) -> None:
    cluster = _start(cluster_factory)
    faults = _faults(cluster)
    old = cluster.leader(TOPIC, 0)
    epoch = cluster.partition_state(TOPIC, 0)["leader_epoch"]  # type: ignore[index]
    producer = _producer(cluster)
    try:
        producer.send(TOPIC, b"before", partition=0).get(timeout=30)
        asked = next(i for i in faults if i != old)  # any broker can move it
        result = faults[asked].move_leader(TOPIC, 0)
        new = result["leader"]
        assert new != old
        state = cluster.partition_state(TOPIC, 0)
        assert state is not None and state["leader"] == new
        assert state["leader_epoch"] > epoch
        producer.send(TOPIC, b"after", partition=0).get(timeout=30)
    finally:
        producer.close()
    assert _values(cluster) == [b"before", b"after"]
    with pytest.raises(FaultRequestError) as refused:
        faults[old].move_leader(TOPIC, 0, to=new)
    assert refused.value.status == 409  # it already leads


def test_shrink_isr_holds_until_removed(
    cluster_factory: Callable[..., ClusterProcesses],
) -> None:
    cluster = _start(cluster_factory)
    faults = _faults(cluster)
    leader = cluster.leader(TOPIC, 0)
    follower = next(i for i in faults if i != leader)
    with pytest.raises(FaultRequestError) as not_leader:
        faults[follower].shrink_isr(TOPIC, 0)
    assert not_leader.value.status == 409 and not_leader.value.body["leader"] == leader

    fault = faults[leader].shrink_isr(TOPIC, 0)
    wait_until(lambda: cluster.isr(TOPIC, 0) == [leader], 20, "the ISR shrunk to the leader")
    # ZooKeeper may show it a moment before the leader applied it: its own metadata says when
    at_leader = cluster.address(leader)
    wait_until(
        lambda: _wire.partition_view(at_leader, TOPIC)[0]["isr"] == [leader],
        20,
        "the leader's ISR shrunk",
    )
    code, _ = _wire.produce(at_leader, TOPIC, 0, [b"refused"])
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS
    producer = _producer(cluster)
    try:
        pending = producer.send(TOPIC, b"waited", partition=0)
        with pytest.raises(KafkaTimeoutError):
            pending.get(timeout=1)  # retried: NOT_ENOUGH_REPLICAS while the ISR is held
        assert cluster.isr(TOPIC, 0) == [leader]  # still held although the followers fetch
        faults[leader].remove(fault)
        pending.get(timeout=30)
    finally:
        producer.close()
    wait_until(lambda: sorted(cluster.isr(TOPIC, 0)) == [0, 1, 2], 20, "the ISR whole again")
    assert _values(cluster) == [b"waited"]


def test_unreachable_leader_and_clients_follow_its_successor(
    cluster_factory: Callable[..., ClusterProcesses], caplog: pytest.LogCaptureFixture
) -> None:
    cluster = _start(cluster_factory)
    faults = _faults(cluster)
    old = cluster.leader(TOPIC, 0)
    other = next(i for i in faults if i != old)
    producer = _producer(cluster)
    try:
        producer.send(TOPIC, b"before", partition=0).get(timeout=30)
        faults[old].unreachable()
        pending = producer.send(TOPIC, b"during", partition=0)
        with pytest.raises(KafkaTimeoutError):
            pending.get(timeout=1)  # its leader cannot be reached
        assert cluster.isr(TOPIC, 0) != [], "still registered: ZooKeeper sees it alive"
        moved = faults[other].move_leader(TOPIC, 0)
        assert moved["leader"] != old
        pending.get(timeout=30)  # the producer found the new leader through the others
        faults[old].reachable()
        producer.send(TOPIC, b"after", partition=0).get(timeout=30)
    finally:
        producer.close()
    wait_until(lambda: sorted(cluster.isr(TOPIC, 0)) == [0, 1, 2], 30, "the old leader back")
    assert _values(cluster) == [b"before", b"during", b"after"]
    # kafka-python logs each refused reconnect with its traceback, whose frames hold the
    # socket it leaked; pytest keeps the records until the session ends, so the socket would
    # be finalized (and warned about) then: drop them for conftest's collection to find it.
    caplog.clear()
