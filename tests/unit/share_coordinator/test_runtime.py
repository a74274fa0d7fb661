"""The share coordinator's trio runtime (`wirebroker.share_coordinator.runtime`) and the
persister's local path over a real ReplicaManager (one broker, no cluster, injected clock):
records land in `__share_group_state`, answers wait for the append, a new runtime over the
same logs replays the same state, the topic is created as Kafka creates it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from protocol.errors import ErrorCode as E
from protocol.share_state_records import SHARE_SNAPSHOT, SHARE_UPDATE, decode_key
from tests.unit.local_metadata import (
    Leader,
    LocalTopicAdmin,
    coordinate_every_partition,
    lead_every_partition,
)
from wirebroker.config import BrokerConfig
from wirebroker.coordinator.log_reader import keyed_records
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.replica_manager import ReplicaManager
from wirebroker.share_coordinator.batches import StateBatch as B
from wirebroker.share_coordinator.config import SHARE_STATE_TOPIC
from wirebroker.share_coordinator.core import WriteRequest
from wirebroker.share_coordinator.keys import SharePartitionKey
from wirebroker.share_coordinator.persister import (
    CoordinatorPersister,
    PartitionState,
    StateBatch,
)
from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime

NUM_PARTITIONS = 3


class Env:
    def __init__(self, data: Path) -> None:
        self.data = data
        self.config = BrokerConfig(
            {
                "node.id": "0",
                "log.dirs": str(data),
                "share.coordinator.state.topic.num.partitions": str(NUM_PARTITIONS),
                "share.coordinator.snapshot.update.records.per.snapshot": "2",
            }
        )
        data.mkdir(parents=True, exist_ok=True)
        self.now = 1_700_000_000_000
        self.open()

    def clock(self) -> int:
        return self.now

    def open(self) -> None:
        self.topics = TopicStore.open(self.data)
        self.logs = LogManager([self.data])
        self.replicas = ReplicaManager(self.config, self.logs, self.topics, node_id=0)
        self.replicas.load(self.clock())
        lead_every_partition(self.replicas, self.clock())
        self.admin = LocalTopicAdmin(
            self.config,
            self.topics,
            self.logs,
            node_id=0,
            listener=Leader(self.replicas, self.clock),
        )

    def reopen(self) -> None:
        self.logs.close()
        self.open()

    def topic(self, name: str, partitions: int) -> uuid.UUID:
        info = self.admin.create(NewTopic(name, partitions, 1, {}), now_ms=self.clock())
        return info.topic_id

    def runtime(self) -> ShareCoordinatorRuntime:
        def count(topic_id: uuid.UUID) -> int | None:
            info = self.topics.by_id(topic_id)
            return None if info is None else info.partitions

        return ShareCoordinatorRuntime(
            self.config, self.replicas, admin=self.admin, clock=self.clock, partition_count=count
        )

    def record_types(self) -> list[int | None]:
        out: list[int | None] = []
        for p in range(NUM_PARTITIONS):
            part = self.replicas.partition(SHARE_STATE_TOPIC, p)
            assert part is not None
            for chunk in keyed_records(part):
                for entry in chunk:
                    assert entry.key is not None
                    key = decode_key(entry.key)
                    out.append(None if key is None else key.record_type)
        return out


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path / "data")
    yield e
    e.logs.close()


async def _started(rt: ShareCoordinatorRuntime, nursery: trio.Nursery) -> None:
    await nursery.start(rt.run)
    assert rt.ensure_topic() is E.NONE
    await coordinate_every_partition(rt)


@pytest.fixture
async def rt(env: Env) -> AsyncIterator[ShareCoordinatorRuntime]:
    async with trio.open_nursery() as nursery:
        runtime = env.runtime()
        await _started(runtime, nursery)
        yield runtime
        nursery.cancel_scope.cancel()


async def test_topic_is_created_as_kafka_creates_it(rt: ShareCoordinatorRuntime, env: Env) -> None:
    info = env.admin.describe(SHARE_STATE_TOPIC)
    assert info is not None and info.partitions == NUM_PARTITIONS
    configs = env.admin.effective_configs(SHARE_STATE_TOPIC)
    assert configs["cleanup.policy"] == "delete"
    assert configs["retention.ms"] == "-1"


async def test_state_survives_a_restart(env: Env) -> None:
    topic = env.topic("t", 2)
    key = SharePartitionKey("g", topic, 1)
    async with trio.open_nursery() as nursery:
        rt = env.runtime()
        await _started(rt, nursery)
        assert (await rt.initialize(key, 0, 0)).error is E.NONE
        for i in range(4):
            request = WriteRequest(0, 3, i, (B(i, i + 9, 2 if i % 2 else 0, 1),))
            assert (await rt.write(key, request)).error is E.NONE
        assert (await rt.read(key, 3)).error is E.NONE  # writes the new leader epoch first
        before = await rt.read(key, 3)
        assert before.error is E.NONE and before.state is not None
        assert before.state.leader_epoch == 3 and before.state.start_offset == 3
        rt.shutdown()
        nursery.cancel_scope.cancel()
    # initialize's snapshot, 3 updates then a snapshot (limit 2, counted from 0), the read's
    # leader-epoch update
    assert env.record_types() == [
        SHARE_SNAPSHOT,
        SHARE_UPDATE,
        SHARE_UPDATE,
        SHARE_UPDATE,
        SHARE_SNAPSHOT,
        SHARE_UPDATE,
    ]
    env.reopen()
    async with trio.open_nursery() as nursery:
        rt2 = env.runtime()
        await _started(rt2, nursery)
        after = await rt2.read(key, 3)
        assert after.error is E.NONE and after.state == before.state
        assert (await rt2.read(key, 2)).error is E.FENCED_LEADER_EPOCH
        nursery.cancel_scope.cancel()


async def test_shut_down_answers_not_available(rt: ShareCoordinatorRuntime, env: Env) -> None:
    key = SharePartitionKey("g", env.topic("t", 1), 0)
    rt.shutdown()
    assert (await rt.read_summary(key)).error is E.COORDINATOR_NOT_AVAILABLE
    assert rt.ensure_topic() is E.COORDINATOR_NOT_AVAILABLE


async def test_persister_local_path(rt: ShareCoordinatorRuntime, env: Env) -> None:
    topic = env.topic("t", 1)
    persister = CoordinatorPersister(rt, lambda p: (0, "127.0.0.1", 1), node_id=0, attempts=1)
    assert await persister.read_state("g", topic, 0, 0) is E.INVALID_REQUEST
    assert await persister.initialize_state("g", topic, 0, 1, -1) is E.NONE
    state = PartitionState(1, 5, 2, (StateBatch(5, 9, 2, 1),))
    assert await persister.write_state("g", topic, 0, state) is E.NONE
    read = await persister.read_state("g", topic, 0, 2)
    assert read == PartitionState(1, 5, 2, (StateBatch(5, 9, 2, 1),))
    summary = await persister.read_summary("g", topic, 0, 2)
    assert summary == PartitionState(1, 5, 2, ())
    assert await persister.write_state("g", topic, 0, PartitionState(0, 5, 2, ())) is (
        E.FENCED_STATE_EPOCH
    )
    assert await persister.delete_state("g", topic, 0) is E.NONE
    assert await persister.read_state("g", topic, 0, 2) is E.INVALID_REQUEST
    assert await persister.initialize_state("g", uuid.uuid4(), 0, 0, 0) is (
        E.UNKNOWN_TOPIC_OR_PARTITION
    )


async def test_persister_without_a_leader_gives_up(rt: ShareCoordinatorRuntime, env: Env) -> None:
    persister = CoordinatorPersister(rt, lambda p: None, node_id=0, attempts=2, backoff_s=0.0)
    got = await persister.read_state("g", env.topic("t", 1), 0, 0)
    assert got is E.COORDINATOR_NOT_AVAILABLE
    await trio.testing.wait_all_tasks_blocked()


async def test_prune_deletes_below_the_oldest_needed_snapshot(env: Env) -> None:
    topic = env.topic("t", 2)
    a = SharePartitionKey("a", topic, 0)
    pa = a.state_partition(NUM_PARTITIONS)
    b = next(
        k
        for k in (SharePartitionKey(f"b{i}", topic, 1) for i in range(50))
        if k.state_partition(NUM_PARTITIONS) != pa
    )
    async with trio.open_nursery() as nursery:
        rt = env.runtime()
        await _started(rt, nursery)
        for key in (a, b):
            assert (await rt.initialize(key, 0, 0)).error is E.NONE
        for i in range(4):  # a: snapshot (offset 0), 3 updates, snapshot (offset 4; limit 2)
            assert (await rt.write(a, WriteRequest(0, 0, i, (B(i, i, 2, 1),)))).error is E.NONE
        shard = rt.core.partitions[pa]
        assert (shard.snapshot_offsets[a], shard.redundant_offset()) == (4, 4)
        state = (await rt.read(a, 0)).state
        rt.prune()
        part = env.replicas.partition(SHARE_STATE_TOPIC, pa)
        assert part is not None and part.log_start_offset == 4
        # deleting every key of the partition makes all of it redundant
        assert (await rt.delete(a)).error is E.NONE
        rt.prune()
        assert part.log_start_offset == part.log_end_offset == 6
        rt.shutdown()
        nursery.cancel_scope.cancel()
    env.reopen()
    async with trio.open_nursery() as nursery:
        rt2 = env.runtime()
        await _started(rt2, nursery)
        assert (await rt2.read(a, 0)).error is E.INVALID_REQUEST  # deleted
        assert (await rt2.read(b, 0)).state is not None
        nursery.cancel_scope.cancel()
    assert state is not None and state.start_offset == 3


async def test_timers_snapshot_cold_states_then_prune(
    rt: ShareCoordinatorRuntime, env: Env
) -> None:
    key = SharePartitionKey("c", env.topic("t", 1), 0)
    assert (await rt.initialize(key, 0, 0)).error is E.NONE
    assert (await rt.write(key, WriteRequest(0, 0, 1, (B(1, 2, 2, 1),)))).error is E.NONE
    assert env.record_types() == [SHARE_SNAPSHOT, SHARE_UPDATE]
    env.now += 300_000
    rt.runtime.run_due_timers()  # both timers are due: cold snapshot (background), prune
    await trio.testing.wait_all_tasks_blocked()
    assert env.record_types() == [SHARE_SNAPSHOT, SHARE_UPDATE, SHARE_SNAPSHOT]
    assert rt.next_deadline() == env.now + 300_000
    rt.prune()  # the cold snapshot (offset 2) is now the oldest needed
    part = env.replicas.partition(SHARE_STATE_TOPIC, rt.partition_for(key))
    assert part is not None and part.log_start_offset == 2
    state = (await rt.read(key, 0)).state
    assert state is not None and state.batches == (B(1, 2, 2, 1),)


async def test_a_deleted_topics_states_are_tombstoned_over_a_restart(env: Env) -> None:
    t, u = env.topic("t", 2), env.topic("u", 1)
    keys = [SharePartitionKey("g", t, 0), SharePartitionKey("h", t, 1)]
    kept = SharePartitionKey("g", u, 0)
    async with trio.open_nursery() as nursery:
        rt = env.runtime()
        await _started(rt, nursery)
        for key in [*keys, kept]:
            assert (await rt.initialize(key, 1, 5)).error is E.NONE
        rt.on_topics_deleted({t})
        await trio.testing.wait_all_tasks_blocked()  # the background appends
        for key in keys:
            assert (await rt.read(key, 0)).error is E.INVALID_REQUEST  # uninitialized
        rt.shutdown()
        nursery.cancel_scope.cancel()
    assert env.record_types().count(SHARE_SNAPSHOT) == 5  # three states, two tombstones
    env.reopen()
    async with trio.open_nursery() as nursery:
        rt2 = env.runtime()
        await _started(rt2, nursery)
        for key in keys:
            assert (await rt2.read(key, 0)).error is E.INVALID_REQUEST
        kept_state = await rt2.read(kept, 0)
        assert kept_state.state is not None and kept_state.state.start_offset == 5
        nursery.cancel_scope.cancel()
