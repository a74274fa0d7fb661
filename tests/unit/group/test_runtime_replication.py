"""Group writes wait for their replication (Kafka's appendForGroup with acks=-1): a commit or a
SyncGroup is answered only once the `__consumer_offsets` high watermark passes its records,
through an injected `ReplicationWaiter`; timeouts and replication errors are mapped as Kafka
maps them; a single replica never waits. MockClock, no sockets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from runtimekit import Member, Node, commit, deleted, fetched, running

from protocol.errors import ErrorCode as E
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.replication.partition import Partition


class SlowReplication:
    """A `ReplicationWaiter` whose followers catch up when the test says so.

    `hold` False: replicated at once. `hold` True: waits for `release(answer)`; NONE moves
    the high watermark to the required offset (what a follower fetch would do), anything
    else is returned as is; past `timeout_s` it answers REQUEST_TIMED_OUT."""

    def __init__(self) -> None:
        self.hold = False
        self.calls: list[tuple[int, int, float]] = []
        self._released = trio.Event()
        self._answer = E.NONE

    def release(self, answer: E = E.NONE) -> None:
        """Answer every wait so far with `answer`."""
        self._answer = answer
        self._released.set()
        self._released = trio.Event()

    async def __call__(self, part: Partition, required: int, timeout_s: float) -> E:
        self.calls.append((part.index, required, timeout_s))
        if self.hold:
            released = self._released
            with trio.move_on_after(timeout_s):
                await released.wait()
            if not released.is_set():
                return E.REQUEST_TIMED_OUT
            if self._answer is not E.NONE:
                return self._answer
        part.log.high_watermark = max(part.log.high_watermark, required)
        return E.NONE


def lagging_followers(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    """The offsets topic's high watermarks stay where they are (followers not caught up)."""
    assert node.runtime.ensure_offsets_topic() == E.NONE
    for part in node.replicas.partitions_of(OFFSETS_TOPIC):
        monkeypatch.setattr(part, "_maybe_advance_high_watermark", lambda *_a, **_k: False)


def commit_error(resp: dict[str, Any]) -> int:
    return int(resp["topics"][0]["partitions"][0]["error_code"])


