"""The share partition's pure core (wirebroker.share.partition), transition by transition.

The cases follow the transitions Kafka's SharePartitionTest names (acquire single/multiple
batches, acquire with the record-lock cap, acknowledge accept/release/reject/gap, per-offset
acknowledgement, acknowledge by another member, acquisition lock timeouts, delivery count
limit, start offset movement, initialisation from persisted state). The clock is a number.
"""

from __future__ import annotations

import uuid

import pytest

from protocol.errors import ErrorCode
from wirebroker.share.partition import (
    AckBatch,
    Acquired,
    LogBatch,
    RecordState,
    ShareError,
    SharePartition,
    SharePartitionConfig,
)
from wirebroker.share.persister import PartitionState, StateBatch

TOPIC = uuid.UUID(int=7)
ACCEPT, RELEASE, REJECT, GAP, RENEW = 1, 2, 3, 0, 4


def make(**config: object) -> SharePartition:
    sp = SharePartition("g", TOPIC, 0, SharePartitionConfig(**config))  # type: ignore[arg-type]
    sp.initialize(PartitionState(0, 0, 0, ()), log_start=0, log_end=0, leader_epoch=0)
    return sp


def acquire(sp: SharePartition, member: str, *batches: tuple[int, int], n: int = 500, now: int = 0):
    got, _change = sp.acquire(member, [LogBatch(a, b) for a, b in batches], n, now)
    return got


def ack(sp: SharePartition, member: str, first: int, last: int, *types: int, now: int = 0):
    change = sp.acknowledge(member, [AckBatch(first, last, types)], now)
    sp.commit(change)
    return change


def states(sp: SharePartition) -> dict[int, tuple[RecordState, int]]:
    return {o: (r.state, r.delivery_count) for o, r in sp.records.items()}


def test_acquire_single_batch_then_next_batch() -> None:
    sp = make()
    assert acquire(sp, "m1", (0, 4)) == [Acquired(0, 4, 1)]
    assert (sp.start_offset, sp.next_offset, sp.next_fetch_offset()) == (0, 5, 5)
    assert acquire(sp, "m2", (5, 9)) == [Acquired(5, 9, 1)]
    assert sp.records[7].member_id == "m2"
    assert sp.records[2].lock_until_ms == 30_000


def test_acquire_skips_records_acquired_by_others() -> None:
    sp = make()
    acquire(sp, "m1", (0, 4))
    assert acquire(sp, "m2", (0, 4), (5, 6)) == [Acquired(5, 6, 1)]


def test_max_records_rounds_up_to_the_batch_end_in_batch_mode() -> None:
    sp = make()
    assert acquire(sp, "m", (0, 9), (10, 19), n=5) == [Acquired(0, 9, 1)]
    sp2 = make()
    got, _ = sp2.acquire("m", [LogBatch(0, 9), LogBatch(10, 19)], 5, 0, record_limit=True)
    assert got == [Acquired(0, 4, 1)]
    assert sp2.next_offset == 5


def test_record_lock_cap_stops_new_records() -> None:
    sp = make(max_record_locks=10)
    assert acquire(sp, "m", (0, 7), (8, 15), (16, 20)) == [Acquired(0, 15, 1)]
    assert not sp.can_acquire()
    assert acquire(sp, "m", (16, 20)) == []
    ack(sp, "m", 0, 7, ACCEPT)
    assert sp.start_offset == 8 and sp.can_acquire()
    assert acquire(sp, "m", (16, 20)) == [Acquired(16, 20, 1)]


def test_offsets_the_log_skipped_are_archived_not_delivered() -> None:
    sp = make()
    acquire(sp, "m", (0, 1))
    got, change = sp.acquire("m", [LogBatch(5, 6)], 500, 0, fetch_offset=2)
    assert got == [Acquired(5, 6, 1)]
    assert change is not None and change.state is not None
    assert change.state.batches == (StateBatch(2, 4, 4, 0),)
    ack(sp, "m", 0, 1, ACCEPT)
    assert sp.start_offset == 5  # moved over the archived gap


def test_available_records_compacted_away_are_archived() -> None:
    sp = make()
    acquire(sp, "m", (0, 4), (5, 9))
    ack(sp, "m", 0, 9, RELEASE)
    # 0-4 were compacted away: the read from 0 starts at batch 5-9
    got, change = sp.acquire("m2", [LogBatch(5, 9)], 500, 0, fetch_offset=0)
    assert got == [Acquired(5, 9, 2)]
    assert change is not None and sp.start_offset == 5


