"""Replica placement against Kafka's AdminRackAwareTest vectors and its spreading promises."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wirebroker.metadata.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
)
from wirebroker.metadata.placement import (
    BrokerMetadata,
    assign_added_partitions,
    assign_replicas,
)

FIVE = [BrokerMetadata(i) for i in range(5)]
RACKS = {0: "r1", 1: "r3", 2: "r3", 3: "r2", 4: "r2", 5: "r1"}
RACKED = [BrokerMetadata(i, rack) for i, rack in RACKS.items()]


def test_rack_unaware_vector() -> None:
    got = assign_replicas(FIVE, 10, 3, fixed_start=0)
    assert got == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_rack_aware_vector() -> None:
    got = assign_replicas(list(reversed(RACKED)), 7, 3, fixed_start=0, start_partition=0)
    assert list(got.values()) == [
        [0, 3, 1],
        [3, 1, 5],
        [1, 5, 4],
        [5, 4, 2],
        [4, 2, 0],
        [2, 0, 3],
        [0, 4, 2],
    ]


def test_added_partitions_continue_the_pattern() -> None:
    whole = assign_replicas(FIVE, 10, 3, fixed_start=0)
    first = {p: whole[p] for p in range(4)}
    added = assign_added_partitions(FIVE, first[0], existing=4, added=6, replication_factor=3)
    assert {**first, **added} == whole


def test_bad_requests_are_refused_with_kafkas_errors() -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(FIVE, 1, 6)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(FIVE, 1, 0)
    with pytest.raises(InvalidPartitionsError):
        assign_replicas(FIVE, 0, 1)
    with pytest.raises(InvalidRequestError):
        assign_replicas([BrokerMetadata(0, "a"), BrokerMetadata(1)], 1, 1)


@given(
    n=st.integers(1, 9),
    partitions=st.integers(1, 60),
    rf_fraction=st.floats(0, 1),
    racks=st.integers(0, 4),
    seed=st.integers(0, 2**32),
)
def test_replicas_are_distinct_and_spread(
    n: int, partitions: int, rf_fraction: float, racks: int, seed: int
) -> None:
    rf = 1 + int(rf_fraction * (n - 1))
    brokers = [BrokerMetadata(i * 3, f"rack{i % racks}" if racks else None) for i in range(n)]
    got = assign_replicas(brokers, partitions, rf, rng=random.Random(seed))
    assert sorted(got) == list(range(partitions))
    for replicas in got.values():
        assert len(replicas) == rf == len(set(replicas))
    leaders = Counter(r[0] for r in got.values())
    assert all(partitions // n <= leaders[b.id] <= -(-partitions // n) for b in brokers)
    if racks:
        rack_of = {b.id: b.rack for b in brokers}
        distinct_racks = len(set(rack_of.values()))
        for replicas in got.values():
            assert len({rack_of[r] for r in replicas}) == min(rf, distinct_racks)
