"""Brokers' cluster membership and the controller over the in-memory ZooKeeper: registration,
controller election and epochs, topic creation through ZkTopicAdmin, leader and follower roles,
failover when a broker's session expires, ISR writes fenced by the partition epoch."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller import ZkController
from wirebroker.cluster.zk_member import REGISTRATION_MARGIN_S, BrokerIdTakenError, ClusterMember
from wirebroker.cluster.zk_topic_admin import ZkTopicAdmin
from wirebroker.config import BrokerConfig
from wirebroker.coordination.api import CoordinationError, Op, SetData, Stat
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.partition_state import PartitionState
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.metadata.topic_store import TopicInfo, TopicStore


@dataclass
class FakeRoles:
    """Records what the member asks of the ReplicaManager."""

    node_id: int
    roles: dict[tuple[str, int], tuple[str, int, int]] = field(default_factory=dict)
    committed: list[tuple[str, int, list[int], int]] = field(default_factory=list)
    rejected: list[tuple[str, int]] = field(default_factory=list)
    stopped: list[tuple[str, int]] = field(default_factory=list)
    replica_sets: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    #: every make_leader / make_follower: (topic, index, role, leader, leader epoch, replicas)
    calls: list[tuple[str, int, str, int, int, list[int]]] = field(default_factory=list)

    def ensure_partition(self, info: TopicInfo, index: int, *, now_ms: int) -> object:
        return None

    def ensure_partitions(self, batch: list[tuple[TopicInfo, list[int]]], *, now_ms: int) -> None:
        pass

    def make_leader(
        self, topic: str, index: int, *, leader_epoch: int, replicas: list[int], **_: Any
    ) -> bool:
        self.roles[(topic, index)] = ("leader", self.node_id, leader_epoch)
        self.replica_sets[(topic, index)] = list(replicas)
        self.calls.append((topic, index, "leader", self.node_id, leader_epoch, list(replicas)))
        return True

    def make_follower(
        self,
        topic: str,
        index: int,
        *,
        leader_id: int,
        leader_epoch: int,
        replicas: list[int],
        **_: Any,
    ) -> bool:
        self.roles[(topic, index)] = ("follower", leader_id, leader_epoch)
        self.calls.append((topic, index, "follower", leader_id, leader_epoch, list(replicas)))
        return True

    def stop_replica(self, topic: str, index: int, *, delete: bool) -> None:
        self.stopped.append((topic, index))
        self.roles.pop((topic, index), None)

    def isr_committed(
        self, topic: str, index: int, *, isr: list[int], partition_epoch: int
    ) -> None:
        self.committed.append((topic, index, isr, partition_epoch))

    def isr_rejected(
        self,
        topic: str,
        index: int,
        *,
        leader_epoch: int | None = None,
        partition_epoch: int | None = None,
    ) -> None:
        self.rejected.append((topic, index))

    def on_topic_configs_changed(self, info: TopicInfo) -> None:
        pass

    def is_leader(self, topic: str, index: int) -> bool:
        return self.roles.get((topic, index), ("",))[0] == "leader"

    def leads(self) -> set[tuple[str, int]]:
        return {tp for tp, role in self.roles.items() if role[0] == "leader"}


class HoldingCoordination(MemoryCoordination):
    """A session whose watch deliveries of the paths in `holding` wait until `release`: the
    re-read of one znode coming back after another's (two re-reads in flight, which trio's
    scheduler may finish in either order), on purpose."""

    def __init__(self, server: MemoryZooKeeper) -> None:
        super().__init__(server)
        self.holding: set[str] = set()
        self.held: list[tuple[Any, Any]] = []

    def _deliver(self, entry: Any, value: Any) -> None:
        if entry.path in self.holding:
            self.held.append((entry, value))
            return
        super()._deliver(entry, value)

    def release(self) -> None:
        self.holding.clear()
        held, self.held = self.held, []
        for entry, value in held:
            super()._deliver(entry, value)


@dataclass
class Node:
    member: ClusterMember
    roles: FakeRoles
    coord: MemoryCoordination
    admin: ZkTopicAdmin
    scope: trio.CancelScope


async def start_node(
    nursery: trio.Nursery,
    server: MemoryZooKeeper,
    node_id: int,
    tmp: Path,
    coord: MemoryCoordination | None = None,
) -> Node:
    coord = coord or MemoryCoordination(server)
    roles = FakeRoles(node_id)
    store = TopicStore.open(tmp / f"b{node_id}")
    member = ClusterMember(
        coord,
        node_id=node_id,
        rack=None,
        topics=store,
        replicas=roles,
        address=lambda: ("127.0.0.1", 9000 + node_id),
        clock=lambda: 0,
        controller_factory=ZkController,
        config=BrokerConfig({"node.id": str(node_id)}),
    )
    admin = ZkTopicAdmin(BrokerConfig({"node.id": str(node_id)}), member, cast(Any, None))
    scope = trio.CancelScope()

    async def run(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            async with trio.open_nursery() as inner:
                await inner.start(coord.run)
                await inner.start(member.run)
                task_status.started()

    await nursery.start(run)
    return Node(member, roles, coord, admin, scope)


async def settle(nodes: list[Node]) -> None:
    """Let every queued watch and controller event run."""
    for _ in range(50):
        await trio.testing.wait_all_tasks_blocked()


async def state(server_node: Node, topic: str, index: int) -> PartitionState:
    data, _stat = await server_node.coord.get(zl.state_path(topic, index))
    return zl.decode_partition_state(topic, index, data)


async def test_three_brokers_elect_one_controller_and_share_leadership(tmp_path: Path) -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        controllers = [n for n in nodes if n.member.is_controller]
        assert len(controllers) == 1
        epoch, _ = await nodes[0].coord.get(zl.CONTROLLER_EPOCH)
        assert int(epoch) == 1
        assert all(n.member.cache.controller_id() == controllers[0].member.node_id for n in nodes)
        assert [b.node_id for b in nodes[0].member.cache.live_brokers()] == [1, 2, 3]

        [info] = nodes[0].admin.create_topics([NewTopic("t", 6, 3)], now_ms=0)
        assert isinstance(info, TopicInfo)
        problems = await nodes[0].admin.wait_settled(["t"], 5)
        assert problems == {}
        await settle(nodes)
        # Kafka's placement: each broker leads 2 of 6 partitions and holds all 6 replicas.
        assert sorted(len(n.roles.leads()) for n in nodes) == [2, 2, 2]
        for n in nodes:
            assert len(n.roles.roles) == 6
            stored = n.member.topics.get("t")
            assert stored is not None and stored.partitions == 6 and len(stored.assignment) == 6
        raw, _ = await nodes[0].coord.get(zl.topic_path("t"))
        assert json.loads(raw)["version"] == 3
        view = nodes[1].member.cache.partitions("t")
        assert [p.error_code for p in view] == [0] * 6
        assert all(sorted(p.isr) == [1, 2, 3] for p in view)
        nursery.cancel_scope.cancel()


async def test_session_expiry_moves_leadership_and_the_controller(tmp_path: Path) -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        controller = next(n for n in nodes if n.member.is_controller)
        victim = next(n for n in nodes if n is not controller)
        others = [n.member.node_id for n in nodes if n is not victim]
        nodes[0].admin.create_topics(
            [NewTopic("t", assignments=[(0, [victim.member.node_id, *others])])], now_ms=0
        )
        assert await nodes[0].admin.wait_settled(["t"], 5) == {}
        await settle(nodes)
        before = await state(nodes[0], "t", 0)
        assert before.leader == victim.member.node_id

        # The leader's session expires; it comes back at once with a new session (a new
        # broker epoch): the controller handles it as a bounce and moves the leadership.
        server.expire_session(victim.coord.session_id)
        await settle(nodes)
        after = await state(nodes[0], "t", 0)
        assert after.leader == others[0]
        assert after.leader_epoch > before.leader_epoch
        assert victim.roles.roles[("t", 0)] == ("follower", after.leader, after.leader_epoch)
        new_leader = next(n for n in nodes if n.member.node_id == after.leader)
        assert new_leader.roles.roles[("t", 0)] == ("leader", after.leader, after.leader_epoch)

        # The controller's session expires: another broker wins with a higher epoch.
        server.expire_session(controller.coord.session_id)
        await settle(nodes)
        epoch, _ = await nodes[0].coord.get(zl.CONTROLLER_EPOCH)
        assert int(epoch) == 2
        assert sum(n.member.is_controller for n in nodes) == 1
        assert not controller.member.is_controller or int(epoch) == 2
        nursery.cancel_scope.cancel()


async def _two_brokers_one_partition(
    nursery: trio.Nursery, tmp: Path
) -> tuple[list[Node], Node, PartitionState, Stat]:
    """Brokers 1 and 2, topic "t" (1 partition, RF 2) settled: the nodes, the leader's node,
    the partition's state and its znode's Stat."""
    server = MemoryZooKeeper()
    nodes = [await start_node(nursery, server, i, tmp) for i in (1, 2)]
    await settle(nodes)
    nodes[0].admin.create_topics([NewTopic("t", 1, 2)], now_ms=0)
    assert await nodes[0].admin.wait_settled(["t"], 5) == {}
    await settle(nodes)
    st = await state(nodes[0], "t", 0)
    leader = next(n for n in nodes if n.member.node_id == st.leader)
    _data, stat = await leader.coord.get(zl.state_path("t", 0))
    return nodes, leader, st, stat


async def test_isr_change_is_fenced_by_the_partition_epoch(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        nodes, leader, st, stat = await _two_brokers_one_partition(nursery, tmp_path)
        leader.member.propose_isr(
            "t", 0, leader_epoch=st.leader_epoch, partition_epoch=stat.version, isr=[st.leader]
        )
        await settle(nodes)
        assert leader.roles.committed == [("t", 0, [st.leader], stat.version + 1)]
        assert (await state(nodes[0], "t", 0)).isr == (st.leader,)
        # A stale partition epoch (a zombie's view) is refused.
        leader.member.propose_isr(
            "t", 0, leader_epoch=st.leader_epoch, partition_epoch=stat.version, isr=[1, 2]
        )
        await settle(nodes)
        assert leader.roles.rejected == [("t", 0)]
        assert (await state(nodes[0], "t", 0)).isr == (st.leader,)
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("landed", [False, True], ids=["not-applied", "answer-lost"])
async def test_isr_write_with_an_unknown_outcome_is_retried_not_fenced(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, landed: bool
) -> None:
    """A connection loss during the ISR write (a brief ZooKeeper cut, shorter than the
    session) leaves its outcome unknown: the leader retries instead of freezing its ISR
    changes for the rest of its leadership. If the first attempt had landed (only the answer
    was lost), the retry's BADVERSION finds the znode holding exactly the proposed state:
    committed at that version, not rejected. (Found by the deterministic simulation, seed 449.)"""
    async with trio.open_nursery() as nursery:
        nodes, leader, st, stat = await _two_brokers_one_partition(nursery, tmp_path)
        real_multi = leader.coord.multi
        calls: list[int] = []

        async def flaky_multi(ops: Sequence[Op]) -> list[str | Stat | None]:
            write = ops[0]
            assert isinstance(write, SetData)  # the ISR write, with its notification
            calls.append(write.version)
            if len(calls) == 1:
                if landed:
                    await real_multi(ops)
                raise CoordinationError("connection loss")
            return await real_multi(ops)

        leader.coord.multi = flaky_multi  # type: ignore[method-assign]
        leader.member.propose_isr(
            "t", 0, leader_epoch=st.leader_epoch, partition_epoch=stat.version, isr=[st.leader]
        )
        with trio.fail_after(10):
            while not leader.roles.committed:
                await trio.sleep(0.05)
        assert leader.roles.rejected == []
        assert len(calls) == 2  # one retry
        assert leader.roles.committed == [("t", 0, [st.leader], stat.version + 1)]
        assert (await state(nodes[0], "t", 0)).isr == (st.leader,)
        nursery.cancel_scope.cancel()


async def test_topic_deletion_stops_every_replica(tmp_path: Path) -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        nodes[0].admin.create_topics([NewTopic("t", 2, 2)], now_ms=0)
        assert await nodes[0].admin.wait_settled(["t"], 5) == {}
        await settle(nodes)
        nodes[1].admin.delete_topic("t")
        assert await nodes[1].admin.wait_settled(["t"], 5) == {}
        await settle(nodes)
        for n in nodes:
            assert n.member.topics.get("t") is None
            assert n.roles.roles == {}
        assert sum(len(n.roles.stopped) for n in nodes) == 4
        assert await nodes[0].coord.exists(zl.topic_path("t")) is None
        nursery.cancel_scope.cancel()


async def test_preferred_leader_election_after_the_preferred_replica_returns(
    tmp_path: Path,
) -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        # The preferred replica is not the controller (a bounced controller is not noticed
        # by its successor, as in Kafka).
        victim = next(n for n in nodes if not n.member.is_controller)
        head = victim.member.node_id
        others = [n.member.node_id for n in nodes if n is not victim]
        nodes[0].admin.create_topics([NewTopic("t", assignments=[(0, [head, *others])])], now_ms=0)
        assert await nodes[0].admin.wait_settled(["t"], 5) == {}
        await settle(nodes)
        assert (await state(nodes[0], "t", 0)).leader == head
        server.expire_session(victim.coord.session_id)
        await settle(nodes)
        after = await state(nodes[0], "t", 0)
        assert after.leader != head and head not in after.isr
        admin = nodes[0].admin
        result = await admin.elect_leaders([("t", 0)], preferred=True, timeout_s=1)
        assert result == {("t", 0): (80, result[("t", 0)][1])}  # PREFERRED_LEADER_NOT_AVAILABLE
        # The returning replica catches up: the leader adds it back to the ISR.
        leader = next(n for n in nodes if n.member.node_id == after.leader)
        _data, stat = await leader.coord.get(zl.state_path("t", 0))
        leader.member.propose_isr(
            "t",
            0,
            leader_epoch=after.leader_epoch,
            partition_epoch=stat.version,
            isr=[*after.isr, head],
        )
        await settle(nodes)
        result = await admin.elect_leaders([("t", 0)], preferred=True, timeout_s=5)
        assert result == {("t", 0): (0, None)}
        final = await state(nodes[0], "t", 0)
        assert final.leader == head and final.leader_epoch == after.leader_epoch + 1
        assert victim.roles.roles[("t", 0)] == ("leader", head, final.leader_epoch)
        assert await admin.elect_leaders([("t", 0)], preferred=True, timeout_s=1) == {
            ("t", 0): (84, "Leader election not needed for topic partition.")
        }
        nursery.cancel_scope.cancel()


async def test_unclean_leader_election_on_request_elects_a_live_out_of_sync_replica(
    tmp_path: Path,
) -> None:
    """ElectLeaders UNCLEAN (KIP-460): a partition without a leader whose ISR is all dead gets
    the first live replica as leader (ISR = it alone, recovering), although the topic does not
    allow unclean elections by itself; a led partition answers ELECTION_NOT_NEEDED, one with
    no live replica ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        controller = next(n for n in nodes if n.member.is_controller)
        x, y = (n for n in nodes if n is not controller)
        xid, yid = x.member.node_id, y.member.node_id
        admin = controller.admin
        admin.create_topics(
            [NewTopic("t", assignments=[(0, [xid, yid])]), NewTopic("u", assignments=[(0, [xid])])],
            now_ms=0,
        )
        assert await admin.wait_settled(["t", "u"], 5) == {}
        await settle(nodes)
        assert await admin.elect_leaders([("t", 0)], preferred=False, timeout_s=1) == {
            ("t", 0): (84, "Leader election not needed for topic partition.")
        }
        led = await state(controller, "t", 0)
        _data, stat = await x.coord.get(zl.state_path("t", 0))
        x.member.propose_isr(
            "t", 0, leader_epoch=led.leader_epoch, partition_epoch=stat.version, isr=[xid]
        )
        await settle(nodes)
        x.scope.cancel()  # the only in-sync replica is gone for good
        await settle(nodes)
        offline = await state(controller, "t", 0)
        assert (offline.leader, offline.isr) == (-1, (xid,))

        result = await admin.elect_leaders([("t", 0), ("u", 0)], preferred=False, timeout_s=5)
        assert result == {
            ("t", 0): (0, None),
            ("u", 0): (83, "No eligible leader for u-0"),
        }
        elected = await state(controller, "t", 0)
        assert (elected.leader, elected.isr) == (yid, (yid,))
        assert elected.leader_epoch == offline.leader_epoch + 1 and elected.recovering
        assert y.roles.roles[("t", 0)] == ("leader", yid, elected.leader_epoch)
        assert not await controller.coord.exists(zl.UNCLEAN_LEADER_ELECTION)
        nursery.cancel_scope.cancel()


