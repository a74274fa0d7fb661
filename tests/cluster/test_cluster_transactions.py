"""Transactions in a 3-broker cluster on a real ZooKeeper (issue 14).

The transaction coordinator of a transactional id is the leader of its `__transaction_state`
partition (abs(javaHash(id)) % transaction.state.log.num.partitions); the partitions of the
output topic are led by the three brokers, so the coordinator's WriteTxnMarkers go to other
brokers over the wire (and to itself over loopback).

- commit / abort across three partitions led by three brokers: read_committed reads the
  committed records once and never the aborted ones; `__transaction_state` is replicated
  (replication factor 3 from transaction.state.log.replication.factor);
- `kill -9` of the coordinator's broker in the middle of a transaction (records written, no
  EndTxn yet): a new leader of the `__transaction_state` partition takes over as coordinator;
  the producer's commit either succeeds through it (every record of the transaction visible
  to read_committed) or fails, and then the coordinator aborts the transaction at its timeout
  (none visible). Never half visible; DescribeTransactions at the new coordinator ends in
  CompleteCommit or CompleteAbort;
- `kill -9` of the coordinator's broker right after a commit was acknowledged (PrepareCommit
  replicated, markers under way; a partition leader frozen with SIGSTOP meanwhile slows them
  down): the new coordinator replays PrepareCommit, writes the markers again and completes;
  every record is visible (an acknowledged commit is never lost nor turned into an abort).
  Run twice: with the ISR shrink of the leader racing the controller, and with the controller
  dropping the frozen follower first (a new leader epoch of the coordinator's partition, same
  leader: no new election, so EndTxn is not answered NOT_COORDINATOR, which would send
  librdkafka's FindCoordinator to any connected broker, the frozen one included, where it
  waits socket.timeout.ms).
"""

from __future__ import annotations

from typing import Any

import _wire
import pytest
from _cluster import ClusterProcesses, wait_until
from _txn import read_values
from kafka import KafkaProducer

from protocol.api import ApiKey
from wirebroker.group.partitioning import partition_for

TOPIC = "txn-orders"
PARTITIONS = 3
TXN_PARTITIONS = 5
OVERRIDES = {
    "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


def _producer(cluster: ClusterProcesses, tid: str, **kw: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=cluster.bootstrap.split(","),
        transactional_id=tid,
        request_timeout_ms=15_000,
        max_block_ms=60_000,
        metadata_max_age_ms=2_000,
        reconnect_backoff_max_ms=500,
        retry_backoff_ms=100,
        **kw,
    )


def _read_committed(cluster: ClusterProcesses, expect_at_least: int) -> list[bytes]:
    return read_values(
        cluster.bootstrap.split(","),
        TOPIC,
        PARTITIONS,
        "read_committed",
        expect_at_least=expect_at_least,
        timeout=60,
        request_timeout_ms=15_000,
        metadata_max_age_ms=2_000,
    )


def _coordinator(cluster: ClusterProcesses, tid: str, exclude: int | None = None) -> int:
    """The node FindCoordinator(TRANSACTION) names for `tid` (asked until it names one)."""
    gone = [] if exclude is None else [exclude]

    def ask() -> tuple[int] | None:
        address = cluster.any_live_address(exclude=gone)
        resp = _wire.request(address, ApiKey.FIND_COORDINATOR, 3, {"key": tid, "key_type": 1})
        ok = resp.error_code == 0 and resp.node_id not in gone
        return (int(resp.node_id),) if ok else None  # a tuple: node 0 is an answer too

    return wait_until(ask, 30, f"FindCoordinator({tid}) to name a live coordinator")[0]


def _state(cluster: ClusterProcesses, node: int, tid: str) -> str:
    resp = _wire.request(
        cluster.address(node), ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [tid]}
    )
    return str(resp.transaction_states[0].transaction_state)


def _spread_leaders(cluster: ClusterProcesses) -> None:
    cluster.create_topic(
        TOPIC, partitions=PARTITIONS, replication_factor=3, configs={"min.insync.replicas": "2"}
    )
    leaders = {cluster.leader(TOPIC, p) for p in range(PARTITIONS)}
    assert len(leaders) == 3, f"the partitions should have three leaders: {leaders}"


