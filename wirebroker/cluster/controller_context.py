"""What the controller knows (`ControllerContext`) and what it decides from it (`plan`):
the pure core of `wirebroker.cluster.controller` (Kafka's ControllerContext, and the
decisions of its PartitionStateMachine / KafkaController.onBrokerFailure, onBrokerStartup,
controlled shutdown, preferred and auto-rebalance elections, as KRaft's QuorumController
returns records in a ControllerResult).

No I/O, no trio, no clock. The context lives as long as the controller: `ZkController` (the
runtime) loads it whole once when its broker becomes controller, then feeds it only what a
watch says changed (live brokers and their epochs, the brokers in controlled shutdown, a
topic's assignment and unclean-election setting, the states and state znode versions of the
partitions an ISR change notification names; `controller_reads.ContextReader`), asks `plan`
for the writes, applies each as a multi fenced by the controller epoch
(`ControllerContext.epoch_version`) and conditional on the state znode's version
(`StateWrite.version`), and records what it wrote (`ControllerContext.wrote`). A write that
fails its version check leaves the context as it was: the runtime reads only that partition
again and plans it again.

The rules (facts: shared/reference/replication.md section 2; per partition `elections.decide`):

    broker failure      a partition whose leader is not live elects the first replica in
                        assignment order that is live and in the ISR (a dead broker's ISR
                        memberships go: the ISR shrinks to the live members); none: leader -1
                        and the ISR kept, unless unclean election is enabled for the topic or
                        asked for the partition (then the first live replica, ISR = it alone,
                        recovering); leader epoch + 1
    broker start-up     an offline partition whose ISR member came back elects it
    bounced broker      (same id, new broker epoch) handled as a failure, then a start-up:
                        plan `Reconcile(failed=...)` first
    controlled shutdown a broker shutting down is not elected; its leaderships move to
                        another live ISR member, it leaves the other ISRs
    new partition       leader = first live replica not shutting down, ISR = the live
                        replicas, leader epoch 0 (a create: version -1)
    preferred election  the head of the assignment leads when it is live, in the ISR and not
                        shutting down (asked by /admin/preferred_replica_election, or by
                        `imbalanced` for auto.leader.rebalance.enable)

    reassignment        (KIP-455; `plan_reassignment`) while the assignment holds target and
                        leaving replicas: start (once per assignment version, a state with a
                        leader): leader epoch + 1, same leader and ISR; complete (every target
                        replica in the ISR): one multi of the assignment shrunk to the targets
                        and the completing states (`elections.finish_reassignment`)

`plan` orders its writes: new leaders first, ISR-only changes after, so a dead leader's
partitions are served again before the controller spends time on ISRs it only shrinks
(Kafka's onBrokerFailure elects the offline partitions before it moves the dead replicas to
OfflineReplica).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from wirebroker.metadata.elections import decide, finish_reassignment, reassignment_complete
from wirebroker.metadata.partition_state import PartitionState, TopicAssignment

__all__ = [
    "AssignmentWrite",
    "ControllerContext",
    "PartitionKey",
    "Reassignment",
    "Reconcile",
    "StateEntry",
    "StateWrite",
    "TopicEntry",
    "imbalanced",
    "plan",
    "plan_reassignment",
    "unclean_candidates",
]

PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class TopicEntry:
    """A topic as the controller read it: its assignment (at znode `version`) and whether
    unclean leader election is enabled for it (topic override, else the broker default)."""

    assignment: TopicAssignment
    version: int
    unclean: bool = False


@dataclass(frozen=True)
class StateEntry:
    """A partition's state as read (None: no state znode) and its znode version (-1: none)."""

    state: PartitionState | None
    version: int = -1


@dataclass(frozen=True)
class StateWrite:
    """One fenced write of a partition's state: create it (`version` -1, with its parent
    znodes) or set it at znode `version`; `old` is the state it replaces."""

    topic: str
    partition: int
    new: PartitionState
    version: int
    old: PartitionState | None = None

    @property
    def key(self) -> PartitionKey:
        return (self.topic, self.partition)

    @property
    def election(self) -> bool:
        """A new leader (or a first state), as opposed to an ISR-only change."""
        return self.old is None or self.new.leader != self.old.leader


