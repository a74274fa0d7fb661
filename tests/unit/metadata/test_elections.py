"""The controller's per-partition decisions (wirebroker.metadata.elections.decide)."""

from __future__ import annotations

from wirebroker.metadata.elections import decide
from wirebroker.metadata.partition_state import PartitionState

A = (1, 2, 3)


def st(leader: int, epoch: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState(leader, epoch, isr, controller_epoch=1)


def test_new_partition_leads_with_first_live_replica() -> None:
    assert decide(A, None, live={1, 2, 3}, controller_epoch=4) == PartitionState(1, 0, A, 4)
    assert decide(A, None, live={2, 3}, controller_epoch=4) == PartitionState(2, 0, (2, 3), 4)
    assert decide(A, None, live=set(), controller_epoch=4) == PartitionState(-1, 0, A, 4)


def test_nothing_to_do_when_all_is_well() -> None:
    assert decide(A, st(1, 3, A), live={1, 2, 3}, controller_epoch=2) is None


def test_dead_leader_is_replaced_by_next_isr_member_in_assignment_order() -> None:
    new = decide(A, st(1, 3, (3, 1, 2)), live={2, 3}, controller_epoch=2)
    assert new == PartitionState(2, 4, (2, 3), 2)


def test_out_of_sync_replica_is_not_elected_without_unclean() -> None:
    state = st(1, 3, (1,))
    assert decide(A, state, live={2, 3}, controller_epoch=2) == PartitionState(-1, 4, (1,), 2)
    # Once offline, nothing more changes while the ISR member stays dead ...
    offline = PartitionState(-1, 4, (1,), 2)
    assert decide(A, offline, live={2, 3}, controller_epoch=2) is None
    # ... and it leads again when it returns.
    assert decide(A, offline, live={1, 2, 3}, controller_epoch=2) == PartitionState(1, 5, (1,), 2)


def test_unclean_election_picks_a_live_replica_and_marks_it_recovering() -> None:
    new = decide(A, st(1, 3, (1,)), live={2, 3}, unclean=True, controller_epoch=2)
    assert new == PartitionState(2, 4, (2,), 2, recovering=True)


def test_dead_follower_leaves_the_isr_with_a_new_epoch() -> None:
    assert decide(A, st(1, 3, A), live={1, 3}, controller_epoch=2) == PartitionState(
        1, 4, (1, 3), 2
    )


def test_controlled_shutdown_moves_leadership_and_isr_membership() -> None:
    assert decide(A, st(1, 3, A), live={1, 2, 3}, shutting_down={1}, controller_epoch=2) == (
        PartitionState(2, 4, (2, 3), 2)
    )
    assert decide(A, st(2, 3, A), live={1, 2, 3}, shutting_down={1}, controller_epoch=2) == (
        PartitionState(2, 4, (2, 3), 2)
    )
    # The only ISR member keeps its partition while it shuts down.
    assert decide(A, st(1, 3, (1,)), live={1, 2, 3}, shutting_down={1}, controller_epoch=2) is None


def test_shutting_down_isr_member_beats_offline() -> None:
    assert decide(A, st(2, 3, (1, 2)), live={1, 3}, shutting_down={1}, controller_epoch=2) == (
        PartitionState(1, 4, (1,), 2)
    )


def test_preferred_election_moves_leadership_to_the_head() -> None:
    state = st(2, 3, A)
    assert decide(A, state, live={1, 2, 3}, controller_epoch=2) is None
    assert decide(A, state, live={1, 2, 3}, controller_epoch=2, preferred=True) == (
        PartitionState(1, 4, A, 2)
    )
    # Not when the head is out of sync.
    assert decide(A, st(2, 3, (2, 3)), live={1, 2, 3}, controller_epoch=2, preferred=True) is None
