"""ACLs in a three-broker cluster (in-memory ZooKeeper, real sockets: `_memory_cluster.py`)
whose brokers talk to each other over SASL_PLAINTEXT as User:alice, with an authorizer and
only User:ANONYMOUS (the test's INTERNAL PLAINTEXT requests) a super user.

What passing proves: a follower whose principal may not CLUSTER_ACTION the cluster is refused
(CVE-2018-1288: its fetches answered TOPIC_AUTHORIZATION_FAILED, nothing replicated); an ACL
created through one broker reaches every broker's authorizer (ZooKeeper's /kafka-acl and its
change notifications) and, once alice may CLUSTER_ACTION, the followers replicate."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from _memory_cluster import Cluster, eventually, leader_of, start_cluster, wait_roles

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.testing._security import secured

TOPIC = "guarded"
CLUSTER_ACTION, ALLOW, LITERAL, CLUSTER = 9, 3, 3, 4


@pytest.fixture
async def cluster(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Cluster]:
    caplog.set_level(logging.INFO, logger="wirebroker")
    settings = secured("SASL_PLAINTEXT", "PLAIN", tmp_path / "certs", "127.0.0.1", 0)
    overrides = dict(settings.overrides)
    overrides["listeners"] = "INTERNAL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
    overrides["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
    overrides["super.users"] = "User:ANONYMOUS"
    overrides["replica.fetch.backoff.ms"] = "100"
    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path, overrides=overrides)
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()


async def test_a_follower_without_cluster_action_is_refused_until_an_acl_allows_it(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    assert await cluster.create_topic(0, TOPIC, 1, 3) == 0
    await wait_roles(cluster, TOPIC, 1)
    leader = await leader_of(cluster, TOPIC, 0)
    assert await cluster.produce(leader, TOPIC, 0, [b"a", b"b"], acks=1) == (ErrorCode.NONE, 0)

    def refused() -> bool:
        return any("may not CLUSTER_ACTION" in r.getMessage() for r in caplog.records)

    await eventually(refused, "a follower fetch refused")
    followers = [n for n in cluster.nodes if n.node_id != leader]
    assert all(n.part(TOPIC, 0).log_end_offset == 0 for n in followers)

    creation = {
        "resource_type": CLUSTER,
        "resource_name": "kafka-cluster",
        "resource_pattern_type": LITERAL,
        "principal": "User:alice",
        "host": "*",
        "operation": CLUSTER_ACTION,
        "permission_type": ALLOW,
    }
    created = await cluster.request(0, ApiKey.CREATE_ACLS, 3, {"creations": [creation]})
    assert [r.error_code for r in created.results] == [0]
    every_acl = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }

    async def everywhere() -> bool:
        for node in cluster.nodes:
            described = await cluster.request(node.node_id, ApiKey.DESCRIBE_ACLS, 3, every_acl)
            if [a.principal for r in described.resources for a in r.acls] != ["User:alice"]:
                return False
        return True

    await eventually(everywhere, "every broker describes the ACL")
    await eventually(
        lambda: all(n.part(TOPIC, 0).log_end_offset == 2 for n in followers),
        "the followers replicate once alice may CLUSTER_ACTION",
    )
