"""A single broker is a cluster of one (wirebroker.cluster.local_cluster): the member, the
controller, ZkTopicAdmin and the replicated ReplicaManager over an in-process ZooKeeper that
is seeded from the TopicStore at every start.

In-process `Broker`s on port 0 (no client: the admin and the services are called directly).
Checked: which code runs, topic changes through the cluster path and their durability in the
store, restarts (no store rewrite, no re-election, leader epochs kept from the logs, topics of
an older store), concurrent creations, storage errors at creation, no-op ISR checks.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from protocol.records import build_batch
from wirebroker.broker import Broker
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_member import ClusterMember
from wirebroker.cluster.zk_topic_admin import ZkTopicAdmin
from wirebroker.config import BrokerConfig
from wirebroker.log.errors import LogError, StorageError
from wirebroker.metadata.errors import TopicExistsError
from wirebroker.metadata.topic_admin import NewPartitions, NewTopic
from wirebroker.metadata.topic_store import STORE_FILE, TopicInfo, TopicStore
from wirebroker.replication.partition import Role

TIMEOUT_S = 20.0
NODE = 3


def _config(data: Path, **values: str) -> BrokerConfig:
    return BrokerConfig(
        {
            "node.id": str(NODE),
            "log.dirs": str(data),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            **values,
        }
    )


@asynccontextmanager
async def running(data: Path, **values: str) -> AsyncIterator[Broker]:
    broker = Broker(_config(data, **values), grace_s=1.0)
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.serve)
            yield broker
            nursery.cancel_scope.cancel()


async def create(broker: Broker, name: str, partitions: int, **configs: str) -> TopicInfo:
    [info] = broker.admin.create_topics(
        [NewTopic(name, partitions, 1, configs)], now_ms=broker.clock()
    )
    assert isinstance(info, TopicInfo), info
    assert await broker.admin.wait_settled([name], TIMEOUT_S) == {}
    return info


def leaders(broker: Broker, topic: str) -> list[tuple[Role, int, list[int]]]:
    return [(p.role, p.leader_epoch, p.isr) for p in broker.replicas.partitions_of(topic)]


def store_stamp(data: Path) -> tuple[int, int]:
    stat = (data / STORE_FILE).stat()
    return stat.st_ino, stat.st_mtime_ns


async def test_a_single_broker_runs_the_cluster_code(tmp_path: Path) -> None:
    async with running(tmp_path / "d") as broker:
        assert isinstance(broker.member, ClusterMember)
        assert isinstance(broker.admin, ZkTopicAdmin)
        assert broker.member.is_controller
        assert broker.services.cluster is broker.member.cache
        assert [b.node_id for b in broker.services.cluster.live_brokers()] == [NODE]
        assert broker.services.cluster.controller_id() == NODE

        await create(broker, "t", 3)
        assert leaders(broker, "t") == [(Role.LEADER, 0, [NODE])] * 3
        assert all(p.single_replica for p in broker.replicas.partitions_of("t"))
        stored = broker.topics.get("t")
        # the store keeps its single-broker form: no assignment (every partition is here)
        assert stored is not None and stored.assignment == () and stored.partitions == 3
        views = broker.services.cluster.partitions("t")
        assert [(v.leader, v.leader_epoch, v.replicas, v.isr) for v in views] == [
            (NODE, 0, [NODE], [NODE])
        ] * 3
        # one replica: never anything to shrink
        assert broker.replicas.maybe_shrink_isr(broker.clock() + 10**9) == 0


async def test_topic_changes_go_through_zookeeper_and_land_in_the_store(tmp_path: Path) -> None:
    data = tmp_path / "d"
    async with running(data) as broker:
        coord = broker.member.coord if broker.member else None
        assert coord is not None
        info = await create(broker, "t", 2, **{"retention.ms": "1000"})
        raw, _stat = await coord.get(zl.topic_path("t"))
        assert zl.decode_topic("t", raw).topic_id == info.topic_id
        stored = broker.topics.get("t")
        assert stored is not None and dict(stored.configs) == {"retention.ms": "1000"}

        broker.admin.create_partitions(NewPartitions("t", 4), now_ms=broker.clock())
        assert await broker.admin.wait_settled(["t"], TIMEOUT_S) == {}
        assert [p.index for p in broker.replicas.partitions_of("t")] == [0, 1, 2, 3]
        assert broker.topics.get("t").partitions == 4  # type: ignore[union-attr]

        broker.admin.alter_topic_configs("t", {"retention.ms": "2000"})
        assert await broker.admin.wait_settled(["t"], TIMEOUT_S) == {}
        assert dict(broker.topics.get("t").configs) == {"retention.ms": "2000"}  # type: ignore[union-attr]
        part = broker.replicas.partition("t", 0)
        assert part is not None and part.log.config.retention_ms == 2000

        broker.admin.delete_topic("t")
        assert await broker.admin.wait_settled(["t"], TIMEOUT_S) == {}
        assert broker.topics.get("t") is None
        assert broker.replicas.partitions_of("t") == []
        assert await coord.exists(zl.topic_path("t")) is None
        assert not [d for d in data.iterdir() if d.name.startswith("t-")]


async def test_restart_rewrites_nothing_and_keeps_leaders_and_epochs(tmp_path: Path) -> None:
    data = tmp_path / "d"
    batch = build_batch([(None, b"v")], base_timestamp=1_700_000_000_000)
    async with running(data) as broker:
        await create(broker, "t", 2)
        part = broker.replicas.partition("t", 1)
        assert part is not None
        # data of a later leadership (as a former cluster member's log may hold)
        part.log.append_as_leader(batch, leader_epoch=5, now_ms=broker.clock())
        broker.replicas.append(
            broker.replicas.partition("t", 0),  # type: ignore[arg-type]
            batch,
            now_ms=broker.clock(),
        )
    before = store_stamp(data)
    async with running(data) as broker:
        assert store_stamp(data) == before
        assert leaders(broker, "t") == [
            (Role.LEADER, 0, [NODE]),
            (Role.LEADER, 5, [NODE]),
        ]
        assert [v.leader_epoch for v in broker.services.cluster.partitions("t")] == [0, 5]
        assert broker.replicas.partition("t", 0).high_watermark == 1  # type: ignore[union-attr]
        # nothing was elected again: every state znode is at its first version
        coord = broker.member.coord  # type: ignore[union-attr]
        for index in (0, 1):
            _raw, stat = await coord.get(zl.state_path("t", index))
            assert stat.version == 0
    assert store_stamp(data) == before


@pytest.mark.parametrize("former_cluster_member", [False, True])
async def test_topics_of_an_existing_store_are_taken_over(
    tmp_path: Path, former_cluster_member: bool
) -> None:
    """A store of an earlier single broker is already in form (no write at all); one written
    by a cluster member (assignments, several replicas) is rewritten once, in one write."""
    data = tmp_path / "d"
    data.mkdir()
    store = TopicStore.open(data)
    ids = [uuid.uuid4() for _ in range(3)]
    store.put_many(
        TopicInfo(
            name=f"old{i}",
            topic_id=ids[i],
            partitions=2,
            replication_factor=3 if former_cluster_member else 1,
            assignment=((NODE, 7, 8), (7, NODE, 8)) if former_cluster_member else (),
        )
        for i in range(3)
    )
    writes: list[int] = []
    save = TopicStore._save

    def counting_save(self: TopicStore) -> None:
        writes.append(1)
        save(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TopicStore, "_save", counting_save)
        async with running(data) as broker:
            assert len(writes) == (1 if former_cluster_member else 0)
            for i in range(3):
                info = broker.topics.get(f"old{i}")
                assert info is not None and info.topic_id == ids[i]
                assert (info.assignment, info.replication_factor) == ((), 1)
                assert leaders(broker, f"old{i}") == [(Role.LEADER, 0, [NODE])] * 2
                assert (data / f"old{i}-1").is_dir()  # missing logs created


async def test_a_creation_under_way_refuses_a_second_one(tmp_path: Path) -> None:
    async with running(tmp_path / "d") as broker:
        now = broker.clock()
        [first] = broker.admin.create_topics([NewTopic("t", 2, 1)], now_ms=now)
        [second] = broker.admin.create_topics([NewTopic("t", 2, 1)], now_ms=now)
        assert isinstance(first, TopicInfo)
        assert isinstance(second, TopicExistsError)
        assert await broker.admin.wait_settled(["t"], TIMEOUT_S) == {}
        stored = broker.topics.get("t")
        assert stored is not None and stored.topic_id == first.topic_id
        [third] = broker.admin.create_topics([NewTopic("t", 2, 1)], now_ms=now)
        assert isinstance(third, TopicExistsError)


async def test_a_storage_error_at_creation_is_answered_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    data = tmp_path / "d"
    async with running(data) as broker:

        def full(*_args: object, **_kw: object) -> None:
            raise StorageError("No space left on device")

        original: Callable[..., object] = broker.logs.create_many
        broker.logs.create_many = full  # type: ignore[method-assign,assignment]
        [result] = broker.admin.create_topics([NewTopic("t", 2, 1)], now_ms=broker.clock())
        broker.logs.create_many = original  # type: ignore[method-assign]
        assert isinstance(result, LogError)
        assert await broker.admin.wait_settled(["t"], TIMEOUT_S) == {}
        assert broker.topics.get("t") is None
        assert await broker.member.coord.exists(zl.topic_path("t")) is None  # type: ignore[union-attr]
        await create(broker, "t", 2)  # the name is free


async def test_a_batch_of_topics_makes_its_logs_at_once(tmp_path: Path) -> None:
    """Several topics in one CreateTopics: every log made by one `create_topics` (one round
    of fsyncs), every topic led and stored; when that batch fails, each topic is created on
    its own and answers its own error (here: one topic whose logs cannot be made)."""
    async with running(tmp_path / "d") as broker:
        calls: list[list[str]] = []
        original: Callable[..., object] = broker.logs.create_topics

        def counting(batch: list[tuple[str, object, object, object]], now_ms: int) -> object:
            calls.append([name for name, *_rest in batch])
            return original(batch, now_ms)

        broker.logs.create_topics = counting  # type: ignore[method-assign,assignment]
        names = [f"b{i}" for i in range(12)]
        results = broker.admin.create_topics(
            [NewTopic(n, 3, 1) for n in names], now_ms=broker.clock()
        )
        assert all(isinstance(r, TopicInfo) for r in results)
        assert calls == [names]
        assert await broker.admin.wait_settled(names, TIMEOUT_S) == {}
        for name in names:
            assert broker.topics.get(name) is not None
            assert [role for role, _e, _isr in leaders(broker, name)] == [Role.LEADER] * 3

        create_many: Callable[..., object] = broker.logs.create_many

        def full(batch: list[tuple[str, object, object, object]], now_ms: int) -> object:
            if len(batch) > 1:  # (create_many of one topic comes here too)
                raise StorageError("No space left on device")
            return original(batch, now_ms)

        def one_full(topic: str, *args: object, **kw: object) -> object:
            if topic == "c1":
                raise StorageError("No space left on device")
            return create_many(topic, *args, **kw)

        broker.logs.create_topics = full  # type: ignore[method-assign,assignment]
        broker.logs.create_many = one_full  # type: ignore[method-assign,assignment]
        results = broker.admin.create_topics(
            [NewTopic(f"c{i}", 2, 1) for i in range(3)], now_ms=broker.clock()
        )
        broker.logs.create_many = create_many  # type: ignore[method-assign]
        assert [type(r) for r in results] == [TopicInfo, StorageError, TopicInfo]
        assert await broker.admin.wait_settled(["c0", "c2"], TIMEOUT_S) == {}
        assert broker.topics.get("c0") is not None and broker.topics.get("c2") is not None
        assert broker.topics.get("c1") is None


async def test_clients_see_the_same_single_broker(tmp_path: Path) -> None:
    """Metadata and FindCoordinator answers as before: this broker is the controller and the
    leader of every partition, __consumer_offsets is created and led on first use."""
    async with running(tmp_path / "d", **{"offsets.topic.num.partitions": "4"}) as broker:
        services = broker.services
        host, port = services.advertised_host, services.advertised_port
        assert services.leader_of("none", 0) is None
        await create(broker, "t", 1)
        assert services.leader_of("t", 0) == (NODE, host, port)
        coordinator = broker.group_coordinator
        assert coordinator.find_coordinator("g") == 0
        assert await broker.admin.wait_settled(["__consumer_offsets"], TIMEOUT_S) == {}
        stored = broker.topics.get("__consumer_offsets")
        assert stored is not None and stored.partitions == 4 and stored.is_internal
        assert services.leader_of("__consumer_offsets", coordinator.partition_for("g")) == (
            NODE,
            host,
            port,
        )


async def test_producer_ids_stay_in_the_store_across_restarts(tmp_path: Path) -> None:
    """A single broker's ZooKeeper forgets everything at a restart: its producer id blocks are
    reserved in the store, as before, so no id is handed out twice."""
    data = tmp_path / "d"
    async with running(data) as broker:
        first = await broker.producer_ids.allocate()
    async with running(data) as broker:
        second = await broker.producer_ids.allocate()
        assert broker.topics.next_producer_id > second > first
