"""Periodic rounds of a coordinator (pure: takes `now_ms`, never awaits).

`PeriodicTimers(name=interval_ms, ...)`: each named round runs every `interval_ms` of the
coordinator's clock (at least 1), the first one an interval after `start(now_ms)`. The
coordinator's `CoordinatorShard.next_deadline` is `next_deadline()`; its `fire_timers(now)`
asks `due(now)` which rounds to run, each then scheduled an interval after `now`. Before
`start`, there is no deadline and nothing is due.
"""

from __future__ import annotations

__all__ = ["PeriodicTimers"]


class PeriodicTimers:
    """Named periodic rounds (see the module docstring)."""

    def __init__(self, **intervals_ms: int) -> None:
        self.intervals_ms = {name: max(ms, 1) for name, ms in intervals_ms.items()}
        self._next: dict[str, int] = {}

    def start(self, now_ms: int) -> None:
        self._next = {name: now_ms + ms for name, ms in self.intervals_ms.items()}

    def next_deadline(self) -> int | None:
        """The clock's ms of the next round (None: not started)."""
        return min(self._next.values(), default=None)

    def due(self, now_ms: int) -> frozenset[str]:
        """The rounds due at `now_ms`, each scheduled again an interval after it."""
        due = frozenset(name for name, at in self._next.items() if now_ms >= at)
        for name in due:
            self._next[name] = now_ms + self.intervals_ms[name]
        return due
