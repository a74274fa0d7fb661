"""The cluster member's parts on their own, without a running member: the one event queue
(in order, a failed event logged and the next ones applied, `changed` woken after each), the
role changes (`PartitionRoles.apply` of a mirrored state), the metadata cache's rules (an
older state read never over a newer one; which leaderships a controlled shutdown can move).
The member as a whole over the in-memory ZooKeeper: test_zk_member."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio
from test_zk_member import FakeRoles

from wirebroker.cluster.zk_events import EventQueue
from wirebroker.cluster.zk_metadata_cache import TopicMirror, ZkMetadataCache, mirrored_info
from wirebroker.cluster.zk_registration import Registration
from wirebroker.cluster.zk_roles import PartitionRoles
from wirebroker.coordination.api import CoordinationError, Stat
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.partition_state import PartitionState, TopicAssignment
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.metadata.view import BrokerNode

ME = 1


async def test_events_apply_in_order_and_a_failed_one_does_not_stop_the_queue(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = EventQueue()
    seen: list[str] = []

    async def record(what: str) -> None:
        if what == "fail":
            raise CoordinationError("connection lost")
        seen.append(what)

    callback = queue.callback(record)
    for what in ["a", "fail", "b", "c"]:
        callback(what)
    first = queue.changed
    with caplog.at_level(logging.WARNING, logger="wirebroker.cluster"):
        await queue.apply_ready()
    assert seen == ["a", "b", "c"]
    assert first.is_set() and not queue.changed.is_set()  # woken, then replaced
    assert [r.getMessage() for r in caplog.records] == [
        "cluster event failed (CoordinationError: connection lost); "
        "will be retried on the next change"
    ]


async def test_apply_forever_wakes_a_waiter_after_each_event() -> None:
    queue = EventQueue()
    done: list[int] = []

    async def event() -> None:
        done.append(len(done))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.apply_forever)
        for expected in (1, 2):
            changed = queue.changed
            queue.put(event)
            await changed.wait()
            assert len(done) == expected
        nursery.cancel_scope.cancel()


def _state(leader: int, epoch: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState(leader, epoch, isr, 1)


def _setup(
    tmp_path: Path, replicas: tuple[int, ...], state: PartitionState | None
) -> tuple[PartitionRoles, FakeRoles, ZkMetadataCache, Registration]:
    store = TopicStore.open(tmp_path)
    cache = ZkMetadataCache(store)
    assignment = TopicAssignment({0: replicas})
    mirror = TopicMirror(assignment)
    if state is not None:
        mirror.set_state(0, state, Stat(version=3, czxid=1, mzxid=5))
    cache.topics["t"] = mirror
    store.put(mirrored_info("t", assignment, {}, None))
    fake = FakeRoles(ME)
    registration = Registration(
        MemoryCoordination(MemoryZooKeeper()),
        node_id=ME,
        rack=None,
        address=lambda: ("127.0.0.1", 9092),
        clock=lambda: 0,
        wait_s=1.0,
    )
    registration.registered = True
    roles = PartitionRoles(
        node_id=ME,
        cache=cache,
        topics=store,
        replicas=fake,
        clock=lambda: 0,
        registration=registration,
        store_assignments=True,
    )
    return roles, fake, cache, registration


def test_a_state_naming_this_broker_makes_it_leader_else_a_follower(tmp_path: Path) -> None:
    roles, fake, cache, _ = _setup(tmp_path, (ME, 2), _state(ME, 4, (ME, 2)))
    roles.apply("t", 0)
    assert fake.calls == [("t", 0, "leader", ME, 4, [ME, 2])]
    assert roles.hosted == {("t", 0)}
    cache.topics["t"].set_state(0, _state(2, 5, (ME, 2)), Stat(version=4, czxid=1, mzxid=6))
    roles.apply("t", 0)
    assert fake.calls[-1] == ("t", 0, "follower", 2, 5, [ME, 2])


def test_no_role_is_taken_while_unregistered(tmp_path: Path) -> None:
    roles, fake, _, registration = _setup(tmp_path, (ME, 2), _state(ME, 4, (ME, 2)))
    registration.registered = False
    roles.apply("t", 0)
    assert fake.calls == [] and roles.hosted == {("t", 0)}  # the replica exists, idle


def test_shutting_down_out_of_the_isr_stops_following(tmp_path: Path) -> None:
    roles, fake, _, _ = _setup(tmp_path, (2, ME), _state(2, 4, (2,)))
    roles.shutting_down = True
    roles.apply("t", 0)
    assert (fake.calls, fake.stopped) == ([], [("t", 0)])


def test_a_replica_moved_away_is_deleted_and_leaderships_dropped_on_session_loss(
    tmp_path: Path,
) -> None:
    roles, fake, cache, _ = _setup(tmp_path, (ME, 2), _state(ME, 4, (ME, 2)))
    roles.apply("t", 0)
    roles.drop_leaderships()
    assert fake.stopped == [("t", 0)]
    cache.topics["t"].assignment = TopicAssignment({0: (2, 3)})
    roles.apply("t", 0)
    assert fake.stopped == [("t", 0), ("t", 0)] and roles.hosted == set()


def test_an_older_state_read_is_not_mirrored_over_a_newer_one() -> None:
    mirror = TopicMirror(TopicAssignment({0: (1, 2)}))
    assert mirror.set_state(0, _state(1, 5, (1, 2)), Stat(version=4, czxid=1, mzxid=20))
    assert not mirror.set_state(0, _state(2, 4, (2,)), Stat(version=3, czxid=1, mzxid=10))
    assert mirror.states[0] == (_state(1, 5, (1, 2)), 4)


def test_movable_leaderships_need_another_live_in_sync_replica(tmp_path: Path) -> None:
    cache = ZkMetadataCache(TopicStore.open(tmp_path))
    cache.brokers = {b: BrokerNode(b, "h", 9000 + b, None) for b in (1, 2)}
    mirror = TopicMirror(TopicAssignment({0: (1, 2), 1: (1, 3), 2: (1,), 3: (2, 1)}))
    for index, state in enumerate(
        [_state(1, 1, (1, 2)), _state(1, 1, (1, 3)), _state(1, 1, (1,)), _state(2, 1, (2, 1))]
    ):
        mirror.set_state(index, state, Stat(version=0, czxid=1, mzxid=1))
    cache.topics["t"] = mirror
    # 1: its other in-sync replica (3) is not live; 2: alone; 3: led by broker 2
    assert cache.movable_leaderships(1) == [("t", 0)]


def test_partition_views_follow_every_change_of_the_mirror(tmp_path: Path) -> None:
    """The views of a topic's partitions are memoized (Metadata asks for all of them often);
    each kind of change makes the next read see it."""
    cache = ZkMetadataCache(TopicStore.open(tmp_path))
    cache.brokers = {b: BrokerNode(b, "h", 9000 + b, None) for b in (1, 2)}
    mirror = TopicMirror(TopicAssignment({0: (1, 2), 1: (2, 1)}))
    mirror.set_state(0, _state(1, 1, (1, 2)), Stat(version=0, czxid=1, mzxid=1))
    cache.topics["t"] = mirror
    first = cache.partitions("t")
    assert [(v.leader, v.error_code) for v in first] == [(1, 0), (-1, 5)]
    assert cache.partitions("t") == first

    mirror.set_state(1, _state(2, 1, (2, 1)), Stat(version=0, czxid=1, mzxid=2))  # a state
    assert [v.leader for v in cache.partitions("t")] == [1, 2]

    del cache.brokers[2]  # a broker leaves
    views = cache.partitions("t")
    assert [(v.leader, v.error_code, v.offline) for v in views] == [(1, 0, [2]), (-1, 5, [2])]

    mirror.assignment = TopicAssignment({0: (1,), 1: (2, 1), 2: (1,)})  # a new assignment
    assert [v.replicas for v in cache.partitions("t")] == [[1], [2, 1], [1]]

    mirror.drop_state(0)
    assert cache.partitions("t")[0].error_code == 5

    cache.topics["t"] = TopicMirror(TopicAssignment({0: (2,)}))  # the topic made anew
    assert [v.replicas for v in cache.partitions("t")] == [[2]]
    del cache.topics["t"]
    assert cache.partitions("t") == []
