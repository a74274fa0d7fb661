"""Bounded concurrency for ZooKeeper round trips: the controller and the cluster member both
keep many requests in flight (reads of a batch of new topics, a controller pass's writes),
so one helper runs the jobs.

`each(items, job, limit=, catch=)` runs `job(item)` for every item with at most `limit`
running at once: that many workers share one iterator (a task per item would cost more than
a short job), so jobs start in item order. An exception of a `catch` type is collected and
the others go on; the collected failures are returned once every job has run (callers decide
which one to raise). Any other exception cancels the rest and propagates.

`each_or_raise` / `together_or_raise`: the same, for a caller that fails as a whole: once
every job has run, the first collected failure is raised (`raise_first`; `prefer`: the first
failure it accepts goes before any other, e.g. the controller's fencing failure).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sized
from typing import TypeVar

import trio

__all__ = ["each", "each_or_raise", "raise_first", "together", "together_or_raise"]

T = TypeVar("T")


async def each(
    items: Iterable[T],
    job: Callable[[T], Awaitable[object]],
    *,
    limit: int,
    catch: tuple[type[Exception], ...] = (Exception,),
) -> list[Exception]:
    """`job(item)` for every item, at most `limit` at once; returns the caught failures."""
    todo = iter(items)
    failures: list[Exception] = []

    async def worker() -> None:
        for item in todo:
            try:
                await job(item)
            except catch as exc:
                failures.append(exc)

    count = min(limit, len(items)) if isinstance(items, Sized) else limit
    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(worker)
    return failures


async def together(
    *jobs: Callable[[], Awaitable[None]], catch: tuple[type[Exception], ...] = (Exception,)
) -> list[Exception]:
    """Every job side by side; returns the caught failures once all have run."""
    return await each(jobs, lambda job: job(), limit=len(jobs), catch=catch)


def raise_first(
    failures: list[Exception], *, prefer: Callable[[Exception], bool] | None = None
) -> None:
    """Raise the first of the collected failures, if any: the first that `prefer` accepts,
    else the first."""
    preferred = [f for f in failures if prefer is not None and prefer(f)]
    if preferred or failures:
        raise (preferred or failures)[0]


async def each_or_raise(
    items: Iterable[T],
    job: Callable[[T], Awaitable[object]],
    *,
    limit: int,
    catch: tuple[type[Exception], ...] = (Exception,),
    prefer: Callable[[Exception], bool] | None = None,
) -> None:
    """`each`, then `raise_first` of its failures."""
    raise_first(await each(items, job, limit=limit, catch=catch), prefer=prefer)


async def together_or_raise(
    *jobs: Callable[[], Awaitable[None]],
    catch: tuple[type[Exception], ...] = (Exception,),
    prefer: Callable[[Exception], bool] | None = None,
) -> None:
    """`together`, then `raise_first` of its failures."""
    raise_first(await together(*jobs, catch=catch), prefer=prefer)
