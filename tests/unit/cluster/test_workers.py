"""The cluster's one bounded worker helper (wirebroker.cluster.workers): at most `limit` jobs
at once, in item order; caught failures collected until every job has run, then the first
(or the first `prefer` accepts) raised by the *_or_raise forms; other exceptions cancel.
(The sleeps run on trio's autojump clock: no real time passes.)"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from wirebroker.cluster import workers


class Boom(Exception):
    pass


class Fenced(Exception):
    pass


async def test_each_keeps_at_most_limit_jobs_running_and_starts_them_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    running = 0
    peak = 0
    started: list[int] = []

    async def job(item: int) -> None:
        nonlocal running, peak
        started.append(item)
        running += 1
        peak = max(peak, running)
        await trio.sleep(0.01)
        running -= 1

    assert await workers.each(range(10), job, limit=3) == []
    assert (peak, started) == (3, list(range(10)))


async def test_caught_failures_are_collected_after_every_job_ran(
    autojump_clock: trio.testing.MockClock,
) -> None:
    done: list[int] = []

    async def job(item: int) -> None:
        if item % 2:
            raise Boom(item)
        await trio.sleep(0.01)
        done.append(item)

    failures = await workers.each([0, 1, 2, 3, 4], job, limit=2)
    assert sorted(done) == [0, 2, 4]
    assert [f.args[0] for f in failures] == [1, 3]


async def test_an_uncaught_exception_cancels_the_other_jobs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    finished: list[int] = []

    async def job(item: int) -> None:
        if item == 0:
            raise KeyError(item)
        await trio.sleep(1)
        finished.append(item)

    with pytest.raises(BaseExceptionGroup) as info:
        await workers.each([0, 1, 2], job, limit=3, catch=(Boom,))
    assert info.group_contains(KeyError)
    assert finished == []


async def test_each_or_raise_raises_the_first_failure_once_all_ran() -> None:
    done: list[int] = []

    async def job(item: int) -> None:
        if item in (1, 2):
            raise Boom(item)
        done.append(item)

    with pytest.raises(Boom) as info:
        await workers.each_or_raise([0, 1, 2, 3], job, limit=1)
    assert info.value.args == (1,)
    assert done == [0, 3]


async def test_prefer_puts_the_preferred_failure_first() -> None:
    async def boom() -> None:
        raise Boom()

    async def fenced() -> None:
        raise Fenced()

    with pytest.raises(Fenced):
        await workers.together_or_raise(boom, fenced, prefer=lambda f: isinstance(f, Fenced))
    with pytest.raises(Boom):
        await workers.together_or_raise(boom, fenced)
    workers.raise_first([])  # nothing failed: nothing raised
