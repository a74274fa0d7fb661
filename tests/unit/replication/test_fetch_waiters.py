from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from wirebroker.config import BrokerConfig
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.fetch_waiters import FetchWaiters
from wirebroker.replication.replica_manager import ReplicaManager


async def test_notify_wakes_only_subscribers_of_that_partition() -> None:
    waiters = FetchWaiters()
    woken: list[str] = []

    async def wait(name: str, keys: list[tuple[str, int]]) -> None:
        with waiters.subscribe(keys) as event:
            with trio.move_on_after(10):
                await event.wait()
                woken.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait, "a", [("t", 0), ("t", 1)])
        nursery.start_soon(wait, "b", [("u", 0)])
        await trio.testing.wait_all_tasks_blocked()
        assert waiters.waiting_count() == 3
        waiters.notify("t", 1)
        waiters.notify("t", 9)
        await trio.testing.wait_all_tasks_blocked()
        assert woken == ["a"]
        waiters("u", 0)
    assert sorted(woken) == ["a", "b"]
    assert waiters.waiting_count() == 0


def test_an_hw_advance_wakes_only_subscriptions_with_hw() -> None:
    waiters = FetchWaiters()
    with (
        waiters.subscribe([("t", 0)]) as consumer,
        waiters.subscribe([("t", 0)], hw=False) as follower,
    ):
        waiters.notify_hw("t", 0)
        assert consumer.is_set() and not follower.is_set()
        waiters.notify("t", 0)
        assert follower.is_set()
    assert waiters.waiting_count() == 0
    waiters.notify_hw("t", 0)  # nobody left


async def test_timeout_unsubscribes(autojump_clock: trio.testing.MockClock) -> None:
    waiters = FetchWaiters()
    start = trio.current_time()
    with waiters.subscribe([("t", 0)]) as event, trio.move_on_after(0.5):
        await event.wait()
    assert trio.current_time() - start == 0.5
    assert waiters.waiting_count() == 0


def test_attached_waiters_wake_on_notify(tmp_path: Path) -> None:
    topics = TopicStore.open(tmp_path)
    logs = LogManager([tmp_path])
    rm = ReplicaManager(BrokerConfig({"log.dirs": str(tmp_path)}), logs, topics, node_id=0)
    first = FetchWaiters()
    rm.add_data_listener(first.notify)  # as the broker wires it
    with first.subscribe([("t", 0)]) as event:
        rm.notify_data("t", 0)
        assert event.is_set()
    logs.close()
