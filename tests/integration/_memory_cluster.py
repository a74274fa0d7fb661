"""Three real `Broker`s over one in-memory ZooKeeper, in one trio run (test helper).

`start_cluster(nursery, root)` starts brokers 0..2 (port 0, own data dirs under `root`), each
with its own `MemoryCoordination` session of one shared `MemoryZooKeeper`, so the whole cluster
runtime runs for real: registration, controller election, ZkTopicAdmin, state watches, roles,
follower fetchers over real sockets, ISR writes, controlled shutdown. Fault injection goes
through the server (`expire(node)`: ZooKeeper expires that broker's session) or through the
broker's objects (its fetcher manager, its serve scope).

Timing is real (fetchers use sockets), so every wait is a bounded poll (`eventually`); the
replication timeouts are small (`LAG_MS`, fetch waits of 50 ms).

Waits: `eventually` polls any check; `wait_roles` until every running broker plays the role
its partition state znode gives it (`roles_settled`); `leader_of` reads the leader there.

Clients: `Cluster.request(node, api, version, body)` over a raw-protocol `BrokerConnection`
opened and closed per call (nothing to leak), and the produce / fetch / metadata helpers built
on it. `Cluster.zk_get(path)` reads a znode through an observer session of the same server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch, decode_records, iter_batches
from wirebroker import broker as broker_module
from wirebroker.broker import Broker
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller import ZkController
from wirebroker.cluster.zk_member import ClusterMember
from wirebroker.config import BrokerConfig
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.partition_state import PartitionState
from wirebroker.replication.broker_client import BrokerConnection
from wirebroker.replication.partition import Partition, Role

LAG_MS = 1000
DEADLINE_S = 15.0
CLUSTER_ID = "mEm0ryClust3r-0000000"
OFFSETS_PARTITIONS = 3

BROKER_OVERRIDES = {
    "replica.lag.time.max.ms": str(LAG_MS),
    "replica.fetch.wait.max.ms": "50",
    "replica.fetch.backoff.ms": "50",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "controlled.shutdown.timeout.ms": "5000",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "group.initial.rebalance.delay.ms": "0",
    # leaders move back to the preferred replica only when a test asks (ElectLeaders)
    "auto.leader.rebalance.enable": "false",
}


def broker_config(root: Path, node: int, overrides: dict[str, str] | None = None) -> BrokerConfig:
    return BrokerConfig(
        {
            "node.id": str(node),
            "log.dirs": str(root / f"broker{node}"),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "cluster.id": CLUSTER_ID,
            **BROKER_OVERRIDES,
            **(overrides or {}),
        }
    )


@dataclass
class Node:
    """One broker of the cluster and the means to stop it."""

    broker: Broker
    coord: MemoryCoordination
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    stopped: trio.Event = field(default_factory=trio.Event)
    address: tuple[str, int] = ("", 0)

    @property
    def node_id(self) -> int:
        return self.broker.config.node_id

    @property
    def session_id(self) -> int:
        return self.coord.session_id

    @property
    def broker_epoch(self) -> int:
        assert self.broker.member is not None
        return self.broker.member.broker_epoch

    def part(self, topic: str, index: int) -> Partition:
        p = self.broker.replicas.partition(topic, index)
        assert p is not None, f"broker {self.node_id} does not host {topic}-{index}"
        return p

    async def stop(self) -> None:
        """Cancel the broker's serve scope (controlled shutdown) and wait until it is down."""
        self.scope.cancel()
        await self.stopped.wait()


async def _serve(node: Node, *, task_status: trio.TaskStatus[tuple[str, int]]) -> None:
    try:
        with node.scope:
            async with trio.open_nursery() as nursery:
                bound = await nursery.start(node.broker.serve)
                task_status.started(bound[0])
    finally:
        node.stopped.set()


