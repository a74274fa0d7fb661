"""The share coordinator's pure core: Kafka 4.4's `ShareCoordinatorShard` rules.

One core serves every `__share_group_state` partition this broker leads (`partitions`: the
loaded ones, each a `ShardState`; `loading`: being loaded). Each call handles one share
partition key and returns an `Outcome`: the error (NONE on success) with Kafka's message, the
records to append (key, value) and, for reads, the state. Nothing is changed by a call: the
runtime appends the records and then `apply`s them (the same fold as a load), as Kafka's
runtime replays what it writes.

Checks, in Kafka's order (the service's first: an unknown or loading partition):

    partition of the key     not loaded: NOT_COORDINATOR; loading: COORDINATOR_LOAD_IN_PROGRESS
    initialize               partition < 0, state epoch < 0: INVALID_REQUEST; a recorded state
                             epoch above the request's: FENCED_STATE_EPOCH; topic id or
                             partition unknown: UNKNOWN_TOPIC_OR_PARTITION
    write                    partition < 0, leader epoch < 0, state epoch < 0: INVALID_REQUEST;
                             no state: INVALID_REQUEST ("Write operation on uninitialized ...");
                             recorded leader epoch above the request's: FENCED_LEADER_EPOCH;
                             recorded state epoch above: FENCED_STATE_EPOCH; unknown topic or
                             partition: UNKNOWN_TOPIC_OR_PARTITION
    read                     partition < 0, leader epoch < 0: INVALID_REQUEST; no state:
                             INVALID_REQUEST ("Read operation on uninitialized ..."); recorded
                             leader epoch above: FENCED_LEADER_EPOCH; unknown topic/partition
    read summary             partition < 0: INVALID_REQUEST; unknown topic/partition; no state:
                             NONE with start offset -1, epochs 0 (Kafka's uninitialised answer)
    delete                   partition < 0: INVALID_REQUEST; unknown topic/partition; no state:
                             NONE, nothing written

Records (Kafka's `generate*Record`):

    initialize   a ShareSnapshot: snapshot epoch (previous + 1, or 0), the request's state
                 epoch and start offset, leader epoch 0, no batches, delivery-complete count
                 -1 for start offset -1 else 0, created and written now
    write        a ShareUpdate (the state's leader epoch: only reads move it; the request's
                 batches combined among themselves, start offset max(request, state)), or every
                 `updates_per_snapshot` updates a ShareSnapshot of the whole state (snapshot
                 epoch + 1, the state's state epoch)
    read         with a leader epoch other than the recorded one, the same record as a write
                 with no batches and that leader epoch (KIP-932: a new leader reads first)
    delete       a ShareSnapshot tombstone
    topics gone  (Kafka's on-topics-deleted) a ShareSnapshot tombstone of every state of the
                 deleted topics
    cold         (a timer) a ShareSnapshot of every state whose last snapshot is
                 `cold_interval_ms` old or older: the state as it is, snapshot epoch + 1,
                 written now (Kafka's snapshotColdPartitions; it lets pruning move on), unless
                 every state was already snapshotted so
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from protocol.errors import ErrorCode
from protocol.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    ShareStateKey,
    ShareUpdateValue,
    encode_key,
    encode_snapshot,
    encode_update,
)
from wirebroker.share_coordinator.batches import StateBatch, combine
from wirebroker.share_coordinator.keys import SharePartitionKey
from wirebroker.share_coordinator.state import ShardState, ShareState, to_records

__all__ = ["MESSAGES", "Outcome", "ShareCoordinatorCore", "WriteRequest"]

Record = tuple[bytes, bytes | None]

#: Kafka's texts (`Errors.X.message()` and ShareCoordinatorShard's exceptions).
MESSAGES = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.FENCED_LEADER_EPOCH: (
        "The leader epoch in the request is older than the epoch on the broker."
    ),
    ErrorCode.FENCED_STATE_EPOCH: (
        "The coordinator rejected the request because the state epoch did not match."
    ),
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: (
        "The coordinator is loading and hence can't process requests."
    ),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.UNKNOWN: "The server experienced an unexpected error when processing the request.",
}
NEGATIVE_PARTITION = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."


@dataclass(frozen=True)
class Outcome:
    """One key's answer: `error` (+ `message`), the `records` to append first, the `state`
    read (reads and summaries; None when there is none)."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    records: tuple[Record, ...] = ()
    state: ShareState | None = None
    partition: int = -1  # the `__share_group_state` partition the records go to

    @staticmethod
    def failed(error: ErrorCode, message: str | None = None) -> Outcome:
        return Outcome(error, MESSAGES.get(error) if message is None else message)


