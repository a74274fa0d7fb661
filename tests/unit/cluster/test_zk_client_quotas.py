"""Client quotas in ZooKeeper (wirebroker.cluster.zk_client_quotas) over the in-memory
coordination: Kafka's ZooKeeper-mode nodes and change notifications, every broker's mirror,
a user's node shared with its SCRAM credentials, nodes written by other tools, and a single
broker keeping them in its store (users' nodes through the SCRAM mirror) and seeding them
back."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
import trio.testing

from protocol.errors import ErrorCode
from wirebroker.cluster.local_cluster import LocalCluster
from wirebroker.cluster.zk_client_quotas import ZkClientQuotas
from wirebroker.cluster.zk_scram_users import ZkScramUsers
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.security.client_quotas import AlterEntry, make_entity

ALICE = make_entity([("user", "alice")])
ALICE_C1 = make_entity([("user", "alice"), ("client-id", "c1")])
DEFAULT_CLIENT = make_entity([("client-id", None)])


def entry(entity: tuple[tuple[str, str | None], ...], **ops: float | None) -> AlterEntry:
    return AlterEntry(
        entity, tuple((k, 0.0 if v is None else float(v), v is None) for k, v in ops.items())
    )


@asynccontextmanager
async def brokers(
    server: MemoryZooKeeper, count: int, store: TopicStore | None = None
) -> AsyncIterator[list[ZkClientQuotas]]:
    async with trio.open_nursery() as nursery:
        out = []
        for _ in range(count):
            coord = MemoryCoordination(server)
            await nursery.start(coord.run)
            if store is not None:  # the single broker: the SCRAM mirror keeps users' nodes
                await nursery.start(ZkScramUsers(coord, store=store).run)
            quotas = ZkClientQuotas(coord, store=store, timeout_s=5)
            await nursery.start(quotas.run)
            out.append(quotas)
        yield out
        nursery.cancel_scope.cancel()


async def settle() -> None:
    for _ in range(20):
        await trio.testing.wait_all_tasks_blocked()


async def test_altered_on_one_broker_known_to_every_broker() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 2) as (one, two):
        results = await one.alter(
            [
                entry(ALICE, producer_byte_rate=1024),
                entry(ALICE_C1, consumer_byte_rate=2048),
                entry(DEFAULT_CLIENT, request_percentage=12.5),
            ]
        )
        assert [r.error_code for r in results] == [ErrorCode.NONE] * 3
        # read-your-writes on the answering broker, the other once its watches fired
        assert one.quotas.get(ALICE_C1) == {"consumer_byte_rate": 2048.0}
        await settle()
        assert two.quotas.entities() == one.quotas.entities()
        await two.alter([entry(ALICE_C1, consumer_byte_rate=None)])
        await settle()
        assert one.quotas.get(ALICE_C1) == {}
        assert one.quotas.get(ALICE) == {"producer_byte_rate": 1024.0}


async def test_kafkas_nodes_notifications_and_scram_keys_kept() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        coord = one.coord
        await coord.ensure_path("/config/users")
        scram = {"version": 1, "config": {"SCRAM-SHA-256": "salt=x,stored_key=y"}}
        await coord.create("/config/users/alice", json.dumps(scram).encode())
        await one.alter(
            [entry(ALICE, producer_byte_rate=1024), entry(ALICE_C1, request_percentage=50)]
        )
        data, _ = await coord.get("/config/users/alice")
        assert json.loads(data)["config"] == {
            "SCRAM-SHA-256": "salt=x,stored_key=y",
            "producer_byte_rate": "1024",
        }
        data, _ = await coord.get("/config/users/alice/clients/c1")
        assert json.loads(data) == {"version": 1, "config": {"request_percentage": "50.0"}}
        changes = sorted(await coord.get_children("/config/changes"))
        paths = [json.loads((await coord.get(f"/config/changes/{c}"))[0]) for c in changes]
        assert {"version": 2, "entity_path": "users/alice/clients/c1"} in paths
        # a node another tool wrote (Kafka's own ZooKeeper-mode tools: <default>, sanitized)
        await coord.ensure_path("/config/clients")
        await coord.create(
            "/config/clients/<default>",
            json.dumps({"version": 1, "config": {"producer_byte_rate": "99"}}).encode(),
        )
        await coord.create(
            "/config/clients/a%2Fb",
            json.dumps({"version": 1, "config": {"consumer_byte_rate": "oops"}}).encode(),
        )
        await settle()
        assert one.quotas.get(DEFAULT_CLIENT) == {"producer_byte_rate": 99.0}
        assert one.quotas.get(make_entity([("client-id", "a/b")])) == {}
        await coord.delete("/config/clients/<default>")
        await settle()
        assert one.quotas.get(DEFAULT_CLIENT) == {}


async def test_refusals_and_validate_only_write_nothing() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        (refused,) = await one.alter([entry(ALICE, producer_byte_rate=1.5)])
        assert refused.error_code == ErrorCode.INVALID_REQUEST
        await one.alter([entry(ALICE, producer_byte_rate=5)], validate_only=True)
        assert await one.coord.exists("/config/users/alice") is None
        assert not one.quotas


async def test_a_single_broker_keeps_them_in_its_store_and_seeds_them_back(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    async with brokers(MemoryZooKeeper(), 1, store) as (one,):
        await one.alter(
            [
                entry(ALICE, producer_byte_rate=1024),
                entry(ALICE_C1, consumer_byte_rate=2048),
                entry(DEFAULT_CLIENT, producer_byte_rate=10),
                entry(make_entity([("user", "bob"), ("client-id", None)]), request_percentage=5),
            ]
        )
        await settle()
    reopened = TopicStore.open(tmp_path)
    assert reopened.user_configs() == {"alice": {"producer_byte_rate": "1024"}}
    assert reopened.quota_configs() == {
        "clients/<default>": {"producer_byte_rate": "10"},
        "users/alice/clients/c1": {"consumer_byte_rate": "2048"},
        "users/bob/clients/<default>": {"request_percentage": "5.0"},
    }
    local = LocalCluster(0)
    async with trio.open_nursery() as nursery:
        await nursery.start(local.coordination.run)
        await local.seed(reopened, lambda _t, _p: 0)
        quotas = ZkClientQuotas(local.coordination, store=reopened)
        await nursery.start(quotas.run)
        assert len(quotas.quotas.entities()) == 4
        assert quotas.quotas.get(ALICE_C1) == {"consumer_byte_rate": 2048.0}
        nursery.cancel_scope.cancel()