async def test_reassignment_moves_replicas_once_the_new_ones_are_in_sync(tmp_path: Path) -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        admin = nodes[0].admin
        admin.create_topics([NewTopic("t", assignments=[(0, [1, 2])])], now_ms=0)
        assert await admin.wait_settled(["t"], 5) == {}
        await settle(nodes)
        assert (await state(nodes[0], "t", 0)).leader == 1
        assert ("t", 0) not in nodes[2].roles.roles

        result = await admin.alter_reassignments([("t", 0, [3, 2])], allow_rf_change=False)
        assert result == {("t", 0): (0, None)}
        await settle(nodes)
        raw, _ = await nodes[0].coord.get(zl.topic_path("t"))
        doc = json.loads(raw)
        assert doc["partitions"]["0"] == [3, 2, 1]
        assert doc["adding_replicas"] == {"0": [3]} and doc["removing_replicas"] == {"0": [1]}
        assert admin.reassignments() == {("t", 0): ([3, 2, 1], [3], [1])}
        # The new replica follows the leader; nothing completes until it is in sync.
        assert nodes[2].roles.roles[("t", 0)][0] == "follower"
        assert (await state(nodes[0], "t", 0)).leader == 1
        # A different replica count is refused while allow_replication_factor_change is false.
        refused = await admin.alter_reassignments([("t", 0, [3])], allow_rf_change=False)
        assert refused[("t", 0)][0] == 38

        # Broker 3 catches up: the leader adds it to the ISR; the controller completes.
        st = await state(nodes[0], "t", 0)
        _data, stat = await nodes[0].coord.get(zl.state_path("t", 0))
        nodes[0].member.propose_isr(
            "t", 0, leader_epoch=st.leader_epoch, partition_epoch=stat.version, isr=[1, 2, 3]
        )
        await settle(nodes)
        raw, _ = await nodes[0].coord.get(zl.topic_path("t"))
        doc = json.loads(raw)
        assert doc["partitions"]["0"] == [3, 2]
        assert doc["adding_replicas"] == {} and doc["removing_replicas"] == {}
        final = await state(nodes[0], "t", 0)
        assert final.leader in (2, 3) and sorted(final.isr) == [2, 3]
        assert final.leader_epoch == st.leader_epoch + 1
        assert ("t", 0) in nodes[0].roles.stopped  # broker 1's replica is deleted
        assert admin.reassignments() == {}
        cancel = await admin.alter_reassignments([("t", 0, None)], allow_rf_change=True)
        assert cancel[("t", 0)][0] == 85  # NO_REASSIGNMENT_IN_PROGRESS
        nursery.cancel_scope.cancel()


