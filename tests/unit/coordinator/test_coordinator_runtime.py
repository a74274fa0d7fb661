"""The shared coordinator runtime (`wirebroker.coordinator.runtime`) with a recording shard over a
real ReplicaManager (one broker, no cluster): loads on leadership and unloads on resignation,
stale and failed loads, timers on an injected clock, appends and their raw errors, the internal
topic's creation, and the one append-error map."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from protocol.errors import ErrorCode as E
from protocol.records import build_batch
from tests.unit.local_metadata import Leader, LocalTopicAdmin, lead_every_partition
from wirebroker.config import BrokerConfig
from wirebroker.coordinator.errors import (
    COMMIT_APPEND_ERRORS,
    GROUP_APPEND_ERRORS,
    TXN_APPEND_ERRORS,
)
from wirebroker.coordinator.log_reader import Entry
from wirebroker.coordinator.ownership import PartitionState
from wirebroker.coordinator.runtime import Appended, CoordinatorRuntime
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.errors import ClusterError
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.partition import Partition
from wirebroker.replication.replica_manager import ReplicaManager

TOPIC = "__test_state"
PARTITIONS = 3


class Fold:
    def __init__(self, shard: Shard, partition: int) -> None:
        self.shard = shard
        self.partition = partition
        self.keys: list[bytes] = []

    def add(self, entries: Iterable[Entry]) -> None:
        self.keys.extend(e.key for e in entries if e.key is not None)
        hook = self.shard.on_chunk
        if hook is not None:
            hook(self.partition)


class Shard:
    """Records every call the runtime makes; its timers are a list of deadlines."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.deadlines: list[int] = []
        self.fired: list[int] = []
        self.on_chunk: Any = None
        self.fail_replay = False

    def begin_loading(self, partition: int) -> None:
        self.calls.append(("begin", partition))

    def new_fold(self, partition: int) -> Fold:
        return Fold(self, partition)

    def replay(self, partition: int, fold: Fold) -> list[bytes]:
        if self.fail_replay:
            raise ValueError("undecodable")
        self.calls.append(("replay", partition, list(fold.keys)))
        return fold.keys

    def complete_loading(self, partition: int, epoch: int, replayed: Any, started_ms: int) -> None:
        del started_ms
        self.calls.append(("complete", partition, epoch, list(replayed)))

    def unload(self, partitions: list[int]) -> None:
        self.calls.append(("unload", *partitions))

    def next_deadline(self) -> int | None:
        return min(self.deadlines, default=None)

    def fire_timers(self, now_ms: int) -> None:
        due = [d for d in self.deadlines if d <= now_ms]
        self.deadlines = [d for d in self.deadlines if d > now_ms]
        self.fired.extend(due)


class Node:
    def __init__(self, data: Path, clock: Any) -> None:
        self.config = BrokerConfig({"node.id": "0", "log.dirs": str(data)})
        self.topics = TopicStore.open(data)
        self.logs = LogManager([data])
        self.replicas = ReplicaManager(self.config, self.logs, self.topics, node_id=0)
        self.replicas.load(clock())
        lead_every_partition(self.replicas, clock())
        self.admin = LocalTopicAdmin(
            self.config, self.topics, self.logs, node_id=0, listener=Leader(self.replicas, clock)
        )
        self.shard = Shard()
        self.runtime = CoordinatorRuntime(
            topic=TOPIC,
            partitions=PARTITIONS,
            shard=self.shard,
            replicas=self.replicas,
            admin=self.admin,
            clock=clock,
            new_topic=lambda: NewTopic(TOPIC, PARTITIONS, 1, {"cleanup.policy": "compact"}),
            role="test coordinator",
        )

    def write(self, partition: int, *keys: bytes) -> None:
        part = self.replicas.partition(TOPIC, partition)
        assert part is not None
        batch = build_batch([(k, b"v") for k in keys], base_timestamp=trio_ms())
        self.replicas.append(part, batch, now_ms=trio_ms())


def trio_ms() -> int:
    return int(trio.current_time() * 1000)


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    n = Node(tmp_path, trio_ms)
    try:
        yield n
    finally:
        n.logs.close()


async def _nothing() -> None:
    return None


