"""Combining state batches (`wirebroker.share_coordinator.batches.combine`): Kafka's
PersisterStateBatchCombiner outcomes (pruning at the start offset, priority by delivery count
then state, merging of equal neighbours)."""

from __future__ import annotations

import itertools

from wirebroker.share_coordinator.batches import StateBatch as B
from wirebroker.share_coordinator.batches import combine

AVAILABLE, ACKED, ARCHIVED = 0, 2, 4


def test_empty_and_single() -> None:
    assert combine([], []) == []
    assert combine([B(0, 9, AVAILABLE, 1)], []) == [B(0, 9, AVAILABLE, 1)]


def test_prune_drops_and_cuts_at_the_start_offset() -> None:
    so_far = [B(0, 4, ACKED, 1), B(5, 9, AVAILABLE, 1), B(10, 14, ARCHIVED, 2)]
    assert combine(so_far, [], 7) == [B(7, 9, AVAILABLE, 1), B(10, 14, ARCHIVED, 2)]
    assert combine(so_far, [], -1) == so_far  # -1: no pruning


def test_same_information_merges_when_contiguous_or_overlapping() -> None:
    assert combine([B(0, 4, ACKED, 1)], [B(5, 9, ACKED, 1)]) == [B(0, 9, ACKED, 1)]
    assert combine([B(0, 6, ACKED, 1)], [B(3, 9, ACKED, 1)]) == [B(0, 9, ACKED, 1)]
    # contiguous with different information stays apart
    assert combine([B(0, 4, ACKED, 1)], [B(5, 9, AVAILABLE, 1)]) == [
        B(0, 4, ACKED, 1),
        B(5, 9, AVAILABLE, 1),
    ]


def test_overlap_takes_the_higher_delivery_count_then_state() -> None:
    # the new batch has a higher count: it wins where it overlaps
    assert combine([B(0, 9, AVAILABLE, 1)], [B(3, 5, AVAILABLE, 2)]) == [
        B(0, 2, AVAILABLE, 1),
        B(3, 5, AVAILABLE, 2),
        B(6, 9, AVAILABLE, 1),
    ]
    # same count, a more final state wins
    assert combine([B(0, 9, AVAILABLE, 1)], [B(0, 4, ACKED, 1)]) == [
        B(0, 4, ACKED, 1),
        B(5, 9, AVAILABLE, 1),
    ]
    # an older (lower priority) write changes nothing where it overlaps
    assert combine([B(0, 9, ARCHIVED, 3)], [B(2, 12, AVAILABLE, 1)]) == [
        B(0, 9, ARCHIVED, 3),
        B(10, 12, AVAILABLE, 1),
    ]


def test_result_is_sorted_and_disjoint() -> None:
    got = combine(
        [B(20, 29, ACKED, 1), B(0, 9, AVAILABLE, 1)],
        [B(5, 24, AVAILABLE, 2), B(40, 41, ARCHIVED, 1)],
    )
    assert got == [
        B(0, 4, AVAILABLE, 1),
        B(5, 24, AVAILABLE, 2),
        B(25, 29, ACKED, 1),
        B(40, 41, ARCHIVED, 1),
    ]
    assert all(a.last_offset < b.first_offset for a, b in itertools.pairwise(got))