def test_delivery_throttling_shrinks_the_batches_of_redelivered_records() -> None:
    sp = make(delivery_count_limit=5)  # throttle limit 3, last attempt 4
    assert sp.throttle_limit() == 3
    acquire(sp, "m", (0, 4))
    for _ in range(2):
        ack(sp, "m", 2, 2, RELEASE)
        acquire(sp, "m", (0, 4))
    ack(sp, "m", 0, 4, RELEASE)  # 2 has 3 deliveries, the others 1
    # the batch holds a record at the limit: 5 >> 1 = 2 records per acquisition
    assert acquire(sp, "m", (0, 4), (5, 9)) == [Acquired(0, 1, 2)]
    assert acquire(sp, "m", (0, 4), (5, 9)) == [Acquired(2, 2, 4), Acquired(3, 3, 2)]
    # no record at the limit is left AVAILABLE in 0-4: not throttled any more
    assert acquire(sp, "m", (0, 4), (5, 9)) == [Acquired(4, 4, 2), Acquired(5, 9, 1)]
    ack(sp, "m", 0, 4, RELEASE)  # 2 has 4 deliveries: 5 >> 2 = 1 record per acquisition
    assert acquire(sp, "m", (0, 4)) == [Acquired(0, 0, 3)]
    assert acquire(sp, "m", (0, 4)) == [Acquired(1, 1, 3)]
    assert acquire(sp, "m", (0, 4)) == [Acquired(2, 2, 5)]


def test_a_record_on_its_last_attempt_is_not_acquired_after_others() -> None:
    sp = make(delivery_count_limit=3)  # throttle limit 2, last attempt 2
    acquire(sp, "m", (0, 0))
    acquire(sp, "m", (1, 1))
    ack(sp, "m", 1, 1, RELEASE)
    acquire(sp, "m", (1, 1))
    ack(sp, "m", 0, 1, RELEASE)  # 0: 1 delivery, 1: 2 (its last attempt comes)
    assert acquire(sp, "m", (0, 0), (1, 1)) == [Acquired(0, 0, 2)]
    assert acquire(sp, "m", (0, 0), (1, 1)) == [Acquired(1, 1, 3)]


def test_accept_moves_start_offset_and_empties_window() -> None:
    sp = make()
    acquire(sp, "m", (0, 4))
    change = ack(sp, "m", 0, 4, ACCEPT)
    assert change.state is not None
    assert change.state.start_offset == 5
    assert change.state.batches == ()  # all below the new start offset
    assert (sp.start_offset, sp.next_offset, sp.records) == (5, 5, {})


def test_release_makes_records_available_again_with_their_count() -> None:
    sp = make()
    acquire(sp, "m1", (0, 4))
    change = ack(sp, "m1", 0, 4, RELEASE)
    assert change.released
    assert change.state == PartitionState(0, 0, 0, (StateBatch(0, 4, 0, 1),))
    assert sp.next_fetch_offset() == 0
    assert acquire(sp, "m2", (0, 4)) == [Acquired(0, 4, 2)]


def test_reject_archives() -> None:
    sp = make()
    acquire(sp, "m", (0, 4))
    ack(sp, "m", 0, 1, REJECT)
    assert sp.start_offset == 2
    assert states(sp)[2] == (RecordState.ACQUIRED, 1)


def test_per_offset_types() -> None:
    sp = make()
    acquire(sp, "m", (0, 4))
    change = ack(sp, "m", 0, 4, ACCEPT, RELEASE, REJECT, ACCEPT, GAP)
    assert sp.start_offset == 1
    assert states(sp) == {
        1: (RecordState.AVAILABLE, 1),
        2: (RecordState.ARCHIVED, 1),
        3: (RecordState.ACKNOWLEDGED, 1),
        4: (RecordState.ARCHIVED, 1),
    }
    assert change.state is not None
    assert change.state.batches == (
        StateBatch(1, 1, 0, 1),
        StateBatch(2, 2, 4, 1),
        StateBatch(3, 3, 2, 1),
        StateBatch(4, 4, 4, 1),
    )


def test_subset_of_an_acquired_batch() -> None:
    sp = make()
    acquire(sp, "m", (0, 9))
    ack(sp, "m", 3, 5, ACCEPT)
    assert sp.start_offset == 0
    assert [o for o, r in sp.records.items() if r.state is RecordState.ACKNOWLEDGED] == [3, 4, 5]