@dataclass
class ControllerContext:
    """What one controller knows; the runtime keeps it current from its ZooKeeper reads."""

    epoch: int  # the controller epoch this controller won
    epoch_version: int  # the /controller_epoch znode version it wrote (every write checks it)
    live: set[int] = field(default_factory=set)  # brokers registered under /brokers/ids
    broker_epochs: dict[int, int] = field(default_factory=dict)  # broker -> czxid
    shutting_down: set[int] = field(default_factory=set)  # under /wirebroker/controlled_shutdown
    topics: dict[str, TopicEntry] = field(default_factory=dict)
    states: dict[PartitionKey, StateEntry] = field(default_factory=dict)
    #: reassignments in flight: partition -> the assignment version whose start was written
    started: dict[PartitionKey, int] = field(default_factory=dict)

    def set_brokers(self, epochs: Mapping[int, int]) -> set[int]:
        """The registered brokers and their epochs (czxids) as read now; returns the bounced
        ones: registered again under the same id with a new epoch (Kafka's
        processBrokerChange)."""
        bounced = {
            broker
            for broker, epoch in epochs.items()
            if broker in self.broker_epochs and self.broker_epochs[broker] != epoch
        }
        self.broker_epochs = dict(epochs)
        self.live = set(epochs)
        return bounced

    def set_topic(self, topic: str, entry: TopicEntry) -> None:
        self.topics[topic] = entry

    def keep_topics(self, topics: Collection[str]) -> None:
        """Forget every topic not in `topics` (deleted), with its partitions' states."""
        for gone in set(self.topics) - set(topics):
            self.drop_topic(gone)

    def drop_topic(self, topic: str) -> None:
        """Forget `topic` and its partitions' states."""
        self.topics.pop(topic, None)
        for key in [key for key in self.states if key[0] == topic]:
            del self.states[key]
        for key in [key for key in self.started if key[0] == topic]:
            del self.started[key]

    def set_state(self, topic: str, partition: int, entry: StateEntry) -> None:
        self.states[(topic, partition)] = entry

    def forget_state(self, topic: str, partition: int) -> None:
        self.states.pop((topic, partition), None)

    def wrote(self, write: StateWrite) -> None:
        """`write` succeeded: the state znode now holds `write.new` at the next version."""
        self.states[write.key] = StateEntry(write.new, write.version + 1)

    def partitions(self, topics: Iterable[str] | None = None) -> list[PartitionKey]:
        """The partitions of `topics` (default: every known topic), in topic then partition
        order."""
        names = sorted(self.topics) if topics is None else [t for t in topics if t in self.topics]
        return [(t, index) for t in names for index in sorted(self.topics[t].assignment.partitions)]

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        entry = self.topics.get(topic)
        return () if entry is None else entry.assignment.replicas(partition)


@dataclass(frozen=True)
class Reconcile:
    """Bring `partitions` (in this order) to what the rules decide for the context's brokers.

    `preferred`: partitions asked for a preferred-leader election; `unclean`: partitions
    asked for an unclean election (ElectLeaders UNCLEAN); `failed`: brokers handled as dead
    although registered (a bounced broker's failure, planned before its start-up)."""

    partitions: Sequence[PartitionKey]
    preferred: Collection[PartitionKey] = frozenset()
    unclean: Collection[PartitionKey] = frozenset()
    failed: Collection[int] = frozenset()


def plan(context: ControllerContext, event: Reconcile) -> list[StateWrite]:
    """The state writes `event` calls for (see the module docstring): elections first, then
    ISR-only changes, each in `event.partitions` order. A partition whose topic or state the
    context does not hold is left alone (the runtime could not read it)."""
    live = context.live - set(event.failed)
    elections: list[StateWrite] = []
    isr_changes: list[StateWrite] = []
    for topic, partition in event.partitions:
        entry = context.topics.get(topic)
        known = context.states.get((topic, partition))
        if entry is None or known is None or partition not in entry.assignment.partitions:
            continue
        key = (topic, partition)
        new = decide(
            entry.assignment.replicas(partition),
            known.state,
            live=live,
            shutting_down=context.shutting_down,
            unclean=entry.unclean or key in event.unclean,
            controller_epoch=context.epoch,
            preferred=key in event.preferred,
        )
        if new is None:
            continue
        write = StateWrite(topic, partition, new, known.version, known.state)
        (elections if write.election else isr_changes).append(write)
    return elections + isr_changes


def unclean_candidates(
    context: ControllerContext, keys: Iterable[PartitionKey], failed: Collection[int] = ()
) -> set[str]:
    """The topics of `keys` with a partition whose leader is not live (or `failed`) and whose
    ISR has no live member: only there does unclean.leader.election.enable decide anything,
    so the runtime reads those topics' setting just before planning (as Kafka's controller
    reads the topic config for an offline partition without a live ISR member)."""
    live = context.live - set(failed)
    out: set[str] = set()
    for topic, partition in keys:
        known = context.states.get((topic, partition))
        if topic in out or known is None or known.state is None:
            continue
        if known.state.leader not in live and not live.intersection(known.state.isr):
            out.add(topic)
    return out


