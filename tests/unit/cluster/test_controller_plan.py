"""The controller's pure core (wirebroker.cluster.controller_context): what `plan` and
`plan_reassignment` write for each rule of Kafka's ZooKeeper-mode controller
(shared/reference/replication.md section 2; KIP-455 for reassignments), with no ZooKeeper."""

from __future__ import annotations

from wirebroker.cluster.controller_context import (
    AssignmentWrite,
    ControllerContext,
    Reassignment,
    Reconcile,
    StateEntry,
    StateWrite,
    TopicEntry,
    imbalanced,
    plan,
    plan_reassignment,
)
from wirebroker.metadata.partition_state import NO_LEADER, PartitionState, TopicAssignment

EPOCH = 7  # the controller epoch


def context(
    live: set[int],
    topics: dict[str, dict[int, tuple[int, ...]]],
    states: dict[tuple[str, int], PartitionState | None],
    *,
    shutting_down: set[int] | None = None,
    unclean: set[str] | None = None,
) -> ControllerContext:
    """A context as the runtime would feed it; every state znode at version 5."""
    ctx = ControllerContext(EPOCH, epoch_version=3)
    ctx.set_brokers({broker: 100 + broker for broker in live})
    ctx.shutting_down = set(shutting_down or ())
    for name, partitions in topics.items():
        ctx.set_topic(name, TopicEntry(TopicAssignment(partitions), 1, name in (unclean or ())))
    for (name, index), state in states.items():
        ctx.set_state(name, index, StateEntry(state, -1 if state is None else 5))
    return ctx


def st(leader: int, isr: tuple[int, ...], epoch: int = 3) -> PartitionState:
    return PartitionState(leader, epoch, isr, controller_epoch=1)


def new(leader: int, isr: tuple[int, ...], epoch: int = 4, **kw: bool) -> PartitionState:
    return PartitionState(leader, epoch, isr, EPOCH, **kw)


def everything(ctx: ControllerContext, **kw: object) -> list[StateWrite]:
    return plan(ctx, Reconcile(ctx.partitions(), **kw))  # type: ignore[arg-type]


def test_nothing_to_write_when_every_partition_is_as_the_rules_say() -> None:
    ctx = context({1, 2, 3}, {"t": {0: (1, 2, 3)}}, {("t", 0): st(1, (1, 2, 3))})
    assert everything(ctx) == []


def test_broker_failure_elects_the_first_live_isr_replica_in_assignment_order() -> None:
    # leader 1 died; 3 is before 2 in the assignment, both in the ISR
    ctx = context({2, 3}, {"t": {0: (1, 3, 2)}}, {("t", 0): st(1, (2, 1, 3))})
    assert everything(ctx) == [StateWrite("t", 0, new(3, (3, 2)), 5, st(1, (2, 1, 3)))]


def test_a_live_replica_out_of_the_isr_is_not_elected_without_unclean_election() -> None:
    # leader 1 died, the only ISR member: offline (leader -1), the ISR kept for its return
    ctx = context({2, 3}, {"t": {0: (1, 2, 3)}}, {("t", 0): st(1, (1,))})
    assert everything(ctx) == [StateWrite("t", 0, new(NO_LEADER, (1,)), 5, st(1, (1,)))]


def test_unclean_election_when_the_topic_enables_it_or_an_election_asks_for_it() -> None:
    recovering = new(2, (2,), recovering=True)
    enabled = context({2, 3}, {"t": {0: (1, 2, 3)}}, {("t", 0): st(1, (1,))}, unclean={"t"})
    assert [w.new for w in everything(enabled)] == [recovering]
    asked = context({2, 3}, {"t": {0: (1, 2, 3)}}, {("t", 0): st(1, (1,))})
    assert [w.new for w in everything(asked, unclean={("t", 0)})] == [recovering]
    # asked for another partition only: this one stays clean
    assert [w.new for w in everything(asked, unclean={("t", 1)})] == [new(NO_LEADER, (1,))]


def test_broker_failure_shrinks_the_isrs_it_was_in_with_a_new_leader_epoch() -> None:
    ctx = context({1, 3}, {"t": {0: (1, 2, 3)}}, {("t", 0): st(1, (1, 2, 3))})
    assert everything(ctx) == [StateWrite("t", 0, new(1, (1, 3)), 5, st(1, (1, 2, 3)))]


def test_new_leaders_are_written_before_isr_only_changes() -> None:
    ctx = context(
        {1, 3},
        {"a": {0: (1, 2, 3), 1: (3, 2, 1)}, "z": {0: (2, 1, 3)}},
        {("a", 0): st(1, (1, 2, 3)), ("a", 1): st(3, (3, 2, 1)), ("z", 0): st(2, (2, 1, 3))},
    )
    writes = everything(ctx)
    assert [(w.topic, w.partition, w.election) for w in writes] == [
        ("z", 0, True),
        ("a", 0, False),
        ("a", 1, False),
    ]
    assert writes[0].new == new(1, (1, 3))


