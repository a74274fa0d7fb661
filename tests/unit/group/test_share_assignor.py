"""The share groups' simple assignor: balance, sharing when members outnumber partitions,
stickiness, per-topic balance for different subscriptions, assignable partitions only."""

from __future__ import annotations

import uuid

from wirebroker.group.share.assignor import assign, desired_counts

T = uuid.UUID(int=1)
U = uuid.UUID(int=2)


def _holders(
    result: dict[str, dict[uuid.UUID, frozenset[int]]], topic: uuid.UUID
) -> dict[int, int]:
    counts: dict[int, int] = {}
    for a in result.values():
        for p in a.get(topic, ()):
            counts[p] = counts.get(p, 0) + 1
    return counts


def test_desired_counts() -> None:
    assert desired_counts(1, 4) == (1, [4])
    assert desired_counts(3, 4) == (1, [2, 1, 1])
    assert desired_counts(5, 4) == (2, [2, 2, 1, 2, 1])
    assert desired_counts(3, 2) == (2, [2, 1, 1])
    assert desired_counts(2, 0) == (0, [0, 0])


def test_one_member_gets_everything() -> None:
    out = assign({"a": frozenset({T})}, {T: frozenset(range(4))}, {})
    assert out == {"a": {T: frozenset(range(4))}}


def test_three_members_over_several_topics() -> None:
    subs = {m: frozenset({T, U}) for m in ("a", "b", "c")}
    out = assign(subs, {T: frozenset(range(4)), U: frozenset(range(3))}, {})
    sizes = sorted(sum(len(ps) for ps in a.values()) for a in out.values())
    assert sizes == [2, 2, 3]
    assert _holders(out, T) == dict.fromkeys(range(4), 1)
    assert _holders(out, U) == dict.fromkeys(range(3), 1)


def test_partitions_are_shared_when_members_outnumber_them() -> None:
    subs = {m: frozenset({T}) for m in ("a", "b", "c", "d", "e")}
    out = assign(subs, {T: frozenset({0, 1})}, {})
    assert _holders(out, T) == {0: 3, 1: 3}  # ceil(5/2) = 3 members each
    assert all(len(a.get(T, ())) >= 1 for a in out.values())


def test_only_assignable_partitions_are_given() -> None:
    out = assign({"a": frozenset({T, U})}, {T: frozenset({1})}, {})
    assert out == {"a": {T: frozenset({1})}}


def test_a_balanced_previous_assignment_is_kept() -> None:
    subs = {"a": frozenset({T}), "b": frozenset({T})}
    previous = {"a": {T: frozenset({1, 3})}, "b": {T: frozenset({0, 2})}}
    assert assign(subs, {T: frozenset(range(4))}, previous) == previous


def test_a_new_member_takes_from_the_others_and_the_rest_stays() -> None:
    subs = {m: frozenset({T}) for m in ("a", "b", "c")}
    previous = {"a": {T: frozenset({0, 1, 2})}, "b": {T: frozenset({3, 4, 5})}}
    out = assign(subs, {T: frozenset(range(6))}, previous)
    assert [len(out[m][T]) for m in ("a", "b", "c")] == [2, 2, 2]
    assert out["a"][T] <= previous["a"][T] and out["b"][T] <= previous["b"][T]
    assert _holders(out, T) == dict.fromkeys(range(6), 1)


def test_a_removed_topic_is_dropped_from_the_previous_assignment() -> None:
    out = assign(
        {"a": frozenset({U})}, {T: frozenset({0}), U: frozenset({0})}, {"a": {T: frozenset({0})}}
    )
    assert out == {"a": {U: frozenset({0})}}


def test_different_subscriptions_balance_per_topic() -> None:
    subs = {"a": frozenset({T}), "b": frozenset({U}), "c": frozenset({T, U})}
    out = assign(subs, {T: frozenset(range(4)), U: frozenset(range(2))}, {})
    assert set(out["a"]) == {T} and set(out["b"]) == {U}
    assert len(out["a"][T]) == len(out["c"][T]) == 2
    assert len(out["b"][U]) == len(out["c"][U]) == 1
    assert _holders(out, T) == dict.fromkeys(range(4), 1)


def test_no_members() -> None:
    assert assign({}, {T: frozenset({0})}, {}) == {}
