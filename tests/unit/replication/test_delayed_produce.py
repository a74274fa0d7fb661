"""ProduceWaiters: the acks=-1 purgatory, under trio's MockClock."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import trio
import trio.testing

from protocol.errors import ErrorCode
from wirebroker.replication.delayed_produce import ProduceWaiters


@dataclass
class FakePartition:
    """What the purgatory reads of a partition."""

    topic: str = "t"
    index: int = 0
    leader_epoch: int = 1
    hw: int = 0
    leader: bool = True
    enough_isr: bool = True

    def replication_status(
        self, required: int, leader_epoch: int | None = None
    ) -> ErrorCode | None:
        if not self.leader or (leader_epoch is not None and leader_epoch != self.leader_epoch):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.hw >= required:
            return ErrorCode.NONE if self.enough_isr else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return None


async def test_reached_already_returns_without_a_checkpoint() -> None:
    waiters = ProduceWaiters()
    part = FakePartition(hw=5)
    with trio.testing.assert_no_checkpoints():
        assert await waiters.wait(part, 5, 10.0) is ErrorCode.NONE  # type: ignore[arg-type]


async def test_parked_until_the_hw_moves(mock_clock: trio.testing.MockClock) -> None:
    waiters = ProduceWaiters()
    part = FakePartition()
    other = FakePartition(index=1)
    result: list[ErrorCode] = []

    async def wait() -> None:
        result.append(await waiters.wait(part, 3, 30.0))  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        assert waiters.waiting_count() == 1
        part.hw = 2
        waiters.notify("t", 0)  # not far enough: parks again
        other.hw = 9
        waiters.notify("t", 1)  # another partition
        await trio.testing.wait_all_tasks_blocked()
        assert result == [] and waiters.waiting_count() == 1
        part.hw = 3
        waiters("t", 0)
    assert result == [ErrorCode.NONE] and waiters.waiting_count() == 0


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"leader": False}, ErrorCode.NOT_LEADER_OR_FOLLOWER),
        ({"leader_epoch": 2, "hw": 9}, ErrorCode.NOT_LEADER_OR_FOLLOWER),
        ({"hw": 9, "enough_isr": False}, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    ],
)
async def test_answers_when_woken(change: dict[str, object], expected: ErrorCode) -> None:
    waiters = ProduceWaiters()
    part = FakePartition()
    result: list[ErrorCode] = []

    async def wait() -> None:
        result.append(await waiters.wait(part, 3, 30.0))  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        for key, value in change.items():
            setattr(part, key, value)
        waiters.notify("t", 0)
    assert result == [expected]


async def test_deadline(autojump_clock: trio.testing.MockClock) -> None:
    waiters = ProduceWaiters()
    start = trio.current_time()
    assert await waiters.wait(FakePartition(), 1, 1.5) is ErrorCode.REQUEST_TIMED_OUT  # type: ignore[arg-type]
    assert trio.current_time() - start == pytest.approx(1.5)
    assert await waiters.wait(FakePartition(), 1, -1) is ErrorCode.REQUEST_TIMED_OUT  # type: ignore[arg-type]
    assert waiters.waiting_count() == 0