# -- loads on leadership, unloads on resignation ---------------------------------------------
async def test_a_leadership_loads_the_partition_then_a_resignation_unloads_it(
    node: Node, autojump_clock: trio.testing.MockClock
) -> None:
    rt, shard = node.runtime, node.shard
    assert rt.ensure_topic() is E.NONE
    node.write(1, b"a", b"b")
    node.write(1, b"c")
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.run, _nothing)
        assert rt.on_became_leader(1, 3)
        assert shard.calls == [("begin", 1)]
        assert rt.ownership.state(1) is PartitionState.LOADING
        await trio.testing.wait_all_tasks_blocked()
        assert shard.calls[1:] == [
            ("replay", 1, [b"a", b"b", b"c"]),
            ("complete", 1, 3, [b"a", b"b", b"c"]),
        ]
        assert rt.ownership.state(1) is PartitionState.LOADED
        reread = Fold(shard, 1)
        rt.read(1, reread)  # the synchronous read of a reload
        assert reread.keys == [b"a", b"b", b"c"]
        shard.calls.clear()
        assert not rt.on_became_leader(1, 3)  # a duplicate
        assert not rt.on_became_leader(1, 4)  # still led here (an ISR change): no reload
        assert rt.elected_epoch(1) == 3
        assert not rt.on_resigned(1, 2)  # stale
        assert shard.calls == []
        assert rt.on_resigned(1, 5)
        assert shard.calls == [("unload", 1)]
        assert rt.ownership.state(1) is PartitionState.NOT_OWNED
        assert not rt.on_resigned(1, 5)  # not owned any more
        assert not rt.on_became_leader(1, 4)  # below the epoch heard of
        assert not rt.on_became_leader(PARTITIONS, 9)  # no such partition
        assert shard.calls == [("unload", 1)]
        nursery.cancel_scope.cancel()


async def test_loads_run_one_at_a_time_in_order_and_a_stale_one_is_discarded(
    node: Node, autojump_clock: trio.testing.MockClock
) -> None:
    rt, shard = node.runtime, node.shard
    assert rt.ensure_topic() is E.NONE
    node.write(0, b"x")
    node.write(2, b"y")

    def lose_0(partition: int) -> None:
        if partition == 0 and ("unload", 0) not in shard.calls:
            rt.on_resigned(0, 8)  # leadership lost while its load reads the log

    shard.on_chunk = lose_0
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.run, _nothing)
        rt.on_became_leader(0, 7)
        rt.on_became_leader(2, 1)
        await trio.testing.wait_all_tasks_blocked()
        assert shard.calls == [
            ("begin", 0),
            ("begin", 2),
            ("unload", 0),
            ("replay", 2, [b"y"]),
            ("complete", 2, 1, [b"y"]),
        ]
        assert rt.ownership.owned() == [2]
        nursery.cancel_scope.cancel()


async def test_a_load_that_fails_unloads_the_partition_until_the_next_election(
    node: Node, autojump_clock: trio.testing.MockClock
) -> None:
    rt, shard = node.runtime, node.shard
    assert rt.ensure_topic() is E.NONE
    node.write(1, b"a")
    shard.fail_replay = True
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.run, _nothing)
        rt.on_became_leader(1, 2)
        await trio.testing.wait_all_tasks_blocked()
        assert shard.calls == [("begin", 1), ("unload", 1)]
        assert rt.ownership.state(1) is PartitionState.NOT_OWNED
        shard.fail_replay = False
        rt.on_became_leader(1, 3)
        await trio.testing.wait_all_tasks_blocked()
        assert shard.calls[-1] == ("complete", 1, 3, [b"a"])
        nursery.cancel_scope.cancel()


async def test_a_single_broker_loads_before_it_reports_started_and_shutdown_stops(
    node: Node, autojump_clock: trio.testing.MockClock
) -> None:
    rt = node.runtime
    assert rt.ensure_topic() is E.NONE
    node.write(2, b"z")
    replayed: list[Any] = []

    async def start() -> None:
        for p in range(PARTITIONS):
            rt.on_became_leader(p, 0)
        replayed.extend(await rt.load_scheduled())

    async with trio.open_nursery() as nursery:
        await nursery.start(rt.run, start)
        assert replayed == [[], [], [b"z"]]
        assert rt.ownership.owned() == [0, 1, 2]
        assert rt.shutdown() == [0, 1, 2]
        assert not rt.on_became_leader(0, 1)  # stopped: ignored
        assert rt.ownership.owned() == []
        nursery.cancel_scope.cancel()


