"""Transaction version 2 (KIP-890 part 2) in a 3-broker cluster on a real ZooKeeper: a TV2
producer played with raw requests whose coordinator and partition leaders are different
brokers.

What passing proves:
- a leader on another broker than the coordinator adds the partition to the transaction
  itself (AddPartitionsToTxn v5 over the wire), the TV2 producer sends no AddPartitionsToTxn;
- EndTxn v5 answers the bumped epoch; the coordinator's WriteTxnMarkers v2 carry it to the
  other leader, whose followers replicate the marker; read_committed sees the records;
- the old epoch is fenced on that leader afterwards.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _cluster import ClusterProcesses, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from _txn_raw_v2 import RawTxnV2, read_committed

from protocol.errors import ErrorCode as E

TOPIC = "tv2q"
PARTITIONS = 3


def test_tv2_transaction_across_brokers(cluster: ClusterProcesses) -> None:
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    txn = RawTxnV2(cluster.address(cluster.controller()), "tv2-cluster")
    txn.init()
    pid, epoch0 = txn.producer_id, txn.epoch
    elsewhere = [p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) != txn.coordinator_id]
    assert elsewhere, "placement put every leader on the coordinator's broker"
    p = elsewhere[0]
    leader = cluster.address(cluster.leader(TOPIC, p))

    assert txn.produce_v12(TOPIC, p, [b"a", b"b"], address=leader) == 0
    assert read_committed(leader, TOPIC, p) == ([], 0)
    assert txn.end_v5(commit=True) == (0, pid, epoch0 + 1)
    wait_until(lambda: read_committed(leader, TOPIC, p) == ([b"a", b"b"], 3), 20, "COMMIT")
    cluster.wait_full_isr(TOPIC, PARTITIONS)
    wait_until(lambda: cluster.high_watermark(TOPIC, p) == 3, 20, "the marker replicated")
    cluster.assert_replicas_equal(TOPIC, p)

    zombie = RawTxnV2(cluster.address(cluster.controller()), "tv2-cluster")
    zombie.producer_id, zombie.epoch = pid, epoch0
    assert zombie.produce_v12(TOPIC, p, [b"z"], seq=2, address=leader) == (E.INVALID_PRODUCER_EPOCH)
    assert txn.produce_v12(TOPIC, p, [b"c"], address=leader) == 0
    assert txn.end_v5(commit=False) == (0, pid, epoch0 + 2)
    wait_until(lambda: read_committed(leader, TOPIC, p)[1] == 5, 20, "ABORT")
    assert read_committed(leader, TOPIC, p) == ([b"a", b"b"], 5)
