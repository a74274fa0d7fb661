"""Per-partition wake-ups: the one registry behind the broker's purgatories (trio runtime).

A request that cannot be answered yet parks on a `trio.Event` subscribed to the partitions it
waits for; a listener of the `ReplicaManager` (which stays pure) sets the events of a partition
when something changed there, and the request looks again. Its users:

    `FetchWaiters`    long-poll Fetch (`fetch_waiters`): woken by new data, and consumers also
                      by a high-watermark advance (`notify_hw`)
    `ProduceWaiters`  the replication purgatory (`delayed_produce`): acks=-1 produces waiting
                      for the high watermark, DeleteRecords waiting for the low watermark

Two tables, two kinds of wake-up. `notify(topic, index)` (also `__call__`, so the instance
itself is a listener) sets every event subscribed to the partition. `notify_hw(topic, index)`
sets only the events subscribed with `hw=True`. `subscribe(keys, hw=...)` is a context
manager: one event for all of `keys`, unsubscribed on exit. `wait_until(key, check, deadline)`
is the purgatory loop on top: `check()` first (no await when it already holds), then park on
`key` and check again after every `notify` of it, until `check` answers or the deadline passes
(then None, without a last check: Kafka's expired operations do not look again either).

There is no lost wake-up as long as the caller checks its condition and subscribes without an
await in between: trio runs one task at a time, so a change either happened before the check
(the check sees it) or happens after the subscription (the event is set). A woken waiter whose
condition still does not hold simply parks again (a wake-up is a hint, not a promise).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import trio

__all__ = ["Key", "PartitionEvents"]

Key = tuple[str, int]
T = TypeVar("T")


class PartitionEvents:
    def __init__(self) -> None:
        self._waiting: dict[Key, set[trio.Event]] = {}
        self._hw_waiting: dict[Key, set[trio.Event]] = {}  # the subset with hw=True

    def notify(self, topic: str, index: int) -> None:
        """Wake every waiter of this partition (sync: callable from any trio task)."""
        _set_all(self._waiting.get((topic, index)))

    def notify_hw(self, topic: str, index: int) -> None:
        """Wake the waiters of this partition subscribed with hw=True."""
        _set_all(self._hw_waiting.get((topic, index)))

    def __call__(self, topic: str, index: int) -> None:
        self.notify(topic, index)

    @contextmanager
    def subscribe(self, keys: Iterable[Key], *, hw: bool = True) -> Iterator[trio.Event]:
        """An event set by `notify` of any of `keys` (and, with `hw`, by `notify_hw`);
        unsubscribed on exit."""
        event = trio.Event()
        subscribed = list(dict.fromkeys(keys))
        tables = (self._waiting, self._hw_waiting) if hw else (self._waiting,)
        for table in tables:
            for key in subscribed:
                table.setdefault(key, set()).add(event)
        try:
            yield event
        finally:
            for table in tables:
                for key in subscribed:
                    events = table.get(key)
                    if events is not None:
                        events.discard(event)
                        if not events:
                            del table[key]

    async def wait_until(
        self, key: Key, check: Callable[[], T | None], deadline: float
    ) -> T | None:
        """`check()`'s first answer other than None, looked for now and after every `notify`
        of `key`; None once trio's clock reached `deadline`."""
        found = check()
        if found is not None:
            return found
        with trio.move_on_at(deadline):
            while True:
                with self.subscribe((key,), hw=False) as event:
                    await event.wait()
                found = check()
                if found is not None:
                    return found
        return None

    def waiting_count(self) -> int:
        """Number of (partition, waiter) subscriptions; for tests and metrics."""
        return sum(len(v) for v in self._waiting.values())


def _set_all(events: set[trio.Event] | None) -> None:
    if events:
        for event in events:
            event.set()