def test_markers_reach_every_leader(cluster_factory: Any) -> None:
    cluster = cluster_factory(**OVERRIDES)
    _spread_leaders(cluster)
    producer = _producer(cluster, "cluster-tx")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(30):
            producer.send(TOPIC, value=f"c{i}".encode(), partition=i % PARTITIONS)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(30):
            producer.send(TOPIC, value=f"a{i}".encode(), partition=i % PARTITIONS)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()
    assert _read_committed(cluster, 30) == sorted(f"c{i}".encode() for i in range(30))
    p = partition_for("cluster-tx", TXN_PARTITIONS)
    assert len(cluster.isr("__transaction_state", p)) == 3


def test_kill9_of_the_coordinator_mid_transaction(cluster_factory: Any) -> None:
    """confluent-kafka (librdkafka) drives this one: kafka-python 3.0.12 drops an EndTxn whose
    coordinator connection is refused (its sender neither sends nor re-enqueues it when
    `await_ready` raises), so its commit_transaction() then waits forever."""
    from confluent_kafka import KafkaException, Producer

    cluster = cluster_factory(**OVERRIDES)
    _spread_leaders(cluster)
    tid = "failover-tx"
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": 10_000,
            "topic.metadata.refresh.interval.ms": 2_000,
            "reconnect.backoff.max.ms": 500,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"before", partition=0)
    producer.commit_transaction(30)
    coordinator = _coordinator(cluster, tid)
    assert coordinator == cluster.leader("__transaction_state", partition_for(tid, TXN_PARTITIONS))
    producer.begin_transaction()
    for i in range(30):
        producer.produce(TOPIC, value=f"mid{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    cluster.kill9(coordinator)
    try:
        producer.commit_transaction(60)
        committed = True
    except KafkaException:  # the commit may fail while the coordinator moves: then it aborts
        committed = False
    new = _coordinator(cluster, tid, exclude=coordinator)
    final = wait_until(
        lambda: (s := _state(cluster, new, tid)) in ("CompleteCommit", "CompleteAbort") and s,
        60,
        f"the new coordinator {new} to complete or abort {tid}",
    )
    if committed:
        assert final == "CompleteCommit"
    mid = [f"mid{i}".encode() for i in range(30)]
    seen = _read_committed(cluster, 1 + (30 if final == "CompleteCommit" else 0))
    if final == "CompleteCommit":
        assert seen == sorted([b"before", *mid])
    else:
        assert seen == [b"before"], f"an aborted transaction is visible: {seen[:5]}"


@pytest.mark.parametrize(
    "lag_ms",
    [
        pytest.param("3000", id="isr-race"),
        # the leader keeps the frozen follower in the ISR until the controller drops it (its
        # session expired) with a new leader epoch: the coordinator's partition is still led
        # by the same broker, which is no new election (no reload, EndTxn answered NONE)
        pytest.param("30000", id="controller-drops-the-follower"),
    ],
)
def test_kill9_of_the_coordinator_while_markers_are_written(
    cluster_factory: Any, lag_ms: str
) -> None:
    from confluent_kafka import Producer

    cluster = cluster_factory(**OVERRIDES, **{"replica.lag.time.max.ms": lag_ms})
    _spread_leaders(cluster)
    tid = "markers-tx"
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": 60_000,
            "topic.metadata.refresh.interval.ms": 2_000,
            "reconnect.backoff.max.ms": 500,
        }
    )
    producer.init_transactions(30)
    coordinator = _coordinator(cluster, tid)
    frozen = next(
        cluster.leader(TOPIC, p)
        for p in range(PARTITIONS)
        if cluster.leader(TOPIC, p) != coordinator
    )
    producer.begin_transaction()
    for i in range(30):
        producer.produce(TOPIC, value=f"m{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    cluster.sigstop(frozen)
    try:
        producer.commit_transaction(60)  # acknowledged once PrepareCommit is replicated
        cluster.kill9(coordinator)
    finally:
        cluster.sigcont(frozen)
    new = _coordinator(cluster, tid, exclude=coordinator)
    wait_until(
        lambda: _state(cluster, new, tid) == "CompleteCommit",
        90,
        f"the new coordinator {new} to complete the acknowledged commit of {tid}",
    )
    seen = _read_committed(cluster, 30)
    assert seen == sorted(f"m{i}".encode() for i in range(30))
