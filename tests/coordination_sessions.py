"""Live `Coordination` sessions for a test (tests/unit/coordination, tests/integration's
contract test): `open_sessions(new, count)` is an async context manager that makes `count`
sessions with `new()`, starts each one's `run` in its own nursery (each start bounded by
`start_timeout_s`: a ZooKeeper that does not answer fails the test instead of hanging it),
yields them in order, and ends them all (cancelling their `run`s) on exit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import trio

from wirebroker.coordination.api import Coordination

__all__ = ["open_sessions"]

C = TypeVar("C", bound=Coordination)


@asynccontextmanager
async def open_sessions(
    new: Callable[[], C], count: int, *, start_timeout_s: float = 10.0
) -> AsyncIterator[list[C]]:
    async with trio.open_nursery() as nursery:
        clients = [new() for _ in range(count)]
        for client in clients:
            with trio.fail_after(start_timeout_s):
                await nursery.start(client.run)
        yield clients
        nursery.cancel_scope.cancel()
