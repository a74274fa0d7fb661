"""The partition side of transactions in a 3-broker cluster on a real ZooKeeper (issue 14):
the transaction coordinator (leader of the transactional id's `__transaction_state`
partition) and the partition leaders are different brokers, and talk only over the wire.

What passing proves:
- KIP-890 verification crosses brokers: a leader asks the coordinator on another broker;
  a partition the producer never added -> INVALID_TXN_STATE there, nothing appended;
- the coordinator's COMMIT markers land on a partition led by another broker, are replicated
  to its followers (the replicas hold the same bytes), and move its last stable offset;
- TxnOffsetCommit to a group coordinator on another broker than the transaction coordinator:
  pending (UNSTABLE_OFFSET_COMMIT) until the marker reaches its `__consumer_offsets`
  partition, then visible.
"""

from __future__ import annotations

import sys
from pathlib import Path

import _wire
from _cluster import ClusterProcesses, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from _txn_raw import RawTxn, find_group_coordinator, lso, offset_fetch, retry

from protocol.errors import ErrorCode as E
from wirebroker.group.partitioning import partition_for

TOPIC = "txq"
PARTITIONS = 3
OFFSETS_PARTITIONS = 6  # _cluster.DEFAULT_OVERRIDES["offsets.topic.num.partitions"]


def _group_led_elsewhere(cluster: ClusterProcesses, avoid: int) -> str:
    """A group whose `__consumer_offsets` partition is led by a broker other than `avoid`."""
    for i in range(200):
        group = f"txg-{i}"
        code, _ = retry(lambda g=group: find_group_coordinator(cluster.bootstrap.split(",")[0], g))
        assert code == 0, E(code)
        if cluster.leader("__consumer_offsets", partition_for(group, OFFSETS_PARTITIONS)) != avoid:
            return group
    raise AssertionError("every group is coordinated by the transaction coordinator's broker")


def _produce(txn: RawTxn, address: str, partition: int, values: list[bytes]) -> tuple[int, int]:
    """`txn.produce`, sent again while it answers NOT_ENOUGH_REPLICAS: the leader cannot reach
    the transaction coordinator yet (just after `__transaction_state` was created its view may
    not list it); retriable, and every client retries it. Nothing was appended meanwhile."""

    def once() -> tuple[int, int] | None:
        code, base = txn.produce(address, TOPIC, partition, values)
        return None if code == E.NOT_ENOUGH_REPLICAS else (code, base)

    return wait_until(once, 30, f"{TOPIC}-{partition}: a produce not refused as retriable")


def test_markers_and_verification_across_brokers(cluster: ClusterProcesses) -> None:
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    txn = RawTxn(cluster.address(cluster.controller()), "tx-cluster")
    txn.init()
    elsewhere = [p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) != txn.coordinator_id]
    assert len(elsewhere) >= 2, "placement put every leader on the coordinator's broker"
    p, unadded = elsewhere[0], elsewhere[1]
    leader = cluster.address(cluster.leader(TOPIC, p))

    assert txn.add_partitions(TOPIC, [p]) == {p: 0}
    assert _produce(txn, leader, p, [b"a", b"b"]) == (0, 0)
    unadded_leader = cluster.address(cluster.leader(TOPIC, unadded))
    assert _produce(txn, unadded_leader, unadded, [b"x"]) == (E.INVALID_TXN_STATE, -1)
    assert _wire.list_offset(unadded_leader, TOPIC, unadded) == (0, 0)

    group = _group_led_elsewhere(cluster, txn.coordinator_id)
    assert txn.add_offsets(group) == 0
    assert txn.commit_offsets(cluster.address(cluster.controller()), group, TOPIC, {p: 2}) == {p: 0}
    _, group_coordinator = find_group_coordinator(cluster.address(cluster.controller()), group)
    assert offset_fetch(group_coordinator, group, TOPIC, [p], require_stable=True) == {
        p: (-1, E.UNSTABLE_OFFSET_COMMIT)
    }
    assert lso(leader, TOPIC, p) == 0

    assert txn.end(commit=True) == 0
    wait_until(lambda: lso(leader, TOPIC, p) == 3, 20, "the COMMIT marker on the other leader")
    wait_until(
        lambda: (
            offset_fetch(group_coordinator, group, TOPIC, [p], require_stable=True) == {p: (2, 0)}
        ),
        20,
        "the committed offset at the group coordinator",
    )
    cluster.wait_full_isr(TOPIC, PARTITIONS)
    wait_until(
        lambda: cluster.high_watermark(TOPIC, p) == 3, 20, "the marker replicated to followers"
    )
    cluster.assert_replicas_equal(TOPIC, p)
