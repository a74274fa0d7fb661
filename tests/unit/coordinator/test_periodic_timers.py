"""`PeriodicTimers`: named rounds every interval of the clock, the first an interval after
the start; a round that is late runs once and is scheduled an interval after it ran."""

from __future__ import annotations

from wirebroker.coordinator.timers import PeriodicTimers


def test_before_start_nothing_is_due() -> None:
    timers = PeriodicTimers(a=100)
    assert timers.next_deadline() is None
    assert timers.due(10_000) == frozenset()


def test_rounds_come_an_interval_after_each_run() -> None:
    timers = PeriodicTimers(a=100, b=250)
    timers.start(1000)
    assert timers.next_deadline() == 1100
    assert timers.due(1099) == frozenset()
    assert timers.due(1100) == {"a"}
    assert timers.next_deadline() == 1200
    assert timers.due(1260) == {"a", "b"}  # both late: each once, then from now
    assert timers.next_deadline() == 1360
    assert timers.due(1360) == {"a"}
    assert timers.next_deadline() == 1460


def test_an_interval_of_zero_is_one_ms() -> None:
    timers = PeriodicTimers(a=0)
    timers.start(5)
    assert timers.next_deadline() == 6
    assert timers.due(6) == {"a"} and timers.next_deadline() == 7
