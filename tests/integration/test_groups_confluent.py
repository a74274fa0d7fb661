"""Consumer groups with confluent-kafka 2.16 (librdkafka) against a wirebroker subprocess.

What passing proves, Kafka's behaviour being the spec:

- resume: librdkafka's classic group consumer (its own state machine: FindCoordinator,
  JoinGroup with MEMBER_ID_REQUIRED, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit,
  LeaveGroup on close) reads every record of a subscribed topic, commits, closes; the next
  consumer of the group starts exactly at the commit, also after a rewinding commit that
  carries metadata;
- admin (AdminClient): list_consumer_groups (with a state filter), describe_consumer_groups
  (state, assignor, members with their client id, host and assignment; a "simple" group that
  only stores offsets), list_consumer_group_offsets, alter_consumer_group_offsets on an Empty
  group, delete_consumer_groups: NON_EMPTY_GROUP for a group with a member, GROUP_ID_NOT_FOUND
  for an unknown one;
- broker `kill -9` + restart on the same data dir: list_consumer_group_offsets returns the
  committed offsets (metadata included), the group is described Empty, and a consumer of the
  group resumes at the commit.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from _broker import BrokerProcess
from _group_procs import create_topic, produce, wait_until
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.compat

TIMEOUT = 15.0

Got = dict[int, list[tuple[int, bytes | None, bytes | None]]]


def _consumer(bootstrap: str, group: str, client_id: str | None = None) -> Any:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": client_id or f"ck-{group}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "fetch.wait.max.ms": 100,
            "socket.timeout.ms": 10_000,
        }
    )


def _poll_exactly(consumer: Any, n: int, timeout: float = 30.0) -> Got:
    got: Got = {}
    total = 0
    deadline = time.monotonic() + timeout
    while total < n:
        left = deadline - time.monotonic()
        assert left > 0, f"got {total} of {n} records in {timeout} s: {got}"
        msg = consumer.poll(min(0.5, left))
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.setdefault(msg.partition(), []).append((msg.offset(), msg.key(), msg.value()))
        total += 1
    return got


def _expected(sent: dict[int, list[tuple[bytes | None, bytes]]], starts: dict[int, int]) -> Got:
    return {
        p: [(o, k, v) for o, (k, v) in enumerate(sent[p]) if o >= starts[p]]
        for p in sent
        if len(sent[p]) > starts[p]
    }


def _commit(consumer: Any, offsets: list[TopicPartition] | None = None) -> None:
    if offsets is None:
        result = consumer.commit(asynchronous=False)
    else:
        result = consumer.commit(offsets=offsets, asynchronous=False)
    assert all(tp.error is None for tp in result), result


def _group_offsets(admin: AdminClient, group: str) -> dict[tuple[str, int], tuple[int, str]]:
    futures = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT
    )
    result = futures[group].result(timeout=TIMEOUT)
    assert result.group_id == group
    out = {}
    for tp in result.topic_partitions:
        assert tp.error is None, tp
        out[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
    return out


def _describe(admin: AdminClient, groups: list[str]) -> dict[str, Any]:
    futures = admin.describe_consumer_groups(groups, request_timeout=TIMEOUT)
    return {g: f.result(timeout=TIMEOUT) for g, f in futures.items()}


def _delete_error(admin: AdminClient, group: str) -> int | None:
    """The error code of deleting `group` (None: deleted)."""
    future = admin.delete_consumer_groups([group], request_timeout=TIMEOUT)[group]
    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as exc:
        code: int = exc.args[0].code()
        return code
    return None


# --------------------------------------------------------------------------------------------


def test_subscribe_commit_close_then_resume(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic, group = "ckg-resume", "ckg-resume-group"
    create_topic(bootstrap, topic, 2)
    sent = produce(bootstrap, topic, 2, 0, 30)

    consumer = _consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        assert _poll_exactly(consumer, 60) == _expected(sent, {0: 0, 1: 0})
        _commit(consumer)
        committed = consumer.committed(
            [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=TIMEOUT
        )
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 30), (1, 30)]
    finally:
        consumer.close()

    more = produce(bootstrap, topic, 2, 30, 6)
    for p in range(2):
        sent[p].extend(more[p])

    consumer = _consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        assert _poll_exactly(consumer, 12) == _expected(sent, {0: 30, 1: 30})
        _commit(
            consumer, [TopicPartition(topic, 0, 4, "ck \x01 meta"), TopicPartition(topic, 1, 33)]
        )
    finally:
        consumer.close()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert _group_offsets(admin, group) == {(topic, 0): (4, "ck \x01 meta"), (topic, 1): (33, "")}

    consumer = _consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        assert _poll_exactly(consumer, (36 - 4) + (36 - 33)) == _expected(sent, {0: 4, 1: 33})
    finally:
        consumer.close()


def _check_listed(admin: AdminClient, active: str, empty: str, simple: str) -> None:
    """ListGroups: the three groups and their states, and the STABLE filter."""
    listing = admin.list_consumer_groups(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
    assert listing.errors == []
    listed = {g.group_id: g for g in listing.valid}
    assert {active, empty, simple} <= set(listed), listed
    assert listed[active].state == ConsumerGroupState.STABLE
    assert listed[empty].state == ConsumerGroupState.EMPTY
    assert listed[simple].state == ConsumerGroupState.EMPTY
    assert [listed[g].is_simple_consumer_group for g in (active, empty, simple)] == [
        False,
        False,
        True,
    ]
    stable = admin.list_consumer_groups(
        request_timeout=TIMEOUT, states={ConsumerGroupState.STABLE}
    ).result(timeout=TIMEOUT)
    assert [g.group_id for g in stable.valid] == [active]


def _check_described(
    admin: AdminClient, port: int, topic: str, groups: tuple[str, str, str]
) -> None:
    """DescribeGroups: the active group's member and assignment, the two Empty ones."""
    active, empty, simple = groups
    described = _describe(admin, [active, empty, simple])
    a = described[active]
    assert (a.group_id, a.state, a.partition_assignor, a.is_simple_consumer_group) == (
        active,
        ConsumerGroupState.STABLE,
        "range",
        False,
    )
    assert a.coordinator is not None and a.coordinator.port == port
    assert len(a.members) == 1
    m = a.members[0]
    assert m.client_id == "ck-active-member"
    assert m.member_id.startswith("ck-active-member-"), m.member_id
    assert m.host
    assert sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions) == [
        (topic, 0),
        (topic, 1),
        (topic, 2),
    ]
    assert (described[empty].state, described[empty].members) == (ConsumerGroupState.EMPTY, [])
    assert (described[simple].state, described[simple].members) == (
        ConsumerGroupState.EMPTY,
        [],
    )
    assert described[simple].is_simple_consumer_group


