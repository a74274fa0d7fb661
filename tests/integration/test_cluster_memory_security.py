"""A three-broker cluster (in-memory ZooKeeper, real sockets: `_memory_cluster.py`) whose
brokers talk to each other only over SASL_SSL (issue 34): `inter.broker.listener.name` is the
SASL_SSL listener, so follower fetches (and the controller's view of where a broker is) go
through TLS and SASL (PLAIN or SCRAM-SHA-512) between the brokers. The test's own requests use
each broker's INTERNAL PLAINTEXT listener.

What passing proves: every broker registers both listeners with their protocols, and its
inter-broker address (the registration's host/port) is its SASL_SSL listener; Metadata on a
listener answers that listener's addresses of every broker; acks=all records reach every
replica byte for byte through authenticated TLS fetchers; each follower authenticated.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from _memory_cluster import (
    Cluster,
    committed_bytes,
    eventually,
    leader_of,
    start_cluster,
    wait_roles,
)

from protocol.errors import ErrorCode
from wirebroker.cluster import zk_layout as zl
from wirebroker.testing._security import secured

TOPIC = "secured"


@pytest.fixture(params=["PLAIN", "SCRAM-SHA-512"])
async def cluster(
    request: pytest.FixtureRequest, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> AsyncIterator[Cluster]:
    caplog.set_level(logging.INFO, logger="wirebroker.net")
    settings = secured("SASL_SSL", request.param, tmp_path / "certs", "127.0.0.1", 0)
    overrides = dict(settings.overrides)
    # INTERNAL first: the helpers' requests (and `node.address`) use it; brokers use SASL_SSL
    overrides["listeners"] = "INTERNAL://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path, overrides=overrides)
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()


async def test_replication_runs_over_sasl_ssl_only(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    for node in cluster.nodes:
        raw = json.loads(await cluster.zk_get(zl.broker_path(node.node_id)) or b"{}")
        assert raw["listener_security_protocol_map"] == {
            "INTERNAL": "PLAINTEXT",
            "SASL_SSL": "SASL_SSL",
        }
        sasl_ssl = node.broker.server.bound_by_listener["SASL_SSL"]
        assert f"SASL_SSL://127.0.0.1:{sasl_ssl[1]}" in raw["endpoints"]
        assert (raw["host"], raw["port"]) == ("127.0.0.1", sasl_ssl[1])
    meta = await cluster.metadata(0, None)
    internal = {n.node_id: n.broker.server.bound_by_listener["INTERNAL"][1] for n in cluster.nodes}
    assert {b.node_id: b.port for b in meta.brokers} == internal

    assert await cluster.create_topic(0, TOPIC, 1, 3, configs={"min.insync.replicas": "3"}) == 0
    await wait_roles(cluster, TOPIC, 1)
    leader = await leader_of(cluster, TOPIC, 0)
    for i in range(10):
        batch = [b"s%d-%d" % (i, j) for j in range(3)]
        assert await cluster.produce(leader, TOPIC, 0, batch) == (ErrorCode.NONE, 3 * i)
    lead = cluster.nodes[leader].part(TOPIC, 0)
    await eventually(
        lambda: all(n.part(TOPIC, 0).high_watermark == 30 for n in cluster.nodes), "every HW"
    )
    for node in cluster.nodes:
        assert committed_bytes(node.part(TOPIC, 0)) == committed_bytes(lead)
    authenticated = [
        r.getMessage() for r in caplog.records if "authenticated User:" in r.getMessage()
    ]
    assert len(authenticated) >= 2  # the two followers' fetchers, at least
    assert all("on listener SASL_SSL" in line for line in authenticated)