def test_acknowledge_by_another_member_is_refused_and_changes_nothing() -> None:
    sp = make()
    acquire(sp, "m1", (0, 4))
    with pytest.raises(ShareError) as err:
        sp.acknowledge("m2", [AckBatch(0, 4, (ACCEPT,))], 0)
    assert err.value.code is ErrorCode.INVALID_RECORD_STATE
    assert all(r.state is RecordState.ACQUIRED for r in sp.records.values())


def test_acknowledge_is_all_or_nothing() -> None:
    sp = make()
    acquire(sp, "m", (0, 4))
    with pytest.raises(ShareError):
        sp.acknowledge("m", [AckBatch(0, 1, (ACCEPT,)), AckBatch(2, 9, (ACCEPT,))], 0)
    assert all(r.state is RecordState.ACQUIRED for r in sp.records.values())


def test_acknowledge_past_acquired_records_is_invalid_request() -> None:
    sp = make()
    acquire(sp, "m", (0, 4))
    with pytest.raises(ShareError) as err:
        sp.acknowledge("m", [AckBatch(3, 7, (ACCEPT,))], 0)
    assert err.value.code is ErrorCode.INVALID_REQUEST


def test_acknowledge_twice_is_invalid_record_state() -> None:
    sp = make()
    acquire(sp, "m", (0, 4))
    ack(sp, "m", 1, 2, ACCEPT)
    with pytest.raises(ShareError) as err:
        sp.acknowledge("m", [AckBatch(1, 2, (ACCEPT,))], 0)
    assert err.value.code is ErrorCode.INVALID_RECORD_STATE


def test_acknowledge_below_start_offset_is_skipped() -> None:
    sp = make()
    acquire(sp, "m", (0, 4))
    ack(sp, "m", 0, 4, ACCEPT)
    assert sp.acknowledge("m", [AckBatch(0, 4, (ACCEPT,))], 0).state is None


def test_acquisition_lock_timeout_releases() -> None:
    sp = make(lock_duration_ms=1_000)
    acquire(sp, "m", (0, 4), now=100)
    assert sp.next_lock_deadline() == 1_100
    assert sp.expire_locks(1_099).updates == {}
    change = sp.expire_locks(1_100)
    sp.commit(change)
    assert change.released and change.state is not None
    assert change.state.batches == (StateBatch(0, 4, 0, 1),)
    assert states(sp)[0] == (RecordState.AVAILABLE, 1)
    assert sp.next_lock_deadline() is None
    # the member's late acknowledgement is refused
    with pytest.raises(ShareError):
        sp.acknowledge("m", [AckBatch(0, 4, (ACCEPT,))], 1_200)


def test_delivery_count_limit_archives() -> None:
    sp = make(delivery_count_limit=2, lock_duration_ms=10)
    acquire(sp, "m", (0, 1), now=0)
    sp.commit(sp.expire_locks(10))
    assert acquire(sp, "m", (0, 1), now=20) == [Acquired(0, 1, 2)]
    change = sp.expire_locks(30)
    sp.commit(change)
    assert change.state is not None and change.state.start_offset == 2
    assert (sp.start_offset, sp.records) == (2, {})
    sp2 = make(delivery_count_limit=2)
    acquire(sp2, "m", (0, 0))
    ack(sp2, "m", 0, 0, RELEASE)
    acquire(sp2, "m", (0, 0))
    ack(sp2, "m", 0, 0, RELEASE)  # the second delivery released: archived
    assert sp2.start_offset == 1


def test_renew_extends_the_lock() -> None:
    sp = make(lock_duration_ms=1_000)
    acquire(sp, "m", (0, 2), now=0)
    change = ack(sp, "m", 0, 2, RENEW, now=900)
    assert change.state is None  # nothing persisted
    assert sp.next_lock_deadline() == 1_900
    assert sp.expire_locks(1_000).updates == {}


def test_release_member_on_session_close_takes_the_delivery_back() -> None:
    sp = make()
    acquire(sp, "m1", (0, 2))
    acquire(sp, "m2", (3, 4))
    sp.commit(sp.release_member("m1"))
    assert {o: states(sp)[o] for o in (0, 1, 2)} == dict.fromkeys(
        (0, 1, 2), (RecordState.AVAILABLE, 0)
    )
    assert sp.records[3].state is RecordState.ACQUIRED


