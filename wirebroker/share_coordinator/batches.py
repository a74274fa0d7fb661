"""Combining share-partition state batches (pure): Kafka's `PersisterStateBatchCombiner` rule.

A state batch is an offset range [first_offset, last_offset] with a delivery state and a
delivery count. `combine(so_far, new, start_offset)` returns the non-overlapping, sorted
batches that describe the union of both lists:

- pruning: with `start_offset` != -1, batches ending before it are dropped and one that
  straddles it is cut to begin at it;
- overlaps: every offset takes the delivery information of the batch covering it with the
  highest priority, (delivery_count, delivery_state) compared as a pair -- a later delivery
  or a more final state wins, whichever list it came from (Kafka's ordering; so does a
  write that repeats older information: it changes nothing);
- merging: neighbouring ranges (overlapping or contiguous) with the same delivery
  information become one batch.

Written as an offset sweep over the batches' boundaries (Kafka merges pairs from a sorted set;
the outcome is the same per offset).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = ["StateBatch", "combine"]


class StateBatch(NamedTuple):
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    @property
    def priority(self) -> tuple[int, int]:
        return (self.delivery_count, self.delivery_state)


def _pruned(batches: Iterable[StateBatch], start_offset: int) -> list[StateBatch]:
    out = []
    for b in batches:
        if b.last_offset < b.first_offset:
            continue
        if start_offset != -1:
            if b.last_offset < start_offset:
                continue
            if b.first_offset < start_offset:
                b = b._replace(first_offset=start_offset)
        out.append(b)
    return out


def combine(
    so_far: Sequence[StateBatch], new: Sequence[StateBatch], start_offset: int = -1
) -> list[StateBatch]:
    """See the module docstring."""
    batches = _pruned([*so_far, *new], start_offset)
    if not batches:
        return []
    # Elementary segments: between consecutive boundaries, the covering batches do not change.
    bounds = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    by_start = sorted(batches, key=lambda b: b.first_offset)
    active: list[StateBatch] = []
    out: list[StateBatch] = []
    nxt = 0
    for lo, hi in itertools.pairwise(bounds):
        while nxt < len(by_start) and by_start[nxt].first_offset <= lo:
            active.append(by_start[nxt])
            nxt += 1
        active = [b for b in active if b.last_offset >= lo]
        if not active:
            continue
        best = max(active, key=lambda b: b.priority)
        seg = StateBatch(lo, hi - 1, best.delivery_state, best.delivery_count)
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_offset + 1 == seg.first_offset
            and last.priority == seg.priority
        ):
            out[-1] = last._replace(last_offset=seg.last_offset)
        else:
            out.append(seg)
    return out
