"""One `__share_group_state` partition's share-partition states and their fold (pure).

`ShardState` is Kafka's `ShareCoordinatorShard` maps for one partition: per share-partition
key its `ShareState` (the latest snapshot with the updates since folded in), the highest
leader epoch and state epoch seen, and the number of updates since the last snapshot.
`replay(key, value)` folds one record, at load and after each append:

    ShareSnapshot          the whole state: replaces it; leader and state epochs only rise;
                           the update count restarts at 0 once it had reached the limit
    ShareSnapshot, null    (a tombstone, DeleteShareGroupState) the key is forgotten
    ShareUpdate            folded into the state: start offset and leader epoch when not -1,
                           its batches combined with the state's (`batches.combine`, pruned
                           at the new start offset), its delivery-complete count as written;
                           the leader epoch only rises; one more update since the snapshot
                           (the first update of a key without a snapshot becomes its state)

Records whose type is unknown are skipped (Kafka's replay ignores them).

Pruning (Kafka's ShareCoordinatorOffsetsManager): given each record's log offset, the fold keeps
the offset of every key's latest snapshot; `redundant_offset()` is the first offset still
needed -- the oldest of those snapshots (a key's state is rebuilt from its latest snapshot on),
or past the last record when no key has state -- and every record below it may be deleted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from protocol.share_state_records import (
    SHARE_SNAPSHOT,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatchRecord,
    decode_key,
    decode_snapshot,
    decode_update,
)
from wirebroker.share_coordinator.batches import StateBatch, combine
from wirebroker.share_coordinator.keys import SharePartitionKey

__all__ = ["ShardState", "ShareState", "to_records"]


@dataclass(frozen=True)
class ShareState:
    """Kafka's `ShareGroupOffset`: one share partition's persisted state."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1
    create_ms: int = 0
    write_ms: int = 0

    def snapshot_value(self) -> ShareSnapshotValue:
        return ShareSnapshotValue(
            snapshot_epoch=self.snapshot_epoch,
            state_epoch=self.state_epoch,
            leader_epoch=self.leader_epoch,
            start_offset=self.start_offset,
            create_timestamp=self.create_ms,
            write_timestamp=self.write_ms,
            state_batches=to_records(self.batches),
            delivery_complete_count=self.delivery_complete_count,
        )


def to_records(batches: tuple[StateBatch, ...]) -> tuple[StateBatchRecord, ...]:
    return tuple(StateBatchRecord(*b) for b in batches)


def _batches(records: tuple[StateBatchRecord, ...]) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(r.first_offset, r.last_offset, r.delivery_state, r.delivery_count)
        for r in records
    )


@dataclass
class ShardState:
    """See the module docstring. `updates_per_snapshot`: when an update count restarts."""

    updates_per_snapshot: int
    states: dict[SharePartitionKey, ShareState] = field(default_factory=dict)
    leader_epochs: dict[SharePartitionKey, int] = field(default_factory=dict)
    state_epochs: dict[SharePartitionKey, int] = field(default_factory=dict)
    update_counts: dict[SharePartitionKey, int] = field(default_factory=dict)
    #: the log offset of each key's latest snapshot, and of the last record replayed
    snapshot_offsets: dict[SharePartitionKey, int] = field(default_factory=dict)
    last_offset: int = -1

    def replay(self, key_bytes: bytes, value: bytes | None, offset: int = -1) -> None:
        """Fold one record (`offset`: its log offset, -1 when unknown)."""
        self.last_offset = max(self.last_offset, offset)
        key = decode_key(key_bytes)
        if key is None:
            return
        spk = SharePartitionKey(key.group_id, key.topic_id, key.partition)
        if key.record_type == SHARE_SNAPSHOT:
            if value is None:
                self.forget(spk)
                self.snapshot_offsets.pop(spk, None)
            else:
                self.replay_snapshot(spk, decode_snapshot(value))
                if offset >= 0:
                    self.snapshot_offsets[spk] = offset
        elif value is not None:
            self.replay_update(spk, decode_update(value))

    def redundant_offset(self) -> int | None:
        """Records below this offset are no longer needed (None: nothing known)."""
        if self.snapshot_offsets:
            return min(self.snapshot_offsets.values())
        return None if self.last_offset < 0 else self.last_offset + 1

    def forget(self, key: SharePartitionKey) -> None:
        self.states.pop(key, None)
        self.leader_epochs.pop(key, None)
        self.state_epochs.pop(key, None)
        self.update_counts.pop(key, None)

    def replay_snapshot(self, key: SharePartitionKey, value: ShareSnapshotValue) -> None:
        self._raise(self.leader_epochs, key, value.leader_epoch)
        self._raise(self.state_epochs, key, value.state_epoch)
        self.states[key] = ShareState(
            snapshot_epoch=value.snapshot_epoch,
            state_epoch=value.state_epoch,
            leader_epoch=value.leader_epoch,
            start_offset=value.start_offset,
            batches=_batches(value.state_batches),
            delivery_complete_count=value.delivery_complete_count,
            create_ms=value.create_timestamp,
            write_ms=value.write_timestamp,
        )
        if self.update_counts.get(key, 0) >= self.updates_per_snapshot:
            self.update_counts[key] = 0

    def replay_update(self, key: SharePartitionKey, value: ShareUpdateValue) -> None:
        self._raise(self.leader_epochs, key, value.leader_epoch)
        current = self.states.get(key)
        new_batches = _batches(value.state_batches)
        if current is None:
            self.states[key] = ShareState(
                snapshot_epoch=value.snapshot_epoch,
                state_epoch=0,
                leader_epoch=value.leader_epoch,
                start_offset=value.start_offset,
                batches=new_batches,
                delivery_complete_count=value.delivery_complete_count,
            )
            self.update_counts[key] = 0
            return
        start = current.start_offset if value.start_offset == -1 else value.start_offset
        self.states[key] = dataclasses.replace(
            current,
            start_offset=start,
            leader_epoch=current.leader_epoch if value.leader_epoch == -1 else value.leader_epoch,
            batches=tuple(combine(current.batches, new_batches, start)),
            delivery_complete_count=value.delivery_complete_count,
        )
        self.update_counts[key] = self.update_counts.get(key, -1) + 1

    @staticmethod
    def _raise(table: dict[SharePartitionKey, int], key: SharePartitionKey, epoch: int) -> None:
        if key not in table or table[key] < epoch:
            table[key] = epoch