@dataclass
class Cluster:
    server: MemoryZooKeeper
    nodes: list[Node]
    observer: MemoryCoordination
    #: every ZkController the brokers started, in order (the last one is the current one)
    controllers: list[ZkController] = field(default_factory=list)

    def running(self) -> list[Node]:
        return [n for n in self.nodes if not n.stopped.is_set()]

    def peek_state(self, topic: str, index: int) -> PartitionState:
        """A state znode read synchronously, straight from the server (for checks inside a
        synchronous hook; reads the in-memory server's private tree)."""
        node = self.server._nodes[zl.state_path(topic, index)]
        return zl.decode_partition_state(topic, index, node.data)

    # -- ZooKeeper ---------------------------------------------------------------------------
    async def zk_get(self, path: str) -> bytes | None:
        stat = await self.observer.exists(path)
        if stat is None:
            return None
        data, _stat = await self.observer.get(path)
        return data

    async def state(self, topic: str, index: int) -> tuple[PartitionState, int]:
        data, stat = await self.observer.get(zl.state_path(topic, index))
        return zl.decode_partition_state(topic, index, data), stat.version

    async def controller(self) -> tuple[int, int]:
        """(/controller's broker id or -1, /controller_epoch)."""
        data = await self.zk_get(zl.CONTROLLER)
        epoch = await self.zk_get(zl.CONTROLLER_EPOCH)
        return (
            -1 if data is None else zl.decode_controller(data),
            zl.decode_controller_epoch(epoch),
        )

    async def stop_all(self) -> None:
        """Stop the brokers one after the other (each moves its leaderships to the ones
        still up; stopping them all at once would leave nobody to move them to)."""
        for node in self.nodes:
            await node.stop()

    def expire(self, node: int) -> int:
        """ZooKeeper expires broker `node`'s session; returns the expired session id."""
        session = self.nodes[node].session_id
        self.server.expire_session(session)
        return session

    # -- requests ----------------------------------------------------------------------------
    async def connect(self, node: int) -> BrokerConnection:
        host, port = self.nodes[node].address
        return await BrokerConnection.open(host, port, client_id="test", max_frame_bytes=1 << 26)

    async def request(self, node: int, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
        conn = await self.connect(node)
        try:
            with trio.fail_after(DEADLINE_S):
                return await conn.request(api, version, body)
        finally:
            await conn.aclose()

    async def metadata(self, node: int, topics: list[str] | None) -> Any:
        body = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
        }
        return await self.request(node, ApiKey.METADATA, 9, body)

    async def create_topic(
        self,
        node: int,
        name: str,
        partitions: int,
        rf: int = 3,
        *,
        assignment: dict[int, list[int]] | None = None,
        configs: dict[str, str] | None = None,
    ) -> int:
        """CreateTopics through broker `node` (placement by the broker, or `assignment`)."""
        if assignment is not None:
            partitions, rf = -1, -1
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": rf,
                    "assignments": [
                        {"partition_index": i, "broker_ids": r}
                        for i, r in sorted((assignment or {}).items())
                    ],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout_ms": int(DEADLINE_S * 1000),
            "validate_only": False,
        }
        resp = await self.request(node, ApiKey.CREATE_TOPICS, 5, body)
        return int(resp.topics[0].error_code)

    async def produce(
        self,
        node: int,
        topic: str,
        index: int,
        values: list[bytes],
        *,
        acks: int = -1,
        timeout_ms: int = 5000,
    ) -> tuple[int, int]:
        """(error code, base offset) of one batch of `values`."""
        batch = build_batch([(None, v) for v in values], base_timestamp=1_700_000_000_000)
        body = {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [{"index": index, "records": batch}]}],
        }
        resp = await self.request(node, ApiKey.PRODUCE, 9, body)
        p = resp.responses[0].partition_responses[0]
        return int(p.error_code), int(p.base_offset)

    async def fetch(self, node: int, topic: str, index: int, offset: int) -> tuple[int, int, bytes]:
        """A consumer's fetch: (error code, high watermark, record bytes)."""
        body = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 24,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": index,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 24,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        resp = await self.request(node, ApiKey.FETCH, 12, body)
        p = resp.responses[0].partitions[0]
        return int(p.error_code), int(p.high_watermark), bytes(p.records or b"")

    async def read_all(self, node: int, topic: str, index: int) -> list[tuple[int, bytes]]:
        """Every committed (offset, value) a consumer reads from broker `node`."""
        out: list[tuple[int, bytes]] = []
        offset = 0
        while True:
            code, hw, data = await self.fetch(node, topic, index, offset)
            assert code == ErrorCode.NONE, f"fetch from {node}: {ErrorCode(code).name}"
            for pos, header in iter_batches(data):
                for rec in decode_records(data, pos):
                    if rec.offset >= offset:
                        out.append((rec.offset, bytes(rec.value or b"")))
                offset = max(offset, header.base_offset + header.last_offset_delta + 1)
            if offset >= hw or not data:
                return out


