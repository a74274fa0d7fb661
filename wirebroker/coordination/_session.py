"""The trio side both Coordination implementations share: event queue, watches, session events.

Everything a store reports (watch notifications, session state changes, results of watch
re-reads) becomes a zero-argument callable on one unbounded trio memory channel; the drain
loop inside `run` calls them one at a time, so user callbacks run in one trio task, in order.
`_post(fn)` enqueues from the trio thread (the in-memory server calls it directly); the kazoo
implementation reaches it from its threads through `TrioToken.run_sync_soon` (see zk.py).

A watch (`_WatchEntry`) is client-side and outlives the store's one-shot watches: each read
sets a one-shot watch in the store (`_read_data` / `_read_children`, given the entry, whose
`notify(kind)` the implementation must get onto the channel when the store fires). kind is
"created", "deleted", "changed" (data) or "child" (child list); a data entry ignores "child",
a children entry ignores "changed" (the exists-watch it may have set on its znode fires on data
changes too). A notification asks for a re-read; one read runs at a time per entry, requests
during a read collapse into one more read. Each `CONNECTED` re-reads every entry (the store's
watches were lost with the connection or session). Delivery rule (api docstring): a read that
follows a notification always calls back; a read that follows only a reconnection calls back
when the value differs from the last one delivered (counters `notified` / `answered`). A read
that fails while connected is retried after `RETRY_S`; one that fails while disconnected waits
for the next `CONNECTED`.

Phases: "idle" (before run), "connecting" (run started, first session not yet there: the first
CONNECTED only sets `_first_connected`, no listener hears it), "running", "closed".
"""

from __future__ import annotations

import abc
import math
from collections.abc import Awaitable, Callable
from contextlib import suppress
from functools import partial
from typing import Literal, cast

import trio

from wirebroker.coordination.api import (
    ChildrenCallback,
    Coordination,
    CoordinationError,
    DataCallback,
    SessionCallback,
    SessionState,
    Stat,
    Watch,
)

RETRY_S = 0.1
Phase = Literal["idle", "connecting", "running", "closed"]
DataValue = tuple[bytes, Stat] | None
ChildrenValue = list[str] | None
_UNSET = object()


class _WatchEntry(Watch):
    """One watch_data / watch_children registration (see the module docstring)."""

    def __init__(
        self,
        client: SessionClient,
        path: str,
        children: bool,
        callback: DataCallback | ChildrenCallback,
    ) -> None:
        self.client = client
        self.path = path
        self.children = children
        self.callback = callback
        self.cancelled = False
        self.reading = False
        self.again = False  # a read was asked for while one ran
        self.notified = 0  # notifications received
        self.answered = 0  # notifications covered by a posted delivery
        self.last: object = _UNSET  # value of the last posted delivery
        self.impl: object = None  # the implementation's handle (zk: the kazoo watcher)

    def cancel(self) -> None:
        self.cancelled = True
        self.client._watches.discard(self)

    def notify(self, kind: str) -> None:
        """The store fired (run loop only): re-read unless the kind is not ours."""
        if self.cancelled or kind == ("changed" if self.children else "child"):
            return
        self.notified += 1
        self.client._request_read(self)


