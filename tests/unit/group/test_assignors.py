"""The KIP-848 server-side assignors (wirebroker.group.assignors).

Worked examples are the inputs and expected outputs of Kafka's own tests
(group-coordinator `RangeAssignorTest`, `OptimizedUniformAssignmentBuilderTest`,
`UniformHeterogeneousAssignmentBuilderTest`) taken as facts. Kafka's tests use random topic ids,
and where its output depends on how a Java HashSet happened to order them, the example is
checked on what is forced (sizes, kept partitions); here topic ids are ordered t1 < t2 < t3.
Property tests: ownership, balance, stickiness, subscriptions, determinism.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirebroker.group.assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNORS,
    RANGE,
    UNIFORM,
    Assignment,
    Assignor,
    MemberSpec,
    TopicKey,
    TopicSpec,
    _UniformHeterogeneous,
    assignors_from_config,
    kafka_uuid_order,
)

T1, T2, T3, T4 = (uuid.UUID(int=i) for i in range(1, 5))


def fs(*partitions: int) -> frozenset[int]:
    return frozenset(partitions)


def member(
    *topics: TopicKey,
    assigned: Mapping[TopicKey, frozenset[int]] | None = None,
    instance_id: str | None = None,
) -> MemberSpec:
    return MemberSpec(frozenset(topics), instance_id=instance_id, assigned=dict(assigned or {}))


def sizes(result: Assignment) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


# --- range: Kafka's RangeAssignorTest ---------------------------------------------------------


def test_range_two_members_same_subscriptions() -> None:
    topics = {T1: TopicSpec(3), T3: TopicSpec(2)}
    members = {"A": member(T1, T3), "B": member(T1, T3)}
    assert RANGE.assign(members, topics) == {
        "A": {T1: fs(0, 1), T3: fs(0)},
        "B": {T1: fs(2), T3: fs(1)},
    }


def test_range_three_members_different_subscriptions() -> None:
    topics = {T1: TopicSpec(3), T2: TopicSpec(3), T3: TopicSpec(2)}
    members = {"A": member(T1, T2), "B": member(T3), "C": member(T2, T3)}
    assert RANGE.assign(members, topics) == {
        "A": {T1: fs(0, 1, 2), T2: fs(0, 1)},
        "B": {T3: fs(0)},
        "C": {T2: fs(2), T3: fs(1)},
    }


def test_range_more_members_than_partitions() -> None:
    topics = {T1: TopicSpec(3), T3: TopicSpec(2)}
    members = {"A": member(T1, T3), "B": member(T1, T3), "C": member(T1, T3)}
    assert RANGE.assign(members, topics) == {
        "A": {T1: fs(0), T3: fs(0)},
        "B": {T1: fs(1), T3: fs(1)},
        "C": {T1: fs(2)},
    }


def test_range_member_added_when_members_outnumber_partitions() -> None:
    topics = {T1: TopicSpec(2), T2: TopicSpec(2)}
    members = {
        "A": member(T1, T2, assigned={T1: fs(0), T2: fs(0)}),
        "B": member(T1, T2, assigned={T1: fs(1), T2: fs(1)}),
        "C": member(T1, T2),
    }
    assert RANGE.assign(members, topics) == {
        "A": {T1: fs(0), T2: fs(0)},
        "B": {T1: fs(1), T2: fs(1)},
        "C": {},
    }


def test_range_partitions_added_and_member_added() -> None:
    topics = {T1: TopicSpec(4), T2: TopicSpec(4)}
    members = {
        "A": member(T1, T2, assigned={T1: fs(0, 1), T2: fs(0, 1)}),
        "B": member(T1, T2, assigned={T1: fs(2), T2: fs(2)}),
    }
    assert RANGE.assign(members, topics) == {
        "A": {T1: fs(0, 1), T2: fs(0, 1)},
        "B": {T1: fs(2, 3), T2: fs(2, 3)},
    }
    topics = {T1: TopicSpec(3), T2: TopicSpec(3)}
    members["C"] = member(T1, T2)
    assert RANGE.assign(members, topics) == {
        "A": {T1: fs(0), T2: fs(0)},
        "B": {T1: fs(1), T2: fs(1)},
        "C": {T1: fs(2), T2: fs(2)},
    }
    topics = {T1: TopicSpec(4), T2: TopicSpec(3)}
    members["C"] = member(T1)
    assert RANGE.assign(members, topics) == {
        "A": {T1: fs(0, 1), T2: fs(0, 1)},
        "B": {T1: fs(2), T2: fs(2)},
        "C": {T1: fs(3)},
    }


def test_range_member_removed_and_subscriptions_changed() -> None:
    topics = {T1: TopicSpec(3), T2: TopicSpec(3)}
    members = {"B": member(T1, T2, assigned={T1: fs(2), T2: fs(2)})}
    assert RANGE.assign(members, topics) == {"B": {T1: fs(0, 1, 2), T2: fs(0, 1, 2)}}
    topics = {T1: TopicSpec(3), T2: TopicSpec(3), T3: TopicSpec(2)}
    members = {
        "A": member(T1, assigned={T1: fs(0, 1, 2), T2: fs(0)}),
        "B": member(T1, T2, T3, assigned={T2: fs(1)}),
        "C": member(T2, assigned={T2: fs(2), T3: fs(0, 1)}),
    }
    assert RANGE.assign(members, topics) == {
        "A": {T1: fs(0, 1)},
        "B": {T1: fs(2), T2: fs(0, 1), T3: fs(0, 1)},
        "C": {T2: fs(2)},
    }


def test_range_static_members_first_and_keep_their_range_under_a_new_member_id() -> None:
    topics = {T1: TopicSpec(5)}
    members = {
        "A": member(T1, instance_id="instanceA"),
        "C": member(T1, instance_id="instanceC"),
        "B": member(T1),
    }
    first = RANGE.assign(members, topics)
    assert first == {"A": {T1: fs(0, 1)}, "C": {T1: fs(2, 3)}, "B": {T1: fs(4)}}
    del members["A"]
    members["memberA1"] = member(T1, instance_id="instanceA")
    again = RANGE.assign(members, topics)
    assert again["memberA1"] == first["A"]
    assert again["B"] == first["B"] and again["C"] == first["C"]


def test_range_unknown_topic_and_no_subscription() -> None:
    topics = {T1: TopicSpec(3)}
    assert RANGE.assign({"A": member()}, topics) == {"A": {}}
    assert RANGE.assign({"A": member(T2)}, topics) == {"A": {}}  # Kafka: resolved away first


# --- uniform, homogeneous: Kafka's OptimizedUniformAssignmentBuilderTest ---------------------


def test_uniform_first_assignment_two_members_two_topics() -> None:
    topics = {T1: TopicSpec(3), T3: TopicSpec(2)}
    result = UNIFORM.assign({"A": member(T1, T3), "B": member(T1, T3)}, topics)
    # Kafka: A {T3: 0 1, T1: 0}, B {T1: 1 2}: the same filling in its HashSet's topic order.
    assert result == {"A": {T1: fs(0, 1, 2)}, "B": {T3: fs(0, 1)}}


def test_uniform_more_members_than_partitions() -> None:
    topics = {T1: TopicSpec(3), T3: TopicSpec(2)}
    members = {m: member(T3) for m in "ABC"}
    assert UNIFORM.assign(members, topics) == {"A": {T3: fs(0)}, "B": {T3: fs(1)}, "C": {}}


def test_uniform_unbalanced_previous_assignment() -> None:
    topics = {T1: TopicSpec(3), T2: TopicSpec(3)}
    members = {
        "A": member(T1, T2, assigned={T1: fs(0, 1), T2: fs(0, 1)}),
        "B": member(T1, T2, assigned={T1: fs(2), T2: fs(2)}),
    }
    assert UNIFORM.assign(members, topics) == {
        "A": {T1: fs(0, 1), T2: fs(0)},
        "B": {T1: fs(2), T2: fs(1, 2)},
    }


def test_uniform_partitions_added() -> None:
    topics = {T1: TopicSpec(6), T2: TopicSpec(5)}
    members = {
        "A": member(T1, T2, assigned={T1: fs(0, 2), T2: fs(0)}),
        "B": member(T1, T2, assigned={T1: fs(1), T2: fs(1, 2)}),
    }
    result = UNIFORM.assign(members, topics)
    # Kafka: A {T1: 0 2 3, T2: 0 3 4}, B {T1: 1 4 5, T2: 1 2}: which new partitions go where
    # follows its HashSet's topic order; forced: sizes 6/5 and every old partition kept.
    assert sizes(result) == {"A": 6, "B": 5}
    assert result == {"A": {T1: fs(0, 2, 3, 4, 5), T2: fs(0)}, "B": {T1: fs(1), T2: fs(1, 2, 3, 4)}}


def test_uniform_member_added() -> None:
    topics = {T1: TopicSpec(3), T2: TopicSpec(3)}
    members = {
        "A": member(T1, T2, assigned={T1: fs(0, 2), T2: fs(0)}),
        "B": member(T1, T2, assigned={T1: fs(1), T2: fs(1, 2)}),
        "C": member(T1, T2),
    }
    assert UNIFORM.assign(members, topics) == {
        "A": {T1: fs(0, 2)},
        "B": {T1: fs(1), T2: fs(1)},
        "C": {T2: fs(0, 2)},
    }


def test_uniform_member_removed() -> None:
    topics = {T1: TopicSpec(3), T2: TopicSpec(3)}
    members = {
        "A": member(T1, T2, assigned={T1: fs(0), T2: fs(0)}),
        "B": member(T1, T2, assigned={T1: fs(1), T2: fs(1)}),
    }
    result = UNIFORM.assign(members, topics)
    # Kafka: A {T1: 0, T2: 0 2}, B {T1: 1 2, T2: 1} (its topic order); forced: 3 each, kept.
    assert result == {"A": {T1: fs(0, 2), T2: fs(0)}, "B": {T1: fs(1), T2: fs(1, 2)}}


def test_uniform_subscription_removed() -> None:
    topics = {T1: TopicSpec(2), T2: TopicSpec(2)}
    members = {
        "A": member(T2, assigned={T1: fs(0), T2: fs(0)}),
        "B": member(T2, assigned={T1: fs(1), T2: fs(1)}),
    }
    assert UNIFORM.assign(members, topics) == {"A": {T2: fs(0)}, "B": {T2: fs(1)}}


# --- uniform, heterogeneous: Kafka's UniformHeterogeneousAssignmentBuilderTest ----------------


def test_uniform_heterogeneous_first_assignment() -> None:
    topics = {T1: TopicSpec(3), T3: TopicSpec(6)}
    assert UNIFORM.assign({"A": member(T1, T3), "B": member(T3)}, topics) == {
        "A": {T1: fs(0, 1, 2), T3: fs(4)},
        "B": {T3: fs(0, 1, 2, 3, 5)},
    }


def test_uniform_heterogeneous_more_members_than_partitions() -> None:
    topics = {T1: TopicSpec(2), T3: TopicSpec(1)}
    members = {"A": member(T3), "B": member(T3), "C": member(T1)}
    assert UNIFORM.assign(members, topics) == {
        "A": {T3: fs(0)},
        "B": {},
        "C": {T1: fs(0, 1)},
    }


def test_uniform_heterogeneous_unbalanced_previous_assignment() -> None:
    topics = {T1: TopicSpec(6), T2: TopicSpec(4), T3: TopicSpec(4)}
    members = {
        "A": member(T1, assigned={T1: fs(0, 1, 2)}),
        "B": member(T1, T2, assigned={T1: fs(3), T2: fs(0)}),
        "C": member(T1, T2, T3, assigned={T1: fs(4, 5), T2: fs(1, 2, 3), T3: fs(0, 1, 2, 3)}),
    }
    assert UNIFORM.assign(members, topics) == {
        "A": {T1: fs(0, 1, 2, 5)},
        "B": {T1: fs(3), T2: fs(0, 1, 2, 3)},
        "C": {T1: fs(4), T3: fs(0, 1, 2, 3)},
    }


def test_uniform_heterogeneous_partitions_added() -> None:
    topics = {T1: TopicSpec(6), T2: TopicSpec(5), T3: TopicSpec(3), T4: TopicSpec(3)}
    members = {
        "A": member(T1, T3, assigned={T1: fs(0, 1, 2, 3), T3: fs(0, 1)}),
        "B": member(T1, T2, T3, T4, assigned={T2: fs(0, 1, 2), T4: fs(0, 1, 2)}),
    }
    assert UNIFORM.assign(members, topics) == {
        "A": {T1: fs(0, 1, 2, 3, 4, 5), T3: fs(0, 1, 2)},
        "B": {T2: fs(0, 1, 2, 3, 4), T4: fs(0, 1, 2)},
    }


def test_uniform_heterogeneous_member_and_partitions_added() -> None:
    topics = {T1: TopicSpec(6), T2: TopicSpec(7)}
    members = {
        "A": member(T1, assigned={T1: fs(0, 2), T2: fs(0)}),
        "B": member(T1, T2, assigned={T1: fs(1), T2: fs(1, 2)}),
        "C": member(T1, T2),
    }
    assert UNIFORM.assign(members, topics) == {
        "A": {T1: fs(0, 2, 3, 4, 5)},
        "B": {T1: fs(1), T2: fs(1, 2, 6)},
        "C": {T2: fs(0, 3, 4, 5)},
    }


def test_uniform_heterogeneous_member_removed() -> None:
    topics = {T1: TopicSpec(3), T2: TopicSpec(8), T3: TopicSpec(3)}
    members = {
        "A": member(T1, T3, assigned={T1: fs(0, 1, 2), T3: fs(0, 1)}),
        "B": member(T2, assigned={T2: fs(3, 4, 5, 6)}),
    }
    assert UNIFORM.assign(members, topics) == {
        "A": {T1: fs(0, 1, 2), T3: fs(0, 1, 2)},
        "B": {T2: fs(0, 1, 2, 3, 4, 5, 6, 7)},
    }


def test_uniform_heterogeneous_subscription_removed() -> None:
    topics = {T1: TopicSpec(3), T2: TopicSpec(5)}
    members = {
        "A": member(T1, assigned={T1: fs(0, 2), T2: fs(1, 3)}),
        "B": member(T1, T2, assigned={T1: fs(1), T2: fs(0, 2, 4)}),
    }
    assert UNIFORM.assign(members, topics) == {
        "A": {T1: fs(0, 1, 2)},
        "B": {T2: fs(0, 1, 2, 3, 4)},
    }


def test_uniform_heterogeneous_partitions_run_out_before_balance() -> None:
    # Kafka runs its heterogeneous builder on this homogeneous group; so does this test.
    topics = {T1: TopicSpec(2), T2: TopicSpec(2), T3: TopicSpec(2)}
    all_of_them = frozenset({T1, T2, T3})
    kept = {"A": [(t, p) for t in (T1, T2, T3) for p in (0, 1)], "B": []}
    builder = _UniformHeterogeneous(["A", "B"], {"A": all_of_them, "B": all_of_them}, kept, topics)
    owned = builder.build()
    assert sorted(owned["A"]) == [(T2, 0), (T3, 0), (T3, 1)]
    assert sorted(owned["B"]) == [(T1, 0), (T1, 1), (T2, 1)]


def test_uniform_one_member_without_subscriptions() -> None:
    topics = {T1: TopicSpec(3)}
    assert UNIFORM.assign({"A": member(T1), "B": member()}, topics) == {
        "A": {T1: fs(0, 1, 2)},
        "B": {},
    }
    assert UNIFORM.assign({"A": member(T2)}, topics) == {"A": {}}
    assert UNIFORM.assign({}, topics) == {}


def test_a_partition_claimed_twice_stays_with_one_member() -> None:
    topics = {T1: TopicSpec(2)}
    members = {
        "A": member(T1, assigned={T1: fs(0, 1)}),
        "B": member(T1, assigned={T1: fs(0, 1, 7)}),  # 7 does not exist
    }
    for assignor in (UNIFORM, RANGE):
        result = assignor.assign(members, topics)
        assert sorted(p for a in result.values() for p in a.get(T1, ())) == [0, 1]


def test_members_are_ordered_as_java_strings() -> None:
    # Java compares UTF-16 code units: U+1F600 (D83D DE00) sorts before U+FFFF.
    topics = {T1: TopicSpec(3)}
    members = {"\uffff": member(T1), "\U0001f600": member(T1)}
    assert RANGE.assign(members, topics) == {"\U0001f600": {T1: fs(0, 1)}, "\uffff": {T1: fs(2)}}
    assert UNIFORM.assign(members, topics) == {"\U0001f600": {T1: fs(0, 1)}, "\uffff": {T1: fs(2)}}


def test_kafka_uuid_order_is_signed() -> None:
    high = uuid.UUID("80000000-0000-0000-0000-000000000000")
    low = uuid.UUID("00000000-0000-0000-0000-000000000001")
    assert sorted([low, high], key=kafka_uuid_order) == [high, low]


# --- configuration --------------------------------------------------------------------------


def test_assignors_from_config() -> None:
    assert DEFAULT_ASSIGNORS == ("uniform", "range")
    assert assignors_from_config(DEFAULT_ASSIGNORS) == [UNIFORM, RANGE]
    assert assignors_from_config(["range"]) == [RANGE]
    assert assignors_from_config(
        [" org.apache.kafka.coordinator.group.assignor.RangeAssignor", "uniform"]
    ) == [RANGE, UNIFORM]
    assert assignors_from_config(["range", "range"]) == [RANGE]  # as Kafka 4.4
    assert ASSIGNORS == {"uniform": UNIFORM, "range": RANGE}


@pytest.mark.parametrize(
    ("names", "message"),
    [  # Kafka 4.4's ConfigException texts (seen from its GroupCoordinatorConfig)
        (
            [],
            "Configuration 'group.consumer.assignors' must not be empty. "
            "Valid values include: any non-empty value",
        ),
        (["uniform", " "], "Configuration 'group.consumer.assignors' values must not be empty."),
        (
            ["uniform", "sticky"],
            "Invalid value sticky for configuration group.consumer.assignors: "
            "Class cannot be found",
        ),
        (
            ["uniform", "org.apache.kafka.coordinator.group.assignor.UniformAssignor"],
            "Invalid value org.apache.kafka.coordinator.group.assignor.UniformAssignor for "
            "configuration group.consumer.assignors: Assignor name "
            "'uniform' is already registered by another configured assignor. Assignor names, "
            "whether built-in or custom, must be unique",
        ),
    ],
)
def test_assignors_from_config_refusals(names: list[str], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        assignors_from_config(names)
    assert str(caught.value) == message


# --- properties -------------------------------------------------------------------------------

TOPIC_IDS = [uuid.UUID(int=(i * 0x9E3779B97F4A7C15 << 64) % (1 << 128) + i) for i in range(1, 6)]


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool = False) -> tuple[dict[str, MemberSpec], dict]:
    topics = {
        t: TopicSpec(draw(st.integers(0, 9)))
        for t in draw(st.lists(st.sampled_from(TOPIC_IDS), unique=True, max_size=4))
    }
    known = [*topics, uuid.UUID(int=99)]  # one subscribed topic that does not exist
    names = draw(st.lists(st.text("abcdef", min_size=1, max_size=3), unique=True, max_size=7))
    common = frozenset(draw(st.lists(st.sampled_from(known), unique=True)))
    members = {}
    for name in names:
        subscribed = common if homogeneous else frozenset(draw(st.sets(st.sampled_from(known))))
        assigned = {
            t: frozenset(draw(st.sets(st.integers(0, 10), max_size=4)))
            for t in draw(st.sets(st.sampled_from(known), max_size=3))
        }
        members[name] = MemberSpec(subscribed, assigned=assigned)
    return members, topics


def check_valid(members: Mapping[str, MemberSpec], topics: Mapping, result: Assignment) -> None:
    assert set(result) == set(members)
    owner: dict[tuple[TopicKey, int], str] = {}
    for member_id, assignment in result.items():
        for topic_id, partitions in assignment.items():
            assert topic_id in members[member_id].subscribed and topic_id in topics
            assert partitions, "no empty partition sets"
            for p in partitions:
                assert 0 <= p < topics[topic_id].partitions
                assert (topic_id, p) not in owner, "owned twice"
                owner[topic_id, p] = member_id
    for topic_id, spec in topics.items():
        if any(topic_id in m.subscribed for m in members.values()):
            assert all((topic_id, p) in owner for p in range(spec.partitions)), "unowned"


def settle(assignor: Assignor, members: dict[str, MemberSpec], topics: dict) -> dict:
    """The group after one assignment: every member's `assigned` is its new target."""
    result = assignor.assign(members, topics)
    return {m: MemberSpec(s.subscribed, assigned=result[m]) for m, s in members.items()}


