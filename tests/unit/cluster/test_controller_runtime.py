"""The controller's runtime (wirebroker.cluster.controller.ZkController) on an in-memory
ZooKeeper, driven through a `ControllerMember` of its own (no ClusterMember): it reads into
its context, writes what `plan` decides, and stops when its controller epoch moved on."""

from __future__ import annotations

import trio
import trio.testing

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller import ZkController
from wirebroker.config import BrokerConfig
from wirebroker.coordination.api import Coordination
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.partition_state import PartitionState, TopicAssignment


class Member:
    """The least a controller needs of its broker (`ControllerMember`)."""

    def __init__(self, coord: Coordination) -> None:
        self.coord = coord
        self.config: BrokerConfig | None = None
        self.changed = trio.Event()


async def settle() -> None:
    for _ in range(20):
        await trio.testing.wait_all_tasks_blocked()


async def setup(coord: Coordination, brokers: list[int]) -> int:
    """The layout a controller starts on; returns the /controller_epoch version."""
    for path in zl.PERSISTENT_PATHS:
        await coord.ensure_path(path)
    await coord.create(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(1))
    for broker in brokers:
        await coord.create(zl.broker_path(broker), b"{}", ephemeral=True)
    _data, stat = await coord.get(zl.CONTROLLER_EPOCH)
    return stat.version


async def state(coord: Coordination, topic: str, index: int) -> PartitionState:
    data, _stat = await coord.get(zl.state_path(topic, index))
    return zl.decode_partition_state(topic, index, data)


async def test_broker_failure_and_return_write_the_planned_states() -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        admin, brokers = MemoryCoordination(server), MemoryCoordination(server)
        await nursery.start(admin.run)
        await nursery.start(brokers.run)
        version = await setup(admin, [])
        for broker in (2, 3):
            await brokers.create(zl.broker_path(broker), b"{}", ephemeral=True)
        one = MemoryCoordination(server)  # broker 1 in a session of its own: it can die
        await nursery.start(one.run)
        await one.create(zl.broker_path(1), b"{}", ephemeral=True)
        controller = ZkController(Member(admin), 2, version)
        nursery.start_soon(controller.run)
        await settle()
        assignment = TopicAssignment({0: (1, 2, 3), 1: (2, 1, 3)})
        await admin.create(zl.topic_path("t"), zl.encode_topic(assignment))
        await settle()
        assert await state(admin, "t", 0) == PartitionState(1, 0, (1, 2, 3), 2)
        assert await state(admin, "t", 1) == PartitionState(2, 0, (2, 1, 3), 2)

        server.expire_session(one.session_id)  # broker 1 dies
        await settle()
        assert await state(admin, "t", 0) == PartitionState(2, 1, (2, 3), 2)
        assert await state(admin, "t", 1) == PartitionState(2, 1, (2, 3), 2)
        assert controller.context.live == {2, 3}
        nursery.cancel_scope.cancel()


async def test_a_controller_whose_epoch_moved_on_stops_and_writes_nothing() -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        coord = MemoryCoordination(server)
        await nursery.start(coord.run)
        version = await setup(coord, [1])
        controller = ZkController(Member(coord), 2, version)
        done = trio.Event()

        async def run() -> None:
            await controller.run()  # returns (no exception: the member just forgets it)
            done.set()

        nursery.start_soon(run)
        await settle()
        # another controller won: /controller_epoch moved on
        await coord.set(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(3), version)
        await coord.create(zl.topic_path("t"), zl.encode_topic(TopicAssignment({0: (1,)})))
        with trio.fail_after(5):
            await done.wait()
        assert await coord.exists(zl.partitions_path("t")) is None
        nursery.cancel_scope.cancel()
