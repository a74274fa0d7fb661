"""ACLs in ZooKeeper (wirebroker.cluster.zk_acls) over the in-memory coordination: Kafka's
ZooKeeper-mode nodes and change notifications, every broker's mirror (an ACL created through
one broker decides on another), concurrent writers, nodes written by other tools, and a single
broker keeping them in its store and seeding them back."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
import trio.testing

from protocol.errors import ErrorCode
from wirebroker.cluster.local_cluster import LocalCluster
from wirebroker.cluster.zk_acls import ACL_CHANGES, ACL_EXTENDED_CHANGES, KEEP_CHANGES, ZkAcls
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from wirebroker.security.authorizer import AclAuthorizer

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
READ, WRITE, DESCRIBE = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
EVERYTHING = AclBindingFilter(1, None, 1, None, None, 1, 1)


def acl(
    name: str = "orders",
    op: int = WRITE,
    perm: int = ALLOW,
    principal: str = "User:bob",
    rtype: int = TOPIC,
    pattern: int = LITERAL,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


@asynccontextmanager
async def brokers(
    server: MemoryZooKeeper, count: int, store: TopicStore | None = None
) -> AsyncIterator[list[ZkAcls]]:
    async with trio.open_nursery() as nursery:
        out = []
        for _ in range(count):
            coord = MemoryCoordination(server)
            await nursery.start(coord.run)
            acls = ZkAcls(coord, AclAuthorizer(), store=store, timeout_s=5)
            await nursery.start(acls.run)
            out.append(acls)
        yield out
        nursery.cancel_scope.cancel()


async def settle() -> None:
    for _ in range(20):
        await trio.testing.wait_all_tasks_blocked()


async def node(server: MemoryZooKeeper, path: str) -> object:
    coord = MemoryCoordination(server)
    async with trio.open_nursery() as nursery:
        await nursery.start(coord.run)
        data, _stat = await coord.get(path)
        nursery.cancel_scope.cancel()
    return json.loads(data) if data.startswith(b"{") else data.decode()


async def children(server: MemoryZooKeeper, path: str) -> list[str]:
    coord = MemoryCoordination(server)
    async with trio.open_nursery() as nursery:
        await nursery.start(coord.run)
        names = await coord.get_children(path)
        nursery.cancel_scope.cancel()
    return names


async def test_an_acl_created_on_one_broker_decides_on_every_broker() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 2) as (one, two):
        assert not two.authorize("User:bob", "10.0.0.1", WRITE, TOPIC, "orders")
        outcomes = await one.create_acls([acl(), acl("ord", READ, pattern=PREFIXED)])
        assert outcomes == [None, None]
        assert one.authorize("User:bob", "10.0.0.1", WRITE, TOPIC, "orders")  # read-your-write
        await settle()
        assert two.authorize("User:bob", "10.0.0.1", WRITE, TOPIC, "orders")
        assert two.authorize("User:bob", "10.0.0.1", READ, TOPIC, "order-lines")
        assert await two.describe_acls(EVERYTHING) == [acl(), acl("ord", READ, pattern=PREFIXED)]
        (deleted,) = await two.delete_acls(
            [AclBindingFilter(TOPIC, "orders", LITERAL, *[None] * 2, 1, 1)]
        )
        assert deleted.deleted == (acl(),)
        await settle()
        assert not one.authorize("User:bob", "10.0.0.1", WRITE, TOPIC, "orders")
        assert await one.describe_acls(EVERYTHING) == [acl("ord", READ, pattern=PREFIXED)]


async def test_the_nodes_and_notifications_are_kafkas() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        await one.create_acls([acl(), acl(op=READ, perm=DENY, principal="User:eve")])
        await one.create_acls(
            [acl("tx-", WRITE, rtype=ResourceType.TRANSACTIONAL_ID, pattern=PREFIXED)]
        )
        assert await node(server, "/kafka-acl/Topic/orders") == {
            "version": 1,
            "acls": [
                {
                    "principal": "User:bob",
                    "permissionType": "Allow",
                    "operation": "Write",
                    "host": "*",
                },
                {
                    "principal": "User:eve",
                    "permissionType": "Deny",
                    "operation": "Read",
                    "host": "*",
                },
            ],
        }
        prefixed = await node(server, "/kafka-acl-extended/prefixed/TransactionalId/tx-")
        assert prefixed == {
            "version": 1,
            "acls": [
                {
                    "principal": "User:bob",
                    "permissionType": "Allow",
                    "operation": "Write",
                    "host": "*",
                }
            ],
        }
        (literal_change,) = await children(server, ACL_CHANGES)
        assert literal_change.startswith("acl_changes_")
        assert await node(server, f"{ACL_CHANGES}/{literal_change}") == "Topic:orders"
        (extended,) = await children(server, ACL_EXTENDED_CHANGES)
        assert await node(server, f"{ACL_EXTENDED_CHANGES}/{extended}") == {
            "version": 1,
            "resourceType": "TransactionalId",
            "name": "tx-",
            "patternType": "Prefixed",
        }
        # the last ACL of a resource removed: its node goes
        await one.delete_acls([AclBindingFilter(TRANSACTIONAL := 5, None, 1, None, None, 1, 1)])
        assert TRANSACTIONAL == ResourceType.TRANSACTIONAL_ID
        assert await children(server, "/kafka-acl-extended/prefixed/TransactionalId") == []


async def test_concurrent_writers_to_one_node_both_land() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 2) as (one, two):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one.create_acls, [acl(principal="User:a")])
            nursery.start_soon(two.create_acls, [acl(principal="User:b")])
        await settle()
        principals = {b.principal for b in await one.describe_acls(EVERYTHING)}
        assert principals == {"User:a", "User:b"}
        data = await node(server, "/kafka-acl/Topic/orders")
        assert {a["principal"] for a in data["acls"]} == {"User:a", "User:b"}  # type: ignore[index]


async def test_a_node_that_does_not_parse_is_left_out() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        coord = MemoryCoordination(server)
        async with trio.open_nursery() as nursery:
            await nursery.start(coord.run)
            await coord.create("/kafka-acl/Group/g", b"not json", makepath=True)
            await coord.create(
                "/kafka-acl/Group/h",
                b'{"version":1,"acls":[{"principal":"User:x",'
                b'"permissionType":"Allow","operation":"Read","host":"*"}]}',
            )
            await coord.create(f"{ACL_CHANGES}/acl_changes_", b"Group:h", sequential=True)
            nursery.cancel_scope.cancel()
        await settle()
        assert await one.describe_acls(EVERYTHING) == [
            acl("h", READ, principal="User:x", rtype=GROUP)
        ]


async def test_notifications_are_trimmed() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        for i in range(KEEP_CHANGES + 5):
            await one.create_acls([acl(f"t{i}")])
        assert len(await children(server, ACL_CHANGES)) == KEEP_CHANGES
        assert len(await one.describe_acls(EVERYTHING)) == KEEP_CHANGES + 5


async def test_invalid_creations_write_nothing() -> None:
    server = MemoryZooKeeper()
    async with brokers(server, 1) as (one,):
        outcomes = await one.create_acls([acl(principal="bob"), acl()])
        assert outcomes[0] is not None and outcomes[0].code == ErrorCode.INVALID_REQUEST
        assert outcomes[1] is None
        assert await one.describe_acls(EVERYTHING) == [acl()]


async def test_a_single_broker_keeps_them_in_its_store_and_seeds_them_back(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    async with brokers(MemoryZooKeeper(), 1, store) as (one,):
        await one.create_acls([acl(), acl("ord", READ, pattern=PREFIXED), acl("gone")])
        await one.delete_acls([AclBindingFilter(TOPIC, "gone", LITERAL, None, None, 1, 1)])
    reopened = TopicStore.open(tmp_path)
    assert set(reopened.acl_nodes()) == {
        "/kafka-acl/Topic/orders",
        "/kafka-acl-extended/prefixed/Topic/ord",
    }
    local = LocalCluster(0)
    async with trio.open_nursery() as nursery:
        await nursery.start(local.coordination.run)
        await local.seed(reopened, lambda _t, _p: 0)
        acls = ZkAcls(local.coordination, AclAuthorizer(), store=reopened)
        await nursery.start(acls.run)
        assert await acls.describe_acls(EVERYTHING) == [acl(), acl("ord", READ, pattern=PREFIXED)]
        assert acls.authorize("User:bob", "::1", READ, TOPIC, "ordinal")
        nursery.cancel_scope.cancel()
