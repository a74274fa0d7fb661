"""The cluster member's one event queue (Kafka's controller event queue idea).

Every ZooKeeper callback of a broker's cluster side (a watch, a session change) only queues an
event: `EventQueue.callback(handler)` makes such a callback, `put(event)` queues one. One task
(`ClusterMember.run`) applies them in order (`apply_ready`, then `apply_forever`), so the
broker's cluster state changes in one place, one event at a time. A failed event is logged and
dropped (the next change of what it read queues another). After every applied event `changed`
is set and replaced: whoever waits for the mirror to show something (controlled shutdown, the
topic admin, the fault controls) wakes and looks again.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping

import trio

from wirebroker.coordination.api import CoordinationError, Stat

__all__ = ["AppliedNodes", "Event", "EventQueue"]

log = logging.getLogger("wirebroker.cluster")

Event = Callable[[], Awaitable[None]]


class EventQueue:
    """Events applied one at a time, in the order queued (see the module docstring)."""

    def __init__(self) -> None:
        self._send, self._recv = trio.open_memory_channel[Event](math.inf)
        self.changed = trio.Event()  # set (and replaced) after every applied event

    def put(self, event: Event) -> None:
        self._send.send_nowait(event)

    def callback(self, handler: Callable[..., Awaitable[None]]) -> Callable[..., None]:
        """A callback that queues `handler(*args)` as an event."""

        def queue(*args: object) -> None:
            async def event() -> None:
                await handler(*args)

            self._send.send_nowait(event)

        return queue

    async def apply_ready(self) -> None:
        """Apply the events queued so far (what the first watch calls reported)."""
        while True:
            try:
                event = self._recv.receive_nowait()
            except trio.WouldBlock:
                return
            await self._apply(event)

    async def apply_forever(self) -> None:
        async for event in self._recv:
            await self._apply(event)

    async def _apply(self, event: Event) -> None:
        try:
            await event()
        except CoordinationError as exc:
            log.warning(
                "cluster event failed (%s: %s); will be retried on the next change",
                type(exc).__name__,
                exc,
            )
        except Exception:
            log.exception("cluster event failed")
        self.notify()

    def notify(self) -> None:
        """Wake whoever waits for a change (`changed`)."""
        self.changed.set()
        self.changed = trio.Event()


class AppliedNodes:
    """Which version of each mirrored znode this broker has applied (its creation zxid and
    version), so a writer answers once its own write shows here (the SCRAM users' and client
    quotas' mirrors: `mark` from the watch, `wait_for` after the write)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int]] = {}  # key -> (czxid, version) applied
        self._applied = trio.Event()

    def mark(self, key: str, stat: Stat | None) -> None:
        """`key`'s node applied as read with `stat` (None: it does not exist)."""
        self._seen[key] = (stat.czxid, stat.version) if stat is not None else (0, -1)
        self._applied.set()
        self._applied = trio.Event()

    def has_seen(self, key: str, written: Stat) -> bool:
        czxid, version = self._seen.get(key, (0, -1))
        return (czxid == written.czxid and version >= written.version) or czxid > written.czxid

    async def wait_for(self, written: Mapping[str, Stat]) -> None:
        """Until every node in `written` (key -> the stat the write left) is applied here."""
        for key, stat in written.items():
            while not self.has_seen(key, stat):
                await self._applied.wait()