@settings(max_examples=300)
@given(groups())
def test_every_subscribed_partition_owned_once_and_deterministic(group: tuple) -> None:
    members, topics = group
    for assignor in (UNIFORM, RANGE):
        result = assignor.assign(members, topics)
        check_valid(members, topics, result)
        reordered = dict(reversed(list(members.items())))
        assert assignor.assign(reordered, dict(reversed(list(topics.items())))) == result


@settings(max_examples=300)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_is_balanced(group: tuple) -> None:
    members, topics = group
    result = UNIFORM.assign(members, topics)
    check_valid(members, topics, result)
    if members:
        counts = sizes(result).values()
        assert max(counts) - min(counts) <= 1


@settings(max_examples=300)
@given(groups())
def test_uniform_heterogeneous_no_subscriber_could_take_from_a_heavier_one(group: tuple) -> None:
    members, topics = group
    result = UNIFORM.assign(members, topics)
    load = sizes(result)
    for topic_id in topics:
        subscribers = [m for m, s in members.items() if topic_id in s.subscribed]
        holders = [m for m in subscribers if result[m].get(topic_id)]
        for holder in holders:
            assert all(load[holder] - load[other] <= 1 for other in subscribers)


@settings(max_examples=300)
@given(groups())
def test_an_unchanged_group_keeps_its_assignment(group: tuple) -> None:
    members, topics = group
    for assignor in (UNIFORM, RANGE):
        settled = settle(assignor, members, topics)
        first = {m: s.assigned for m, s in settled.items()}
        assert assignor.assign(settled, topics) == first


