"""The group coordinator runtime over real storage: membership, timers on trio's MockClock,
offsets, appends before answers, shutdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from runtimekit import Member, commit, describe, fetched, running

from protocol.errors import ErrorCode as E
from protocol.group_records import GroupMetadataKey, OffsetCommitKey, decode_key
from protocol.records import decode_records, iter_batches
from wirebroker.config import BROKER_CONFIGS, BrokerConfig
from wirebroker.group.config import GroupConfig
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.log.errors import StorageError
from wirebroker.replication.replica_manager import ReplicaManager


def offsets_log_records(
    replicas: ReplicaManager, partition: int
) -> list[tuple[bytes | None, bytes | None]]:
    part = replicas.partition(OFFSETS_TOPIC, partition)
    assert part is not None
    data = part.log.read(0, max_bytes=1 << 24)
    out = []
    for pos, _h in iter_batches(data):
        out += [(r.key, r.value) for r in decode_records(data, pos)]
    return out


async def test_two_members_then_a_third_forces_a_rebalance(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with running(tmp_path) as node:
        rt = node.runtime
        a, b, c = Member(rt, "a"), Member(rt, "b"), Member(rt, "c")

        # v4+ handshake: the first JoinGroup hands out a member id.
        first = await a.join_once()
        assert first["error_code"] == E.MEMBER_ID_REQUIRED
        assert first["member_id"].startswith("a-")
        a.member_id = first["member_id"]
        joined = await a.join_once()  # alone, and the initial delay is 0: answered at once
        assert joined["error_code"] == 0
        assert joined["generation_id"] == 1
        assert joined["leader"] == a.member_id
        a.generation = 1

        # b joins: the group prepares a rebalance; a learns it from its heartbeat.
        answers: dict[str, dict[str, object]] = {}
        async with trio.open_nursery() as nursery:

            async def join_b() -> None:
                answers["b"] = await b.join()

            nursery.start_soon(join_b)
            await trio.testing.wait_all_tasks_blocked()
            assert "b" not in answers  # parked until a rejoins
            assert a.heartbeat() == E.REBALANCE_IN_PROGRESS
            answers["a"] = await a.join()
        assert answers["a"]["error_code"] == answers["b"]["error_code"] == 0
        assert a.generation == b.generation == 2
        assert a.is_leader and len(a.members) == 2 and b.members == []

        # SyncGroup: the follower waits for the leader's assignment.
        async with trio.open_nursery() as nursery:

            async def sync_b() -> None:
                answers["sync_b"] = await b.sync()

            nursery.start_soon(sync_b)
            await trio.testing.wait_all_tasks_blocked()
            assert "sync_b" not in answers
            leader_sync = await a.sync({a.member_id: b"A", b.member_id: b"B"})
        assert leader_sync["assignment"] == b"A"
        assert answers["sync_b"]["assignment"] == b"B"
        assert a.heartbeat() == E.NONE and b.heartbeat() == E.NONE
        assert describe(rt, "g")["group_state"] == "Stable"

        # A third member: both others are told to rejoin, then all three share generation 3.
        async with trio.open_nursery() as nursery:

            async def join_c() -> None:
                answers["c"] = await c.join()

            nursery.start_soon(join_c)
            await trio.testing.wait_all_tasks_blocked()
            assert a.heartbeat() == E.REBALANCE_IN_PROGRESS
            assert b.heartbeat() == E.REBALANCE_IN_PROGRESS
            nursery.start_soon(a.join)
            await trio.testing.wait_all_tasks_blocked()
            assert "c" not in answers  # b has not rejoined yet
            await b.join()
        assert a.generation == b.generation == c.generation == 3
        members = next(m for m in (a, b, c) if m.is_leader).members
        assert sorted(m["member_id"] for m in members) == sorted(
            [a.member_id, b.member_id, c.member_id]
        )
        group = describe(rt, "g")
        assert group["group_state"] == "CompletingRebalance"
        assert {m["client_host"] for m in group["members"]} == {"/127.0.0.1"}


async def test_session_expiry_on_the_mock_clock(tmp_path: Path, autojump_clock: object) -> None:
    async with running(tmp_path) as node:
        rt = node.runtime
        a, b = Member(rt, "a"), Member(rt, "b")
        await a.join()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(b.join)
            await trio.testing.wait_all_tasks_blocked()
            await a.join()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(b.sync)
            await a.sync({a.member_id: b"x", b.member_id: b"y"})
        assert describe(rt, "g")["group_state"] == "Stable"

        # a keeps heartbeating every 3 s, b is silent: after b's 10 s session the group
        # rebalances, a rejoins alone.
        start = trio.current_time()
        while (error := a.heartbeat()) == E.NONE:
            await trio.sleep(3)
        assert error == E.REBALANCE_IN_PROGRESS
        assert 10 <= trio.current_time() - start <= 13
        await a.join()
        assert a.generation == 3 and [m["member_id"] for m in a.members] == [a.member_id]
        assert b.heartbeat() == E.UNKNOWN_MEMBER_ID

        # Nobody heartbeats: the timer task alone expires a and empties the group.
        await trio.sleep(11)
        group = describe(rt, "g")
        assert group["group_state"] == "Empty" and group["members"] == []


async def test_initial_rebalance_delay_runs_on_the_timer_task(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with running(tmp_path, **{"group.initial.rebalance.delay.ms": "3000"}) as node:
        rt = node.runtime
        a, b = Member(rt, "a"), Member(rt, "b")
        done: dict[str, float] = {}
        start = trio.current_time()

        async def join(m: Member, delay: float) -> None:
            await trio.sleep(delay)
            await m.join()
            done[m.client_id] = trio.current_time() - start

        async with trio.open_nursery() as nursery:
            nursery.start_soon(join, a, 0)
            nursery.start_soon(join, b, 1)
        # b arrived during the delay, so the delay ran once more (Kafka's initial rebalance)
        assert a.generation == b.generation == 1
        assert done == {"a": 6.0, "b": 6.0}


async def test_commit_then_fetch_and_the_records_are_in_the_log(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with running(tmp_path) as node:
        node.create_topic("t", 2)
        rt = node.runtime
        a = Member(rt, "a")
        await a.join()
        await a.sync({a.member_id: b"all"})
        resp = await a.commit({("t", 0): 5, ("t", 1): 7})
        assert [p["error_code"] for p in resp["topics"][0]["partitions"]] == [0, 0]
        assert fetched(rt, "g") == (E.NONE, {("t", 0): 5, ("t", 1): 7})
        assert fetched(rt, "g", {"t": [0, 3]}) == (E.NONE, {("t", 0): 5, ("t", 3): -1})
        # a stale generation is refused
        stale = await commit(rt, {("t", 0): 1}, generation=0, member_id=a.member_id)
        assert stale["topics"][0]["partitions"][0]["error_code"] == E.ILLEGAL_GENERATION

        # The log of the group's partition holds the commit (keys decode as offset keys).
        keys = [decode_key(k) for k, _ in offsets_log_records(node.replicas, rt.partition_for("g"))]
        assert any(isinstance(k, OffsetCommitKey) and k.partition == 1 for k in keys)
        assert any(isinstance(k, GroupMetadataKey) for k in keys)


async def test_the_offsets_topic_is_created_by_find_coordinator(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with running(tmp_path, **{"offsets.topic.num.partitions": "5"}) as node:
        assert node.topics.get(OFFSETS_TOPIC) is None
        assert node.runtime.find_coordinator("g") == E.NONE
        info = node.topics.get(OFFSETS_TOPIC)
        assert info is not None and info.is_internal and info.partitions == 5
        assert info.configs["cleanup.policy"] == "compact"
        assert info.configs["segment.bytes"] == "104857600"
        assert node.runtime.find_coordinator("other") == E.NONE  # exists already


async def test_an_append_failure_answers_with_the_mapped_error_and_reloads(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running(tmp_path) as node:
        node.create_topic("t")
        rt = node.runtime
        assert (await commit(rt, {("t", 0): 5}))["topics"][0]["partitions"][0]["error_code"] == 0
        real_append = node.replicas.append

        def broken(part: Any, *args: Any, **kwargs: Any) -> Any:
            if part.topic == OFFSETS_TOPIC:
                raise StorageError("disk on fire")
            return real_append(part, *args, **kwargs)

        monkeypatch.setattr(node.replicas, "append", broken)
        resp = await commit(rt, {("t", 0): 9})
        # KAFKA_STORAGE_ERROR -> NOT_COORDINATOR (Kafka's appendGroupMetadataErrorToResponseError)
        assert resp["topics"][0]["partitions"][0]["error_code"] == E.NOT_COORDINATOR
        # A leader's SyncGroup whose assignment cannot be written fails too.
        a = Member(rt, "a", group="h")
        joined = await a.join()
        assert joined["error_code"] == E.NOT_COORDINATOR  # the new group's record failed
        monkeypatch.setattr(node.replicas, "append", real_append)
        # The optimistic change was dropped: the log's offset is back.
        assert fetched(rt, "g") == (E.NONE, {("t", 0): 5})
        assert describe(rt, "h")["group_state"] == "Dead"
        a.member_id = ""
        assert (await a.join())["error_code"] == 0


async def test_shutdown_answers_parked_requests(tmp_path: Path, autojump_clock: object) -> None:
    async with running(tmp_path) as node:
        rt = node.runtime
        a, b = Member(rt, "a"), Member(rt, "b")
        await a.join()
        answers = {}
        async with trio.open_nursery() as nursery:

            async def join_b() -> None:
                answers["b"] = await b.join()

            nursery.start_soon(join_b)
            await trio.testing.wait_all_tasks_blocked()
            rt.shutdown()
        assert answers["b"]["error_code"] == E.NOT_COORDINATOR
        assert a.heartbeat() == E.COORDINATOR_NOT_AVAILABLE
        assert rt.find_coordinator("g") == E.COORDINATOR_NOT_AVAILABLE


async def test_a_cancelled_parked_request_is_forgotten(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with running(tmp_path) as node:
        rt = node.runtime
        a, b = Member(rt, "a"), Member(rt, "b")
        await a.join()
        with trio.move_on_after(1):
            await b.join()  # parked until a rejoins; its connection goes away
        assert rt._waiters == {}
        await a.join()  # completes the rebalance; b's answer has nowhere to go
        assert a.generation == 2
        assert describe(rt, "g")["group_state"] == "CompletingRebalance"


def test_group_settings_are_declared_with_kafka_defaults() -> None:
    defaults = {
        "group.max.size": "2147483647",
        "offsets.retention.check.interval.ms": "600000",
        "offset.metadata.max.bytes": "4096",
        "offsets.topic.segment.bytes": "104857600",
        "group.min.session.timeout.ms": "6000",
        "group.max.session.timeout.ms": "1800000",
    }
    assert {k: BROKER_CONFIGS[k].default for k in defaults} == defaults
    assert GroupConfig.from_broker_config(BrokerConfig({})) == GroupConfig()
    tuned = GroupConfig.from_broker_config(
        BrokerConfig({"group.max.size": "2", "offset.metadata.max.bytes": "10"})
    )
    assert (tuned.max_group_size, tuned.offset_metadata_max_bytes) == (2, 10)


async def test_group_max_size(tmp_path: Path, autojump_clock: object) -> None:
    async with running(tmp_path, **{"group.max.size": "1"}) as node:
        rt = node.runtime
        a, b = Member(rt, "a"), Member(rt, "b")
        assert (await a.join())["error_code"] == 0
        assert (await b.join())["error_code"] == E.GROUP_MAX_SIZE_REACHED
