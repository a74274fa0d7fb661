"""Loading `__consumer_offsets` at start: state recovered by replay after a restart or a crash,
group requests while loading, the existing topic's partition count."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import trio
import trio.testing
from runtimekit import Member, Node, commit, deleted, describe, fetched, listed, running

from protocol.errors import ErrorCode as E
from protocol.records import build_batch
from tests.unit.local_metadata import coordinator_loaded, lead_coordinator
from wirebroker.group.messages import TopicPartitions
from wirebroker.group.partitioning import partition_for
from wirebroker.group.runtime import OFFSETS_TOPIC


async def stable_pair(node: Node, group: str) -> tuple[Member, Member]:
    rt = node.runtime
    a, b = Member(rt, "a", group=group), Member(rt, "b", group=group)
    await a.join()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(b.join)
        await trio.testing.wait_all_tasks_blocked()
        await a.join()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(b.sync)
        await trio.testing.wait_all_tasks_blocked()
        await a.sync({a.member_id: b"A", b.member_id: b"B"})
    return a, b


async def test_restart_recovers_offsets_and_groups(tmp_path: Path, autojump_clock: object) -> None:
    data = tmp_path / "data"
    async with running(data) as node:
        node.create_topic("t", 3)
        a, b = await stable_pair(node, "stable")
        await a.commit({("t", 0): 10, ("t", 1): 11})
        (e,) = [Member(node.runtime, "e", group="emptied")]
        await e.join()
        await e.sync({e.member_id: b""})
        await e.commit({("t", 2): 3})
        assert await e.leave() == E.NONE
        await commit(node.runtime, {("t", 0): 42}, group="simple")
        members = {a.member_id, b.member_id}

    async with running(data) as node:
        rt = node.runtime
        stable = describe(rt, "stable")
        assert stable["group_state"] == "Stable"
        assert {m["member_id"] for m in stable["members"]} == members
        assert {m["member_assignment"] for m in stable["members"]} == {b"A", b"B"}
        assert describe(rt, "emptied")["group_state"] == "Empty"
        assert describe(rt, "simple")["group_state"] == "Empty"
        assert fetched(rt, "stable") == (E.NONE, {("t", 0): 10, ("t", 1): 11})
        assert fetched(rt, "emptied") == (E.NONE, {("t", 2): 3})
        assert fetched(rt, "simple") == (E.NONE, {("t", 0): 42})
        groups = listed(rt)
        assert sorted((g["group_id"], g["group_state"]) for g in groups["groups"]) == [
            ("emptied", "Empty"),
            ("simple", "Empty"),
            ("stable", "Stable"),
        ]
        # The recovered members go on with their generation (their sessions restarted)...
        a.runtime = b.runtime = rt
        assert a.heartbeat() == E.NONE and b.heartbeat() == E.NONE
        assert (await a.sync())["assignment"] == b"A"
        # ...and expire when they stay silent.
        await trio.sleep(11)
        assert describe(rt, "stable")["group_state"] == "Empty"


async def test_a_crash_keeps_every_acknowledged_commit(
    tmp_path: Path, autojump_clock: object
) -> None:
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    async with running(live) as node:
        node.create_topic("t")
        for i in range(1, 21):
            resp = await commit(node.runtime, {("t", 0): i}, group=f"g{i % 4}")
            assert resp["topics"][0]["partitions"][0]["error_code"] == 0
        # kill -9 now: what is in the files (os.write done), without a clean shutdown
        shutil.copytree(live, crashed)
    async with running(crashed) as node:
        for g in range(4):
            last = max(i for i in range(1, 21) if i % 4 == g)
            assert fetched(node.runtime, f"g{g}") == (E.NONE, {("t", 0): last})


async def test_requests_while_loading(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    groups = {partition_for(f"g{i}", 50): f"g{i}" for i in range(200)}
    first_p, last_p = min(groups), max(groups)
    early, late = groups[first_p], groups[last_p]
    async with running(data) as node:
        node.create_topic("t")
        await commit(node.runtime, {("t", 0): 1}, group=early)
        await commit(node.runtime, {("t", 0): 2}, group=late)

    node = Node(data)
    try:
        rt = node.runtime
        # Not loaded at all: COORDINATOR_NOT_AVAILABLE everywhere.
        assert fetched(rt, early)[0] == E.COORDINATOR_NOT_AVAILABLE
        assert listed(rt)["error_code"] == E.COORDINATOR_NOT_AVAILABLE
        assert rt.find_coordinator(early) == E.COORDINATOR_NOT_AVAILABLE
        assert (await Member(rt, "x", group=early).join())["error_code"] == (
            E.COORDINATOR_NOT_AVAILABLE
        )

        gate = trio.Event()
        real = rt.runtime.load_partition

        async def gated(partition: int) -> int:
            if partition == last_p:
                await gate.wait()
            return await real(partition)

        monkeypatch.setattr(rt.runtime, "load_partition", gated)
        async with trio.open_nursery() as nursery:
            await nursery.start(rt.run)
            lead_coordinator(rt)
            await trio.testing.wait_all_tasks_blocked()
            # every partition but the last is served; the last one is loading
            assert fetched(rt, early) == (E.NONE, {("t", 0): 1})
            assert fetched(rt, late)[0] == E.COORDINATOR_LOAD_IN_PROGRESS
            assert rt.find_coordinator(late) == E.NONE
            assert listed(rt)["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
            m = Member(rt, "m", group=late)
            assert (await m.join())["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
            assert m.heartbeat() == E.NONE  # Kafka answers heartbeats blindly while loading
            resp = await commit(rt, {("t", 0): 9}, group=late)
            assert (
                resp["topics"][0]["partitions"][0]["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
            )
            gate.set()
            await coordinator_loaded(rt)
            assert fetched(rt, late) == (E.NONE, {("t", 0): 2})
            assert listed(rt)["error_code"] == E.NONE
            nursery.cancel_scope.cancel()
    finally:
        node.close()


async def test_the_existing_topic_partition_count_wins(
    tmp_path: Path, autojump_clock: object
) -> None:
    data = tmp_path / "data"
    async with running(data, **{"offsets.topic.num.partitions": "3"}) as node:
        node.create_topic("t")
        assert node.runtime.find_coordinator("g") == E.NONE
        await commit(node.runtime, {("t", 0): 4}, group="g")
    async with running(data) as node:  # the config default would be 50
        assert node.runtime.core.config.num_partitions == 3
        assert fetched(node.runtime, "g") == (E.NONE, {("t", 0): 4})


async def test_many_records_load_and_junk_is_skipped(
    tmp_path: Path, autojump_clock: object, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    async with running(data) as node:
        node.create_topic("t", 10)
        for i in range(2000):
            await commit(node.runtime, {("t", i % 10): i}, group=f"g{i % 7}")
        # A record the coordinator cannot decode (an admin client may write anything).
        p = node.runtime.partition_for("g0")
        now = node.runtime.clock()
        junk = build_batch(
            [(b"\x00\x00garbage", b"junk"), (b"\x7f\x00", b"future type")], base_timestamp=now
        )
        node.replicas.append(node.replicas.partition(OFFSETS_TOPIC, p), junk, now_ms=now)
    async with running(data) as node:
        for g in range(7):
            expected = {}
            for i in range(2000):
                if i % 7 == g:
                    expected[("t", i % 10)] = i
            assert fetched(node.runtime, f"g{g}") == (E.NONE, expected)
        resp = node.runtime.fetch_offsets(group_id="g0", topics=[TopicPartitions("t", [0])])
        assert resp.error == 0
    assert "skipping a record that does not replay" in caplog.text


async def test_deletions_and_recreations_replay_in_order(
    tmp_path: Path, autojump_clock: object
) -> None:
    data = tmp_path / "data"
    async with running(data) as node:
        node.create_topic("t", 2)
        rt = node.runtime
        await commit(rt, {("t", 0): 5, ("t", 1): 6}, group="again")
        await commit(rt, {("t", 0): 1}, group="gone")
        assert (await deleted(rt, ["again", "gone"]))["results"] == [
            {"group_id": "again", "error_code": 0},
            {"group_id": "gone", "error_code": 0},
        ]
        await commit(rt, {("t", 0): 7}, group="again")  # a new group with the same id
        m = Member(rt, "m", group="again")
        await m.join()  # the group's metadata record follows the tombstone
        await m.sync({m.member_id: b"a"})
        assert await m.leave() == E.NONE
    async with running(data) as node:
        rt = node.runtime
        assert fetched(rt, "again") == (E.NONE, {("t", 0): 7})
        again = describe(rt, "again")
        assert (again["group_state"], again["protocol_type"]) == ("Empty", "consumer")
        assert describe(rt, "gone")["group_state"] == "Dead"
        assert fetched(rt, "gone") == (E.NONE, {})
        assert sorted(g["group_id"] for g in listed(rt)["groups"]) == ["again"]
