"""The share coordinator in a three-broker cluster (in-memory ZooKeeper, real sockets):
FindCoordinator key type 2 names the leader of the key's `__share_group_state` partition
(replicated to all three); the persister of a broker that does not lead it sends the state
RPCs there, the leader's own persister calls its coordinator directly, both see the same
state; after the coordinator's broker stops, the new leader of that partition has loaded the
same state from its replica."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
from _memory_cluster import Cluster, eventually, start_cluster

from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from wirebroker.share_coordinator.config import SHARE_STATE_TOPIC
from wirebroker.share_coordinator.keys import SharePartitionKey
from wirebroker.share_coordinator.persister import PartitionState, StateBatch

SHARE = {
    "share.coordinator.state.topic.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path, overrides=SHARE)
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()


async def _coordinator(cluster: Cluster, node: int, key: SharePartitionKey) -> int:
    found: list[Any] = []

    async def ready() -> bool:
        body = {"key_type": 2, "coordinator_keys": [key.coordinator_key]}
        [entry] = (await cluster.request(node, ApiKey.FIND_COORDINATOR, 6, body)).coordinators
        found[:] = [entry]
        return bool(entry.error_code == 0)

    await eventually(ready, "FindCoordinator(SHARE) answers")
    return int(found[0].node_id)


async def test_state_through_any_broker_and_across_a_failover(cluster: Cluster) -> None:
    assert await cluster.create_topic(0, "t", 1) == 0
    topic = cluster.nodes[0].broker.admin.describe("t")
    assert topic is not None
    key = SharePartitionKey("sg", topic.topic_id, 0)
    leader = await _coordinator(cluster, 0, key)
    info = cluster.nodes[0].broker.admin.describe(SHARE_STATE_TOPIC)
    assert info is not None and info.partitions == 3
    other = next(n for n in cluster.nodes if n.node_id != leader)
    remote = other.broker.share_persister
    local = cluster.nodes[leader].broker.share_persister
    state = PartitionState(1, 4, 0, (StateBatch(4, 9, 2, 1),))

    async def initialised() -> bool:
        return await remote.initialize_state("sg", key.topic_id, 0, 1, 0) is E.NONE

    await eventually(initialised, "InitializeShareGroupState through another broker")
    assert await remote.write_state("sg", key.topic_id, 0, state) is E.NONE
    assert await local.read_state("sg", key.topic_id, 0, 0) == state
    assert await remote.read_state("sg", key.topic_id, 0, 0) == state
    await cluster.nodes[leader].stop()
    survivor = next(n for n in cluster.running() if n.node_id != leader)
    new_leader: list[int] = []

    async def moved() -> bool:
        new_leader[:] = [await _coordinator(cluster, survivor.node_id, key)]
        return new_leader[0] != leader

    await eventually(moved, "the share coordinator moved")
    persister = survivor.broker.share_persister
    read: list[Any] = []

    async def loaded() -> bool:
        read[:] = [await persister.read_state("sg", key.topic_id, 0, 0)]
        return read[0] == state

    await eventually(loaded, f"the state read from the new coordinator (last: {read})")
