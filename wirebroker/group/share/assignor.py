"""Kafka's share-group `SimpleAssignor` (KIP-932), written from its rules: balance first,
then stickiness, and a partition may go to several members when there are more members
than partitions.

Only assignable partitions are handed out (Kafka 4.4: those whose share state is
initialized). With P assignable partitions and M members:
    desired sharing   ceil(M / P): how many members each partition should have;
    desired counts    member i (in order) should hold ceil(x*(i+1)) - ceil(x*i) partitions,
                      x = sharing * P / M, so the counts differ by at most one.
Steps (on the members' previous target): drop partitions no longer subscribed or
assignable; take away from partitions shared by more than the desired sharing (overfilled
members first); take away from members above their desired count; then hand the partitions
short of the desired sharing to members short of their count, round robin (a member never
gets the same partition twice; a partition nobody can take stays short).
All members subscribed to the same topics (homogeneous): one balance over every partition of
those topics; otherwise (heterogeneous) one balance per topic among the members subscribed
to it. Members are taken in member-id order and partitions in (topic id, partition) order
(a member above its count gives up its lowest partitions first), so the result is
deterministic; Kafka iterates Java hash maps, so which member gets which partition may differ
from Kafka's choice in some cases (the cases of tests/oracle/test_share_group_answers.py give
Kafka's), never the balance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from wirebroker.group.share.model import Assignment, TopicKey

NAME = "simple"

TP = tuple[TopicKey, int]


def assign(
    subscriptions: Mapping[str, frozenset[TopicKey]],
    assignable: Mapping[TopicKey, frozenset[int]],
    previous: Mapping[str, Assignment],
) -> dict[str, dict[TopicKey, frozenset[int]]]:
    """The target of every member of `subscriptions` (member id -> subscribed topic ids),
    from `assignable` (topic id -> the partitions that may be assigned) and the `previous`
    targets."""
    members = sorted(subscriptions)
    held: dict[str, set[TP]] = {m: set() for m in members}
    topics = {t for m in members for t in subscriptions[m]}
    if len({subscriptions[m] for m in members}) <= 1:
        groups: list[tuple[list[str], list[TP]]] = [(members, _partitions(topics, assignable))]
    else:
        groups = [
            ([m for m in members if t in subscriptions[m]], _partitions({t}, assignable))
            for t in sorted(topics, key=str)
        ]
    for group_members, partitions in groups:
        part_set = set(partitions)
        old = {
            m: {
                (t, p)
                for t, ps in previous.get(m, {}).items()
                for p in ps
                if (t, p) in part_set and t in subscriptions[m]
            }
            for m in group_members
        }
        for m, tps in _balance(group_members, partitions, old).items():
            held[m] |= tps
    out: dict[str, dict[TopicKey, frozenset[int]]] = {}
    for m in members:
        by_topic: dict[TopicKey, set[int]] = {}
        for t, p in held[m]:
            by_topic.setdefault(t, set()).add(p)
        out[m] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return out


def _partitions(topics: set[TopicKey], assignable: Mapping[TopicKey, frozenset[int]]) -> list[TP]:
    return [(t, p) for t in sorted(topics, key=str) for p in sorted(assignable.get(t, ()))]


def desired_counts(members: int, partitions: int) -> tuple[int, list[int]]:
    """(desired sharing, desired count of each member in order)."""
    if members == 0 or partitions == 0:
        return 0, [0] * members
    sharing = (members + partitions - 1) // partitions
    precise = sharing * partitions / members
    counts = [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]
    return sharing, counts


def _balance(
    members: Sequence[str], partitions: Sequence[TP], old: Mapping[str, set[TP]]
) -> dict[str, set[TP]]:
    sharing, counts = desired_counts(len(members), len(partitions))
    desired = dict(zip(members, counts, strict=True))
    by_member = {m: set(old.get(m, ())) for m in members}
    by_partition: dict[TP, list[str]] = {tp: [] for tp in partitions}
    for m in members:
        for tp in sorted(by_member[m]):
            by_partition[tp].append(m)
    over = {m for m in members if len(by_member[m]) > desired[m]}
    for tp in partitions:  # partitions shared too much: the overfilled members first
        holders = by_partition[tp]
        for m in sorted(holders, key=lambda m: (m not in over, m)):
            if len(holders) <= sharing:
                break
            holders.remove(m)
            by_member[m].discard(tp)
    for m in members:  # members holding too much
        for tp in sorted(by_member[m]):  # the first ones go, as Kafka's set iteration
            if len(by_member[m]) <= desired[m]:
                break
            by_member[m].discard(tp)
            by_partition[tp].remove(m)
    unfilled = [m for m in members if len(by_member[m]) < desired[m]]
    _fill(partitions, sharing, desired, by_member, by_partition, unfilled)
    return by_member


def _fill(
    partitions: Sequence[TP],
    sharing: int,
    desired: Mapping[str, int],
    by_member: dict[str, set[TP]],
    by_partition: dict[TP, list[str]],
    unfilled: list[str],
) -> None:
    """Round robin over the unfilled members for every partition short of `sharing`."""
    cursor = 0
    for tp in partitions:
        if not unfilled:
            return
        holders = by_partition[tp]
        misses = 0
        while len(holders) < sharing and unfilled and misses < len(unfilled):
            cursor %= len(unfilled)
            m = unfilled[cursor]
            if tp in by_member[m]:
                cursor += 1
                misses += 1
                continue
            holders.append(m)
            by_member[m].add(tp)
            misses = 0
            if len(by_member[m]) >= desired[m]:
                unfilled.pop(cursor)
            else:
                cursor += 1