class SessionClient(Coordination):
    """Base of MemoryCoordination and ZkCoordination (see the module docstring)."""

    def __init__(self) -> None:
        send, recv = trio.open_memory_channel[Callable[[], None]](math.inf)
        self._send = send
        self._recv = recv
        self._phase: Phase = "idle"
        self._connected = False
        self._session = 0
        self._listeners: list[SessionCallback] = []
        self._watches: set[_WatchEntry] = set()
        self._nursery: trio.Nursery | None = None
        self._first_connected = trio.Event()
        self._waiters: set[trio.Event] = set()

    # -- implementation hooks --------------------------------------------------------------
    @abc.abstractmethod
    async def _read_data(self, entry: _WatchEntry) -> DataValue:
        """Read entry.path and leave a one-shot watch (data or exists) that calls
        entry.notify(kind) through the channel; CoordinationError on failure."""

    @abc.abstractmethod
    async def _read_children(self, entry: _WatchEntry) -> ChildrenValue:
        """Read entry.path's children and leave a one-shot child watch (or an exists watch
        while the znode is missing) that calls entry.notify(kind) through the channel."""

    # -- event channel ---------------------------------------------------------------------
    def _post(self, fn: Callable[[], None]) -> None:
        """Queue `fn` for the run loop (trio thread only; never raises)."""
        with suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            self._send.send_nowait(fn)

    async def _drain(self) -> None:
        async for fn in self._recv:
            fn()

    async def _drain_until(self, event: trio.Event) -> None:
        while not event.is_set():
            (await self._recv.receive())()

    async def _serve(
        self, connect: Callable[[], Awaitable[None]], task_status: trio.TaskStatus[None]
    ) -> None:
        """The body of `run`: connect, report started, then drain the channel in this task
        until cancelled. `connect` must set `_session` (it may drain the channel itself while
        it waits, see `_drain_until`). The implementation closes its session afterwards."""
        if self._phase != "idle":
            raise RuntimeError("run() may be called once per Coordination object")
        self._phase = "connecting"
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery  # watch re-reads run here
                await connect()
                self._phase = "running"
                self._connected = True
                task_status.started()
                await self._drain()
        finally:
            self._phase = "closed"
            self._connected = False
            self._watches.clear()
            for waiter in self._waiters:
                waiter.set()

    def _check_running(self) -> None:
        if self._phase != "running":
            raise CoordinationError(f"coordination session is {self._phase}, not running")

    # -- session events --------------------------------------------------------------------
    @property
    def session_id(self) -> int:
        return self._session

    def add_session_listener(self, callback: SessionCallback) -> None:
        self._listeners.append(callback)

    def _session_event(self, state: SessionState, session_id: int | None = None) -> None:
        """A state change from the store (run loop only)."""
        if self._phase == "connecting":
            if state is SessionState.CONNECTED and session_id is not None:
                self._session = session_id
                self._first_connected.set()
            return
        if self._phase != "running":
            return
        self._connected = state is SessionState.CONNECTED
        if self._connected and session_id is not None:
            self._session = session_id
        for listener in list(self._listeners):
            listener(state)
        if self._connected:
            for entry in list(self._watches):
                self._request_read(entry)

    # -- watches ---------------------------------------------------------------------------
    async def watch_data(self, path: str, callback: DataCallback) -> Watch:
        return await self._watch(_WatchEntry(self, path, False, callback))

    async def watch_children(self, path: str, callback: ChildrenCallback) -> Watch:
        return await self._watch(_WatchEntry(self, path, True, callback))

    async def _watch(self, entry: _WatchEntry) -> Watch:
        self._check_running()
        self._watches.add(entry)  # a CONNECTED during the first read asks for another one
        entry.reading = True
        notified = entry.notified
        try:
            value = await self._read(entry)
        except BaseException:
            entry.cancel()
            raise
        finally:
            entry.reading = False
        delivered = trio.Event()
        self._waiters.add(delivered)
        entry.last = value
        entry.answered = notified

        def first() -> None:
            self._waiters.discard(delivered)
            delivered.set()
            self._deliver(entry, value)

        self._post(first)
        if entry.again:
            self._request_read(entry)
        await delivered.wait()
        self._check_running()
        return entry

    async def _read(self, entry: _WatchEntry) -> DataValue | ChildrenValue:
        if entry.children:
            return await self._read_children(entry)
        return await self._read_data(entry)

    def _request_read(self, entry: _WatchEntry) -> None:
        if entry.cancelled or self._phase != "running" or self._nursery is None:
            return
        if entry.reading:
            entry.again = True
            return
        entry.reading = True
        self._nursery.start_soon(self._read_loop, entry)

    async def _read_loop(self, entry: _WatchEntry) -> None:
        try:
            while not entry.cancelled and self._phase == "running":
                entry.again = False
                notified = entry.notified
                try:
                    value = await self._read(entry)
                except CoordinationError:
                    if not self._connected:
                        return  # the next CONNECTED re-reads
                    await trio.sleep(RETRY_S)
                    continue
                if notified > entry.answered or value != entry.last:
                    entry.answered = notified
                    entry.last = value
                    self._post(partial(self._deliver, entry, value))
                if not entry.again:
                    return
        finally:
            entry.reading = False

    def _deliver(self, entry: _WatchEntry, value: DataValue | ChildrenValue) -> None:
        if entry.cancelled or self._phase != "running":
            return
        if entry.children:
            cast(ChildrenCallback, entry.callback)(cast(ChildrenValue, value))
        elif value is None:
            cast(DataCallback, entry.callback)(None, None)
        else:
            data, stat = cast(tuple[bytes, Stat], value)
            cast(DataCallback, entry.callback)(data, stat)
