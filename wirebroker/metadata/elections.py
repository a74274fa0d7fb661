"""The controller's decisions, as a pure function of one partition's assignment and state.

`decide` is what the controller (`wirebroker.cluster.controller`) computes for every partition
whenever the set of brokers changes, a topic or partition appears, a broker asks for a
controlled shutdown, or a preferred-leader election is asked for. It returns the new state to
write (conditionally, fenced by the controller epoch and the znode version) or None when the
partition's state is already right. Kafka 3.9's rules (PartitionStateMachine,
PartitionLeaderElectionAlgorithms, KafkaController.onBrokerFailure / controlledShutdown):

    new partition        leader = first live replica in assignment order, ISR = the live
                         replicas, leader epoch 0; no live replica: leader -1, ISR = assignment
    leader dead / none   `elect_leader`: first replica in assignment order that is live
                         and in the ISR; with unclean election the first live replica (ISR = it
                         alone, recovering); else leader -1 with the ISR kept (so a returning
                         member leads again cleanly). Leader epoch + 1.
    ISR member dead      removed from the ISR, leader epoch + 1 (the leader is never removed:
                         a dead leader is handled by the row above)
    shutting down        a broker in controlled shutdown is not elected; a partition it leads
                         moves to another live ISR member (epoch + 1) and it leaves the ISRs
                         of the others; a partition with no other live ISR member stays with
                         it (Kafka keeps such partitions on the broker until it stops)
    preferred election   the head of the assignment becomes leader when it is live, in the
                         ISR and not shutting down (epoch + 1)

Reassignments (KIP-455): while one runs the assignment holds target + leaving replicas, so the
rules above apply to all of them; `reassignment_complete` says when every target replica is in
the ISR, then `finish_reassignment` gives the state to write (leaving replicas out of the ISR,
a target replica leading), which the controller writes in one multi with the assignment
shrunk to the target.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from wirebroker.metadata.partition_state import NO_LEADER, PartitionState

__all__ = [
    "Election",
    "decide",
    "elect_leader",
    "finish_reassignment",
    "reassignment_complete",
    "remove_from_isr",
]


@dataclass(frozen=True)
class Election:
    """The outcome of an election: `leader` is NO_LEADER when the partition goes offline."""

    leader: int
    isr: tuple[int, ...]
    recovering: bool = False  # unclean: the new leader's log may lack acknowledged records


def elect_leader(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int], *, unclean: bool
) -> Election:
    """Kafka's offlinePartitionLeaderElection: the first replica in assignment order that is
    live and in the ISR; else, with unclean election, the first live replica (ISR = it alone);
    else offline with the ISR kept, so a returning member can lead again cleanly."""
    live_isr = [r for r in assignment if r in live and r in isr]
    if live_isr:
        return Election(live_isr[0], tuple(live_isr))
    if unclean:
        for replica in assignment:
            if replica in live:
                return Election(replica, (replica,), recovering=True)
    return Election(NO_LEADER, tuple(isr))


def remove_from_isr(leader: int, isr: Sequence[int], dead: int) -> Election:
    """A follower or the leader died (Kafka's doRemoveReplicasFromIsr): it leaves the ISR,
    unless it is the last member, which stays while the partition goes leaderless."""
    if list(isr) == [dead]:
        return Election(NO_LEADER, tuple(isr))
    rest = tuple(r for r in isr if r != dead)
    return Election(NO_LEADER if leader == dead else leader, rest)


def decide(
    assignment: Sequence[int],
    state: PartitionState | None,
    *,
    live: Collection[int],
    shutting_down: Collection[int] = (),
    unclean: bool = False,
    controller_epoch: int,
    preferred: bool = False,
) -> PartitionState | None:
    eligible = [r for r in assignment if r in live and r not in shutting_down]
    if state is None:
        live_replicas = tuple(r for r in assignment if r in live)
        if not live_replicas:
            return PartitionState(NO_LEADER, 0, tuple(assignment), controller_epoch)
        leader = eligible[0] if eligible else live_replicas[0]
        return PartitionState(leader, 0, live_replicas, controller_epoch)

    epoch = state.leader_epoch + 1
    if state.leader not in live:
        election = elect_leader(assignment, state.isr, eligible, unclean=unclean)
        if election.leader == NO_LEADER:
            # A shutting-down ISR member still beats going offline.
            fallback = elect_leader(assignment, state.isr, live, unclean=False)
            if fallback.leader != NO_LEADER:
                return PartitionState(fallback.leader, epoch, fallback.isr, controller_epoch)
            if state.leader == NO_LEADER:
                return None
            return PartitionState(NO_LEADER, epoch, state.isr, controller_epoch)
        return PartitionState(
            election.leader, epoch, election.isr, controller_epoch, election.recovering
        )

    if state.leader in shutting_down:
        others = [r for r in eligible if r in state.isr]
        if others:
            isr = tuple(r for r in state.isr if r in eligible)
            return PartitionState(others[0], epoch, isr, controller_epoch)
    elif preferred and assignment and assignment[0] != state.leader:
        head = assignment[0]
        if head in eligible and head in state.isr:
            return PartitionState(head, epoch, state.isr, controller_epoch)

    isr = tuple(r for r in state.isr if r == state.leader or (r in live and r not in shutting_down))
    if isr != tuple(state.isr):
        return PartitionState(state.leader, epoch, isr, controller_epoch, state.recovering)
    return None


def reassignment_complete(target: Sequence[int], state: PartitionState | None) -> bool:
    """A reassignment completes once every target replica is in the ISR (Kafka's
    isReassignmentComplete)."""
    return state is not None and state.leader >= 0 and all(r in state.isr for r in target)


def finish_reassignment(
    target: Sequence[int],
    state: PartitionState,
    *,
    live: Collection[int],
    controller_epoch: int,
) -> PartitionState | None:
    """The state to write with the assignment shrinking to `target`: the replicas leaving
    drop out of the ISR and, when the leader is one of them (or dead), the first live target
    replica in the ISR leads (leader epoch + 1). None: the state already fits."""
    isr = tuple(r for r in state.isr if r in target)
    leader = state.leader
    if leader not in target or leader not in live:
        candidates = [r for r in target if r in isr and r in live]
        leader = candidates[0] if candidates else NO_LEADER
    if leader == state.leader and isr == tuple(state.isr):
        return None
    return PartitionState(leader, state.leader_epoch + 1, isr, controller_epoch)
