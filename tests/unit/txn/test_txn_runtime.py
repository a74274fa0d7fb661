"""The transaction coordinator's trio runtime over a real ReplicaManager (one broker, no
cluster): records really land in `__transaction_state`, markers go to a fake sink, the clock is
injected (`FakeClock`), timers run through `run_timers(now)`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from protocol.errors import ErrorCode as E
from protocol.txn_records import decode_key, decode_value
from tests.unit.local_metadata import (
    Leader,
    LocalTopicAdmin,
    lead_coordinator,
    lead_every_partition,
)
from wirebroker.config import BrokerConfig
from wirebroker.coordinator.log_reader import keyed_records
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.delayed_produce import ProduceWaiters
from wirebroker.replication.partition import Partition, Role
from wirebroker.replication.producer_ids import ProducerIdManager
from wirebroker.replication.replica_manager import ReplicaManager
from wirebroker.txn.effects import MarkerRequest
from wirebroker.txn.metadata import TopicPartition
from wirebroker.txn.runtime import RETRY_BACKOFF_S, TXN_TOPIC, TxnCoordinatorRuntime

TP = TopicPartition
NUM_PARTITIONS = 4


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now_ms


class FakeSink:
    """Records marker requests; `ack_all` answers every partition as the leaders would."""

    def __init__(self) -> None:
        self.sent: list[tuple[MarkerRequest, frozenset[TopicPartition]]] = []

    def send(self, request: MarkerRequest, partitions: Any) -> None:
        self.sent.append((request, frozenset(partitions)))


class Env:
    def __init__(self, data: Path, **overrides: str) -> None:
        values = {
            "node.id": "0",
            "log.dirs": str(data),
            "transaction.state.log.num.partitions": str(NUM_PARTITIONS),
            **overrides,
        }
        self.config = BrokerConfig(values)
        data.mkdir(parents=True, exist_ok=True)
        self.clock = FakeClock()
        self.topics = TopicStore.open(data)
        self.logs = LogManager([data])
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
        self.sink = FakeSink()

    def runtime(self) -> TxnCoordinatorRuntime:
        return TxnCoordinatorRuntime(
            self.config,
            self.replicas,
            admin=self.admin,
            producer_ids=ProducerIdManager(self.topics),
            clock=self.clock,
            markers=self.sink,
        )

    def state_log(self) -> list[tuple[str, str | None]]:
        """(transactional id, state name or None for a tombstone) of every record written."""
        out: list[tuple[str, str | None]] = []
        for p in range(NUM_PARTITIONS):
            part = self.replicas.partition(TXN_TOPIC, p)
            assert part is not None
            for chunk in keyed_records(part):
                for key, value, *_ in chunk:
                    assert key is not None
                    tid = decode_key(key)
                    assert isinstance(tid, str)
                    status = None if value is None else decode_value(value).status
                    out.append((tid, None if status is None else _STATES[status]))
        return out


_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path / "data")
    yield e
    e.logs.close()


async def _started(rt: TxnCoordinatorRuntime, nursery: trio.Nursery) -> TxnCoordinatorRuntime:
    await nursery.start(rt.run)
    lead_coordinator(rt)
    await trio.testing.wait_all_tasks_blocked()
    assert rt.ensure_topic() is E.NONE
    return rt


@pytest.fixture
async def rt(env: Env) -> AsyncIterator[TxnCoordinatorRuntime]:
    async with trio.open_nursery() as nursery:
        yield await _started(env.runtime(), nursery)
        nursery.cancel_scope.cancel()


async def _settle() -> None:
    await trio.testing.wait_all_tasks_blocked()


async def _begin(rt: TxnCoordinatorRuntime, tid: str, *parts: TopicPartition) -> tuple[int, int]:
    init = await rt.init_producer_id(tid, 60_000, None)
    assert init.error is E.NONE
    assert await rt.add_partitions(tid, init.producer_id, init.producer_epoch, parts) is E.NONE
    return init.producer_id, init.producer_epoch


async def test_init_writes_the_state_before_answering(rt: TxnCoordinatorRuntime, env: Env) -> None:
    a = await rt.init_producer_id("tx", 60_000, None)
    b = await rt.init_producer_id("tx", 60_000, None)
    assert (a.error, a.producer_epoch) == (E.NONE, 0)
    assert (b.error, b.producer_id, b.producer_epoch) == (E.NONE, a.producer_id, 1)
    assert env.state_log() == [("tx", "Empty"), ("tx", "Empty")]
    bad = await rt.init_producer_id("tx", 900_001, None)
    assert bad.error is E.INVALID_TRANSACTION_TIMEOUT


async def test_commit_sends_markers_then_completes(rt: TxnCoordinatorRuntime, env: Env) -> None:
    parts = (TP("t", 0), TP("t", 1), TP("u", 0))
    pid, epoch = await _begin(rt, "tx", *parts)
    assert await rt.end_txn("tx", pid, epoch, True) is E.NONE
    [(request, sent)] = env.sink.sent
    assert sent == frozenset(parts) and request.commit and request.producer_id == pid
    assert rt.describe("tx").state == "PrepareCommit"
    assert rt.marker_wanted(request)
    # Until every marker is written the id is busy.
    assert await rt.add_partitions("tx", pid, epoch, [TP("t", 0)]) is E.CONCURRENT_TRANSACTIONS
    for tp in sorted(parts):
        rt.marker_done(request, tp)
    await _settle()
    assert rt.describe("tx").state == "CompleteCommit"
    assert not rt.marker_wanted(request)
    assert [s for _, s in env.state_log()] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
    ]
    # a retried EndTxn of the same outcome is fine, the other one is not
    assert await rt.end_txn("tx", pid, epoch, True) is E.NONE
    assert await rt.end_txn("tx", pid, epoch, False) is E.INVALID_TXN_STATE


async def test_fencing_by_a_new_producer(rt: TxnCoordinatorRuntime, env: Env) -> None:
    pid, epoch = await _begin(rt, "tx", TP("t", 0))
    # the new producer's InitProducerId aborts the ongoing transaction first
    again = await rt.init_producer_id("tx", 60_000, None)
    assert again.error is E.CONCURRENT_TRANSACTIONS
    [(abort, _)] = env.sink.sent
    assert not abort.commit and abort.producer_epoch == epoch + 1
    rt.marker_done(abort, TP("t", 0))
    await _settle()
    new = await rt.init_producer_id("tx", 60_000, None)
    assert (new.error, new.producer_id, new.producer_epoch) == (E.NONE, pid, epoch + 2)
    # the zombie is fenced
    assert await rt.add_partitions("tx", pid, epoch, [TP("t", 1)]) is E.PRODUCER_FENCED
    assert await rt.end_txn("tx", pid, epoch, True) is E.PRODUCER_FENCED


async def test_timed_out_transaction_is_aborted(rt: TxnCoordinatorRuntime, env: Env) -> None:
    init = await rt.init_producer_id("slow", 1000, None)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await rt.add_partitions("slow", pid, epoch, [TP("t", 0)]) is E.NONE
    rt.run_timers(env.clock.now_ms + 500)
    await _settle()
    assert env.sink.sent == []
    env.clock.now_ms += 1001
    rt.run_timers(env.clock.now_ms)
    await _settle()
    [(abort, parts)] = env.sink.sent
    assert (abort.commit, abort.producer_epoch, parts) == (False, epoch + 1, {TP("t", 0)})
    rt.marker_done(abort, TP("t", 0))
    await _settle()
    assert rt.describe("slow").state == "CompleteAbort"
    assert await rt.end_txn("slow", pid, epoch, True) is E.PRODUCER_FENCED


async def test_idle_ids_expire(tmp_path: Path) -> None:
    env = Env(tmp_path / "d", **{"transactional.id.expiration.ms": "5000"})
    try:
        async with trio.open_nursery() as nursery:
            rt = await _started(env.runtime(), nursery)
            assert (await rt.init_producer_id("idle", 60_000, None)).error is E.NONE
            env.clock.now_ms += 4000
            rt.run_timers(env.clock.now_ms)
            await _settle()
            assert rt.describe("idle").error is E.NONE
            env.clock.now_ms += 1000
            rt.run_timers(env.clock.now_ms)
            await _settle()
            assert rt.describe("idle").error is E.TRANSACTIONAL_ID_NOT_FOUND
            assert env.state_log() == [("idle", "Empty"), ("idle", None)]
            nursery.cancel_scope.cancel()
    finally:
        env.logs.close()


async def test_reload_resends_markers_of_prepared_transactions(
    rt: TxnCoordinatorRuntime, env: Env
) -> None:
    """A new leadership (epoch 1) of the id's partition replays it; PrepareCommit found there
    gets its markers again under the new coordinator epoch; the old request is dropped."""
    pid, epoch = await _begin(rt, "tx", TP("t", 0), TP("t", 1))
    assert await rt.end_txn("tx", pid, epoch, True) is E.NONE
    [(old, _)] = env.sink.sent
    p = rt.partition_for("tx")
    rt.on_resigned(p)
    assert not rt.marker_wanted(old)
    assert rt.describe("tx").error is E.NOT_COORDINATOR
    rt.on_became_leader(p, 1)
    assert rt.describe("tx").error is E.COORDINATOR_LOAD_IN_PROGRESS
    await _settle()
    [_, (new, parts)] = env.sink.sent
    assert (new.coordinator_epoch, new.commit, parts) == (1, True, {TP("t", 0), TP("t", 1)})
    rt.marker_done(old, TP("t", 0))  # a stale completion changes nothing
    assert rt.describe("tx").state == "PrepareCommit"
    for tp in parts:
        rt.marker_done(new, tp)
    await _settle()
    assert rt.describe("tx").state == "CompleteCommit"


async def test_restart_replays_the_state(env: Env) -> None:
    async with trio.open_nursery() as nursery:
        rt = await _started(env.runtime(), nursery)
        pid, epoch = await _begin(rt, "tx", TP("t", 0))
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        rt2 = await _started(env.runtime(), nursery)
        d = rt2.describe("tx")
        assert (d.state, d.producer_id, d.producer_epoch) == ("Ongoing", pid, epoch)
        assert d.partitions == (TP("t", 0),)
        assert await rt2.end_txn("tx", pid, epoch, False) is E.NONE
        nursery.cancel_scope.cancel()


async def test_no_state_topic_answers_coordinator_not_available(env: Env) -> None:
    async with trio.open_nursery() as nursery:
        rt = env.runtime()
        await nursery.start(rt.run)
        lead_coordinator(rt)
        await _settle()
        init = await rt.init_producer_id("tx", 60_000, None)
        assert init.error is E.COORDINATOR_NOT_AVAILABLE
        nursery.cancel_scope.cancel()


async def test_state_topic_settings(rt: TxnCoordinatorRuntime, env: Env) -> None:
    info = env.admin.describe(TXN_TOPIC)
    assert info is not None and info.partitions == NUM_PARTITIONS
    assert info.configs["cleanup.policy"] == "compact"
    assert info.configs["min.insync.replicas"] == "1"


async def test_list_and_verify(rt: TxnCoordinatorRuntime) -> None:
    pid, epoch = await _begin(rt, "a", TP("t", 0))
    await rt.init_producer_id("b", 60_000, None)
    listed = rt.list_transactions(["Ongoing"])
    assert [(t.transactional_id, t.state) for t in listed.transactions] == [("a", "Ongoing")]
    verified = rt.verify_partitions("a", pid, epoch, [TP("t", 0), TP("t", 1)])
    assert verified == {TP("t", 0): E.NONE, TP("t", 1): E.TRANSACTION_ABORTABLE}


async def test_replication_factor_is_capped_by_the_live_brokers(tmp_path: Path) -> None:
    env = Env(tmp_path / "d", **{"transaction.state.log.replication.factor": "3"})
    try:
        rt = env.runtime()
        assert rt.replication_factor == 3
        assert rt.ensure_topic() is E.NONE
        info = env.admin.describe(TXN_TOPIC)
        assert info is not None
        assert info.replication_factor == 1
    finally:
        env.logs.close()


async def test_a_failed_completion_is_written_again_after_a_backoff(
    env: Env, autojump_clock: trio.testing.MockClock
) -> None:
    """The CompleteCommit append fails three times (too few in-sync replicas): the core writes
    it again, each time after RETRY_BACKOFF_S, until it succeeds."""
    failures = {"left": 0, "calls": 0}
    rt = env.runtime()
    append = rt._append

    def failing_append(a: Any) -> Any:
        failures["calls"] += 1
        if failures["left"] > 0:
            failures["left"] -= 1
            return E.NOT_ENOUGH_REPLICAS  # as ReplicaManager.append raises it
        return append(a)

    rt._append = failing_append  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:
        await _started(rt, nursery)
        pid, epoch = await _begin(rt, "tx", TP("t", 0))
        assert await rt.end_txn("tx", pid, epoch, True) is E.NONE
        [(request, _)] = env.sink.sent
        failures["left"], failures["calls"] = 3, 0
        started = trio.current_time()
        rt.marker_done(request, TP("t", 0))
        while rt.describe("tx").state != "CompleteCommit":
            await trio.sleep(0.01)
        assert failures["calls"] == 4
        assert trio.current_time() - started >= 3 * RETRY_BACKOFF_S
        nursery.cancel_scope.cancel()


class Replicated:
    """The runtime as a cluster broker runs it: leadership from the role listener, appends
    waiting in the real acks=-1 purgatory; the state partition has a follower (node 1) that
    never fetches, so only an ISR without it lets the high watermark move."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.waiters = ProduceWaiters()
        env.replicas.add_hw_listener(self.waiters.notify)
        self.rt = TxnCoordinatorRuntime(
            env.config,
            env.replicas,
            admin=env.admin,
            producer_ids=ProducerIdManager(env.topics),
            clock=env.clock,
            replication_waiter=self.waiters.wait,
            markers=env.sink,
        )
        env.replicas.add_role_listener(self._role)
        env.admin.listener = env.replicas  # the partitions' roles come from `lead` only
        self.partition_epoch = 0

    def _role(self, part: Partition) -> None:
        if part.topic == TXN_TOPIC and part.role is Role.LEADER:
            self.rt.on_became_leader(part.index, part.leader_epoch)
        elif part.topic == TXN_TOPIC:
            self.rt.on_resigned(part.index, part.leader_epoch)

    def lead(self, p: int, leader_epoch: int, isr: list[int]) -> None:
        self.partition_epoch += 1
        assert self.env.replicas.make_leader(
            TXN_TOPIC,
            p,
            leader_epoch=leader_epoch,
            isr=isr,
            replicas=[0, 1],
            partition_epoch=self.partition_epoch,
            now_ms=self.env.clock(),
        )

    def isr(self, p: int, isr: list[int]) -> None:
        self.partition_epoch += 1
        self.env.replicas.isr_committed(TXN_TOPIC, p, isr=isr, partition_epoch=self.partition_epoch)