def test_released_records_are_acquired_again_before_new_ones() -> None:
    sp = make()
    acquire(sp, "m", (0, 4), (5, 9))
    ack(sp, "m", 2, 3, RELEASE)
    assert sp.next_fetch_offset() == 2
    # the runtime reads from offset 2: the log gives the batch 0-4 and on
    got = acquire(sp, "m2", (0, 4), (5, 9), (10, 12))
    assert got == [Acquired(2, 3, 2), Acquired(10, 12, 1)]


def test_aborted_batches_are_archived_not_delivered() -> None:
    sp = make()
    got, change = sp.acquire("m", [LogBatch(0, 2, aborted=True), LogBatch(3, 4)], 500, 0)
    assert got == [Acquired(3, 4, 1)]
    assert change is not None and change.state is not None
    assert change.state.start_offset == 3
    assert sp.start_offset == 3


def test_initialize_latest_and_earliest() -> None:
    sp = SharePartition("g", TOPIC, 0)
    sp.initialize(PartitionState(1, -1, 0, ()), log_start=3, log_end=10, leader_epoch=2)
    assert (sp.start_offset, sp.next_offset, sp.state_epoch, sp.leader_epoch) == (10, 10, 1, 2)
    sp = SharePartition("g", TOPIC, 0, SharePartitionConfig(auto_offset_reset="earliest"))
    sp.initialize(PartitionState(1, -1, 0, ()), log_start=3, log_end=10, leader_epoch=2)
    assert (sp.start_offset, sp.next_offset) == (3, 3)


def test_initialize_from_persisted_batches_with_a_gap() -> None:
    sp = SharePartition("g", TOPIC, 0)
    persisted = PartitionState(
        1, 5, 0, (StateBatch(5, 6, 2, 1), StateBatch(9, 10, 0, 3), StateBatch(12, 12, 4, 5))
    )
    sp.initialize(persisted, log_start=0, log_end=20, leader_epoch=0)
    # 5-6 acknowledged: the start moves to 7; 7-8 and 11 were in flight: available again
    assert sp.start_offset == 7 and sp.next_offset == 13
    assert states(sp) == {
        7: (RecordState.AVAILABLE, 0),
        8: (RecordState.AVAILABLE, 0),
        9: (RecordState.AVAILABLE, 3),
        10: (RecordState.AVAILABLE, 3),
        11: (RecordState.AVAILABLE, 0),
        12: (RecordState.ARCHIVED, 5),
    }
    assert sp.next_fetch_offset() == 7
    # 9-10 were delivered 3 times (the throttle limit): the log batch 7-12 (6 offsets) goes
    # 3 records at a time, on its own
    assert acquire(sp, "m", (7, 12), (13, 14)) == [Acquired(7, 8, 1), Acquired(9, 9, 4)]
    assert acquire(sp, "m", (7, 12), (13, 14)) == [Acquired(10, 10, 4), Acquired(11, 11, 1)]
    assert acquire(sp, "m", (7, 12), (13, 14)) == [Acquired(13, 14, 1)]


def test_log_start_moving_past_the_window_archives_available_records() -> None:
    sp = make()
    acquire(sp, "m", (0, 4))
    ack(sp, "m", 0, 4, RELEASE)
    change = sp.advance_log_start(3)
    assert change is not None and change.state is not None
    assert sp.start_offset == 3 and change.state.start_offset == 3
    change = sp.advance_log_start(100)
    assert (sp.start_offset, sp.next_offset, sp.records) == (100, 100, {})


def test_persisted_state_writes_acquired_as_available_before_delivery() -> None:
    sp = make()
    acquire(sp, "m", (0, 1))
    ack(sp, "m", 1, 1, ACCEPT)
    assert sp.persisted_state().batches == (StateBatch(0, 0, 0, 0), StateBatch(1, 1, 2, 1))


def test_batch_size_splits_acquired_ranges_at_log_batches() -> None:
    sp = make()
    batches = [LogBatch(0, 2), LogBatch(3, 5), LogBatch(6, 6)]
    got, _ = sp.acquire("m", batches, 500, 0, batch_size=4)
    assert got == [Acquired(0, 5, 1), Acquired(6, 6, 1)]
    sp = make()
    got, _ = sp.acquire("m", batches, 500, 0, batch_size=3)
    assert got == [Acquired(0, 2, 1), Acquired(3, 5, 1), Acquired(6, 6, 1)]
