"""The share coordinator's pure core (`wirebroker.share_coordinator.core`): Kafka's
ShareCoordinatorShard rules -- the records each state call writes, the fold that replays them
(snapshots, updates, tombstones), snapshots every N updates, fencing and error order."""

from __future__ import annotations

import uuid

import pytest

from protocol.errors import ErrorCode as E
from protocol.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    decode_key,
    decode_snapshot,
    decode_update,
)
from wirebroker.share_coordinator.batches import StateBatch as B
from wirebroker.share_coordinator.core import (
    READ_UNINITIALIZED,
    WRITE_UNINITIALIZED,
    Outcome,
    ShareCoordinatorCore,
    WriteRequest,
)
from wirebroker.share_coordinator.keys import SharePartitionKey, parse_coordinator_key

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
KEY = SharePartitionKey("g", TOPIC, 0)
NOW = 1_000


def _core(updates_per_snapshot: int = 3) -> ShareCoordinatorCore:
    core = ShareCoordinatorCore(4, updates_per_snapshot, lambda t: 2 if t == TOPIC else None)
    for p in range(4):
        core.complete_loading(p, core.new_shard())
    return core


def _commit(core: ShareCoordinatorCore, outcome: Outcome) -> Outcome:
    """Apply the outcome's records, as the runtime does after its append."""
    assert outcome.error is E.NONE, outcome
    core.apply(outcome.partition, outcome.records)
    return outcome


def _kinds(outcome: Outcome) -> list[int]:
    out = []
    for key, _ in outcome.records:
        decoded = decode_key(key)
        assert decoded is not None
        out.append(decoded.record_type)
    return out


def test_coordinator_key_text_and_partition() -> None:
    assert KEY.coordinator_key == "g:ABEiM0RVZneImaq7zN3u_w:0"
    assert parse_coordinator_key(KEY.coordinator_key) == KEY
    assert parse_coordinator_key("a:b:c:ABEiM0RVZneImaq7zN3u_w:3") == SharePartitionKey(
        "a:b:c", TOPIC, 3
    )
    assert parse_coordinator_key("nocolons") is None
    assert parse_coordinator_key("g:notbase64!:0") is None
    assert 0 <= KEY.state_partition(50) < 50


def test_initialize_write_read() -> None:
    core = _core()
    init = _commit(core, core.initialize(KEY, 1, 10, NOW))
    assert _kinds(init) == [SHARE_SNAPSHOT]
    snap = decode_snapshot(init.records[0][1] or b"")
    assert (snap.snapshot_epoch, snap.state_epoch, snap.leader_epoch, snap.start_offset) == (
        0,
        1,
        0,
        10,
    )
    assert snap.delivery_complete_count == 0 and snap.create_timestamp == NOW
    write = core.write(KEY, WriteRequest(1, 0, 12, (B(12, 15, 2, 1), B(16, 19, 0, 1))), NOW)
    assert _kinds(_commit(core, write)) == [SHARE_UPDATE]
    read = core.read(KEY, 0, NOW)
    assert read.error is E.NONE and read.records == ()  # same leader epoch: nothing written
    assert read.state is not None
    assert (read.state.state_epoch, read.state.start_offset) == (1, 12)
    assert read.state.batches == (B(12, 15, 2, 1), B(16, 19, 0, 1))


def test_initialize_with_start_offset_minus_one_and_reinitialize() -> None:
    core = _core()
    init = _commit(core, core.initialize(KEY, 0, -1, NOW))
    assert decode_snapshot(init.records[0][1] or b"").delivery_complete_count == -1
    again = _commit(core, core.initialize(KEY, 1, 5, NOW))
    snap = decode_snapshot(again.records[0][1] or b"")
    assert (snap.snapshot_epoch, snap.state_epoch, snap.start_offset) == (1, 1, 5)