def imbalanced(
    context: ControllerContext, limit_percent: int
) -> tuple[set[PartitionKey], list[int]]:
    """Kafka's checkAndTriggerAutoLeaderRebalance: the partitions whose preferred leader (head
    of the assignment) is live but does not lead, for every broker whose share of such
    partitions is above `limit_percent` (leader.imbalance.per.broker.percentage) of the
    partitions it is the preferred leader of; and those brokers, in the order found.
    A partition whose state the context does not hold counts as led by its head."""
    preferred: dict[int, int] = {}
    not_leading: dict[int, list[PartitionKey]] = {}
    for topic, partition in context.partitions():
        replicas = context.replicas(topic, partition)
        if not replicas or replicas[0] not in context.live:
            continue
        head = replicas[0]
        preferred[head] = preferred.get(head, 0) + 1
        known = context.states.get((topic, partition))
        if known is None or known.state is None:
            continue
        if known.state.leader != head:
            not_leading.setdefault(head, []).append((topic, partition))
    out: set[PartitionKey] = set()
    brokers: list[int] = []
    for broker, parts in not_leading.items():
        if len(parts) * 100 > limit_percent * preferred[broker]:
            brokers.append(broker)
            out.update(parts)
    return out, brokers


@dataclass(frozen=True)
class AssignmentWrite:
    """One multi completing reassignments: the topic's assignment (conditional on the
    `version` read) with the `done` partitions shrunk to their targets, and the completing
    partitions' `states` (each conditional on its own version)."""

    topic: str
    assignment: TopicAssignment
    version: int
    done: tuple[int, ...]
    states: tuple[StateWrite, ...] = ()


@dataclass(frozen=True)
class Reassignment:
    """The steps of one topic's reassignments now: `starts` (the partitions whose start is
    due, with the write announcing it: None for a partition without a leader, which is only
    marked started) and the `complete` multi, if any partition completed."""

    starts: tuple[tuple[PartitionKey, StateWrite | None], ...] = ()
    complete: AssignmentWrite | None = None


def plan_reassignment(
    context: ControllerContext, topic: str, live: Collection[int]
) -> Reassignment:
    """Kafka's onPartitionReassignment for `topic`'s reassigning partitions whose state the
    context holds: a partition whose target replicas are not all in the ISR yet gets its start
    (step A3: leader epoch + 1, same leader and ISR), once per assignment version
    (`ControllerContext.started`); every partition whose target replicas are all in the ISR
    completes (steps B3-B6 at once: `elections.finish_reassignment` of its state, in one
    multi with the assignment shrunk to the targets)."""
    entry = context.topics.get(topic)
    if entry is None:
        return Reassignment()
    assignment = entry.assignment
    starts: list[tuple[PartitionKey, StateWrite | None]] = []
    done: dict[int, tuple[int, ...]] = {}
    states: list[StateWrite] = []
    for index in sorted(set(assignment.adding) | set(assignment.removing)):
        key = (topic, index)
        leaving = assignment.removing.get(index, ())
        target = tuple(r for r in assignment.replicas(index) if r not in leaving)
        known = context.states.get(key)
        state = None if known is None else known.state
        if known is None or state is None:
            continue
        if not reassignment_complete(target, state):
            if context.started.get(key) != entry.version:
                start = None
                if state.leader >= 0:
                    bumped = dataclasses.replace(
                        state, leader_epoch=state.leader_epoch + 1, controller_epoch=context.epoch
                    )
                    start = StateWrite(topic, index, bumped, known.version, state)
                starts.append((key, start))
            continue
        new = finish_reassignment(target, state, live=live, controller_epoch=context.epoch)
        if new is not None:
            states.append(StateWrite(topic, index, new, known.version, state))
        done[index] = target
    complete = None
    if done:
        partitions = dict(assignment.partitions)
        adding = dict(assignment.adding)
        removing = dict(assignment.removing)
        for index, target in done.items():
            partitions[index] = target
            adding.pop(index, None)
            removing.pop(index, None)
        shrunk = dataclasses.replace(
            assignment, partitions=partitions, adding=adding, removing=removing
        )
        complete = AssignmentWrite(topic, shrunk, entry.version, tuple(done), tuple(states))
    return Reassignment(tuple(starts), complete)