def test_a_returning_isr_member_leads_its_offline_partition_again() -> None:
    offline = PartitionState(NO_LEADER, 4, (1,), 1)
    ctx = context({2, 3}, {"t": {0: (1, 2, 3)}}, {("t", 0): offline})
    assert everything(ctx) == []  # stays offline while 1 is away
    ctx.set_brokers({1: 200, 2: 102, 3: 103})
    assert everything(ctx) == [StateWrite("t", 0, new(1, (1,), epoch=5), 5, offline)]


def test_a_bounced_broker_is_seen_and_its_leaderships_move_as_on_a_failure() -> None:
    ctx = context({1, 2, 3}, {"t": {0: (1, 2, 3)}}, {("t", 0): st(1, (1, 2, 3))})
    # 1 registered again (a new session: a new czxid); 2 is the same registration
    assert ctx.set_brokers({1: 999, 2: 102, 3: 103}) == {1}
    assert ctx.set_brokers({1: 999, 2: 102, 3: 103}) == set()
    # planned as a failure of 1 first ...
    failed = plan(ctx, Reconcile(ctx.partitions(), failed={1}))
    assert failed == [StateWrite("t", 0, new(2, (2, 3)), 5, st(1, (1, 2, 3)))]
    ctx.wrote(failed[0])
    # ... then 1 is live again: nothing to do until it is back in the ISR
    assert everything(ctx) == []


def test_a_broker_gone_from_the_registrations_is_not_live() -> None:
    ctx = context({1, 2, 3}, {}, {})
    assert ctx.set_brokers({2: 102, 3: 103}) == set()
    assert ctx.live == {2, 3}


def test_controlled_shutdown_moves_leaderships_and_leaves_the_isrs() -> None:
    ctx = context(
        {1, 2, 3},
        {"t": {0: (1, 2, 3), 1: (2, 1, 3), 2: (1, 2, 3)}},
        {("t", 0): st(1, (1, 2, 3)), ("t", 1): st(2, (2, 1, 3)), ("t", 2): st(1, (1,))},
        shutting_down={1},
    )
    assert everything(ctx) == [
        StateWrite("t", 0, new(2, (2, 3)), 5, st(1, (1, 2, 3))),
        StateWrite("t", 1, new(2, (2, 3)), 5, st(2, (2, 1, 3))),
    ]  # t-2: 1 is its only ISR member, it keeps it until it stops


def test_a_broker_shutting_down_is_not_elected_unless_it_is_the_only_isr_member_left() -> None:
    ctx = context(
        {1, 2},
        {"t": {0: (1, 2, 3), 1: (1, 2, 3)}},
        {("t", 0): st(3, (3, 1, 2)), ("t", 1): st(3, (3, 1))},
        shutting_down={1},
    )
    assert [w.new for w in everything(ctx)] == [new(2, (2,)), new(1, (1,))]


def test_preferred_election_moves_leadership_to_the_head_of_the_assignment() -> None:
    ctx = context(
        {1, 2, 3},
        {"t": {0: (1, 2, 3), 1: (1, 2, 3), 2: (3, 1, 2)}},
        {("t", 0): st(2, (2, 1, 3)), ("t", 1): st(2, (2, 3)), ("t", 2): st(1, (1, 2, 3))},
    )
    asked = {("t", 0), ("t", 1)}
    # t-1: its head is out of the ISR; t-2: not asked
    assert plan(ctx, Reconcile(ctx.partitions(), preferred=asked)) == [
        StateWrite("t", 0, new(1, (2, 1, 3)), 5, st(2, (2, 1, 3)))
    ]
    assert everything(ctx) == []  # not asked: leaders stay


def test_new_partitions_get_first_states_as_creates() -> None:
    ctx = context(
        {2, 3},
        {"t": {0: (1, 2, 3), 1: (3, 2, 1)}, "u": {0: (1,)}},
        {("t", 0): None, ("t", 1): None, ("u", 0): None},
        shutting_down={3},
    )
    assert everything(ctx) == [
        StateWrite("t", 0, PartitionState(2, 0, (2, 3), EPOCH), -1),
        StateWrite("t", 1, PartitionState(2, 0, (3, 2), EPOCH), -1),  # 3 is stopping
        StateWrite("u", 0, PartitionState(NO_LEADER, 0, (1,), EPOCH), -1),
    ]
    assert all(w.election for w in everything(ctx))


def test_writes_are_conditional_on_the_version_read_and_recorded_when_done() -> None:
    ctx = context({2, 3}, {"t": {0: (1, 2, 3)}}, {("t", 0): st(1, (1, 2, 3))})
    ctx.set_state("t", 0, StateEntry(st(1, (1, 2, 3)), 41))
    [write] = everything(ctx)
    assert write.version == 41 and write.new.controller_epoch == EPOCH
    ctx.wrote(write)
    assert ctx.states[("t", 0)] == StateEntry(write.new, 42)
    assert everything(ctx) == []


