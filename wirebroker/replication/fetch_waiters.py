"""Per-partition wake-ups for long-poll Fetch (trio runtime; the cores stay pure).

A fetch that has not gathered `min_bytes` subscribes to the partitions it reads and waits on
one `trio.Event` until data arrives on any of them or its deadline passes. `ReplicaManager`
calls its data listeners after every append (and when a topic is deleted); `FetchWaiters` is
such a listener and sets the events subscribed to that partition. The broker builds one and
attaches it (`replicas.add_data_listener(waiters.notify)`, `replicas.add_hw_listener(
waiters.notify_hw)`); handlers find it in `Services`.

Two kinds of wake-up. `notify` (new data, a role change, a deletion) wakes every fetch of the
partition. `notify_hw` (only the high watermark advanced: a follower's fetch acknowledged
records) wakes only the subscriptions made with `hw=True`: consumers, whose reads end at the
high watermark. A follower reads up to the log end, so an HW advance gives it nothing to read;
as in Kafka, it learns the new HW from its next fetch response (waking it would cost a re-read
and a re-park on the leader, once per replicated produce, on the acks=all path). The broker
registers `notify` as a data listener and `notify_hw` as an hw listener of the
`ReplicaManager`.

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
        self._hw_waiting: dict[Key, set[trio.Event]] = {}  # the subset with hw=True

    def notify(self, topic: str, index: int) -> None:
        """Wake every fetch waiting on this partition (sync: callable from any trio task)."""
        events = self._waiting.get((topic, index))
        if events:
            for event in events:
                event.set()

    def notify_hw(self, topic: str, index: int) -> None:
        """The partition's high watermark advanced: wake the fetches subscribed with hw=True."""
        events = self._hw_waiting.get((topic, index))
        if events:
            for event in events:
                event.set()

    def __call__(self, topic: str, index: int) -> None:
        self.notify(topic, index)

    @contextmanager
    def subscribe(self, keys: Iterable[Key], *, hw: bool = True) -> Iterator[trio.Event]:
        """An event set when any of `keys` gets data (and, with `hw`, when its high watermark
        advances); unsubscribed on exit."""
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

    def waiting_count(self) -> int:
        """Number of (partition, fetch) subscriptions; for tests and metrics."""
        return sum(len(v) for v in self._waiting.values())
