"""Kafka's replication rules (wirebroker.replication.rules): election, ISR, HW, truncation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wirebroker.metadata.elections import Election, elect_leader, remove_from_isr
from wirebroker.metadata.partition_state import NO_LEADER
from wirebroker.replication.rules import (
    FollowerState,
    high_watermark,
    is_caught_up,
    low_watermark,
    may_join_isr,
    out_of_sync,
    own_end_offset_below,
    record_fetch,
    truncate_on_fetch_offset,
    truncation_offset,
)

LAG = 30_000


def test_leader_is_the_first_live_isr_replica_in_assignment_order() -> None:
    assert elect_leader([1, 2, 3], {3, 2}, {1, 2, 3}, unclean=False) == Election(2, (2, 3))
    assert elect_leader([3, 1, 2], {1, 2}, {2}, unclean=False) == Election(2, (2,))


def test_no_live_isr_member_takes_the_partition_offline_unless_unclean() -> None:
    offline = elect_leader([1, 2, 3], {3}, {1, 2}, unclean=False)
    assert offline == Election(NO_LEADER, (3,))  # the ISR is kept for 3's return
    unclean = elect_leader([1, 2, 3], {3}, {2, 1}, unclean=True)
    assert unclean == Election(1, (1,), recovering=True)
    assert elect_leader([1, 2], {2}, set(), unclean=True).leader == NO_LEADER


def test_a_dead_replica_leaves_the_isr_but_the_last_member_stays() -> None:
    assert remove_from_isr(1, [1, 2, 3], 2) == Election(1, (1, 3))
    assert remove_from_isr(1, [1, 2], 1) == Election(NO_LEADER, (2,))
    assert remove_from_isr(1, [1], 1) == Election(NO_LEADER, (1,))


def test_fetch_state_and_caught_up() -> None:
    s = FollowerState(2)
    assert not is_caught_up(s, 10, 0, LAG)
    s = record_fetch(s, 10, 10, now_ms=1_000)  # at the leader's end
    assert s.last_caught_up_ms == 1_000 and is_caught_up(s, 10, 1_000, LAG)
    s = record_fetch(s, 10, 20, now_ms=2_000)  # behind: caught up as of the previous fetch
    assert s.last_caught_up_ms == 1_000
    s = record_fetch(s, 20, 25, now_ms=3_000)  # asked for >= the leader's end at 2_000
    assert s.last_caught_up_ms == 2_000
    assert is_caught_up(s, 25, 2_000 + LAG, LAG)
    assert not is_caught_up(s, 25, 2_000 + LAG + 1, LAG)


def test_a_stopped_follower_leaves_the_isr_after_the_lag_time() -> None:
    followers = {2: record_fetch(FollowerState(2), 5, 5, now_ms=0), 3: FollowerState(3)}
    followers[3] = record_fetch(followers[3], 5, 5, now_ms=0)
    followers[3] = record_fetch(followers[3], 9, 9, now_ms=LAG)  # 3 keeps up, 2 stopped at 5
    assert out_of_sync([1, 2, 3], 1, followers, 9, LAG, LAG) == []
    assert out_of_sync([1, 2, 3], 1, followers, 9, LAG + 1, LAG) == [2]
    assert out_of_sync([1, 2], 1, {}, 9, 0, LAG) == [2]  # never heard of


def test_high_watermark() -> None:
    f = {
        2: FollowerState(2, log_end_offset=8, last_caught_up_ms=0),
        3: FollowerState(3, log_end_offset=5, last_caught_up_ms=-1),
    }
    assert high_watermark(0, 10, [1, 2], 1, f, 0, LAG) == 8  # 3: outside and behind
    f[3] = FollowerState(3, log_end_offset=7, last_caught_up_ms=0)  # caught up, outside ISR
    assert high_watermark(0, 10, [1, 2], 1, f, 0, LAG) == 7
    assert high_watermark(9, 10, [1, 2], 1, f, 0, LAG) == 9  # never decreases
    assert high_watermark(0, 10, [1, 2, 4], 1, f, 0, LAG) == 0  # 4 never fetched
    assert high_watermark(3, 10, [1], 1, {}, 0, LAG, min_isr=2) == 3  # ISR below minimum
    assert high_watermark(3, 10, [1], 1, {}, 0, LAG) == 10


@given(
    leos=st.lists(st.integers(0, 100), min_size=1, max_size=5),
    current=st.integers(0, 100),
)
def test_high_watermark_never_passes_an_isr_member_and_never_drops(
    leos: list[int], current: int
) -> None:
    leader_leo = max([current, *leos])
    followers = {i + 2: FollowerState(i + 2, log_end_offset=leo) for i, leo in enumerate(leos)}
    isr = [1, *followers]
    hw = high_watermark(current, leader_leo, isr, 1, followers, 0, LAG)
    assert hw >= current
    assert hw == current or hw <= min(leos)


def test_low_watermark_is_the_least_live_log_start() -> None:
    alive = {1, 2, 3}.__contains__
    f = [FollowerState(2, log_start_offset=7), FollowerState(3, log_start_offset=4)]
    assert low_watermark(9, f, alive) == 4
    assert low_watermark(3, f, alive) == 3  # the leader's own log start counts too
    assert low_watermark(9, f, {1, 2}.__contains__) == 7  # 3's broker is dead: not counted
    assert low_watermark(9, [], alive) == 9  # a single replica
    assert low_watermark(9, [*f, FollowerState(4)], {1, 2, 3, 4}.__contains__) == -1  # unheard of
    s = record_fetch(FollowerState(2), 5, 5, now_ms=0, log_start_offset=3)
    assert s.log_start_offset == 3
    assert record_fetch(s, 6, 6, now_ms=1).log_start_offset == 3  # not reported: unchanged
    assert record_fetch(s, 6, 6, now_ms=1, log_start_offset=6).log_start_offset == 6


@given(
    starts=st.lists(st.tuples(st.integers(-1, 50), st.booleans()), max_size=5),
    leader_start=st.integers(0, 50),
)
def test_low_watermark_never_passes_a_live_replica(
    starts: list[tuple[int, bool]], leader_start: int
) -> None:
    followers = [FollowerState(i + 2, log_start_offset=s) for i, (s, _) in enumerate(starts)]
    live = {i + 2 for i, (_, up) in enumerate(starts) if up}
    low = low_watermark(leader_start, followers, live.__contains__)
    assert low <= leader_start
    assert all(low <= f.log_start_offset for f in followers if f.replica_id in live)
    assert low in {leader_start} | {f.log_start_offset for f in followers if f.replica_id in live}


def test_rejoin_needs_the_high_watermark_and_the_current_epoch() -> None:
    s = FollowerState(2, log_end_offset=10)
    assert may_join_isr(s, 10, 4)
    assert not may_join_isr(s, 11, 4)
    assert not may_join_isr(s, 10, 12)


def test_truncation_kip_101_divergent_tail() -> None:
    # The follower wrote 5..7 in epoch 1 that the new leader never had: the leader says epoch 1
    # ended at 6 there, so the follower keeps 0..5 and fetches from 6.
    assert truncation_offset(1, 6, [(0, 0), (1, 5)], own_leo=8, own_hw=5) == 6
    # The leader's end is past ours: keep everything.
    assert truncation_offset(1, 12, [(0, 0), (1, 5)], own_leo=8, own_hw=5) == 8


def test_truncation_kip_279_fast_leader_changes() -> None:
    # The follower has epochs 0 and 2; the leader answers epoch 1, which the follower lacks:
    # truncate to the end of its epoch 0 and ask again for epoch 0.
    own = [(0, 0), (2, 5)]
    assert truncation_offset(1, 7, own, own_leo=9, own_hw=3) is None
    assert own_end_offset_below(1, own, 9) == 5
    assert truncation_offset(0, 4, [(0, 0)], own_leo=5, own_hw=3) == 4


def test_truncation_with_undefined_answers() -> None:
    assert truncation_offset(-1, -1, [(0, 0)], own_leo=9, own_hw=4) == 4
    assert truncation_offset(-1, 6, [(0, 0)], own_leo=9, own_hw=4) == 6
    assert own_end_offset_below(0, [(3, 10)], 20) == 10


def test_truncate_on_fetch_combines_both_answers() -> None:
    own = [(0, 0), (2, 5)]
    assert truncate_on_fetch_offset(1, 7, own, own_leo=9, own_hw=3) == 5  # lacks epoch 1
    assert truncate_on_fetch_offset(2, 7, own, own_leo=9, own_hw=3) == 7
    assert truncate_on_fetch_offset(0, 4, own, own_leo=9, own_hw=3) == 4