# -- timers -----------------------------------------------------------------------------------
async def test_timers_fire_at_their_deadlines_on_the_injected_clock(
    node: Node, autojump_clock: trio.testing.MockClock
) -> None:
    rt, shard = node.runtime, node.shard
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.run, _nothing)
        start = trio_ms()
        shard.deadlines = [start + 5_000, start + 1_000]
        rt.run_due_timers()  # nothing due yet; wakes the timer task for the new deadline
        assert shard.fired == []
        await trio.sleep(0.999)
        assert shard.fired == []
        await trio.sleep(0.002)
        assert shard.fired == [start + 1_000]
        await trio.sleep(4)
        assert shard.fired == [start + 1_000, start + 5_000]
        nursery.cancel_scope.cancel()


def test_run_due_timers_fires_what_is_due_on_a_fake_clock(tmp_path: Path) -> None:
    now = [1_000]
    n = Node(tmp_path, lambda: now[0])
    try:
        n.shard.deadlines = [1_000, 1_500, 900]
        n.runtime.run_due_timers()
        assert n.shard.fired == [1_000, 900]
        now[0] = 2_000
        n.runtime.run_due_timers()
        assert n.shard.fired == [1_000, 900, 1_500]
        assert n.shard.next_deadline() is None
    finally:
        n.logs.close()


# -- appends and the internal topic -----------------------------------------------------------
async def test_appends_and_their_raw_errors(
    node: Node, autojump_clock: trio.testing.MockClock
) -> None:
    rt = node.runtime
    batch = build_batch([(b"k", b"v")], base_timestamp=trio_ms())
    assert rt.append(0, batch, trio_ms()) is E.UNKNOWN_TOPIC_OR_PARTITION  # no topic yet
    assert rt.ensure_topic() is E.NONE
    assert rt.ensure_topic() is E.NONE  # exists
    info = node.admin.describe(TOPIC)
    assert info is not None and info.partitions == PARTITIONS
    rt.on_became_leader(0, 0)
    done = rt.append(0, batch, trio_ms())
    assert isinstance(done, Appended)
    assert (done.end_offset, done.token) == (1, rt.ownership.token(0))
    again = rt.append(0, batch, trio_ms())
    assert isinstance(again, Appended) and again.end_offset == 2
    assert await rt.wait_replicated(again, 1.0) is E.NONE
    assert rt.append(0, batch, trio_ms(), leading=lambda part: False) is (E.NOT_LEADER_OR_FOLLOWER)

    async def broken(part: Partition, offset: int, timeout_s: float) -> E:
        raise RuntimeError("waiter down")

    async def slow(part: Partition, offset: int, timeout_s: float) -> E:
        await trio.sleep(timeout_s)
        return E.REQUEST_TIMED_OUT

    unreplicated = Appended(again.part, again.end_offset + 1, again.token)
    rt.replication_waiter = broken
    assert await rt.wait_replicated(unreplicated, 1.0) is E.UNKNOWN
    rt.replication_waiter = slow
    assert await rt.wait_replicated(unreplicated, 1.0) is E.REQUEST_TIMED_OUT


async def test_a_topic_that_cannot_be_created_is_coordinator_not_available(node: Node) -> None:
    def refuse(topics: Any, *, now_ms: int) -> list[Any]:
        return [ClusterError("no brokers")]

    node.admin.create_topics = refuse  # type: ignore[method-assign]
    assert node.runtime.ensure_topic() is E.COORDINATOR_NOT_AVAILABLE


# -- the one append-error map -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "group", "commit", "txn"),
    [
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE, None, None),
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE, None, None),
        (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE, None, None),
        (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE, E.REQUEST_TIMED_OUT, None),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR, None, None),
        (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR, None, None),
        (E.MESSAGE_TOO_LARGE, E.UNKNOWN, E.INVALID_COMMIT_OFFSET_SIZE, None),
        (E.RECORD_LIST_TOO_LARGE, E.UNKNOWN, E.INVALID_COMMIT_OFFSET_SIZE, None),
        (E.INVALID_FETCH_SIZE, E.UNKNOWN, E.INVALID_COMMIT_OFFSET_SIZE, E.INVALID_FETCH_SIZE),
        (E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE, None, None),
        (E.UNKNOWN, E.UNKNOWN, None, None),
    ],
)
def test_the_append_error_map(raw: E, group: E, commit: E | None, txn: E | None) -> None:
    """Kafka's three maps in one table: `None` is "as the group column"."""
    assert GROUP_APPEND_ERRORS(raw) is group
    assert COMMIT_APPEND_ERRORS(raw) is (group if commit is None else commit)
    assert TXN_APPEND_ERRORS(raw) is (group if txn is None else txn)