def test_uninitialized_reads_and_writes_are_invalid_requests() -> None:
    core = _core()
    read = core.read(KEY, 0, NOW)
    assert (read.error, read.message) == (E.INVALID_REQUEST, READ_UNINITIALIZED)
    write = core.write(KEY, WriteRequest(0, 0, 0), NOW)
    assert (write.error, write.message) == (E.INVALID_REQUEST, WRITE_UNINITIALIZED)
    summary = core.read_summary(KEY)
    assert summary.error is E.NONE and summary.state is not None
    assert (summary.state.start_offset, summary.state.leader_epoch) == (-1, 0)
    assert core.delete(KEY) == Outcome(partition=KEY.state_partition(4))  # nothing to delete


def test_fencing() -> None:
    core = _core()
    _commit(core, core.initialize(KEY, 3, 0, NOW))
    assert core.initialize(KEY, 2, 0, NOW).error is E.FENCED_STATE_EPOCH
    assert core.write(KEY, WriteRequest(2, 0, 0), NOW).error is E.FENCED_STATE_EPOCH
    # a read with a newer leader epoch records it (an update) ...
    read = _commit(core, core.read(KEY, 5, NOW))
    assert _kinds(read) == [SHARE_UPDATE]
    assert decode_update(read.records[0][1] or b"").leader_epoch == 5
    # ... which fences older leaders' reads and writes
    assert core.read(KEY, 4, NOW).error is E.FENCED_LEADER_EPOCH
    assert core.write(KEY, WriteRequest(3, 4, 0), NOW).error is E.FENCED_LEADER_EPOCH
    assert core.write(KEY, WriteRequest(3, 5, 0), NOW).error is E.NONE


def test_request_errors_in_kafkas_order() -> None:
    core = _core()
    assert core.read(KEY, -1, NOW).error is E.INVALID_REQUEST
    assert core.initialize(KEY, -1, 0, NOW).error is E.INVALID_REQUEST
    unknown = SharePartitionKey("g", uuid.uuid4(), 0)
    assert core.initialize(unknown, 0, 0, NOW).error is E.UNKNOWN_TOPIC_OR_PARTITION
    beyond = SharePartitionKey("g", TOPIC, 2)
    assert core.initialize(beyond, 0, 0, NOW).error is E.UNKNOWN_TOPIC_OR_PARTITION
    assert core.read_summary(unknown).error is E.UNKNOWN_TOPIC_OR_PARTITION
    # uninitialised is checked before the topic (Kafka's order)
    assert core.read(unknown, 0, NOW).message == READ_UNINITIALIZED


def test_ownership_errors() -> None:
    core = _core()
    p = core.partition_for(KEY)
    core.begin_loading(p)
    assert core.read_summary(KEY).error is E.COORDINATOR_LOAD_IN_PROGRESS
    core.unload([p])
    assert core.initialize(KEY, 0, 0, NOW).error is E.NOT_COORDINATOR


def test_a_snapshot_every_n_updates_folds_the_same_state() -> None:
    core = _core(updates_per_snapshot=2)
    _commit(core, core.initialize(KEY, 0, 0, NOW))
    kinds = []
    for i in range(6):
        w = core.write(KEY, WriteRequest(0, 0, i, (B(i, i, 2, 1),)), NOW)
        kinds += _kinds(_commit(core, w))
    # updates counted from 0 after the first: the snapshot comes after N + 1 updates
    assert kinds == [SHARE_UPDATE, SHARE_UPDATE, SHARE_UPDATE, SHARE_SNAPSHOT, SHARE_UPDATE, 1]
    state = core.read(KEY, 0, NOW).state
    assert state is not None and state.start_offset == 5
    assert state.batches == (B(5, 5, 2, 1),)  # everything below the start offset pruned
    assert state.snapshot_epoch == 1


def test_delete_writes_a_tombstone_the_fold_forgets() -> None:
    core = _core()
    _commit(core, core.initialize(KEY, 2, 0, NOW))
    deleted = _commit(core, core.delete(KEY))
    assert deleted.records[0][1] is None and _kinds(deleted) == [SHARE_SNAPSHOT]
    assert core.read(KEY, 0, NOW).message == READ_UNINITIALIZED
    # epochs are forgotten too: a lower state epoch initialises again
    assert core.initialize(KEY, 0, 0, NOW).error is E.NONE


