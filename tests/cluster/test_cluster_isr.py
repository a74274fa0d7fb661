"""ISR shrink and expand on a real cluster: a follower frozen with SIGSTOP, then thawed.

The broker's ZooKeeper session (10 s, the most the test ZooKeeper's 500 ms tickTime allows)
outlives the freeze (the ISR shrinks after 2-3 s), so the frozen broker stays registered: it
leaves the ISR because it stops fetching (replica.lag.time.max.ms = 2 s), not because it died.
With min.insync.replicas = 3, acks=all produce then fails with NOT_ENOUGH_REPLICAS (19) while
acks=1 still succeeds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import _wire
from _cluster import ClusterProcesses

from protocol.errors import ErrorCode

TOPIC = "frozen"
LAG_MS = 2000


def test_sigstopped_follower_leaves_the_isr_and_comes_back(
    cluster_factory: Callable[..., ClusterProcesses],
) -> None:
    cluster: ClusterProcesses = cluster_factory(
        **{
            "replica.lag.time.max.ms": str(LAG_MS),
            "zookeeper.session.timeout.ms": "10000",
        }
    )
    cluster.create_topic(
        TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "3"}
    )
    leader = cluster.leader(TOPIC, 0)
    at_leader = cluster.address(leader)
    code, _ = _wire.produce(at_leader, TOPIC, 0, [b"before-1", b"before-2"])
    assert code == 0, f"acks=all with all 3 replicas in sync: error {code}"

    controller = cluster.controller()
    followers = [i for i in range(3) if i != leader]
    frozen = next((i for i in followers if i != controller), followers[0])
    stopped_at = time.monotonic()
    cluster.sigstop(frozen)
    try:
        isr = cluster.wait_isr(
            TOPIC,
            0,
            lambda isr: frozen not in isr,
            f"without the frozen broker {frozen}",
            timeout=20,
        )
        took = time.monotonic() - stopped_at
        assert sorted(isr) == sorted(set(range(3)) - {frozen}), f"ISR after the shrink: {isr}"
        assert frozen in cluster.registered(), (
            f"broker {frozen} left /brokers/ids while frozen: its ZooKeeper session expired, so "
            "this test no longer tells an ISR shrink from a broker failure"
        )
        assert took < 3 * LAG_MS / 1000 + 5, f"the ISR shrank only after {took:.1f} s"

        code, _ = _wire.produce(at_leader, TOPIC, 0, [b"too-few-replicas"], acks=-1)
        assert code == ErrorCode.NOT_ENOUGH_REPLICAS, (
            f"acks=all with ISR {isr} < min.insync.replicas 3: expected NOT_ENOUGH_REPLICAS "
            f"(19), got {code}"
        )
        code, _ = _wire.produce(at_leader, TOPIC, 0, [b"acks-1"], acks=1)
        assert code == 0, f"acks=1 does not depend on min.insync.replicas: error {code}"
        for i in range(3):
            if i == frozen:
                continue
            view = _wire.partition_view(cluster.address(i), TOPIC)
            assert frozen not in view[0]["isr"], f"broker {i}'s Metadata still lists {frozen}"
    finally:
        cluster.sigcont(frozen)

    isr = cluster.wait_isr(
        TOPIC, 0, lambda isr: frozen in isr, f"with broker {frozen} again after SIGCONT", timeout=30
    )
    code, _ = _wire.produce(at_leader, TOPIC, 0, [b"after"], acks=-1)
    assert code == 0, f"acks=all once the ISR is full again ({isr}): error {code}"
    hw = cluster.assert_replicas_equal(TOPIC, 0, [0, 1, 2])
    assert hw == 4, f"high watermark {hw}: expected 4 records (2 + acks=1 + 1)"
