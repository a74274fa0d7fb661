"""The coordinator follows the leadership of `__consumer_offsets` partitions (a cluster's
runtime, `running(..., lead=False)`): nothing served before this broker leads, a partition
loads when it is led (COORDINATOR_LOAD_IN_PROGRESS meanwhile), a resignation unloads it
(NOT_COORDINATOR, parked requests answered), stale notifications and stale loads change
nothing. MockClock, no sockets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from runtimekit import Member, commit, describe, fetched, listed, running, trio_ms

import wirebroker.coordinator.runtime as runtime_module
from protocol.errors import ErrorCode as E
from protocol.group_records import OffsetCommitValue
from protocol.records import build_batch
from wirebroker.coordinator.ownership import PartitionState
from wirebroker.group.partitioning import partition_for
from wirebroker.group.records import offset_commit_record
from wirebroker.group.runtime import OFFSETS_TOPIC

PARTITIONS = "4"


def group_in(partition: int, prefix: str = "g") -> str:
    """A group id whose `__consumer_offsets` partition is `partition` (of 4)."""
    return next(
        f"{prefix}{i}" for i in range(1000) if partition_for(f"{prefix}{i}", 4) == partition
    )


G, H = group_in(1), group_in(2)  # G in partition 1, H in partition 2


def commit_error(resp: dict[str, Any]) -> int:
    return int(resp["topics"][0]["partitions"][0]["error_code"])


async def committed_alone(data: Path) -> None:
    """Offsets of G and H written by a single broker on `data` (the cluster tests' logs)."""
    async with running(data, **{"offsets.topic.num.partitions": PARTITIONS}) as node:
        node.create_topic("t", 2)
        assert commit_error(await commit(node.runtime, {("t", 0): 10}, group=G)) == 0
        assert commit_error(await commit(node.runtime, {("t", 1): 20}, group=H)) == 0


async def test_nothing_is_served_before_this_broker_leads(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with running(
        tmp_path, lead=False, **{"offsets.topic.num.partitions": PARTITIONS}
    ) as node:
        node.create_topic("t")
        rt = node.runtime
        assert rt.find_coordinator(G) == E.NONE  # the handler asks who leads the partition
        assert fetched(rt, G)[0] == E.NOT_COORDINATOR
        assert commit_error(await commit(rt, {("t", 0): 1}, group=G)) == E.NOT_COORDINATOR
        m = Member(rt, "m", group=G)
        assert (await m.join())["error_code"] == E.NOT_COORDINATOR
        assert m.heartbeat() == E.NOT_COORDINATOR
        assert describe(rt, G)["error_code"] == E.NOT_COORDINATOR
        assert listed(rt) == {"throttle_time_ms": 0, "error_code": 0, "groups": []}
        assert rt.ownership.owned() == []


async def test_a_led_partition_loads_while_its_groups_wait(
    tmp_path: Path, autojump_clock: object
) -> None:
    await committed_alone(tmp_path)
    async with running(tmp_path, lead=False) as node:
        rt = node.runtime
        assert rt.core.config.num_partitions == 4  # the existing topic's count
        rt.on_became_leader(1, 3)
        # Scheduled, not loaded yet: its groups wait, the others are not ours.
        assert rt.ownership.state(1) is PartitionState.LOADING
        assert fetched(rt, G)[0] == E.COORDINATOR_LOAD_IN_PROGRESS
        assert commit_error(await commit(rt, {("t", 0): 1}, group=G)) == (
            E.COORDINATOR_LOAD_IN_PROGRESS
        )
        assert (await Member(rt, "m", group=G).join())["error_code"] == (
            E.COORDINATOR_LOAD_IN_PROGRESS
        )
        assert listed(rt)["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
        assert fetched(rt, H)[0] == E.NOT_COORDINATOR
        await trio.testing.wait_all_tasks_blocked()
        assert rt.ownership.state(1) is PartitionState.LOADED
        assert fetched(rt, G) == (E.NONE, {("t", 0): 10})
        assert fetched(rt, H)[0] == E.NOT_COORDINATOR
        assert [g["group_id"] for g in listed(rt)["groups"]] == [G]
        # Leading one more partition adds its groups.
        rt.on_became_leader(2, 0)
        await trio.testing.wait_all_tasks_blocked()
        assert fetched(rt, H) == (E.NONE, {("t", 1): 20})


async def test_resignation_answers_parked_requests_and_drops_the_groups(
    tmp_path: Path, autojump_clock: object
) -> None:
    async with running(
        tmp_path, lead=False, **{"offsets.topic.num.partitions": PARTITIONS}
    ) as node:
        node.create_topic("t")
        rt = node.runtime
        assert rt.ensure_offsets_topic() == E.NONE
        rt.on_became_leader(1, 0)
        await trio.testing.wait_all_tasks_blocked()
        a, b = Member(rt, "a", group=G), Member(rt, "b", group=G)
        await a.join()
        await a.sync({a.member_id: b"A"})
        assert commit_error(await a.commit({("t", 0): 7})) == 0
        answers: dict[str, Any] = {}

        async def join_b() -> None:
            answers["b"] = await b.join()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(join_b)
            await trio.testing.wait_all_tasks_blocked()
            assert "b" not in answers  # parked until a rejoins
            rt.on_resigned(1, 1)
        assert answers["b"]["error_code"] == E.NOT_COORDINATOR
        assert rt.core.group_ids() == []
        assert a.heartbeat() == E.NOT_COORDINATOR
        assert commit_error(await a.commit({("t", 0): 8})) == E.NOT_COORDINATOR
        assert fetched(rt, G)[0] == E.NOT_COORDINATOR
        assert describe(rt, G)["error_code"] == E.NOT_COORDINATOR
        assert rt.ownership.state(1) is PartitionState.NOT_OWNED

        # Led again: the state comes back from the log (a's membership and its commit).
        rt.on_became_leader(1, 2)
        await trio.testing.wait_all_tasks_blocked()
        assert fetched(rt, G) == (E.NONE, {("t", 0): 7})
        assert describe(rt, G)["group_state"] == "Stable"
        assert a.heartbeat() == E.NONE


async def test_stale_and_repeated_notifications_change_nothing(
    tmp_path: Path, autojump_clock: object
) -> None:
    await committed_alone(tmp_path)
    async with running(tmp_path, lead=False) as node:
        rt = node.runtime
        rt.on_became_leader(1, 5)
        await trio.testing.wait_all_tasks_blocked()
        m = Member(rt, "m", group=G)
        await m.join()
        rt.on_resigned(1, 4)  # older than our leadership: ignored
        rt.on_became_leader(1, 5)  # a duplicate
        rt.on_became_leader(1, 6)  # still the leader (a follower left the ISR, say)
        await trio.testing.wait_all_tasks_blocked()
        assert rt.ownership.state(1) is PartitionState.LOADED
        assert m.heartbeat() == E.NONE  # the member was not dropped by a reload
        rt.on_resigned(1, 7)
        rt.on_became_leader(1, 6)  # older than the resignation: ignored
        assert rt.ownership.state(1) is PartitionState.NOT_OWNED
        assert fetched(rt, G)[0] == E.NOT_COORDINATOR
        rt.on_became_leader(9, 0)  # no such partition: ignored
        assert rt.ownership.owned() == []


async def test_a_stale_load_does_not_install_its_result(
    tmp_path: Path, autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    await committed_alone(tmp_path)
    async with running(tmp_path, lead=False) as node:
        rt = node.runtime
        part = node.replicas.partition(OFFSETS_TOPIC, 1)
        assert part is not None
        real = runtime_module.keyed_records
        loads: list[int] = []
        installed: list[int] = []
        real_complete = rt.core.complete_loading

        def complete(now_ms: int, partitions: Any = None) -> Any:
            installed.extend(partitions or ())
            return real_complete(now_ms, partitions)

        def scripted(p: Any) -> Iterator[list[tuple[bytes, bytes | None]]]:
            loads.append(p.index)
            chunks = list(real(p))  # what the log holds as this load reads it
            yield from chunks[:1]
            if len(loads) == 1:
                # Leadership lost while the load runs; another leader commits 11 (replicated
                # here); the partition is led again at a higher epoch.
                rt.on_resigned(1, 4)
                value = OffsetCommitValue(offset=11, commit_timestamp=trio_ms())
                record = offset_commit_record(1, G, "t", 0, value)
                batch = build_batch([(record.key, record.value)], base_timestamp=trio_ms())
                node.replicas.append(part, batch, now_ms=trio_ms())
                rt.on_became_leader(1, 5)
            yield from chunks[1:]

        monkeypatch.setattr(runtime_module, "keyed_records", scripted)
        monkeypatch.setattr(rt.core, "complete_loading", complete)
        rt.on_became_leader(1, 3)
        await trio.testing.wait_all_tasks_blocked()
        assert loads == [1, 1]  # the stale load, then the new leadership's load
        assert installed == [1]  # only the second one was installed
        assert fetched(rt, G) == (E.NONE, {("t", 0): 11})
        assert rt.ownership.get(1) is not None and rt.ownership.epoch(1) == 5


async def test_a_single_broker_leads_every_partition_from_the_start(
    tmp_path: Path, autojump_clock: object
) -> None:
    await committed_alone(tmp_path)
    async with running(tmp_path) as node:
        rt = node.runtime
        assert rt.ownership.owned() == [0, 1, 2, 3]
        assert {rt.ownership.state(p) for p in range(4)} == {PartitionState.LOADED}
        assert fetched(rt, G) == (E.NONE, {("t", 0): 10})
        # A single broker can still be told otherwise (nothing does so today).
        rt.on_resigned(1)
        assert fetched(rt, G)[0] == E.NOT_COORDINATOR
        rt.on_became_leader(1, 1)
        await trio.testing.wait_all_tasks_blocked()
        assert fetched(rt, G) == (E.NONE, {("t", 0): 10})


async def test_shutdown_ignores_later_leadership(tmp_path: Path, autojump_clock: object) -> None:
    async with running(
        tmp_path, lead=False, **{"offsets.topic.num.partitions": PARTITIONS}
    ) as node:
        rt = node.runtime
        rt.on_became_leader(1, 0)
        await trio.testing.wait_all_tasks_blocked()
        rt.shutdown()
        rt.on_became_leader(2, 0)
        assert rt.ownership.owned() == []
        assert fetched(rt, G)[0] == E.COORDINATOR_NOT_AVAILABLE
