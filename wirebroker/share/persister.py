"""The share-group state persister (KIP-932): where a share partition keeps its state.

The interface mirrors Kafka's `Persister` (server/share/persister): the share partition on
the partition leader reads its state once (`read_state`, fenced by the leader epoch) and
writes each change (`write_state`); the group coordinator initialises the state of newly
subscribed partitions (`initialize_state`), reads summaries for the admin APIs
(`read_summary`) and deletes them with the group (`delete_state`). The broker's is the share
coordinator's (`wirebroker.share_coordinator.persister`, over `__share_group_state`);
`InMemoryPersister` keeps the states in this process: the one stand-in in memory (unit tests,
a group coordinator runtime or `Services` built without the share coordinator's).

A write carries the share-partition start offset and the *changed* in-flight ranges, as
Kafka's WriteShareGroupState does; the persister combines them with what it holds (a range
written replaces the offsets it covers; everything below the start offset is dropped), as
Kafka's share coordinator does (PersisterStateBatchCombiner). Errors are the state RPCs':
UNKNOWN_TOPIC_OR_PARTITION for a state never initialised, FENCED_STATE_EPOCH for a write or
initialisation with an older state epoch, FENCED_LEADER_EPOCH for a read or write with an
older leader epoch than the last one seen, and (a remote persister) NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS.

Pure module: no trio; `InMemoryPersister`'s methods are `async` only to have the interface's
shape (they never await).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Protocol

from protocol.errors import ErrorCode

__all__ = [
    "InMemoryPersister",
    "PartitionState",
    "Persister",
    "StateBatch",
    "combine_batches",
]


@dataclass(frozen=True)
class StateBatch:
    """An in-flight range of a share partition."""

    first_offset: int
    last_offset: int
    #: Kafka's RecordState ids: 0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED (the persisted ones)
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True)
class PartitionState:
    state_epoch: int
    #: -1: not initialised yet (the share partition uses share.auto.offset.reset)
    start_offset: int
    leader_epoch: int
    batches: tuple[StateBatch, ...]
    #: read_summary only (ReadShareGroupStateSummary v1's delivery-complete count, for the
    #: share group offsets lag; -1: unknown)
    delivery_complete_count: int = -1


class Persister(Protocol):
    async def initialize_state(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        state_epoch: int,
        start_offset: int,
    ) -> ErrorCode: ...

    async def read_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> PartitionState | ErrorCode: ...

    async def write_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state: PartitionState
    ) -> ErrorCode: ...

    async def read_summary(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> PartitionState | ErrorCode: ...

    async def delete_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ErrorCode: ...


def combine_batches(
    old: tuple[StateBatch, ...], new: tuple[StateBatch, ...], start_offset: int
) -> tuple[StateBatch, ...]:
    """`old` overlaid with `new` (a new range replaces the offsets it covers), without the
    offsets below `start_offset`, sorted, adjacent ranges of one state and count merged."""
    pieces: list[StateBatch] = []
    for batch in old:
        rest = [batch]
        for cover in new:
            rest = [part for piece in rest for part in _minus(piece, cover)]
        pieces.extend(rest)
    pieces.extend(new)
    out: list[StateBatch] = []
    for batch in sorted(pieces, key=lambda b: b.first_offset):
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset < start_offset:
            batch = replace(batch, first_offset=start_offset)
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_offset + 1 == batch.first_offset
            and (last.delivery_state, last.delivery_count)
            == (batch.delivery_state, batch.delivery_count)
        ):
            out[-1] = replace(last, last_offset=batch.last_offset)
        else:
            out.append(batch)
    return tuple(out)


def _minus(batch: StateBatch, cover: StateBatch) -> list[StateBatch]:
    """The parts of `batch` outside `cover`."""
    if cover.last_offset < batch.first_offset or cover.first_offset > batch.last_offset:
        return [batch]
    out = []
    if batch.first_offset < cover.first_offset:
        out.append(replace(batch, last_offset=cover.first_offset - 1))
    if batch.last_offset > cover.last_offset:
        out.append(replace(batch, first_offset=cover.last_offset + 1))
    return out


_Key = tuple[str, uuid.UUID, int]


class InMemoryPersister:
    """The `Persister` in this process's memory (lost on restart): the stand-in where no
    share coordinator runs. Fencing and errors as the state RPCs give them (module
    docstring)."""

    def __init__(self) -> None:
        self._states: dict[_Key, PartitionState] = {}

    def states(self) -> dict[_Key, PartitionState]:
        """A copy of every state held (tests, the admin view)."""
        return dict(self._states)

    async def initialize_state(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        state_epoch: int,
        start_offset: int,
    ) -> ErrorCode:
        key = (group_id, topic_id, partition)
        held = self._states.get(key)
        if held is not None and state_epoch < held.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        self._states[key] = PartitionState(state_epoch, start_offset, -1, ())
        return ErrorCode.NONE

    async def read_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> PartitionState | ErrorCode:
        key = (group_id, topic_id, partition)
        held = self._states.get(key)
        if held is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if leader_epoch < held.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        held = replace(held, leader_epoch=leader_epoch)
        self._states[key] = held
        return held

    async def write_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state: PartitionState
    ) -> ErrorCode:
        key = (group_id, topic_id, partition)
        held = self._states.get(key)
        if held is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if state.state_epoch < held.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        if state.leader_epoch < held.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        start = held.start_offset if state.start_offset < 0 else state.start_offset
        self._states[key] = PartitionState(
            state_epoch=state.state_epoch,
            start_offset=start,
            leader_epoch=max(state.leader_epoch, held.leader_epoch),
            batches=combine_batches(held.batches, state.batches, start),
        )
        return ErrorCode.NONE

    async def read_summary(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> PartitionState | ErrorCode:
        held = self._states.get((group_id, topic_id, partition))
        if held is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return replace(held, batches=())

    async def delete_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ErrorCode:
        self._states.pop((group_id, topic_id, partition), None)
        return ErrorCode.NONE
