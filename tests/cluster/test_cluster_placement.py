"""Replica placement on a real 3-broker cluster, as every broker's Metadata shows it."""

from __future__ import annotations

from collections import Counter

import _wire
from _cluster import ClusterProcesses, wait_until


def test_six_partitions_rf3_spread_evenly_and_every_broker_agrees(
    cluster: ClusterProcesses,
) -> None:
    cluster.create_topic("spread", partitions=6, replication_factor=3)

    views = {i: _wire.partition_view(cluster.address(i), "spread") for i in cluster.live()}
    reference = views[0]
    for i, view in views.items():
        assert view == reference, (
            f"broker {i}'s Metadata differs from broker 0's:\n{view}\nvs\n{reference}"
        )
    assert sorted(reference) == list(range(6)), f"partitions in Metadata: {sorted(reference)}"

    leaders = Counter(p["leader"] for p in reference.values())
    assert leaders == {0: 2, 1: 2, 2: 2}, (
        f"each of the 3 brokers should lead 2 of the 6 partitions; leaders per broker: "
        f"{dict(leaders)}; partitions: {reference}"
    )
    holdings = Counter(r for p in reference.values() for r in p["replicas"])
    assert holdings == {0: 6, 1: 6, 2: 6}, (
        f"each broker should hold a replica of all 6 partitions; replicas per broker: "
        f"{dict(holdings)}"
    )
    for index, p in reference.items():
        assert p["error"] == 0, f"partition {index}: error {p['error']}"
        assert len(set(p["replicas"])) == 3, f"partition {index}: replicas {p['replicas']}"
        assert sorted(p["isr"]) == sorted(p["replicas"]), f"partition {index}: ISR {p['isr']}"
        assert p["leader"] == p["replicas"][0], (
            f"partition {index}: the leader of a new topic is its preferred replica (the head "
            f"of {p['replicas']}), got {p['leader']}"
        )
        assert p["offline"] == [], f"partition {index}: offline replicas {p['offline']}"

    # Metadata agrees with ZooKeeper (the assignment and the state znodes)
    assignment = cluster.topic_assignment("spread")
    for index, p in reference.items():
        assert assignment[index] == p["replicas"], (
            f"partition {index}: /brokers/topics says {assignment[index]}, Metadata {p['replicas']}"
        )
        state = cluster.partition_state("spread", index)
        assert state is not None and state["leader"] == p["leader"], (
            f"partition {index}: state znode {state}, Metadata leader {p['leader']}"
        )

    def on_disk() -> dict[int, list[str]]:
        return {
            i: sorted(d.name for d in cluster.brokers[i].data_dir.glob("spread-*") if d.is_dir())
            for i in range(3)
        }

    every = [f"spread-{p}" for p in range(6)]
    wait_until(
        lambda: all(dirs == every for dirs in on_disk().values()),
        15,
        "a log directory of each of the 6 partitions on every broker",
        detail=lambda: f"partition directories per broker: {on_disk()}",
    )

    meta = _wire.metadata(cluster.address(1), ["spread"])
    brokers = {b.node_id: f"{b.host}:{b.port}" for b in meta.brokers}
    assert brokers == {i: cluster.address(i) for i in range(3)}, f"Metadata brokers: {brokers}"
    assert meta.controller_id == cluster.controller(), (
        f"Metadata controller_id {meta.controller_id}, /controller {cluster.controller()}"
    )
