"""The single broker's in-process ZooKeeper (wirebroker.cluster.local_cluster): what is seeded
from the store, and a member + controller over it finding nothing to create or elect; state
documents decoded once."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio
import trio.testing
from test_zk_member import FakeRoles

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller import ZkController
from wirebroker.cluster.local_cluster import LocalCluster, seed_ops, single_broker_topics
from wirebroker.cluster.zk_member import ClusterMember
from wirebroker.config import BrokerConfig
from wirebroker.metadata.partition_state import PartitionState
from wirebroker.metadata.topic_store import TopicInfo, TopicStore

NODE = 2


def _store(tmp_path: Path) -> TopicStore:
    store = TopicStore.open(tmp_path, cluster_id="c1uster-id-0000000000A")
    store.put(
        TopicInfo(
            name="a",
            topic_id=uuid.uuid4(),
            partitions=2,
            replication_factor=1,
            configs={"retention.ms": "5"},
        )
    )
    store.put(
        TopicInfo(
            name="__consumer_offsets",
            topic_id=uuid.uuid4(),
            partitions=1,
            replication_factor=1,
            is_internal=True,
            assignment=((NODE, 5),),  # written by a cluster member
        )
    )
    return store


def test_topics_take_this_broker_as_every_partitions_replica(tmp_path: Path) -> None:
    store = _store(tmp_path)
    topics = {t.name: t for t in single_broker_topics(store, NODE)}
    a = topics["a"]
    original = store.get("a")
    assert original is not None
    assert a == original  # already in the form a single broker stores: nothing to rewrite
    assert a.assignment == () and dict(a.configs) == {"retention.ms": "5"}
    offsets = topics["__consumer_offsets"]
    assert (offsets.assignment, offsets.replication_factor, offsets.is_internal) == ((), 1, True)


def test_seed_ops_build_kafkas_layout_with_the_logs_epochs(tmp_path: Path) -> None:
    store = _store(tmp_path)
    topics = single_broker_topics(store, NODE)
    epochs = {("a", 0): -1, ("a", 1): 7}
    ops = seed_ops(store.cluster_id, topics, NODE, lambda t, i: epochs.get((t, i), 0))
    created = {op.path: op.data for op in ops}  # type: ignore[union-attr]
    assert zl.decode_cluster_id(created[zl.CLUSTER_ID]) == store.cluster_id
    assert zl.decode_controller_epoch(created[zl.CONTROLLER_EPOCH]) == 0
    assignment = zl.decode_topic("a", created[zl.topic_path("a")])
    assert assignment.partitions == {0: (NODE,), 1: (NODE,)}
    assert assignment.topic_id == store.get("a").topic_id  # type: ignore[union-attr]
    assert zl.decode_topic_config("a", created[zl.topic_config_path("a")]) == {"retention.ms": "5"}
    states = [zl.decode_partition_state("a", i, created[zl.state_path("a", i)]) for i in (0, 1)]
    assert states == [
        PartitionState(NODE, 0, (NODE,), 0),  # an empty log: epoch 0, never -1
        PartitionState(NODE, 7, (NODE,), 0),  # the log's latest epoch: never back
    ]


async def test_a_member_over_the_seed_creates_and_elects_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    local = LocalCluster(NODE)
    roles = FakeRoles(NODE)
    member = ClusterMember(
        local.coordination,
        node_id=NODE,
        rack=None,
        topics=store,
        replicas=roles,
        address=lambda: ("127.0.0.1", 9092),
        clock=lambda: 0,
        controller_factory=ZkController,
        config=BrokerConfig({"node.id": str(NODE)}),
        store_assignments=False,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(local.coordination.run)
        await local.seed(store, lambda t, i: 3 if t == "a" else 0)
        zxid = local.server.zxid
        before = {t.name: t for t in store.all()}
        await nursery.start(member.run)
        for _ in range(20):
            await trio.testing.wait_all_tasks_blocked()
        assert member.is_controller
        assert roles.roles == {
            ("a", 0): ("leader", NODE, 3),
            ("a", 1): ("leader", NODE, 3),
            ("__consumer_offsets", 0): ("leader", NODE, 0),
        }
        assert {t.name: t for t in store.all()} == before  # the seed rewrote it once
        states = [
            await local.coordination.get(zl.state_path("a", i)) for i in (0, 1)
        ]  # never written again
        assert [stat.version for _data, stat in states] == [0, 0]
        # only the member's own znodes were written (paths, registration, election)
        assert not [
            p
            for p in local.server.paths()
            if p.startswith(zl.BROKER_TOPICS) and p not in _seeded(store)
        ]
        assert local.server.zxid > zxid
        nursery.cancel_scope.cancel()


def _seeded(store: TopicStore) -> set[str]:
    out = {zl.BROKER_TOPICS}
    for info in store.all():
        out |= {zl.topic_path(info.name), zl.partitions_path(info.name)}
        for i in range(info.partitions):
            out |= {zl.partition_path(info.name, i), zl.state_path(info.name, i)}
    return out


def test_state_documents_decode_to_shared_immutable_states() -> None:
    one = zl.encode_partition_state(PartitionState(1, 4, (1, 2), 3))
    other = zl.encode_partition_state(PartitionState(2, 4, (1, 2), 3))
    first = zl.decode_partition_state("t", 0, one)
    assert zl.decode_partition_state("u", 7, bytes(one)) is first
    assert zl.decode_partition_state("t", 1, other) == PartitionState(2, 4, (1, 2), 3)