def moved(before: Mapping[str, MemberSpec], after: Assignment) -> set[tuple[TopicKey, int]]:
    """Partitions that some member of `before` owned and no longer owns after."""
    return {
        (t, p)
        for m, s in before.items()
        for t, ps in s.assigned.items()
        for p in ps
        if p not in after.get(m, {}).get(t, ())
    }


@settings(max_examples=300)
@given(groups(homogeneous=True), st.text("xyz", min_size=4, max_size=4))
def test_uniform_adding_a_member_moves_only_what_it_receives(group: tuple, new: str) -> None:
    members, topics = group
    settled = settle(UNIFORM, members, topics)
    subscribed = next(iter(members.values())).subscribed if members else frozenset(topics)
    grown = {**settled, new: MemberSpec(subscribed)}
    result = UNIFORM.assign(grown, topics)
    received = {(t, p) for t, ps in result[new].items() for p in ps}
    owned_before = {(t, p) for s in settled.values() for t, ps in s.assigned.items() for p in ps}
    assert moved(settled, result) == received & owned_before
    counts = sizes(result).values()
    assert max(counts) - min(counts) <= 1


@settings(max_examples=300)
@given(groups(homogeneous=True), st.data())
def test_uniform_removing_a_member_moves_only_its_partitions(group: tuple, data: st.DataObject):
    members, topics = group
    if not members:
        return
    settled = settle(UNIFORM, members, topics)
    gone = data.draw(st.sampled_from(sorted(settled)))
    rest = {m: s for m, s in settled.items() if m != gone}
    result = UNIFORM.assign(rest, topics)
    assert moved(rest, result) == set()
    if rest:
        counts = sizes(result).values()
        assert max(counts) - min(counts) <= 1


