"""SCRAM users in ZooKeeper (wirebroker.cluster.zk_scram_users) over the in-memory
coordination: Kafka's ZooKeeper-mode nodes and change notifications, every broker's mirror
(a user created through one broker authenticates on another), concurrent writers, nodes written
by other tools, and a single broker keeping them in its store and seeding them back."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

from protocol.errors import ErrorCode
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.local_cluster import LocalCluster
from wirebroker.cluster.zk_scram_users import ZkScramUsers
from wirebroker.coordination.api import CoordinationError
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.security.credentials import (
    ScramDeletion,
    ScramUpsertion,
    UserAlterResult,
    encode_credential,
    user_node,
)
from wirebroker.security.scram import (
    ScramMechanism,
    ScramServer,
    credential_from_salted_password,
    salted_password,
)
from wirebroker.security.scram_users import ScramStoreError

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
SALT = b"pepper"


def upsert(
    user: str, password: str = "secret", mechanism: ScramMechanism = SHA256
) -> ScramUpsertion:
    salted = salted_password(mechanism.hash_name, password, SALT, 4096)
    return ScramUpsertion(user, mechanism.type_code, 4096, SALT, salted)


def credential_for(password: str, mechanism: ScramMechanism = SHA256) -> object:
    salted = salted_password(mechanism.hash_name, password, SALT, 4096)
    return credential_from_salted_password(mechanism, SALT, salted, 4096)


@asynccontextmanager
async def brokers(
    server: MemoryZooKeeper, count: int, store: TopicStore | None = None
) -> AsyncIterator[list[ZkScramUsers]]:
    async with trio.open_nursery() as nursery:
        out = []
        for _ in range(count):
            coord = MemoryCoordination(server)
            await nursery.start(coord.run)
            users = ZkScramUsers(coord, store=store, timeout_s=5)
            await nursery.start(users.run)
            out.append(users)
        yield out
        nursery.cancel_scope.cancel()


async def settle() -> None:
    for _ in range(20):
        await trio.testing.wait_all_tasks_blocked()


async def test_a_user_created_on_one_broker_is_known_to_every_broker() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 2) as (one, two):
        results = await one.alter([], [upsert("alice"), upsert("bob", mechanism=SHA512)])
        assert results == [UserAlterResult("alice"), UserAlterResult("bob")]
        # applied on the writer before alter returned; on the other once its watches fired
        assert one.credential(SHA256, "alice") == credential_for("secret")
        await settle()
        assert two.credential(SHA256, "alice") == credential_for("secret")
        assert two.credential(SHA512, "bob") == credential_for("secret", SHA512)
        assert two.credential(SHA512, "alice") is None
        assert [(d.user, d.credentials) for d in two.describe(None)] == [
            ("alice", ((1, 4096),)),
            ("bob", ((2, 4096),)),
        ]
        # the lookup SCRAM authentication asks, on the other broker
        server_side = ScramServer(SHA256, two.lookup(SHA256))
        first = server_side.evaluate(b"n,,n=alice,r=abc")
        assert first.startswith(b"r=abc")
        # deleted through the second broker: gone from the first
        assert await two.alter([ScramDeletion("alice", 1)], []) == [UserAlterResult("alice")]
        await settle()
        assert one.credential(SHA256, "alice") is None
        assert [d.user for d in one.describe(None)] == ["bob"]


async def test_kafkas_zookeeper_nodes_and_change_notifications() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        await one.alter([], [upsert("a/b c")])
        await one.alter([], [upsert("a/b c", "other", SHA512)])
        coord = one.coord
        assert await coord.get_children(zl.CONFIG_USERS) == ["a%2Fb%20c"]
        data, _stat = await coord.get("/config/users/a%2Fb%20c")
        assert json.loads(data) == {
            "version": 1,
            "config": {
                "SCRAM-SHA-256": encode_credential(credential_for("secret")),  # type: ignore[arg-type]
                "SCRAM-SHA-512": encode_credential(credential_for("other", SHA512)),  # type: ignore[arg-type]
            },
        }
        changes = await coord.get_children(zl.CONFIG_CHANGES)
        docs = [json.loads((await coord.get(f"{zl.CONFIG_CHANGES}/{c}"))[0]) for c in changes]
        assert docs == [{"version": 2, "entity_path": "users/a%2Fb%20c"}] * 2


async def test_refusals_write_nothing_and_other_configs_of_the_node_stay() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        coord = one.coord
        await coord.create(
            "/config/users/carol", user_node({"producer_byte_rate": "1024"}), makepath=True
        )
        await settle()
        assert one.describe(["carol"])[0].error_code == ErrorCode.RESOURCE_NOT_FOUND
        results = await one.alter([ScramDeletion("dave", 1)], [upsert("carol")])
        assert results == [
            UserAlterResult("carol"),
            UserAlterResult(
                "dave",
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            ),
        ]
        assert await coord.exists("/config/users/dave") is None
        data, _stat = await coord.get("/config/users/carol")
        configs = json.loads(data)["config"]
        assert configs["producer_byte_rate"] == "1024" and "SCRAM-SHA-256" in configs
        await one.alter([ScramDeletion("carol", 1)], [])
        data, _stat = await coord.get("/config/users/carol")
        assert json.loads(data)["config"] == {"producer_byte_rate": "1024"}
        assert one.describe(None) == []


async def test_checks_run_against_zookeeper_not_a_stale_mirror() -> None:
    """A credential written by another broker whose watch has not fired here yet: the
    deletion still finds it (the check reads the node), and a concurrent writer's change
    makes the conditional write read and check again."""
    server = MemoryZooKeeper()
    async with brokers(server, 2) as (one, two):
        await one.alter([], [upsert("erin")])
        assert await two.alter([ScramDeletion("erin", 1)], []) == [UserAlterResult("erin")]
        await settle()
        assert one.credential(SHA256, "erin") is None
        async with trio.open_nursery() as nursery:
            for i, broker in enumerate((one, two, one, two)):
                nursery.start_soon(broker.alter, [], [upsert(f"u{i}"), upsert("shared", str(i))])
        await settle()
        assert {d.user for d in one.describe(None)} == {"u0", "u1", "u2", "u3", "shared"}
        assert one.credential(SHA256, "shared") == two.credential(SHA256, "shared")


async def test_a_credential_that_does_not_parse_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        good = encode_credential(credential_for("x"))  # type: ignore[arg-type]
        node = user_node({"SCRAM-SHA-256": "salt=???", "SCRAM-SHA-512": good})
        with caplog.at_level(logging.WARNING):
            await one.coord.create("/config/users/frank", node, makepath=True)
            await one.coord.create("/config/users/gina", b"not json", makepath=True)
            await settle()
        assert [(d.user, d.credentials) for d in one.describe(None)] == [("frank", ((2, 4096),))]
        assert "ignoring the SCRAM-SHA-256 credential of user 'frank'" in caplog.text
        assert "ignoring /config/users/gina" in caplog.text
        # removing the node removes the user
        await one.coord.delete("/config/users/frank")
        await settle()
        assert one.describe(None) == []


async def test_not_applied_in_time_or_not_written_raises_the_code_for_the_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        coord = MemoryCoordination(server)
        await nursery.start(coord.run)
        users = ZkScramUsers(coord, timeout_s=5)  # its mirror never runs: never applied
        with pytest.raises(ScramStoreError) as caught:
            await users.alter([], [upsert("hank")])
        assert caught.value.code == ErrorCode.REQUEST_TIMED_OUT
        assert caught.value.message == "The change was not applied within 5 s"
        assert await coord.exists("/config/users/hank") is not None  # written, though

        async def down(*_args: object) -> None:
            raise CoordinationError("connection lost")

        coord.multi = down  # type: ignore[method-assign]
        with pytest.raises(ScramStoreError) as caught:
            await users.alter([], [upsert("ida")])
        assert caught.value.code == ErrorCode.UNKNOWN
        assert "ZooKeeper write failed: connection lost" in caught.value.message
        nursery.cancel_scope.cancel()


async def test_a_single_broker_keeps_them_in_its_store_and_seeds_them_back(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    async with brokers(MemoryZooKeeper(), 1, store) as (one,):
        await one.alter([], [upsert("ivan"), upsert("judy", mechanism=SHA512)])
        await one.alter([ScramDeletion("judy", 2)], [])
    reopened = TopicStore.open(tmp_path)
    assert reopened.user_configs() == {
        "ivan": {"SCRAM-SHA-256": encode_credential(credential_for("secret"))},  # type: ignore[arg-type]
    }
    # the next start: the in-process ZooKeeper seeded from the store, mirrored at once
    local = LocalCluster(0)
    async with trio.open_nursery() as nursery:
        await nursery.start(local.coordination.run)
        await local.seed(reopened, lambda _t, _p: 0)
        users = ZkScramUsers(local.coordination, store=reopened)
        await nursery.start(users.run)
        assert users.credential(SHA256, "ivan") == credential_for("secret")
        assert users.credential(SHA512, "judy") is None
        nursery.cancel_scope.cancel()
