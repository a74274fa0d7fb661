"""The controller reads ZooKeeper once when it starts, then only what changed (Kafka's
ZooKeeper-mode controller keeps its ControllerContext in memory): the reads of each pass,
counted through the in-memory ZooKeeper's client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio
import trio.testing
from test_controller_runtime import Member, settle, setup, state

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller import ZkController
from wirebroker.cluster.controller_reads import PARALLEL
from wirebroker.coordination.api import Create, Op, SetData, Stat
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.partition_state import PartitionState, TopicAssignment

PARTITIONS = 6


class Reads:
    """The paths a client reads (get, exists, get_children), in order."""

    def __init__(self, coord: MemoryCoordination) -> None:
        self.paths: list[str] = []
        for name in ("get", "exists", "get_children"):
            real = getattr(coord, name)

            async def recorded(path: str, *args: object, _real: object = real) -> object:
                self.paths.append(path)
                return await _real(path, *args)  # type: ignore[operator]

            setattr(coord, name, recorded)

    def take(self) -> list[str]:
        out, self.paths = self.paths, []
        return out


def states_read(paths: list[str]) -> list[str]:
    return [p for p in paths if p.endswith("/state")]


async def isr_change(coord: MemoryCoordination, index: int, isr: tuple[int, ...]) -> None:
    """What a leader's `IsrWriter` writes: the state at its version and, in the same multi,
    the ISR change notification."""
    data, stat = await coord.get(zl.state_path("t", index))
    old = zl.decode_partition_state("t", index, data)
    new = PartitionState(old.leader, old.leader_epoch, isr, old.controller_epoch)
    [written, _created] = await coord.multi(
        [
            SetData(zl.state_path("t", index), zl.encode_partition_state(new), stat.version),
            Create(zl.ISR_CHANGE_PREFIX, zl.encode_preferred_election([("t", index)]), True),
        ]
    )
    assert isinstance(written, Stat)


@dataclass
class Cluster:
    """Brokers 1, 2, 3 (1 alone in its session: it can die), topic "t", and broker 2's
    controller, whose reads are recorded from before it started."""

    server: MemoryZooKeeper
    admin: MemoryCoordination
    one: MemoryCoordination
    controller_coord: MemoryCoordination
    controller: ZkController
    reads: Reads


@asynccontextmanager
async def controller_of(replicas: dict[int, tuple[int, ...]]) -> AsyncIterator[Cluster]:
    """A `Cluster` whose topic "t" has `replicas`, its controller loaded."""
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        admin, brokers = MemoryCoordination(server), MemoryCoordination(server)
        controller_coord, one = MemoryCoordination(server), MemoryCoordination(server)
        for coord in (admin, brokers, controller_coord, one):
            await nursery.start(coord.run)
        version = await setup(admin, [])
        await brokers.create(zl.broker_path(2), b"{}", ephemeral=True)
        await brokers.create(zl.broker_path(3), b"{}", ephemeral=True)
        await one.create(zl.broker_path(1), b"{}", ephemeral=True)
        await admin.create(zl.topic_path("t"), zl.encode_topic(TopicAssignment(replicas)))
        reads = Reads(controller_coord)
        controller = ZkController(Member(controller_coord), 2, version)
        nursery.start_soon(controller.run)
        await settle()
        yield Cluster(server, admin, one, controller_coord, controller, reads)
        nursery.cancel_scope.cancel()


async def test_after_the_first_load_a_pass_reads_only_what_changed() -> None:
    replicas = {i: (1, 2, 3) for i in range(PARTITIONS)}
    async with controller_of(replicas) as c:
        # Becoming controller: one load of everything (the states created here were written
        # by the controller itself: recorded, not read back).
        first = c.reads.take()
        assert zl.topic_path("t") in first and zl.BROKER_TOPICS in first
        assert c.controller.context.states[("t", 0)].state == PartitionState(1, 0, (1, 2, 3), 2)

        # A leader's ISR change: the pass reads that notification and that partition only.
        await isr_change(c.admin, 4, (1, 2))
        await settle()
        paths = c.reads.take()
        assert states_read(paths) == [zl.state_path("t", 4)], paths
        assert [p for p in paths if not p.endswith("/state")] == [
            p for p in paths if p.startswith(zl.ISR_CHANGE_PREFIX)
        ], paths
        assert len([p for p in paths if p.startswith(zl.ISR_CHANGE_PREFIX)]) == 1
        assert await c.admin.get_children(zl.ISR_CHANGE_NOTIFICATION) == []  # deleted once read
        assert c.controller.context.states[("t", 4)].state == PartitionState(1, 0, (1, 2), 2)

        # A broker failure: /brokers/ids re-read, no topic and no state read; the elections
        # use the ISR the notification brought (t-4: 3 is out of it).
        c.server.expire_session(c.one.session_id)
        await settle()
        paths = c.reads.take()
        assert states_read(paths) == [] and zl.topic_path("t") not in paths, paths
        assert zl.BROKER_IDS in paths
        assert await state(c.admin, "t", 4) == PartitionState(2, 1, (2,), 2)
        for index in (0, 1, 2, 3, 5):
            assert await state(c.admin, "t", index) == PartitionState(2, 1, (2, 3), 2)


async def test_a_write_refused_by_its_version_reads_that_partition_again() -> None:
    """A state changed behind the controller's back (no notification): its conditional write
    is refused, the controller reads only that partition again and decides again."""
    replicas = {i: (1, 2, 3) for i in range(PARTITIONS)}
    async with controller_of(replicas) as c:
        c.reads.take()
        _data, stat = await c.admin.get(zl.state_path("t", 3))
        behind = PartitionState(1, 0, (1, 3), 2)  # 2 left the ISR; nobody told the controller
        await c.admin.set(zl.state_path("t", 3), zl.encode_partition_state(behind), stat.version)
        c.server.expire_session(c.one.session_id)
        await settle()
        paths = c.reads.take()
        assert states_read(paths) == [zl.state_path("t", 3)], paths
        assert await state(c.admin, "t", 3) == PartitionState(3, 1, (3,), 2)  # from the re-read
        assert c.controller.context.states[("t", 3)].state == PartitionState(3, 1, (3,), 2)
        assert await state(c.admin, "t", 0) == PartitionState(2, 1, (2, 3), 2)


async def test_a_broker_failure_does_not_wait_behind_isr_change_notifications() -> None:
    """Many ISR change notifications and a broker failure queued together: the controller
    reads the notifications PARALLEL at a time and, between two such steps, yields to the
    failure (its elections are written before the rest of the notifications is read), then
    reads the rest."""
    partitions = 3 * PARALLEL
    replicas = {i: (1, 2, 3) for i in range(partitions)}
    async with controller_of(replicas) as c:
        order = Writes(c.controller_coord)

        # Leader 1 drops 3 from every ISR (one multi: the notifications all at once), and
        # broker 1 dies before the controller ran.
        ops: list[Op] = []
        for index in range(partitions):
            _data, stat = await c.admin.get(zl.state_path("t", index))
            shrunk = zl.encode_partition_state(PartitionState(1, 0, (1, 2), 2))
            ops.append(SetData(zl.state_path("t", index), shrunk, stat.version))
            notification = zl.encode_preferred_election([("t", index)])
            ops.append(Create(zl.ISR_CHANGE_PREFIX, notification, sequential=True))
        await c.admin.multi(ops)
        c.server.expire_session(c.one.session_id)
        await settle()

        deletes = [i for i, (kind, _p) in enumerate(order.ops) if kind == "delete"]
        elections = [i for i, (kind, _p) in enumerate(order.ops) if kind == "multi"]
        assert len(deletes) == partitions and elections, order.ops
        assert elections[0] < deletes[PARALLEL], order.ops  # after one step of notifications
        assert await c.admin.get_children(zl.ISR_CHANGE_NOTIFICATION) == []
        for index in range(partitions):
            assert await state(c.admin, "t", index) == PartitionState(2, 1, (2,), 2)


async def test_new_leaders_are_written_before_isr_shrinks_even_when_one_is_refused() -> None:
    """A broker fails while the controller's copy of one of its partitions is stale (an ISR
    change it has not read): that election is refused, read again and written again before
    any ISR-only change of the partitions the broker only followed."""
    replicas = {i: (1, 2, 3) if i % 2 == 0 else (2, 1, 3) for i in range(PARTITIONS)}
    async with controller_of(replicas) as c:
        data, stat = await c.admin.get(zl.state_path("t", 0))
        await c.admin.set(zl.state_path("t", 0), data, stat.version)  # unseen by the controller
        order = Writes(c.controller_coord)
        c.server.expire_session(c.one.session_id)
        await settle()

        written = [path for kind, path in order.ops if kind == "multi"]
        led = [zl.state_path("t", i) for i in range(0, PARTITIONS, 2)]
        followed = [zl.state_path("t", i) for i in range(1, PARTITIONS, 2)]
        assert written.count(led[0]) == 2, written  # refused once, then written
        last_election = max(i for i, path in enumerate(written) if path in led)
        assert last_election < min(map(written.index, followed)), written
        for index in range(PARTITIONS):
            after = await state(c.admin, "t", index)
            assert after.leader == 2 and after.isr == (2, 3), (index, after)


class Writes:
    """The writes a client makes (multi: its first path; delete), in order."""

    def __init__(self, coord: MemoryCoordination) -> None:
        self.ops: list[tuple[str, str]] = []
        real_multi, real_delete = coord.multi, coord.delete

        async def multi(ops: list[Op]) -> object:
            self.ops.append(("multi", ops[-1].path))
            return await real_multi(ops)

        async def delete(path: str, *args: object) -> object:
            self.ops.append(("delete", path))
            return await real_delete(path, *args)  # type: ignore[arg-type]

        coord.multi = multi  # type: ignore[method-assign]
        coord.delete = delete  # type: ignore[method-assign]
