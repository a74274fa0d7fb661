"""PartitionEvents.wait_until (the purgatory loop) and DeleteRecords' wait in ProduceWaiters,
under trio's MockClock. (subscribe / notify / notify_hw: test_fetch_waiters.py.)"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import trio
import trio.testing

from protocol.errors import ErrorCode
from wirebroker.replication.delayed_produce import ProduceWaiters
from wirebroker.replication.partition_events import PartitionEvents


async def test_wait_until_answers_at_once_without_a_checkpoint() -> None:
    events = PartitionEvents()
    with trio.testing.assert_no_checkpoints():
        assert await events.wait_until(("t", 0), lambda: "done", trio.current_time()) == "done"


async def test_wait_until_checks_again_after_each_notify() -> None:
    events = PartitionEvents()
    state = {"n": 0}
    checks: list[int] = []
    result: list[object] = []

    def check() -> str | None:
        checks.append(state["n"])
        return "ok" if state["n"] >= 2 else None

    async def wait() -> None:
        result.append(await events.wait_until(("t", 0), check, trio.current_time() + 60))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        assert events.waiting_count() == 1
        events.notify_hw("t", 0)  # only notify wakes a purgatory wait
        events.notify("t", 1)  # another partition
        await trio.testing.wait_all_tasks_blocked()
        assert checks == [0]
        state["n"] = 1
        events.notify("t", 0)  # not there yet: parks again
        await trio.testing.wait_all_tasks_blocked()
        assert checks == [0, 1] and result == []
        state["n"] = 2
        events("t", 0)
    assert result == ["ok"] and checks == [0, 1, 2]
    assert events.waiting_count() == 0


async def test_wait_until_deadline(autojump_clock: trio.testing.MockClock) -> None:
    events = PartitionEvents()
    start = trio.current_time()
    assert await events.wait_until(("t", 0), lambda: None, start + 2.5) is None
    assert trio.current_time() - start == pytest.approx(2.5)
    assert events.waiting_count() == 0


@dataclass
class FakePartition:
    """What the DeleteRecords wait reads of a partition."""

    topic: str = "t"
    index: int = 0
    low: int = 0
    is_leader: bool = True

    def low_watermark(self, is_alive: object) -> int:
        return self.low

    def delete_records_status(
        self, required: int, is_alive: object
    ) -> tuple[ErrorCode, int] | None:
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
        return (ErrorCode.NONE, self.low) if self.low >= required else None


async def test_delete_records_wait_answers_with_the_low_watermark() -> None:
    waiters = ProduceWaiters()
    part = FakePartition()
    result: list[tuple[ErrorCode, int]] = []

    async def wait() -> None:
        deadline = trio.current_time() + 30
        result.append(await waiters.wait_low_watermark(part, 5, deadline, bool))  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        part.low = 3
        waiters.notify("t", 0)
        await trio.testing.wait_all_tasks_blocked()
        assert result == []
        part.low = 7
        waiters.notify("t", 0)
    assert result == [(ErrorCode.NONE, 7)]


async def test_delete_records_wait_times_out_or_loses_leadership(
    autojump_clock: trio.testing.MockClock,
) -> None:
    waiters = ProduceWaiters()
    part = FakePartition(low=3)
    deadline = trio.current_time() + 1
    assert await waiters.wait_low_watermark(part, 5, deadline, bool) == (  # type: ignore[arg-type]
        ErrorCode.REQUEST_TIMED_OUT,
        3,
    )
    part.is_leader = False
    assert await waiters.wait_low_watermark(part, 5, deadline + 1, bool) == (  # type: ignore[arg-type]
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        -1,
    )
