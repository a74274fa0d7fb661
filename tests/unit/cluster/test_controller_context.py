"""The controller's long-lived context (wirebroker.cluster.controller_context.ControllerContext)
kept current event by event, with no ZooKeeper: what each update leaves in it, and that the
next `plan` decides from it (Kafka's ControllerContext, updated by the controller's events and
by its own writes)."""

from __future__ import annotations

from wirebroker.cluster.controller_context import (
    ControllerContext,
    Reconcile,
    StateEntry,
    TopicEntry,
    plan,
    unclean_candidates,
)
from wirebroker.metadata.partition_state import NO_LEADER, PartitionState, TopicAssignment

EPOCH = 7


def loaded() -> ControllerContext:
    """As `ContextReader.load` leaves it: brokers 1-3, topic t (2 partitions on 1,2,3) led by
    1 with every replica in the ISR, each state znode at version 0."""
    ctx = ControllerContext(EPOCH, epoch_version=3)
    ctx.set_brokers({1: 101, 2: 102, 3: 103})
    ctx.set_topic("t", TopicEntry(TopicAssignment({0: (1, 2, 3), 1: (1, 3, 2)}), 0))
    for index in (0, 1):
        ctx.set_state("t", index, StateEntry(PartitionState(1, 0, (1, 2, 3), 1), 0))
    return ctx


def test_the_controllers_own_writes_keep_the_context_current() -> None:
    ctx = loaded()
    assert ctx.set_brokers({2: 102, 3: 103}) == set()  # broker 1 died
    writes = plan(ctx, Reconcile(ctx.partitions()))
    assert [(w.key, w.new.leader, w.new.isr, w.version) for w in writes] == [
        (("t", 0), 2, (2, 3), 0),
        (("t", 1), 3, (3, 2), 0),
    ]
    for write in writes:
        ctx.wrote(write)  # the multi succeeded
    assert ctx.states[("t", 0)] == StateEntry(PartitionState(2, 1, (2, 3), EPOCH), 1)
    assert ctx.states[("t", 1)] == StateEntry(PartitionState(3, 1, (3, 2), EPOCH), 1)
    assert plan(ctx, Reconcile(ctx.partitions())) == []  # nothing left to do, nothing re-read


def test_an_isr_change_read_after_its_notification_is_what_the_next_election_uses() -> None:
    ctx = loaded()
    # leader 1 shrank t-0's ISR to [1, 3] (its write: version 1); the controller re-read it
    ctx.set_state("t", 0, StateEntry(PartitionState(1, 0, (1, 3), 1), 1))
    ctx.set_brokers({2: 102, 3: 103})
    [first, second] = plan(ctx, Reconcile(ctx.partitions()))
    assert (first.key, first.new.leader, first.new.isr, first.version) == (("t", 0), 3, (3,), 1)
    assert (second.key, second.new.leader, second.version) == (("t", 1), 3, 0)


def test_a_bounced_broker_is_told_apart_from_a_registration_seen_before() -> None:
    ctx = loaded()
    assert ctx.set_brokers({1: 101, 2: 102, 3: 103}) == set()  # the same registrations
    assert ctx.set_brokers({1: 201, 2: 102, 3: 103}) == {1}  # 1 registered again
    assert ctx.live == {1, 2, 3} and ctx.broker_epochs[1] == 201
    assert ctx.set_brokers({1: 201, 2: 102, 3: 103}) == set()  # seen once only


def test_a_deleted_topic_leaves_nothing_behind() -> None:
    ctx = loaded()
    ctx.started[("t", 0)] = 0
    ctx.set_topic("u", TopicEntry(TopicAssignment({0: (2,)}), 0))
    ctx.set_state("u", 0, StateEntry(None))
    ctx.keep_topics({"u"})
    assert set(ctx.topics) == {"u"} and set(ctx.states) == {("u", 0)} and ctx.started == {}
    assert ctx.partitions() == [("u", 0)]


def test_a_new_topic_read_alone_is_planned_alone() -> None:
    ctx = loaded()
    ctx.set_topic("new", TopicEntry(TopicAssignment({0: (3, 1)}), 0))
    ctx.set_state("new", 0, StateEntry(None))  # no state znode yet
    [write] = plan(ctx, Reconcile(ctx.partitions(["new"])))
    assert (write.key, write.new, write.version) == (
        ("new", 0),
        PartitionState(3, 0, (3, 1), EPOCH),
        -1,
    )
    ctx.wrote(write)
    assert ctx.states[("new", 0)] == StateEntry(PartitionState(3, 0, (3, 1), EPOCH), 0)


def test_the_unclean_setting_is_read_only_for_partitions_without_a_live_isr_member() -> None:
    ctx = loaded()
    ctx.set_state("t", 1, StateEntry(PartitionState(NO_LEADER, 2, (1,), 1), 4))
    ctx.set_brokers({2: 102, 3: 103})
    assert unclean_candidates(ctx, ctx.partitions()) == {"t"}
    assert unclean_candidates(ctx, [("t", 0)]) == set()  # 2 and 3 are live ISR members
    ctx.set_brokers({1: 101, 2: 102, 3: 103})
    assert unclean_candidates(ctx, ctx.partitions()) == set()
    assert unclean_candidates(ctx, ctx.partitions(), failed={1}) == {"t"}