def test_admin_list_describe_delete_groups(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = "ckg-admin"
    active, empty, simple = "ckg-admin-active", "ckg-admin-empty", "ckg-admin-simple"
    create_topic(bootstrap, topic, 3)
    sent = produce(bootstrap, topic, 3, 0, 8)
    admin = AdminClient({"bootstrap.servers": bootstrap})

    consumer = _consumer(bootstrap, empty)
    try:
        consumer.subscribe([topic])
        assert _poll_exactly(consumer, 24) == _expected(sent, dict.fromkeys(range(3), 0))
        _commit(consumer)
    finally:
        consumer.close()

    # A "simple" group: offsets committed without joining (assign + commit).
    consumer = _consumer(bootstrap, simple)
    try:
        _commit(consumer, [TopicPartition(topic, 2, 5, "simple")])
    finally:
        consumer.close()

    member = _consumer(bootstrap, active, client_id="ck-active-member")
    try:
        member.subscribe([topic])
        assert _poll_exactly(member, 24) == _expected(sent, dict.fromkeys(range(3), 0))
        _commit(member, [TopicPartition(topic, p, 8 - p, f"a{p}") for p in range(3)])

        _check_listed(admin, active, empty, simple)
        _check_described(admin, broker.port, topic, (active, empty, simple))

        assert _group_offsets(admin, active) == {(topic, p): (8 - p, f"a{p}") for p in range(3)}
        assert _group_offsets(admin, empty) == {(topic, p): (8, "") for p in range(3)}
        assert _group_offsets(admin, simple) == {(topic, 2): (5, "simple")}

        # alter_consumer_group_offsets (OffsetCommit outside the group): fine for an Empty one.
        altered = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(empty, [TopicPartition(topic, 1, 2)])],
            request_timeout=TIMEOUT,
        )[empty].result(timeout=TIMEOUT)
        assert [(tp.partition, tp.offset, tp.error) for tp in altered.topic_partitions] == [
            (1, 2, None)
        ]
        assert _group_offsets(admin, empty) == {
            (topic, 0): (8, ""),
            (topic, 1): (2, ""),
            (topic, 2): (8, ""),
        }

        assert _delete_error(admin, active) == KafkaError.NON_EMPTY_GROUP
        assert _delete_error(admin, empty) is None
        assert _delete_error(admin, simple) is None
        assert _delete_error(admin, empty) == KafkaError.GROUP_ID_NOT_FOUND
        remaining = admin.list_consumer_groups(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
        names = {g.group_id for g in remaining.valid}
        assert active in names and not {empty, simple} & names
        assert _group_offsets(admin, empty) == {}
    finally:
        member.close()

    wait_until(
        lambda: _describe(admin, [active])[active].state == ConsumerGroupState.EMPTY,
        10,
        "the active group is not Empty after its member closed",
    )
    assert _delete_error(admin, active) is None
    assert _group_offsets(admin, active) == {}


@pytest.mark.slow
def test_broker_kill9_keeps_group_offsets(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic, group = "ckg-crash", "ckg-crash-group"
    create_topic(bootstrap, topic, 2)
    sent = produce(bootstrap, topic, 2, 0, 20)

    consumer = _consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        assert _poll_exactly(consumer, 40) == _expected(sent, {0: 0, 1: 0})
        _commit(
            consumer, [TopicPartition(topic, 0, 20, "done"), TopicPartition(topic, 1, 9, "half")]
        )
    finally:
        consumer.close()

    broker.kill9()
    bootstrap = broker.restart()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert _group_offsets(admin, group) == {(topic, 0): (20, "done"), (topic, 1): (9, "half")}
    described = _describe(admin, [group])[group]
    assert (described.state, described.members) == (ConsumerGroupState.EMPTY, [])
    assert not described.is_simple_consumer_group

    consumer = _consumer(bootstrap, group)
    try:
        consumer.subscribe([topic])
        assert _poll_exactly(consumer, 11) == _expected(sent, {0: 20, 1: 9})
    finally:
        consumer.close()