async def _commit_waiting_for_follower(
    cluster: Replicated, nursery: trio.Nursery
) -> tuple[int, list[E]]:
    """Run the coordinator leading "tx"'s partition at leader epoch 1 with follower 1 in the
    ISR (never fetching), begin a transaction and start its EndTxn(commit), which waits for
    the follower: (the partition, the list its answer is appended to)."""
    rt = cluster.rt
    await nursery.start(rt.run)
    assert rt.ensure_topic() is E.NONE
    p = rt.partition_for("tx")
    cluster.lead(p, 1, [0])
    await _settle()
    pid, epoch = await _begin(rt, "tx", TP("t", 0))
    cluster.isr(p, [0, 1])
    answers: list[E] = []

    async def commit() -> None:
        answers.append(await rt.end_txn("tx", pid, epoch, True))

    nursery.start_soon(commit)
    await _settle()
    return p, answers


async def test_a_leader_epoch_bump_without_a_leader_change_keeps_the_coordinator(
    env: Env,
) -> None:
    """EndTxn waits for its PrepareCommit to replicate; the controller then drops the dead
    follower from the ISR with a new leader epoch, this broker still leading (ZooKeeper-mode
    Kafka does that). As in Kafka, that is no new election: no reload, the coordinator epoch
    stays, and EndTxn is answered NONE once the high watermark passes the record (not
    NOT_COORDINATOR, which sends the client looking for a coordinator)."""
    cluster = Replicated(env)
    rt = cluster.rt
    async with trio.open_nursery() as nursery:
        p, answers = await _commit_waiting_for_follower(cluster, nursery)
        assert answers == [] and rt.describe("tx").state == "Ongoing"
        cluster.lead(p, 2, [0])  # follower 1 removed by the controller: HW moves
        await _settle()
        assert answers == [E.NONE]
        [(request, parts)] = env.sink.sent
        assert (request.coordinator_epoch, parts) == (1, {TP("t", 0)})
        assert rt.marker_wanted(request)
        rt.marker_done(request, TP("t", 0))
        await _settle()
        assert rt.describe("tx").state == "CompleteCommit"
        nursery.cancel_scope.cancel()


async def test_a_leadership_lost_and_regained_reloads(env: Env) -> None:
    """Leading again after following is a new election: the partition is replayed at the
    new leader epoch and a request waiting meanwhile is answered NOT_COORDINATOR."""
    cluster = Replicated(env)
    rt = cluster.rt
    async with trio.open_nursery() as nursery:
        p, answers = await _commit_waiting_for_follower(cluster, nursery)
        cluster.partition_epoch += 1
        env.replicas.make_follower(
            TXN_TOPIC,
            p,
            leader_id=1,
            leader_epoch=2,
            isr=[1, 0],
            replicas=[0, 1],
            partition_epoch=cluster.partition_epoch,
            now_ms=env.clock(),
        )
        await _settle()
        assert answers == [E.NOT_COORDINATOR]
        assert rt.describe("tx").error is E.NOT_COORDINATOR
        cluster.lead(p, 3, [0])
        await _settle()
        assert rt.describe("tx").state == "PrepareCommit"
        [(request, _)] = env.sink.sent
        assert request.coordinator_epoch == 3
        nursery.cancel_scope.cancel()