async def test_a_reassignment_bumps_the_leader_epoch_so_the_leader_takes_the_new_replicas(
    tmp_path: Path,
) -> None:
    """Kafka's controller starts a reassignment by bumping the leader epoch (its step A3,
    LeaderAndIsr to every replica of ORS + TRS): a leader applies a new replica set only with a
    new epoch, so without it the leader refuses the new replica's fetches and the reassignment
    never completes."""
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        admin = nodes[0].admin
        admin.create_topics([NewTopic("t", assignments=[(0, [1, 2])])], now_ms=0)
        assert await admin.wait_settled(["t"], 5) == {}
        await settle(nodes)
        before = await state(nodes[0], "t", 0)
        assert nodes[0].roles.replica_sets[("t", 0)] == [1, 2]

        assert await admin.alter_reassignments([("t", 0, [3, 2])], allow_rf_change=False) == {
            ("t", 0): (0, None)
        }
        await settle(nodes)
        started = await state(nodes[0], "t", 0)
        assert (started.leader, started.isr) == (before.leader, before.isr)
        assert started.leader_epoch == before.leader_epoch + 1
        assert nodes[0].roles.roles[("t", 0)] == ("leader", 1, started.leader_epoch)
        assert nodes[0].roles.replica_sets[("t", 0)] == [3, 2, 1]
        assert nodes[2].roles.roles[("t", 0)] == ("follower", 1, started.leader_epoch)
        # once per reassignment: another pass (a broker's ISR write) bumps nothing more
        _data, stat = await nodes[0].coord.get(zl.state_path("t", 0))
        nodes[0].member.propose_isr(
            "t", 0, leader_epoch=started.leader_epoch, partition_epoch=stat.version, isr=[1]
        )
        await settle(nodes)
        assert (await state(nodes[0], "t", 0)).leader_epoch == started.leader_epoch
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("first", ["state", "assignment"])
async def test_a_completed_reassignment_reaches_every_broker_with_its_new_replica_set(
    tmp_path: Path, first: str
) -> None:
    """The controller completes a reassignment with one multi: the assignment shrunk to the
    target and the state (the leaving replica out of the ISR, a target replica leading,
    leader epoch + 1) share its zxid. A broker that gets one of them first (the other
    watch's re-read comes back later: held here on purpose) mirrors and applies it only
    with the other read after it: the new leader never leads the new epoch with the leaving
    replica among its replicas (it took it back into its ISR when it fetched:
    compat/kafka-tools/FINDINGS.md, `kafka-reassign-partitions.move`), the leaving replica
    never follows it, and no broker's Metadata shows the new replicas with the old ISR.
    Before: the state was written first; with it first, both applied it with the old
    replica set [3, 2, 1]; with the assignment first, Metadata showed replicas [3, 2] and
    ISR [1, 2, 3]."""
    held = zl.state_path("t", 0) if first == "assignment" else zl.topic_path("t")
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        controller = await start_node(nursery, server, 2, tmp_path)  # elected: it is first
        await settle([controller])
        old = await start_node(nursery, server, 1, tmp_path, HoldingCoordination(server))
        new = await start_node(nursery, server, 3, tmp_path, HoldingCoordination(server))
        nodes = [controller, old, new]
        await settle(nodes)
        assert controller.member.is_controller
        admin = controller.admin
        admin.create_topics([NewTopic("t", assignments=[(0, [1, 2])])], now_ms=0)
        assert await admin.wait_settled(["t"], 5) == {}
        await settle(nodes)
        assert await admin.alter_reassignments([("t", 0, [3, 2])], allow_rf_change=False) == {
            ("t", 0): (0, None)
        }
        await settle(nodes)
        started = await state(controller, "t", 0)
        assert new.roles.roles[("t", 0)] == ("follower", 1, started.leader_epoch)

        # Broker 3 caught up: the leader (1) adds it to the ISR, which completes the
        # reassignment. Brokers 1 and 3 get one change before the other.
        for node in (old, new):
            cast(HoldingCoordination, node.coord).holding.add(held)
        _data, stat = await controller.coord.get(zl.state_path("t", 0))
        old.member.propose_isr(
            "t", 0, leader_epoch=started.leader_epoch, partition_epoch=stat.version, isr=[1, 2, 3]
        )
        await settle(nodes)
        final = await state(controller, "t", 0)
        epoch = started.leader_epoch + 1
        assert (final.leader, final.isr, final.leader_epoch) == (3, (2, 3), epoch)
        assignment_stat = (await controller.coord.get(zl.topic_path("t")))[1]
        state_stat = (await controller.coord.get(zl.state_path("t", 0)))[1]
        assert assignment_stat.mzxid == state_stat.mzxid  # one multi
        assert cast(HoldingCoordination, new.coord).held  # the watch delivery waits

        def at_epoch(node: Node) -> list[tuple[str, int, list[int]]]:
            return [
                (role, leader, replicas)
                for _t, _i, role, leader, e, replicas in node.roles.calls
                if e == epoch
            ]

        def check() -> None:
            assert at_epoch(new) and all(c == ("leader", 3, [3, 2]) for c in at_epoch(new))
            assert at_epoch(old) == [] and ("t", 0) in old.roles.stopped
            assert all(c[1:] == (3, [3, 2]) for c in at_epoch(controller))
            for node in nodes:
                view = node.member.cache.partition("t", 0)
                assert view is not None
                assert (view.leader, view.replicas, view.isr) == (3, [3, 2], [2, 3])

        check()
        for node in (old, new):
            cast(HoldingCoordination, node.coord).release()
        await settle(nodes)
        check()
        assert ("t", 0) not in old.roles.roles
        assert admin.reassignments() == {}
        nursery.cancel_scope.cancel()


