"""Dynamic broker configs in ZooKeeper (wirebroker.cluster.zk_broker_configs): Kafka's
ZooKeeper-mode znodes, every broker applying the cluster default and only its own per-broker
configs, a single broker's store mirroring and seeding them."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.local_cluster import LocalCluster
from wirebroker.cluster.zk_broker_configs import ZkBrokerConfigs
from wirebroker.config import BrokerConfig, ConfigSource
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.dynamic_configs import DEFAULT_ENTITY
from wirebroker.metadata.topic_store import TopicStore


class Node:
    def __init__(self, node_id: int, coord: MemoryCoordination, store: TopicStore | None) -> None:
        self.config = BrokerConfig({"node.id": str(node_id), "log.retention.hours": "2"})
        self.changes: list[set[str]] = []
        self.configs = ZkBrokerConfigs(
            coord, self.config, node_id, self.changes.append, store=store, timeout_s=5
        )
        self.coord = coord


@asynccontextmanager
async def nodes(
    server: MemoryZooKeeper, ids: list[int], store: Callable[[int], TopicStore | None]
) -> AsyncIterator[list[Node]]:
    async with trio.open_nursery() as nursery:
        out = []
        for node_id in ids:
            coord = MemoryCoordination(server)
            await nursery.start(coord.run)
            node = Node(node_id, coord, store(node_id))
            await node.configs.start()
            out.append(node)
        yield out
        nursery.cancel_scope.cancel()


def replace_with(configs: dict[str, str]) -> Callable[[object], dict[str, str]]:
    return lambda _current: dict(configs)


async def settle() -> None:
    for _ in range(20):
        await trio.testing.wait_all_tasks_blocked()


async def test_the_default_reaches_every_broker_and_a_broker_config_only_its_own() -> None:
    server = MemoryZooKeeper()
    async with nodes(server, [1, 2], lambda _i: None) as (one, two):
        await one.configs.update(
            DEFAULT_ENTITY, replace_with({"log.retention.ms": "5000"}), validate_only=False
        )
        # applied on the writer before update returned; on the other once its watch fired
        assert one.config.retention_ms() == 5000
        await settle()
        assert two.config.retention_ms() == 5000
        assert two.config.source("log.retention.ms") == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        await one.configs.update(
            "1", replace_with({"log.retention.ms": "7000"}), validate_only=False
        )
        await settle()
        assert (one.config.retention_ms(), two.config.retention_ms()) == (7000, 5000)
        assert one.changes == [{"log.retention.ms"}, {"log.retention.ms"}]
        # Kafka's ZooKeeper-mode documents and change notifications
        data, _stat = await one.coord.get("/config/brokers/<default>")
        assert json.loads(data) == {"version": 1, "config": {"log.retention.ms": "5000"}}
        data, _stat = await one.coord.get("/config/brokers/1")
        assert json.loads(data) == {"version": 1, "config": {"log.retention.ms": "7000"}}
        changes = await one.coord.get_children(zl.CONFIG_CHANGES)
        paths = [json.loads((await one.coord.get(f"{zl.CONFIG_CHANGES}/{c}"))[0]) for c in changes]
        assert paths == [
            {"version": 2, "entity_path": "brokers/<default>"},
            {"version": 2, "entity_path": "brokers/1"},
        ]
        # cleared: back to the static value everywhere
        await one.configs.update(DEFAULT_ENTITY, replace_with({}), validate_only=False)
        await one.configs.update("1", replace_with({}), validate_only=False)
        await settle()
        assert (one.config.retention_ms(), two.config.retention_ms()) == (7_200_000, 7_200_000)


async def test_validate_only_and_a_refusal_write_nothing() -> None:
    server = MemoryZooKeeper()
    async with nodes(server, [1], lambda _i: None) as (one,):
        await one.configs.update("1", replace_with({"a.b": "1"}), validate_only=True)

        def refuse(_current: object) -> dict[str, str]:
            raise ValueError("no")

        with pytest.raises(ValueError):
            await one.configs.update("1", refuse, validate_only=False)
        assert await one.coord.exists("/config/brokers/1") is None
        assert one.config.dynamic_broker == {}


async def test_compute_sees_the_current_configs() -> None:
    server = MemoryZooKeeper()
    async with nodes(server, [1], lambda _i: None) as (one,):
        seen = []

        def add(key: str) -> Callable[[dict[str, str]], dict[str, str]]:
            def compute(current: dict[str, str]) -> dict[str, str]:
                seen.append(dict(current))
                return {**current, key: "1"}

            return compute

        await one.configs.update("1", add("x.a"), validate_only=False)
        await one.configs.update("1", add("x.b"), validate_only=False)
        assert seen == [{}, {"x.a": "1"}]
        assert one.config.dynamic_broker == {"x.a": "1", "x.b": "1"}


async def test_an_invalid_value_written_by_another_tool_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = MemoryZooKeeper()
    async with nodes(server, [1], lambda _i: None) as (one,):
        doc = zl.encode_broker_config({"log.retention.ms": "soon", "message.max.bytes": "2000"})
        with caplog.at_level(logging.WARNING):
            await one.coord.create("/config/brokers/1", doc, makepath=True)
            await settle()
        assert one.config.dynamic_broker == {"message.max.bytes": "2000"}
        assert "ignoring the dynamic config log.retention.ms of 1" in caplog.text


async def test_a_single_broker_keeps_them_in_its_store_and_seeds_them_back(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    server = MemoryZooKeeper()
    async with nodes(server, [0], lambda _i: store) as (node,):
        await node.configs.update(DEFAULT_ENTITY, replace_with({"a.b": "1"}), validate_only=False)
        await node.configs.update(
            "0", replace_with({"message.max.bytes": "9"}), validate_only=False
        )
    reopened = TopicStore.open(tmp_path)
    assert reopened.broker_configs() == {
        "<default>": {"a.b": "1"},
        "0": {"message.max.bytes": "9"},
    }
    # the next start: the in-process ZooKeeper seeded from the store, applied at once
    local = LocalCluster(0)
    async with trio.open_nursery() as nursery:
        await nursery.start(local.coordination.run)
        await local.seed(reopened, lambda _t, _p: 0)
        config = BrokerConfig({"node.id": "0"})
        configs = ZkBrokerConfigs(local.coordination, config, 0, lambda _k: None, store=reopened)
        await configs.start()
        assert (config.dynamic_default, config.dynamic_broker) == (
            {"a.b": "1"},
            {"message.max.bytes": "9"},
        )
        nursery.cancel_scope.cancel()
