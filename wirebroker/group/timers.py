"""A keyed timer wheel for the pure coordinator core (no clock of its own).

Like Kafka's `CoordinatorTimer`: `schedule(key, deadline, action)` replaces any timer with
the same key, `cancel(key)` drops it. The runtime asks `next_deadline()` and calls the
core's `tick(now_ms)`, which pops due timers one at a time (earliest first, then in
scheduling order) with `pop_due(now_ms)`; an action may schedule new timers, including
ones already due, which the same tick then runs.

Implementation: a heap of (deadline, seq, key) plus a dict key -> (deadline, seq, action);
heap entries whose seq no longer matches the dict are stale and skipped lazily.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

A = TypeVar("A")


class Timers(Generic[A]):
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int, A]] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def schedule(self, key: Hashable, deadline_ms: int, action: A) -> None:
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq, action)
        heapq.heappush(self._heap, (deadline_ms, seq, key))
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._live):
            self._compact()

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def cancel_where(self, predicate: Callable[[Hashable], bool]) -> None:
        for key in [k for k in self._live if predicate(k)]:
            del self._live[key]

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> tuple[Hashable, A] | None:
        """Remove and return the earliest timer due at `now_ms`, or None."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        _, _, action = self._live.pop(key)
        return key, action

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            _, seq, key = heap[0]
            live = self._live.get(key)
            if live is not None and live[1] == seq:
                return
            heapq.heappop(heap)

    def _compact(self) -> None:
        self._heap = [(d, s, k) for k, (d, s, _) in self._live.items()]
        heapq.heapify(self._heap)