def test_only_the_partitions_asked_and_known_are_planned() -> None:
    ctx = context(
        {2, 3}, {"t": {0: (1, 2), 1: (1, 2)}, "u": {0: (1, 2)}}, {("t", 0): st(1, (1, 2))}
    )
    # t-1 has no state read (the runtime could not read it), u is not asked
    assert [w.key for w in plan(ctx, Reconcile([("t", 0), ("t", 1)]))] == [("t", 0)]
    ctx.keep_topics(["u"])
    assert ctx.partitions() == [("u", 0)] and ctx.states == {}


def test_imbalance_above_the_limit_moves_a_brokers_preferred_partitions_back() -> None:
    # broker 1 is the preferred leader of 4 partitions and leads 2: 50% not led
    assignments = {i: (1, 2) for i in range(4)} | {4: (2, 1)}
    states = {("t", i): st(1 if i < 2 else 2, (1, 2)) for i in range(4)}
    states[("t", 4)] = st(2, (1, 2))
    ctx = context({1, 2}, {"t": assignments}, states)  # type: ignore[arg-type]
    assert imbalanced(ctx, 10) == ({("t", 2), ("t", 3)}, [1])
    assert imbalanced(ctx, 50) == (set(), [])  # not above 50%
    # a preferred leader that is not live is not rebalanced to
    ctx.set_brokers({2: 102})
    assert imbalanced(ctx, 10) == (set(), [])


def reassigning(state: PartitionState, *, started: int | None = None) -> ControllerContext:
    """t-0 moving from [1, 2] to [3, 2] (assignment [3, 2, 1] while it runs, version 1)."""
    ctx = ControllerContext(EPOCH, epoch_version=3)
    ctx.set_brokers({1: 101, 2: 102, 3: 103})
    moving = TopicAssignment({0: (3, 2, 1), 1: (1, 2)}, adding={0: (3,)}, removing={0: (1,)})
    ctx.set_topic("t", TopicEntry(moving, 1))
    ctx.set_state("t", 0, StateEntry(state, 5))
    ctx.set_state("t", 1, StateEntry(st(1, (1, 2)), 5))
    if started is not None:
        ctx.started[("t", 0)] = started
    return ctx


def test_reassignment_starts_once_per_assignment_version_with_a_new_leader_epoch() -> None:
    ctx = reassigning(st(1, (1, 2)))
    step = plan_reassignment(ctx, "t", ctx.live)
    bumped = PartitionState(1, 4, (1, 2), EPOCH)  # same leader and ISR, epoch + 1
    assert step == Reassignment(((("t", 0), StateWrite("t", 0, bumped, 5, st(1, (1, 2)))),))
    # started at this assignment version: nothing more until it completes
    assert plan_reassignment(reassigning(st(1, (1, 2)), started=1), "t", ctx.live) == (
        Reassignment()
    )
    # a new reassignment of the partition (another assignment version) starts again
    assert plan_reassignment(reassigning(st(1, (1, 2)), started=0), "t", ctx.live).starts
    # without a leader: marked started, no write
    offline = reassigning(PartitionState(NO_LEADER, 3, (1,), 1))
    assert plan_reassignment(offline, "t", ctx.live) == Reassignment(((("t", 0), None),))


def test_reassignment_completes_in_one_write_once_every_target_is_in_the_isr() -> None:
    # 3 caught up and joined the ISR: the assignment shrinks to [3, 2], 1 leaves the ISR and
    # the first live target replica in the ISR leads, leader epoch + 1; both conditional
    caught_up = st(1, (1, 2, 3))
    step = plan_reassignment(reassigning(caught_up, started=1), "t", {1, 2, 3})
    assert step.starts == ()
    assert step.complete == AssignmentWrite(
        "t",
        TopicAssignment({0: (3, 2), 1: (1, 2)}),
        1,
        (0,),
        (StateWrite("t", 0, PartitionState(3, 4, (2, 3), EPOCH), 5, caught_up),),
    )
    # not yet: 3 is not in the ISR
    assert plan_reassignment(reassigning(st(1, (1, 2)), started=1), "t", {1, 2, 3}) == (
        Reassignment()
    )


def test_a_reassignment_whose_state_already_fits_completes_with_the_assignment_alone() -> None:
    fits = st(2, (2, 3))  # the leaving replica is out of the ISR already, 2 leads
    step = plan_reassignment(reassigning(fits, started=1), "t", {1, 2, 3})
    assert step.complete is not None
    assert step.complete.states == () and step.complete.done == (0,)
    assert step.complete.assignment.partitions[0] == (3, 2)