def committed_bytes(part: Partition) -> bytes:
    """The replica's batches below its high watermark, as stored."""
    return part.log.read(part.log_start_offset, max_bytes=1 << 30, max_offset=part.high_watermark)


async def eventually(
    check: Callable[[], bool] | Callable[[], Awaitable[bool]],
    what: str,
    timeout: float = DEADLINE_S,
) -> float:
    """Poll `check` (sync or async) until true; returns the seconds it took."""
    start = trio.current_time()
    with trio.move_on_after(timeout) as scope:
        while True:
            result = check()
            if not isinstance(result, bool):
                result = await result
            if result:
                break
            await trio.sleep(0.02)
    assert not scope.cancelled_caught, f"timed out after {timeout} s waiting for: {what}"
    return trio.current_time() - start


async def leader_of(cluster: Cluster, topic: str, index: int) -> int:
    state, _version = await cluster.state(topic, index)
    return state.leader


async def roles_settled(cluster: Cluster, topic: str, indexes: range) -> bool:
    """Every running broker plays, for every partition, the role its state znode says."""
    for index in indexes:
        state, version = await cluster.state(topic, index)
        if state.leader < 0:
            return False
        for node in cluster.running():
            part = node.broker.replicas.partition(topic, index)
            if part is None:
                return False
            if (part.leader_epoch, part.partition_epoch) != (state.leader_epoch, version):
                return False
            want = Role.LEADER if state.leader == node.node_id else Role.FOLLOWER
            if part.role is not want or part.leader_id != state.leader:
                return False
    return True


async def wait_roles(cluster: Cluster, topic: str, partitions: int) -> None:
    async def settled() -> bool:
        return await roles_settled(cluster, topic, range(partitions))

    await eventually(settled, f"roles of {topic} settled on every broker")


async def start_cluster(
    nursery: trio.Nursery,
    root: Path,
    count: int = 3,
    *,
    monkeypatch: pytest.MonkeyPatch | None = None,
    overrides: dict[str, str] | None = None,
) -> Cluster:
    """Start `count` brokers (`overrides`: more broker configs); with `monkeypatch`, record
    every controller they start."""
    server = MemoryZooKeeper()
    observer = MemoryCoordination(server)
    await nursery.start(observer.run)
    controllers: list[ZkController] = []
    if monkeypatch is not None:

        def recording(member: ClusterMember, epoch: int, epoch_version: int) -> ZkController:
            controller = ZkController(member, epoch, epoch_version)
            controllers.append(controller)
            return controller

        # (the composition root passes its ZkController to every member it builds)
        monkeypatch.setattr(broker_module, "ZkController", recording)
    nodes = []
    for n in range(count):
        coord = MemoryCoordination(server)
        broker = Broker(broker_config(root, n, overrides), grace_s=1.0, coordination=coord)
        nodes.append(Node(broker, coord))
    for node in nodes:
        node.address = await nursery.start(_serve, node)
    cluster = Cluster(server, nodes, observer, controllers)

    def registered() -> bool:
        return all(
            n.broker.member is not None and len(n.broker.member.cache.brokers) == count
            for n in nodes
        )

    await eventually(registered, "every broker sees every broker")
    return cluster


__all__ = [
    "CLUSTER_ID",
    "DEADLINE_S",
    "LAG_MS",
    "OFFSETS_PARTITIONS",
    "Cluster",
    "Node",
    "committed_bytes",
    "eventually",
    "leader_of",
    "roles_settled",
    "start_cluster",
    "wait_roles",
]