async def test_topics_created_while_a_controller_pass_runs_all_get_leaders(
    tmp_path: Path,
) -> None:
    """A topic that appears while the controller handles another one is not skipped."""
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        names = [f"t{i}" for i in range(20)]
        for i, name in enumerate(names):
            nodes[i % 3].admin.create_topics([NewTopic(name, 2, 3)], now_ms=0)
            await trio.sleep(0)  # let the controller start passes in between
        for i, name in enumerate(names):
            assert await nodes[i % 3].admin.wait_settled([name], 5) == {}, name
        await settle(nodes)
        for name in names:
            for index in (0, 1):
                assert (await state(nodes[0], name, index)).leader in (1, 2, 3)
        nursery.cancel_scope.cancel()


async def test_controller_elects_new_leaders_before_it_shrinks_isrs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A broker dies: the partitions it led get their new leaders written before the ISR-only
    changes of the partitions it followed (Kafka: OnlinePartition before OfflineReplica), so
    they are served again without waiting for the rest of the pass."""
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        controller = next(n for n in nodes if n.member.is_controller)
        victim = next(n for n in nodes if n is not controller)
        dead = victim.member.node_id
        keep = controller.member.node_id
        other = next(n.member.node_id for n in nodes if n not in (controller, victim))
        admin = controller.admin
        # "a" sorts first and has many partitions the victim only follows; "z" it leads.
        admin.create_topics(
            [
                NewTopic("a", assignments=[(i, [keep, dead, other]) for i in range(12)]),
                NewTopic("z", assignments=[(0, [dead, keep, other])]),
            ],
            now_ms=0,
        )
        assert await admin.wait_settled(["a", "z"], 5) == {}
        await settle(nodes)
        assert (await state(controller, "z", 0)).leader == dead
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="wirebroker.controller"):
            victim.scope.cancel()  # the broker is gone: its session and registration too
            await settle(nodes)
        written = [
            r.getMessage().split(":")[0]
            for r in caplog.records
            if r.name == "wirebroker.controller" and ": leader " in r.getMessage()
        ]
        assert written[0] == "z-0", written
        assert sorted(written[1:]) == sorted(f"a-{i}" for i in range(12))
        assert (await state(controller, "z", 0)).leader == keep
        for i in range(12):
            assert dead not in (await state(controller, "a", i)).isr
        nursery.cancel_scope.cancel()


def _ghost_registration(node_id: int) -> bytes:
    return zl.encode_broker(zl.BrokerRegistration(node_id, "127.0.0.1", 9000 + node_id, None, 0))


async def _ghost(nursery: trio.Nursery, server: MemoryZooKeeper, node_id: int) -> int:
    """A session holding /brokers/ids/<node_id>, as a killed broker's does until it expires."""
    ghost = MemoryCoordination(server)
    await nursery.start(ghost.run)
    await ghost.ensure_path(zl.BROKER_IDS)
    await ghost.create(zl.broker_path(node_id), _ghost_registration(node_id), ephemeral=True)
    return ghost.session_id


