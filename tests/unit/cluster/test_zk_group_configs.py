"""Group configs in ZooKeeper (wirebroker.cluster.zk_group_configs) over the in-memory
coordination: the `/config/groups/<group>` nodes and change notifications, every broker's
mirror and its listeners, nodes written by other tools, concurrent changes, and a single
broker keeping them in its store and seeding them back."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

from wirebroker.cluster.local_cluster import LocalCluster
from wirebroker.cluster.zk_group_configs import ZkGroupConfigs
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.group_configs import Compute, GroupConfigError
from wirebroker.metadata.topic_store import TopicStore

SESSION = "consumer.session.timeout.ms"


def setting(**configs: str | None) -> Compute:
    """A change: set (a value) or remove (None) keys of the current overrides."""

    def compute(current: Mapping[str, str]) -> dict[str, str]:
        new = dict(current)
        for key, value in configs.items():
            key = key.replace("_", ".")
            if value is None:
                new.pop(key, None)
            else:
                new[key] = value
        return new

    return compute


@asynccontextmanager
async def brokers(
    server: MemoryZooKeeper, count: int, store: TopicStore | None = None
) -> AsyncIterator[list[ZkGroupConfigs]]:
    async with trio.open_nursery() as nursery:
        out = []
        for _ in range(count):
            coord = MemoryCoordination(server)
            await nursery.start(coord.run)
            configs = ZkGroupConfigs(coord, store=store, timeout_s=5)
            await nursery.start(configs.run)
            out.append(configs)
        yield out
        nursery.cancel_scope.cancel()


async def settle() -> None:
    for _ in range(20):
        await trio.testing.wait_all_tasks_blocked()


async def test_changed_on_one_broker_known_to_every_broker() -> None:
    async with brokers(MemoryZooKeeper(), 2) as (one, two):
        heard: list[tuple[str, dict[str, str]]] = []
        two.add_listener(lambda group, configs: heard.append((group, dict(configs))))
        await one.update("g1", setting(consumer_session_timeout_ms="50000"), validate_only=False)
        assert one.get("g1") == {SESSION: "50000"}  # read-your-writes on the answering broker
        await settle()
        assert two.get("g1") == {SESSION: "50000"}
        assert heard == [("g1", {SESSION: "50000"})]
        await two.update("g1", setting(consumer_session_timeout_ms=None), validate_only=False)
        assert two.get("g1") == {}
        await settle()
        assert one.get("g1") == {} and one.all() == {}
        assert heard[-1] == ("g1", {})


async def test_kafkas_nodes_and_notifications() -> None:
    async with brokers(MemoryZooKeeper(), 1) as (one,):
        coord = one.coord
        await one.update("a/b c", setting(share_delivery_count_limit="3"), validate_only=False)
        data, _ = await coord.get("/config/groups/a%2Fb%20c")
        assert json.loads(data) == {"version": 1, "config": {"share.delivery.count.limit": "3"}}
        changes = await coord.get_children("/config/changes")
        notes = [json.loads((await coord.get(f"/config/changes/{c}"))[0]) for c in changes]
        assert notes == [{"version": 2, "entity_path": "groups/a%2Fb%20c"}]
        # nodes another tool wrote: applied; one that does not decode is taken as empty
        await coord.create("/config/groups/other", b'{"version":1,"config":{"x":"1"}}')
        await coord.create("/config/groups/broken", b"not json")
        await settle()
        assert one.get("other") == {"x": "1"}
        assert one.get("broken") == {}
        await coord.delete("/config/groups/other")
        await settle()
        assert one.get("other") == {}


async def test_refusals_and_validate_only_write_nothing() -> None:
    def refuse(_current: Mapping[str, str]) -> dict[str, str]:
        raise GroupConfigError("Unknown group config name: x")

    async with brokers(MemoryZooKeeper(), 1) as (one,):
        with pytest.raises(GroupConfigError):
            await one.update("g", refuse, validate_only=False)
        await one.update("g", setting(consumer_session_timeout_ms="50000"), validate_only=True)
        await one.update("g", setting(consumer_session_timeout_ms=None), validate_only=False)
        assert await one.coord.exists("/config/groups/g") is None
        assert one.get("g") == {}


async def test_concurrent_changes_both_land() -> None:
    async with brokers(MemoryZooKeeper(), 2) as (one, two):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: one.update(
                    "g", setting(share_delivery_count_limit="3"), validate_only=False
                )
            )
            nursery.start_soon(
                lambda: two.update(
                    "g", setting(consumer_session_timeout_ms="50000"), validate_only=False
                )
            )
        await settle()
        expected = {"share.delivery.count.limit": "3", SESSION: "50000"}
        assert one.get("g") == two.get("g") == expected


async def test_a_single_broker_keeps_them_in_its_store_and_seeds_them_back(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    async with brokers(MemoryZooKeeper(), 1, store) as (one,):
        await one.update("g1", setting(consumer_session_timeout_ms="50000"), validate_only=False)
        await one.update("a/b", setting(share_delivery_count_limit="3"), validate_only=False)
        await one.update("gone", setting(share_delivery_count_limit="3"), validate_only=False)
        await one.update("gone", setting(share_delivery_count_limit=None), validate_only=False)
    reopened = TopicStore.open(tmp_path)
    assert reopened.group_configs() == {
        "g1": {SESSION: "50000"},
        "a/b": {"share.delivery.count.limit": "3"},
    }
    local = LocalCluster(0)
    async with trio.open_nursery() as nursery:
        await nursery.start(local.coordination.run)
        await local.seed(reopened, lambda _t, _p: 0)
        configs = ZkGroupConfigs(local.coordination, store=reopened)
        await nursery.start(configs.run)
        assert configs.all() == reopened.group_configs()
        nursery.cancel_scope.cancel()
