"""A cluster broker serves no client before it has joined the cluster (in-memory ZooKeeper,
`_memory_cluster.py`).

The case this guards (issue 14, tests/reliability/test_eos_kill9.py): a broker restarted
after a kill -9 binds its port at once, but registers only once its previous session is gone
and mirrors the cluster after that. Answered in between, a Metadata request got an empty
broker list and controller -1; librdkafka 2.x then decommissions every broker handle missing
from the answer -- all of them, the transaction coordinator's included -- and a transactional
producer made no progress until its transaction timed out. The broker now accepts only once
its member is up (Kafka's startProcessingRequests): the request waits in the listen backlog
and is answered with the whole cluster.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio
from _memory_cluster import Node, broker_config, eventually, start_cluster

from protocol.api import ApiKey
from wirebroker.broker import Broker
from wirebroker.cluster import zk_layout as zl
from wirebroker.coordination.memory import MemoryCoordination
from wirebroker.replication.broker_client import BrokerConnection

RESTARTED = 2


async def test_a_restarted_broker_answers_metadata_only_once_it_has_joined(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="wirebroker.cluster.zk_member")
    async with trio.open_nursery() as nursery:
        cluster = await start_cluster(nursery, tmp_path, count=2)
        # broker 2's previous process, killed: its registration stays until its session ends
        stale = MemoryCoordination(cluster.server)
        await nursery.start(stale.run)
        registration = zl.BrokerRegistration(RESTARTED, "127.0.0.1", 1, None, 0)
        await stale.create(
            zl.broker_path(RESTARTED), zl.encode_broker(registration), ephemeral=True
        )

        coord = MemoryCoordination(cluster.server)
        broker = Broker(broker_config(tmp_path, RESTARTED), grace_s=1.0, coordination=coord)
        node = Node(broker, coord)
        nursery.start_soon(_serve, node)
        await eventually(lambda: bool(node.broker.bound), "broker 2 bound its listener")
        host, port = node.broker.bound[0]
        conn = await BrokerConnection.open(host, port, client_id="test", max_frame_bytes=1 << 24)
        answers: list[object] = []

        async def ask() -> None:
            body = {"topics": None, "allow_auto_topic_creation": False}
            answers.append(await conn.request(ApiKey.METADATA, 12, body))

        nursery.start_soon(ask)
        await eventually(
            lambda: "registered by another ZooKeeper session" in caplog.text,
            "broker 2 waits for its previous registration to go",
        )
        assert node.broker.member is not None and not node.broker.member.cache.brokers
        cluster.server.expire_session(stale.session_id)  # the old session expires
        await eventually(lambda: bool(answers), "the Metadata answer")
        [answer] = answers
        assert sorted(b.node_id for b in answer.brokers) == [0, 1, RESTARTED]  # type: ignore[attr-defined]
        assert answer.controller_id in (0, 1)  # type: ignore[attr-defined]
        await conn.aclose()
        node.scope.cancel()
        await node.stopped.wait()
        await cluster.stop_all()
        nursery.cancel_scope.cancel()


async def _serve(node: Node) -> None:
    try:
        with node.scope:
            await node.broker.serve()
    finally:
        node.stopped.set()
