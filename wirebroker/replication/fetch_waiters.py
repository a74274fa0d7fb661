"""Per-partition wake-ups for long-poll Fetch (trio runtime; the cores stay pure).

A fetch that has not gathered `min_bytes` subscribes to the partitions it reads and waits on
one `trio.Event` until data arrives on any of them or its deadline passes. `ReplicaManager`
calls its data listeners after every append (and when a topic is deleted); `FetchWaiters` is
such a listener and sets the events subscribed to that partition. The broker builds one and
attaches it (`replicas.add_data_listener(waiters.notify)`); handlers find it in `Services`.

There is no lost wake-up: a handler reads the logs and subscribes without awaiting in between,
and trio runs one task at a time, so an append either happened before the read (the read sees
it) or happens after the subscription (the event is set).

Usage::

    with ctx.services.fetch_waiters.subscribe(keys) as event:
        with trio.move_on_at(deadline):
            await event.wait()
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import trio

__all__ = ["FetchWaiters"]

Key = tuple[str, int]


class FetchWaiters:
    def __init__(self) -> None:
        self._waiting: dict[Key, set[trio.Event]] = {}

    def notify(self, topic: str, index: int) -> None:
        """Wake every fetch waiting on this partition (sync: callable from any trio task)."""
        events = self._waiting.get((topic, index))
        if events:
            for event in events:
                event.set()

    def __call__(self, topic: str, index: int) -> None:
        self.notify(topic, index)

    @contextmanager
    def subscribe(self, keys: Iterable[Key]) -> Iterator[trio.Event]:
        """An event set when any of `keys` gets data; unsubscribed on exit."""
        event = trio.Event()
        subscribed = list(dict.fromkeys(keys))
        for key in subscribed:
            self._waiting.setdefault(key, set()).add(event)
        try:
            yield event
        finally:
            for key in subscribed:
                events = self._waiting.get(key)
                if events is not None:
                    events.discard(event)
                    if not events:
                        del self._waiting[key]

    def waiting_count(self) -> int:
        """Number of (partition, fetch) subscriptions; for tests and metrics."""
        return sum(len(v) for v in self._waiting.values())
