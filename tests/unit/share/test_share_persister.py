"""The in-memory share-state persister (wirebroker.share.persister): errors and fencing as the
share coordinator's state RPCs give them, and how written ranges combine."""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from wirebroker.share.persister import (
    InMemoryPersister,
    PartitionState,
    StateBatch,
    combine_batches,
)

T = uuid.UUID(int=1)


async def test_read_of_a_state_never_initialised() -> None:
    p = InMemoryPersister()
    assert await p.read_state("g", T, 0, 0) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert await p.read_summary("g", T, 0, 0) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    state = PartitionState(0, 0, 0, ())
    assert await p.write_state("g", T, 0, state) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_initialize_read_write_and_fencing() -> None:
    p = InMemoryPersister()
    assert await p.initialize_state("g", T, 0, 1, -1) is ErrorCode.NONE
    assert await p.read_state("g", T, 0, 3) == PartitionState(1, -1, 3, ())
    assert await p.read_state("g", T, 0, 2) is ErrorCode.FENCED_LEADER_EPOCH
    batch = StateBatch(5, 9, 2, 1)
    assert await p.write_state("g", T, 0, PartitionState(1, 5, 3, (batch,))) is ErrorCode.NONE
    assert await p.write_state("g", T, 0, PartitionState(0, 5, 3, ())) is (
        ErrorCode.FENCED_STATE_EPOCH
    )
    assert await p.write_state("g", T, 0, PartitionState(1, 5, 2, ())) is (
        ErrorCode.FENCED_LEADER_EPOCH
    )
    assert await p.read_summary("g", T, 0, 3) == PartitionState(1, 5, 3, ())
    assert await p.initialize_state("g", T, 0, 0, 0) is ErrorCode.FENCED_STATE_EPOCH
    assert await p.delete_state("g", T, 0) is ErrorCode.NONE
    assert await p.read_state("g", T, 0, 3) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_writes_combine_with_what_is_held() -> None:
    p = InMemoryPersister()
    await p.initialize_state("g", T, 0, 0, 0)
    await p.write_state("g", T, 0, PartitionState(0, 0, 0, (StateBatch(0, 9, 0, 1),)))
    await p.write_state("g", T, 0, PartitionState(0, 3, 0, (StateBatch(5, 6, 2, 1),)))
    got = await p.read_state("g", T, 0, 0)
    assert isinstance(got, PartitionState)
    assert got.start_offset == 3
    assert got.batches == (StateBatch(3, 4, 0, 1), StateBatch(5, 6, 2, 1), StateBatch(7, 9, 0, 1))


def test_combine_merges_adjacent_equal_ranges() -> None:
    old = (StateBatch(0, 4, 0, 1), StateBatch(5, 9, 0, 2))
    new = (StateBatch(5, 9, 0, 1),)
    assert combine_batches(old, new, 0) == (StateBatch(0, 9, 0, 1),)
    assert combine_batches(old, (), 7) == (StateBatch(7, 9, 0, 2),)
