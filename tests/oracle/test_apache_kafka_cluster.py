"""ApacheKafkaCluster (compat/oracle/kafka.py): three real KRaft Apache Kafka 4.4 nodes that
replicate, fail over when a leader is killed and take the killed node back, as the matrix's
cluster row against Kafka (`compat/<client>/run --cluster --oracle`) and benchmarks need."""

from __future__ import annotations

import time

from compat.oracle.kafka import ApacheKafkaCluster
from compat.scenarios.wire import Wire
from protocol.records import RecordSpec


def _wait(what: str, cond: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_three_nodes_replicate_fail_over_and_take_a_killed_node_back() -> None:
    with ApacheKafkaCluster() as cluster:
        assert len(cluster.bootstrap.split(",")) == 3
        with Wire(cluster.bootstrap, replication_factor=3) as w:
            assert set(w.brokers()) == {0, 1, 2}
            w.create_topic("replicated", 1, {"min.insync.replicas": "2"})
            view = w.partitions("replicated")[0]
            assert sorted(view.replicas) == sorted(view.isr) == [0, 1, 2]
            w.produce("replicated", 0, [RecordSpec(None, b"before")])
        old = view.leader
        cluster.kill9(old)
        assert [cluster.is_running(i) for i in range(3)].count(False) == 1
        assert not cluster.is_running(old) and not cluster.is_running()
        assert cluster.brokers[old].exit_status() == "killed by signal 9"
        with Wire(cluster.bootstrap, replication_factor=3) as w:
            _wait("a new leader", lambda: w.leader("replicated", 0) not in (old, -1))
            w.produce("replicated", 0, [RecordSpec(None, b"after")])  # acks=all, ISR of 2
            assert [r.value for r in w.read("replicated", 0)] == [b"before", b"after"]
        cluster.restart(old)
        with Wire(cluster.bootstrap, replication_factor=3) as w:
            _wait(
                f"node {old} back in the ISR",
                lambda: old in w.partitions("replicated")[0].isr,
            )
            assert set(w.brokers()) == {0, 1, 2}
    assert not any(n.is_running() for n in cluster.brokers)
    assert not cluster.workdir.exists()