def test_replay_from_the_records_gives_the_same_state() -> None:
    core = _core()
    records = []
    for call in (
        lambda: core.initialize(KEY, 1, 0, NOW),
        lambda: core.write(KEY, WriteRequest(1, 0, 0, (B(0, 9, 0, 1),)), NOW),
        lambda: core.write(KEY, WriteRequest(1, 0, 3, (B(3, 4, 2, 1),)), NOW),
        lambda: core.read(KEY, 2, NOW),
    ):
        records += _commit(core, call()).records
    shard = core.new_shard()
    for key, value in records:
        shard.replay(key, value)
    assert shard.states[KEY] == core.partitions[core.partition_for(KEY)].states[KEY]
    assert shard.leader_epochs[KEY] == 2 and shard.state_epochs[KEY] == 1


@pytest.mark.parametrize("start", [-1, 7])
def test_update_start_offset_minus_one_keeps_it(start: int) -> None:
    core = _core()
    _commit(core, core.initialize(KEY, 0, 4, NOW))
    _commit(core, core.write(KEY, WriteRequest(0, 0, start), NOW))
    state = core.read(KEY, 0, NOW).state
    assert state is not None and state.start_offset == max(start, 4)


def test_cold_snapshots() -> None:
    core = _core()
    _commit(core, core.initialize(KEY, 1, 0, NOW))
    _commit(core, core.write(KEY, WriteRequest(1, 0, 2, (B(2, 5, 2, 1),)), NOW))
    assert core.cold_snapshots(NOW + 999, 1000) == {}  # not old enough
    cold = core.cold_snapshots(NOW + 1000, 1000)
    [(p, records)] = cold.items()
    assert p == core.partition_for(KEY)
    [(_key, value)] = records
    snap = decode_snapshot(value or b"")
    assert (snap.snapshot_epoch, snap.start_offset, snap.write_timestamp) == (1, 2, NOW + 1000)
    assert snap.create_timestamp == NOW and len(snap.state_batches) == 1
    core.apply(p, records)
    # every state of the partition was cold-snapshotted: nothing more (Kafka's rule)
    assert core.cold_snapshots(NOW + 5000, 1000) == {}


def test_topics_deleted_tombstone_their_states() -> None:
    """Kafka's maybeCleanupShareState: every state of the deleted topics, in every loaded
    partition, gets a ShareSnapshot tombstone; other topics' states stay."""
    other = uuid.UUID(int=5)
    core = ShareCoordinatorCore(4, 3, lambda t: 2 if t in (TOPIC, other) else None)
    for p in range(4):
        core.complete_loading(p, core.new_shard())
    keys = [SharePartitionKey(g, TOPIC, p) for g in ("g", "h", "i") for p in (0, 1)]
    for key in [*keys, SharePartitionKey("g", other, 0)]:
        _commit(core, core.initialize(key, 1, 0, NOW))
    deleted = core.topics_deleted({TOPIC})
    tombstones = [(p, decode_key(k), v) for p, rs in deleted.items() for k, v in rs]
    assert all(
        v is None and d is not None and d.record_type == SHARE_SNAPSHOT for _, d, v in tombstones
    )
    assert sorted((d.group_id, d.partition) for _, d, _ in tombstones if d) == sorted(
        (k.group_id, k.partition) for k in keys
    )
    assert all(
        p == core.partition_for(SharePartitionKey(d.group_id, d.topic_id, d.partition))
        for p, d, _ in tombstones
        if d
    )
    for p, records in deleted.items():
        core.apply(p, records)
    assert core.topics_deleted({TOPIC}) == {}
    states = [k for shard in core.partitions.values() for k in shard.states]
    assert states == [SharePartitionKey("g", other, 0)]