async def test_restart_waits_for_the_killed_processs_session_to_expire(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """kill -9 then an immediate restart: the old session still holds /brokers/ids/1; the new
    process waits (one log line) and registers as soon as ZooKeeper expires it."""
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        old_session = await _ghost(nursery, server, 1)
        started: list[Node] = []

        async def restart() -> None:
            started.append(await start_node(nursery, server, 1, tmp_path))

        with caplog.at_level(logging.INFO, logger="wirebroker.cluster"):
            nursery.start_soon(restart)
            await trio.testing.wait_all_tasks_blocked()
            assert started == []  # not up: waiting for the old registration to go
            server.expire_session(old_session)
            with trio.fail_after(5):
                while not started:
                    await trio.sleep(0)
        waits = [r.getMessage() for r in caplog.records if "previous session" in r.getMessage()]
        assert len(waits) == 1, waits
        assert "waiting up to 9.0 s for the previous session of broker 1 to expire" in waits[0]
        node = started[0]
        stat = await node.coord.exists(zl.broker_path(1))
        assert stat is not None and stat.ephemeral_owner == node.coord.session_id
        assert node.member.broker_epoch == stat.czxid
        nursery.cancel_scope.cancel()


async def test_an_id_held_by_another_live_broker_fails_after_the_wait(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Still registered by another session after the session timeout + margin: another broker
    runs with this id; the member fails with BrokerIdTakenError (the broker exits)."""
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        await _ghost(nursery, server, 2)
        coord = MemoryCoordination(server)
        await nursery.start(coord.run)
        member = ClusterMember(
            coord,
            node_id=2,
            rack=None,
            topics=TopicStore.open(tmp_path / "b2"),
            replicas=FakeRoles(2),
            address=lambda: ("127.0.0.1", 9002),
            clock=lambda: 0,
            controller_factory=ZkController,
            config=BrokerConfig({"node.id": "2", "zookeeper.session.timeout.ms": "4000"}),
        )
        assert member.registration_wait_s == 4 + REGISTRATION_MARGIN_S
        began = trio.current_time()
        with (
            caplog.at_level(logging.INFO, logger="wirebroker.cluster"),
            pytest.raises(BaseExceptionGroup) as info,
        ):
            await member.run()
        assert info.group_contains(BrokerIdTakenError, depth=None)
        assert trio.current_time() - began == pytest.approx(member.registration_wait_s)
        assert len([r for r in caplog.records if "previous session" in r.getMessage()]) == 1
        assert not member.is_controller
        nursery.cancel_scope.cancel()