@dataclass(frozen=True)
class WriteRequest:
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1


def _order(key: SharePartitionKey) -> tuple[str, str, int]:
    return key.group_id, str(key.topic_id), key.partition


def _tombstone(key: SharePartitionKey) -> Record:
    k = ShareStateKey(SHARE_SNAPSHOT, key.group_id, key.topic_id, key.partition)
    return encode_key(k), None


def _snapshot(key: SharePartitionKey, state: ShareState) -> Record:
    k = ShareStateKey(SHARE_SNAPSHOT, key.group_id, key.topic_id, key.partition)
    return encode_key(k), encode_snapshot(state.snapshot_value())


class ShareCoordinatorCore:
    """See the module docstring. `partition_count(topic_id)`: the topic's partition count
    (None: no such topic), Kafka's metadata image check."""

    def __init__(
        self,
        num_partitions: int,
        updates_per_snapshot: int,
        partition_count: Callable[[uuid.UUID], int | None],
    ) -> None:
        self.num_partitions = num_partitions
        self.updates_per_snapshot = updates_per_snapshot
        self.partition_count = partition_count
        self.partitions: dict[int, ShardState] = {}
        self.loading: set[int] = set()

    # == ownership =========================================================================
    def partition_for(self, key: SharePartitionKey) -> int:
        return key.state_partition(self.num_partitions)

    def new_shard(self) -> ShardState:
        return ShardState(self.updates_per_snapshot)

    def begin_loading(self, partition: int) -> None:
        self.partitions.pop(partition, None)
        self.loading.add(partition)

    def complete_loading(self, partition: int, shard: ShardState) -> None:
        self.loading.discard(partition)
        self.partitions[partition] = shard

    def unload(self, partitions: Iterable[int]) -> None:
        for p in partitions:
            self.loading.discard(p)
            self.partitions.pop(p, None)

    def apply(self, partition: int, records: Iterable[Record], base_offset: int = -1) -> None:
        """Fold appended records (the first at `base_offset`, -1: unknown) into `partition`'s
        state (dropped when it is not loaded)."""
        shard = self.partitions.get(partition)
        if shard is not None:
            for i, (key, value) in enumerate(records):
                shard.replay(key, value, -1 if base_offset < 0 else base_offset + i)

    def _shard(self, key: SharePartitionKey) -> tuple[int, ShardState | Outcome]:
        p = self.partition_for(key)
        shard = self.partitions.get(p)
        if shard is not None:
            return p, shard
        if p in self.loading:
            return p, Outcome.failed(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return p, Outcome.failed(ErrorCode.NOT_COORDINATOR)

    def _unknown_partition(self, key: SharePartitionKey) -> Outcome | None:
        count = self.partition_count(key.topic_id)
        if count is None or key.partition >= count:
            return Outcome.failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return None

    # == the five state operations =========================================================
    def initialize(
        self, key: SharePartitionKey, state_epoch: int, start_offset: int, now_ms: int
    ) -> Outcome:
        p, shard = self._shard(key)
        if isinstance(shard, Outcome):
            return shard
        if key.partition < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        if state_epoch < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_STATE_EPOCH)
        if shard.state_epochs.get(key, state_epoch) > state_epoch:
            return Outcome.failed(ErrorCode.FENCED_STATE_EPOCH)
        unknown = self._unknown_partition(key)
        if unknown is not None:
            return unknown
        current = shard.states.get(key)
        state = ShareState(
            snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
            state_epoch=state_epoch,
            leader_epoch=0,
            start_offset=start_offset,
            delivery_complete_count=-1 if start_offset == -1 else 0,
            create_ms=now_ms,
            write_ms=now_ms,
        )
        return Outcome(records=(_snapshot(key, state),), partition=p)

    def write(self, key: SharePartitionKey, request: WriteRequest, now_ms: int) -> Outcome:
        p, shard = self._shard(key)
        if isinstance(shard, Outcome):
            return shard
        if key.partition < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        if request.leader_epoch < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH)
        if request.state_epoch < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_STATE_EPOCH)
        if key not in shard.states:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, WRITE_UNINITIALIZED)
        if shard.leader_epochs.get(key, request.leader_epoch) > request.leader_epoch:
            return Outcome.failed(ErrorCode.FENCED_LEADER_EPOCH)
        if shard.state_epochs.get(key, request.state_epoch) > request.state_epoch:
            return Outcome.failed(ErrorCode.FENCED_STATE_EPOCH)
        unknown = self._unknown_partition(key)
        if unknown is not None:
            return unknown
        record = self._state_record(shard, key, request, now_ms, update_leader_epoch=False)
        return Outcome(records=(record,), partition=p)

    def read(self, key: SharePartitionKey, leader_epoch: int, now_ms: int) -> Outcome:
        p, shard = self._shard(key)
        if isinstance(shard, Outcome):
            return shard
        if key.partition < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        if leader_epoch < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH)
        state = shard.states.get(key)
        if state is None:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, READ_UNINITIALIZED)
        if shard.leader_epochs.get(key, leader_epoch) > leader_epoch:
            return Outcome.failed(ErrorCode.FENCED_LEADER_EPOCH)
        unknown = self._unknown_partition(key)
        if unknown is not None:
            return unknown
        if shard.leader_epochs.get(key) == leader_epoch:
            return Outcome(state=state, partition=p)
        request = WriteRequest(
            state_epoch=state.state_epoch,
            leader_epoch=leader_epoch,
            start_offset=state.start_offset,
            delivery_complete_count=state.delivery_complete_count,
        )
        record = self._state_record(shard, key, request, now_ms, update_leader_epoch=True)
        return Outcome(records=(record,), state=state, partition=p)

    def read_summary(self, key: SharePartitionKey) -> Outcome:
        p, shard = self._shard(key)
        if isinstance(shard, Outcome):
            return shard
        if key.partition < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        unknown = self._unknown_partition(key)
        if unknown is not None:
            return unknown
        state = shard.states.get(key)
        if state is None:
            state = ShareState(snapshot_epoch=0, state_epoch=0, leader_epoch=0, start_offset=-1)
        return Outcome(state=state, partition=p)

    def delete(self, key: SharePartitionKey) -> Outcome:
        p, shard = self._shard(key)
        if isinstance(shard, Outcome):
            return shard
        if key.partition < 0:
            return Outcome.failed(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
        unknown = self._unknown_partition(key)
        if unknown is not None:
            return unknown
        if key not in shard.states:
            return Outcome(partition=p)
        return Outcome(records=(_tombstone(key),), partition=p)

    def topics_deleted(self, topic_ids: set[uuid.UUID]) -> dict[int, list[Record]]:
        """Kafka's `maybeCleanupShareState`: a ShareSnapshot tombstone of every state of the
        deleted topics, per loaded partition holding some."""
        out: dict[int, list[Record]] = {}
        for p, shard in self.partitions.items():
            records = [
                _tombstone(k) for k in sorted(shard.states, key=_order) if k.topic_id in topic_ids
            ]
            if records:
                out[p] = records
        return out

    def cold_snapshots(self, now_ms: int, cold_interval_ms: int) -> dict[int, list[Record]]:
        """The cold snapshots to append, per loaded partition (see the module docstring)."""
        out: dict[int, list[Record]] = {}
        for p, shard in self.partitions.items():
            states = shard.states
            if all(s.create_ms != s.write_ms for s in states.values()):
                continue
            records = [
                _snapshot(key, replace(s, snapshot_epoch=s.snapshot_epoch + 1, write_ms=now_ms))
                for key, s in states.items()
                if now_ms - s.write_ms >= cold_interval_ms
            ]
            if records:
                out[p] = records
        return out

    # == records ===========================================================================
    def _state_record(
        self,
        shard: ShardState,
        key: SharePartitionKey,
        request: WriteRequest,
        now_ms: int,
        *,
        update_leader_epoch: bool,
    ) -> Record:
        """A write's record: a ShareUpdate, or a ShareSnapshot every `updates_per_snapshot`."""
        current = shard.states[key]
        leader_epoch = request.leader_epoch if update_leader_epoch else current.leader_epoch
        start = max(request.start_offset, current.start_offset)
        if request.start_offset == current.start_offset:
            dcc = max(request.delivery_complete_count, current.delivery_complete_count)
        elif request.start_offset < current.start_offset:
            dcc = current.delivery_complete_count
        else:
            dcc = request.delivery_complete_count
        if shard.update_counts.get(key, 0) >= self.updates_per_snapshot:
            state = ShareState(
                snapshot_epoch=current.snapshot_epoch + 1,
                state_epoch=current.state_epoch,
                leader_epoch=leader_epoch,
                start_offset=start,
                batches=tuple(combine(current.batches, request.batches, start)),
                delivery_complete_count=dcc,
                create_ms=now_ms,
                write_ms=now_ms,
            )
            return _snapshot(key, state)
        k = ShareStateKey(SHARE_UPDATE, key.group_id, key.topic_id, key.partition)
        value = ShareUpdateValue(
            snapshot_epoch=current.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=start,
            state_batches=to_records(tuple(combine((), request.batches, start))),
            delivery_complete_count=dcc,
        )
        return encode_key(k), encode_update(value)
