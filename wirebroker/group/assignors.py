"""KIP-848 server-side partition assignors: `uniform` and `range`, as Kafka 4.4's group coordinator.

Pure: no I/O, no trio, no clock. The group core calls `Assignor.assign` with every member's
resolved subscription (topic ids; regular expressions already evaluated, `wirebroker.group.regex`)
and its current target assignment, and gets the new target assignment of every member.

Semantics (Kafka's `org.apache.kafka.coordinator.group.assignor`, written anew here):

- `uniform` (Kafka's `UniformAssignor`, the default). When every member subscribes to the same
  topics ("homogeneous"): the T partitions are split so that every member owns T // N or
  T // N + 1, and a member keeps as many of its current partitions as that allows (members that
  already hold the most get the T % N larger quotas; Kafka 4.4 hands them out walking its
  members and takes one back from a member that cannot fill it: the same counts and moves in
  every case tests/oracle tried). The partitions nobody keeps fill the others in topic id order
  (Kafka: its HashSet's order of topic ids). Otherwise ("heterogeneous"), as Kafka 4.4's
  builder, step for step: a member keeps its current partitions of the topics it still
  subscribes to; the other partitions go, a topic at a time (most partitions per subscriber
  first, then fewer subscribers, then topic id), to the least loaded subscribers level by level;
  then partitions move from a topic's most loaded holders to its least loaded subscribers, round
  after round over the topics, until a round moves nothing (Kafka stops after 16 rounds; each
  move lowers the sum of squared loads, so this ends). The oracle test finds the very same
  assignments as Kafka's.
- `range` (Kafka's `RangeAssignor`): per topic, its subscribers (static members first, by
  instance id, then the others by member id) get contiguous ranges of P // K partitions, the
  first P % K one more. Not sticky beyond that order (Kafka's is not either): a static member
  that rejoins under a new member id keeps its range.
- Racks are not used (Kafka 4.4's server-side assignors ignore them too).
- Ties are broken by member id (ordered as Java's `String.compareTo`) and topic id (as Kafka's
  `Uuid.compareTo`), so the same input always gives the same output.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNORS",
    "RANGE",
    "UNIFORM",
    "Assignment",
    "Assignor",
    "AssignorError",
    "MemberSpec",
    "RangeAssignor",
    "TopicKey",
    "TopicSpec",
    "UniformAssignor",
    "assignors_from_config",
    "java_string_order",
    "kafka_uuid_order",
]

TopicKey = uuid.UUID
"""A topic id (Kafka's assignments carry topic ids)."""

Assignment = dict[str, dict[TopicKey, frozenset[int]]]
"""member id -> topic id -> partitions."""


@dataclass(frozen=True)
class MemberSpec:
    subscribed: frozenset[TopicKey]
    rack: str | None = None
    instance_id: str | None = None
    assigned: Mapping[TopicKey, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicSpec:
    partitions: int
    racks: Mapping[int, frozenset[str]] = field(default_factory=dict)


class AssignorError(Exception):
    """An assignment that cannot be computed (Kafka's PartitionAssignorException)."""


class Assignor(Protocol):
    name: str

    def assign(
        self, members: Mapping[str, MemberSpec], topics: Mapping[TopicKey, TopicSpec]
    ) -> Assignment: ...


TopicPartition = tuple[TopicKey, int]


def _subscriptions(
    members: Mapping[str, MemberSpec], topics: Mapping[TopicKey, TopicSpec]
) -> dict[str, frozenset[TopicKey]]:
    """Each member's subscribed topics that exist (with at least one partition)."""
    for topic_id, spec in topics.items():
        if spec.partitions < 0:
            raise AssignorError(f"topic {topic_id} has {spec.partitions} partitions")
    return {
        member_id: frozenset(t for t in spec.subscribed if t in topics and topics[t].partitions)
        for member_id, spec in members.items()
    }


def _current_owners(
    member_ids: Sequence[str],
    members: Mapping[str, MemberSpec],
    subscriptions: Mapping[str, frozenset[TopicKey]],
    topics: Mapping[TopicKey, TopicSpec],
) -> dict[str, list[TopicPartition]]:
    """The current partitions each member may keep: subscribed, existing, claimed by no earlier
    member of `member_ids` (a partition in two members' inputs stays with the first); sorted."""
    claimed: set[TopicPartition] = set()
    kept: dict[str, list[TopicPartition]] = {}
    for member_id in member_ids:
        mine: list[TopicPartition] = []
        assigned = members[member_id].assigned
        for topic_id in sorted(
            (t for t in assigned if t in subscriptions[member_id]), key=kafka_uuid_order
        ):
            count = topics[topic_id].partitions
            for partition in sorted(assigned[topic_id]):
                tp = (topic_id, partition)
                if 0 <= partition < count and tp not in claimed:
                    claimed.add(tp)
                    mine.append(tp)
        kept[member_id] = mine
    return kept


def java_string_order(text: str) -> bytes:
    """Java's `String.compareTo` order (UTF-16 code units; Python compares code points, which
    differs only between characters past U+FFFF and those from U+E000 to U+FFFF)."""
    return text.encode("utf-16-be", "surrogatepass")


def kafka_uuid_order(topic_id: TopicKey) -> tuple[int, int]:
    """Kafka's `Uuid.compareTo`: the high, then the low 64 bits, each as a signed Java long."""
    high, low = topic_id.int >> 64, topic_id.int & (1 << 64) - 1
    return (high - (high >> 63 << 64), low - (low >> 63 << 64))


def _to_assignment(
    member_ids: Sequence[str], owned: Mapping[str, Sequence[TopicPartition]]
) -> Assignment:
    result: Assignment = {}
    for member_id in member_ids:
        by_topic: dict[TopicKey, set[int]] = {}
        for topic_id, partition in owned.get(member_id, ()):
            by_topic.setdefault(topic_id, set()).add(partition)
        result[member_id] = {
            t: frozenset(by_topic[t]) for t in sorted(by_topic, key=kafka_uuid_order)
        }
    return result


class UniformAssignor:
    """Kafka's `uniform` assignor: balance first, then stickiness."""

    name = "uniform"

    def assign(
        self, members: Mapping[str, MemberSpec], topics: Mapping[TopicKey, TopicSpec]
    ) -> Assignment:
        member_ids = sorted(members, key=java_string_order)
        subscriptions = _subscriptions(members, topics)
        kept = _current_owners(member_ids, members, subscriptions, topics)
        if len(set(subscriptions.values())) <= 1:
            owned = _uniform_homogeneous(member_ids, subscriptions, kept, topics)
        else:
            owned = _UniformHeterogeneous(member_ids, subscriptions, kept, topics).build()
        return _to_assignment(member_ids, owned)


def _uniform_homogeneous(
    member_ids: Sequence[str],
    subscriptions: Mapping[str, frozenset[TopicKey]],
    kept: Mapping[str, list[TopicPartition]],
    topics: Mapping[TopicKey, TopicSpec],
) -> dict[str, list[TopicPartition]]:
    """Every member subscribes to the same topics: quotas T // N (+1 for T % N members)."""
    if not member_ids:
        return {}
    subscribed = sorted(subscriptions[member_ids[0]], key=kafka_uuid_order)
    total = sum(topics[t].partitions for t in subscribed)
    minimum, extra = divmod(total, len(member_ids))
    # The larger quotas go to the members that hold the most already: fewest moves.
    by_holding = sorted(member_ids, key=lambda m: -len(kept[m]))  # stable: then member order
    quota = {m: minimum + (1 if i < extra else 0) for i, m in enumerate(by_holding)}
    owned = {m: kept[m][: quota[m]] for m in member_ids}
    taken = {tp for m in member_ids for tp in owned[m]}
    free = [(t, p) for t in subscribed for p in range(topics[t].partitions) if (t, p) not in taken]
    cursor = 0
    for member_id in member_ids:
        need = quota[member_id] - len(owned[member_id])
        owned[member_id] = owned[member_id] + free[cursor : cursor + need]
        cursor += need
    if cursor != len(free):  # cannot happen: the quotas add up to the partitions
        raise AssignorError(f"{len(free) - cursor} partitions left unassigned")
    return owned


class _UniformHeterogeneous:
    """Members subscribe to different topics: keep, fill the least loaded, then rebalance."""

    def __init__(
        self,
        member_ids: Sequence[str],
        subscriptions: Mapping[str, frozenset[TopicKey]],
        kept: Mapping[str, list[TopicPartition]],
        topics: Mapping[TopicKey, TopicSpec],
    ) -> None:
        self.member_ids = list(member_ids)
        self.topics = topics
        self.subscribers: dict[TopicKey, list[int]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in subscriptions[member_id]:
                self.subscribers.setdefault(topic_id, []).append(index)
        self.owner: dict[TopicKey, list[int]] = {
            t: [-1] * topics[t].partitions for t in self.subscribers
        }
        self.load = [0] * len(self.member_ids)
        for index, member_id in enumerate(self.member_ids):
            for topic_id, partition in kept[member_id]:
                self.owner[topic_id][partition] = index
                self.load[index] += 1

    def _topic_order(self) -> list[TopicKey]:
        """Most partitions per subscriber first, then fewest subscribers, then topic id."""

        def key(topic_id: TopicKey) -> tuple[float, int, int, int]:
            count, subscribers = self.topics[topic_id].partitions, len(self.subscribers[topic_id])
            return (-count / subscribers, subscribers, *kafka_uuid_order(topic_id))

        return sorted(self.subscribers, key=key)

    def build(self) -> dict[str, list[TopicPartition]]:
        order = self._topic_order()
        for topic_id in order:
            self._fill(topic_id)
        self._balance_all([t for t in order if len(self.subscribers[t]) > 1])
        owned: dict[str, list[TopicPartition]] = {m: [] for m in self.member_ids}
        for topic_id in sorted(self.owner, key=kafka_uuid_order):
            for partition, index in enumerate(self.owner[topic_id]):
                owned[self.member_ids[index]].append((topic_id, partition))
        return owned

    def _balance_all(self, order: Sequence[TopicKey]) -> None:
        """Balance topic after topic, round after round, until a whole round moves nothing
        (Kafka stops after 16 rounds; each move lowers the sum of squared loads, so this ends:
        the bound below is only a guard)."""
        last_moved = -1
        for _ in range(16 + sum(self.load) ** 2 if order else 0):
            for index, topic_id in enumerate(order):
                if index == last_moved:
                    return
                if self._balance(topic_id) or last_moved == -1:
                    last_moved = index

    def _fill(self, topic_id: TopicKey) -> None:
        """The topic's unowned partitions, each to its least loaded subscriber (then index)."""
        owners = self.owner[topic_id]
        # Ties go to the member that started lower (then the lower index): Kafka fills level by
        # level in the order the subscribers had before this topic's partitions were handed out.
        start = sorted(self.subscribers[topic_id], key=lambda i: (self.load[i], i))
        heap = [(self.load[i], rank, i) for rank, i in enumerate(start)]
        heapq.heapify(heap)
        for partition, index in enumerate(owners):
            if index != -1:
                continue
            load, rank, chosen = heapq.heappop(heap)
            owners[partition] = chosen
            self.load[chosen] = load + 1
            heapq.heappush(heap, (load + 1, rank, chosen))

    def _balance(self, topic_id: TopicKey) -> int:
        """Move this topic's partitions from its most loaded holders to its least loaded
        subscribers until those differ by one at most (Kafka's level-by-level order: takers
        round-robin from the least loaded up, givers from the most loaded down, a giver's
        highest partition first); returns how many moved."""
        owners = self.owner[topic_id]
        levels = _Levels(self.load, self.subscribers[topic_id])
        if levels.spread <= 1:
            return 0
        held: dict[int, list[int]] = {}
        for partition, index in enumerate(owners):
            held.setdefault(index, []).append(partition)
        moves = 0
        while not levels.balanced():
            giver = levels.next_most_loaded()
            while giver != -1 and not held.get(giver):
                levels.exclude_most_loaded()
                giver = levels.next_most_loaded()
            if giver == -1:
                break
            partition = held[giver].pop()
            taker = levels.next_least_loaded()
            if levels.balanced():
                break
            owners[partition] = taker
            self.load[giver] -= 1
            self.load[taker] += 1
            moves += 1
        return moves


class _Levels:
    """A topic's subscribers sorted by load (then index), with two ranges that grow inward: the
    least loaded (handed partitions round-robin, a level at a time) and the most loaded (giving
    them up, a level at a time). `load` is the shared, live list of member loads."""

    def __init__(self, load: list[int], subscribers: Sequence[int]) -> None:
        self.load = load
        self.sorted = sorted(subscribers, key=lambda i: (load[i], i))
        n = len(self.sorted)
        self.spread = load[self.sorted[-1]] - load[self.sorted[0]]
        self.least_end, self.least_level, self.next_least = 0, load[self.sorted[0]] - 1, 0
        self.most_start, self.most_end = n, n
        self.most_level, self.next_most = load[self.sorted[-1]] + 1, n - 1

    def balanced(self) -> bool:
        return self.most_level - self.least_level <= 1

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_level += 1
            while (
                self.least_end < len(self.sorted)
                and self.load[self.sorted[self.least_end]] == self.least_level
            ):
                self.least_end += 1
            self.next_least = 0
        chosen = self.sorted[self.next_least]
        self.next_least += 1
        return chosen

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_level = self.load[self.sorted[self.most_start - 1]]
            else:
                self.most_level -= 1
            while (
                self.most_start > 0
                and self.load[self.sorted[self.most_start - 1]] == self.most_level
            ):
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        chosen = self.sorted[self.next_most]
        self.next_most -= 1
        return chosen

    def exclude_most_loaded(self) -> None:
        """The member `next_most_loaded` just gave has nothing to give: out of the range."""
        i, last = self.next_most + 1, self.most_end - 1
        self.sorted[i], self.sorted[last] = self.sorted[last], self.sorted[i]
        self.most_end -= 1


class RangeAssignor:
    """Kafka's `range` assignor: contiguous ranges per topic (co-partitioning)."""

    name = "range"

    def assign(
        self, members: Mapping[str, MemberSpec], topics: Mapping[TopicKey, TopicSpec]
    ) -> Assignment:
        subscriptions = _subscriptions(members, topics)
        ordered = sorted(members, key=lambda m: _range_order(m, members[m]))
        subscribers: dict[TopicKey, list[str]] = {}
        for member_id in ordered:
            for topic_id in subscriptions[member_id]:
                subscribers.setdefault(topic_id, []).append(member_id)
        owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
        for topic_id in sorted(subscribers, key=kafka_uuid_order):
            minimum, extra = divmod(topics[topic_id].partitions, len(subscribers[topic_id]))
            start = 0
            for i, member_id in enumerate(subscribers[topic_id]):
                end = start + minimum + (1 if i < extra else 0)
                owned[member_id].extend((topic_id, p) for p in range(start, end))
                start = end
        return _to_assignment(sorted(members, key=java_string_order), owned)


def _range_order(member_id: str, spec: MemberSpec) -> tuple[int, bytes, bytes]:
    """Static members first by instance id, then dynamic ones by member id (Kafka's order)."""
    if spec.instance_id is not None:
        return (0, java_string_order(spec.instance_id), java_string_order(member_id))
    return (1, java_string_order(member_id), b"")


UNIFORM: Assignor = UniformAssignor()
RANGE: Assignor = RangeAssignor()
ASSIGNORS: Mapping[str, Assignor] = {UNIFORM.name: UNIFORM, RANGE.name: RANGE}

DEFAULT_ASSIGNORS: tuple[str, ...] = ("uniform", "range")
"""Kafka 4.4's default `group.consumer.assignors` (its built-in assignors' names)."""

_KAFKA_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignors_from_config(names: Sequence[str]) -> list[Assignor]:
    """`group.consumer.assignors` (the list, split at its commas): the first is the default.

    As Kafka 4.4, an entry is a built-in assignor's name (`uniform`, `range`) or a class name;
    of class names only Kafka's own two are known here. Refused with ValueError carrying Kafka's
    ConfigException text (checked on Kafka's GroupCoordinatorConfig): an empty list or entry, an
    unknown class, two different entries for one assignor (`uniform` and Kafka's UniformAssignor
    class); the same entry twice counts once, as Kafka's list parsing has it."""
    config = "group.consumer.assignors"
    stripped = [raw.strip() for raw in names]
    if not stripped:
        raise ValueError(
            f"Configuration '{config}' must not be empty. Valid values include: any non-empty value"
        )
    if "" in stripped:
        raise ValueError(f"Configuration '{config}' values must not be empty.")
    result: list[Assignor] = []
    for name in dict.fromkeys(stripped):  # an entry repeated counts once (Kafka: the same)
        assignor = ASSIGNORS.get(_KAFKA_CLASS_NAMES.get(name, name))
        if assignor is None:
            raise ValueError(
                f"Invalid value {name} for configuration {config}: Class cannot be found"
            )
        if assignor in result:
            raise ValueError(
                f"Invalid value {name} for configuration {config}: Assignor name "
                f"'{assignor.name}' is already registered by another configured assignor. "
                "Assignor names, whether built-in or custom, must be unique"
            )
        result.append(assignor)
    return result
