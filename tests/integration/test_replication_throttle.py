"""Replication throttles (KIP-73) on a real cluster: three `Broker`s over the in-memory
ZooKeeper (`_memory_cluster.py`), replicating over real sockets.

A replica added by a reassignment catches up a backlog. With the partition in the topic's
leader/follower throttled replicas and the brokers' rates set, it takes at least as long as
the quota allows: a fetch only starts while the rate measured since the first byte is under
the bound, so by the time the last fetch starts at most rate x elapsed bytes have gone, and
that fetch carries at most one fetch's bytes. That bound holds however loaded the machine is
(load only slows replication down); the unthrottled reassignment of the same backlog, in the
same run, is the comparison. Once the replica is in the ISR it is never throttled, even at a
rate of 1 byte per second.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from _memory_cluster import Cluster, eventually, start_cluster

from protocol.api import ApiKey
from protocol.errors import ErrorCode

KIB = 1024
RATE = 512 * KIB  # bytes/s, leader and follower
FETCH = 64 * KIB  # replica.fetch.max.bytes: the most one fetch of one partition carries
VALUE = 15 * KIB  # four values to a batch: whole batches under FETCH
BATCHES = 34  # about 2 MiB of backlog
RESOURCE_TOPIC, RESOURCE_BROKER = 2, 4
SET = 0


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with trio.open_nursery() as nursery:
        c = await start_cluster(
            nursery, tmp_path, overrides={"replica.fetch.max.bytes": str(FETCH)}
        )
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()


async def alter(cluster: Cluster, rtype: int, name: str, configs: dict[str, str]) -> None:
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [
                    {"name": k, "config_operation": SET, "value": v} for k, v in configs.items()
                ],
            }
        ],
        "validate_only": False,
    }
    resp = await cluster.request(0, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert [(r.error_code, r.error_message) for r in resp.responses] == [(0, None)]


async def set_rates(cluster: Cluster, rate: int) -> None:
    """Both rates as the cluster default, applied by every broker."""
    rates = {f"{side}.replication.throttled.rate": str(rate) for side in ("leader", "follower")}
    await alter(cluster, RESOURCE_BROKER, "", rates)

    def applied() -> bool:
        return all(
            (n.broker.replicas.quotas.leader.bound, n.broker.replicas.quotas.follower.bound)
            == (rate, rate)
            for n in cluster.nodes
        )

    await eventually(applied, f"every broker throttling at {rate} B/s")


async def backlog(cluster: Cluster, topic: str) -> int:
    """A one-replica topic on broker 0 holding ~2 MiB; its size in bytes."""
    code = await cluster.create_topic(0, topic, 1, assignment={0: [0]})
    assert code == ErrorCode.NONE
    replicas = cluster.nodes[0].broker.replicas
    await eventually(lambda: replicas.partition(topic, 0) is not None, f"{topic}-0 on broker 0")
    for _ in range(BATCHES):
        values = [os.urandom(VALUE) for _ in range(4)]
        assert (await cluster.produce(0, topic, 0, values, acks=1))[0] == ErrorCode.NONE
    part = replicas.partition(topic, 0)
    assert part is not None
    return part.log.size_in_bytes()


async def add_replica(cluster: Cluster, topic: str) -> float:
    """Reassign `topic`-0 from [0] to [0, 1]; seconds until broker 1 has the whole log."""
    leader = cluster.nodes[0].broker.replicas.partition(topic, 0)
    assert leader is not None
    end = leader.log_end_offset
    start = trio.current_time()
    body = {
        "timeout_ms": 30_000,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "replicas": [0, 1]}]}],
    }
    resp = await cluster.request(0, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, body)
    assert resp.error_code == ErrorCode.NONE
    assert [p.error_code for t in resp.responses for p in t.partitions] == [ErrorCode.NONE]

    def caught_up() -> bool:
        part = cluster.nodes[1].broker.replicas.partition(topic, 0)
        return part is not None and part.log_end_offset == end

    await eventually(caught_up, f"broker 1 catching up {topic}-0", timeout=120)
    return trio.current_time() - start


async def test_a_throttled_replica_catches_up_at_the_configured_rate(cluster: Cluster) -> None:
    plain_bytes = await backlog(cluster, "plain")
    throttled_bytes = await backlog(cluster, "throttled")
    await set_rates(cluster, RATE)
    await alter(
        cluster,
        RESOURCE_TOPIC,
        "throttled",
        {
            "leader.replication.throttled.replicas": "0:0",
            "follower.replication.throttled.replicas": "0:1",
        },
    )
    leader_quota = cluster.nodes[0].broker.replicas.quotas.leader
    follower_quota = cluster.nodes[1].broker.replicas.quotas.follower
    await eventually(
        lambda: (
            leader_quota.is_throttled("throttled", 0)
            and follower_quota.is_throttled("throttled", 0)
        ),
        "the throttled replicas taken by broker 0 (leader) and broker 1 (follower)",
    )
    assert not leader_quota.is_throttled("plain", 0)

    plain_s = await add_replica(cluster, "plain")  # the rates apply to throttled replicas only
    throttled_s = await add_replica(cluster, "throttled")
    floor_s = (throttled_bytes - FETCH) / RATE
    assert throttled_s >= 0.95 * floor_s, (throttled_s, floor_s)
    assert plain_s < throttled_s / 2, (plain_s, throttled_s, plain_bytes)
    # what each quota counted is what was replicated of the throttled partition
    assert leader_quota.rate(cluster.nodes[0].broker.clock()) > 0

    # In the ISR, the replica is never throttled: at 1 B/s an acks=all write still goes through
    leader = cluster.nodes[0].broker.replicas.partition("throttled", 0)
    assert leader is not None
    await eventually(lambda: sorted(leader.isr) == [0, 1], "broker 1 in the ISR")
    await set_rates(cluster, 1)
    assert leader_quota.exceeded(cluster.nodes[0].broker.clock())
    values = [os.urandom(VALUE) for _ in range(4)]
    code, _base = await cluster.produce(0, "throttled", 0, values, acks=-1, timeout_ms=10_000)
    assert code == ErrorCode.NONE
    assert sorted(leader.isr) == [0, 1]