class Answers:
    """Runs requests in tasks and keeps their answers by name."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.got: dict[str, Any] = {}

    def start(self, name: str, fn: Any, *args: Any) -> None:
        async def run() -> None:
            self.got[name] = await fn(*args)

        self.nursery.start_soon(run)


async def test_a_commit_is_answered_once_replicated(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter = SlowReplication()
    async with running(tmp_path, {"replication_waiter": waiter}) as node:
        node.create_topic("t")
        rt = node.runtime
        lagging_followers(node, monkeypatch)
        waiter.hold = True
        part = node.replicas.partition(OFFSETS_TOPIC, rt.partition_for("g"))
        assert part is not None
        async with trio.open_nursery() as nursery:
            answers = Answers(nursery)
            answers.start("commit", commit, rt, {("t", 0): 5})
            await trio.testing.wait_all_tasks_blocked()
            assert answers.got == {}  # appended, not replicated: not answered
            assert part.log_end_offset == 1 and part.high_watermark == 0
            assert waiter.calls == [(part.index, 1, 5.0)]  # offsets.commit.timeout.ms
            waiter.release()
        assert commit_error(answers.got["commit"]) == E.NONE
        assert part.high_watermark == 1
        assert fetched(rt, "g") == (E.NONE, {("t", 0): 5})


async def test_a_commit_that_is_not_replicated_in_time_times_out(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter = SlowReplication()
    overrides = {"offsets.commit.timeout.ms": "2500"}
    async with running(tmp_path, {"replication_waiter": waiter}, **overrides) as node:
        node.create_topic("t", 2)
        rt = node.runtime
        lagging_followers(node, monkeypatch)
        waiter.hold = True
        started = trio.current_time()
        resp = await commit(rt, {("t", 0): 5, ("t", 1): 6})
        assert trio.current_time() - started == pytest.approx(2.5)
        errors = [p["error_code"] for p in resp["topics"][0]["partitions"]]
        assert errors == [E.REQUEST_TIMED_OUT] * 2  # Kafka's storeOffsets keeps it


@pytest.mark.parametrize(
    ("replication_error", "answered"),
    [
        (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    ],
)
async def test_replication_errors_are_mapped_for_commits(
    tmp_path: Path,
    autojump_clock: object,
    monkeypatch: pytest.MonkeyPatch,
    replication_error: E,
    answered: E,
) -> None:
    waiter = SlowReplication()
    async with running(tmp_path, {"replication_waiter": waiter}) as node:
        node.create_topic("t")
        rt = node.runtime
        lagging_followers(node, monkeypatch)
        waiter.hold = True
        async with trio.open_nursery() as nursery:
            answers = Answers(nursery)
            answers.start("commit", commit, rt, {("t", 0): 5})
            await trio.testing.wait_all_tasks_blocked()
            waiter.release(replication_error)
        assert commit_error(answers.got["commit"]) == answered


async def test_leadership_lost_while_waiting_answers_not_coordinator(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter = SlowReplication()
    options = {"replication_waiter": waiter}
    async with running(tmp_path, options, lead=False) as node:
        node.create_topic("t")
        rt = node.runtime
        lagging_followers(node, monkeypatch)
        p = rt.partition_for("g")
        rt.on_became_leader(p, 1)
        await trio.testing.wait_all_tasks_blocked()
        waiter.hold = True
        async with trio.open_nursery() as nursery:
            answers = Answers(nursery)
            answers.start("commit", commit, rt, {("t", 0): 5})
            await trio.testing.wait_all_tasks_blocked()
            rt.on_resigned(p, 2)
            waiter.release(E.REQUEST_TIMED_OUT)  # a waiter that knows nothing of leaders
        assert commit_error(answers.got["commit"]) == E.NOT_COORDINATOR


async def test_sync_group_answers_wait_for_the_assignment_record(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter = SlowReplication()
    async with running(tmp_path, {"replication_waiter": waiter}) as node:
        rt = node.runtime
        lagging_followers(node, monkeypatch)
        a, b = Member(rt, "a"), Member(rt, "b")
        await a.join()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(b.join)
            await trio.testing.wait_all_tasks_blocked()
            await a.join()
        calls = len(waiter.calls)
        waiter.hold = True
        async with trio.open_nursery() as nursery:
            answers = Answers(nursery)
            answers.start("b", b.sync)
            await trio.testing.wait_all_tasks_blocked()
            answers.start("a", a.sync, {a.member_id: b"A", b.member_id: b"B"})
            await trio.testing.wait_all_tasks_blocked()
            assert answers.got == {}  # the assignment is in the log, not replicated yet
            assert len(waiter.calls) == calls + 2  # each parked sync waits for it
            waiter.release()
        assert (answers.got["a"]["error_code"], answers.got["a"]["assignment"]) == (0, b"A")
        assert (answers.got["b"]["error_code"], answers.got["b"]["assignment"]) == (0, b"B")


async def test_a_sync_whose_record_is_not_replicated_fails(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter = SlowReplication()
    async with running(tmp_path, {"replication_waiter": waiter}) as node:
        rt = node.runtime
        lagging_followers(node, monkeypatch)
        a = Member(rt, "a")
        await a.join()
        waiter.hold = True
        resp = await a.sync({a.member_id: b"A"})
        # REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE (appendGroupMetadataErrorToResponseError)
        assert resp["error_code"] == E.COORDINATOR_NOT_AVAILABLE


async def test_delete_groups_waits_per_partition(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter = SlowReplication()
    async with running(tmp_path, {"replication_waiter": waiter}) as node:
        node.create_topic("t")
        rt = node.runtime
        lagging_followers(node, monkeypatch)
        await commit(rt, {("t", 0): 1}, group="x")
        await commit(rt, {("t", 0): 1}, group="y")
        assert rt.partition_for("x") != rt.partition_for("y")
        waiter.hold = True
        resp = await deleted(rt, ["x", "y"])
        assert [r["error_code"] for r in resp["results"]] == [E.COORDINATOR_NOT_AVAILABLE] * 2


async def test_a_single_replica_never_waits(tmp_path: Path, autojump_clock: object) -> None:
    async def never(part: Partition, required: int, timeout_s: float) -> E:
        raise AssertionError("a single replica is replicated by its append")

    async with running(tmp_path, {"replication_waiter": never}) as node:
        node.create_topic("t")
        rt = node.runtime
        a = Member(rt, "a")
        await a.join()
        assert (await a.sync({a.member_id: b"A"}))["assignment"] == b"A"
        assert commit_error(await a.commit({("t", 0): 3})) == E.NONE
        assert await a.leave() == E.NONE
        assert (await deleted(rt, ["g"]))["results"][0]["error_code"] == E.NONE