def test_uniform_the_larger_quotas_go_to_members_that_hold_more() -> None:
    # 11 partitions on A (2), B, C, D (3 each); E joins: quotas 3, 2, 2, 2, 2. The 3 goes to one
    # of B, C, D (Kafka 4.4 too), so only E receives partitions.
    topics = {T1: TopicSpec(11)}
    members = {
        "A": member(T1, assigned={T1: fs(0, 1)}),
        "B": member(T1, assigned={T1: fs(2, 3, 4)}),
        "C": member(T1, assigned={T1: fs(5, 6, 7)}),
        "D": member(T1, assigned={T1: fs(8, 9, 10)}),
        "E": member(T1),
    }
    assert UNIFORM.assign(members, topics) == {
        "A": {T1: fs(0, 1)},
        "B": {T1: fs(2, 3, 4)},
        "C": {T1: fs(5, 6)},
        "D": {T1: fs(8, 9)},
        "E": {T1: fs(7, 10)},
    }


def test_uniform_heterogeneous_spreads_a_topic_one_member_held_alone() -> None:
    # 1,000 members, each on a topic of its own and on a shared one of 10,000 partitions that
    # one member holds: the shared partitions spread out (moves pick members from heaps).
    big = uuid.UUID(int=10**6)
    topics = {big: TopicSpec(10_000)}
    members = {}
    for i in range(1000):
        own = uuid.UUID(int=10**6 + 1 + i)
        topics[own] = TopicSpec(1)
        held = {big: frozenset(range(10_000))} if i == 0 else {}
        members[f"m{i:04d}"] = member(big, own, assigned=held)
    result = UNIFORM.assign(members, topics)
    check_valid(members, topics, result)
    assert set(sizes(result).values()) == {11}
    assert result["m0000"][big] == frozenset(range(10))  # it keeps its lowest ten
