"""KIP-848 consumer groups (`group.protocol=consumer`) with confluent-kafka 2.16 (librdkafka
2.16) against a wirebroker subprocess and, where cheap, Apache Kafka 4.4 (the oracle).

What passing proves, Kafka's behaviour being the spec:
- one consumer gets every partition; a second and a third join and the partitions are split
  evenly, a member that closes (leaves) gives its partitions to the others; at every observed
  moment no partition is owned by two consumers, and at the end every partition is owned
  (the same scenario against Apache Kafka 4.4);
- committed offsets (OffsetCommit v9 with the member epoch) are where the next consumer of
  the group starts, after the first one closed (both brokers);
- a member process killed with kill -9 loses its partitions to the survivor once the group's
  session timeout (`group.consumer.session.timeout.ms`, 6 s here) has passed, not before;
- the admin client's describe (which uses ConsumerGroupDescribe when it is advertised) shows
  the group, its state and its members' assignments; list shows its type; Kafka's
  kafka-consumer-groups tool describes a consumer and a classic group side by side;
- a regular-expression subscription (librdkafka sends it to the broker) takes the matching
  topics, and a matching topic created later (both brokers);
- a restart of the broker on its data dir keeps the group (its records are reloaded): the
  members go on, nothing revoked, the group epoch unchanged;
- static membership: a static member that closes and comes back within its session gets its
  partitions again, the other member keeps its own (both brokers);
- a member killed inside its revoke callback (mid-reconciliation): the newcomer gets none of
  its unreleased partitions until its session times out, then all of them, from the offsets
  it committed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _broker import BrokerProcess
from _client_env import librdkafka_extra
from _group_procs import GroupWorker, create_topic, produce, wait_until
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from compat.scenarios.wire import Wire
from protocol.api import ApiKey

pytestmark = pytest.mark.compat

SESSION_TIMEOUT_MS = 6000
PARTITIONS = 6
BROKER_SETTINGS = {
    "group.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "group.consumer.min.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
}


@pytest.fixture(params=["wirebroker", "kafka"])
def bootstrap(request: pytest.FixtureRequest, broker_factory: Any) -> Iterator[str]:
    if request.param == "kafka":
        yield request.getfixturevalue("apache_kafka")
    else:
        yield broker_factory(**BROKER_SETTINGS).bootstrap


@pytest.fixture
def wirebroker(broker_factory: Any) -> BrokerProcess:
    proc: BrokerProcess = broker_factory(**BROKER_SETTINGS)
    return proc


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _consumer(bootstrap: str, group: str, name: str, instance: str | None = None) -> Any:
    static = {} if instance is None else {"group.instance.id": instance}
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
            "socket.timeout.ms": 10_000,
        }
        | static
        | librdkafka_extra()
    )


class Members:
    """In-process consumers polled in turn; after every poll no partition has two owners."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.consumers: dict[str, Any] = {}
        self.records: dict[str, list[tuple[int, int]]] = {}
        self.revoked: list[tuple[str, list[int]]] = []
        self.polls = 0

    def add(self, name: str, instance: str | None = None) -> Any:
        c = _consumer(self.bootstrap, self.group, name, instance)

        def revoke(_c: Any, parts: list[Any]) -> None:
            self.revoked.append((name, sorted(tp.partition for tp in parts)))

        c.subscribe([self.topic], on_revoke=revoke, on_lost=revoke)
        self.consumers[name] = c
        self.records[name] = []
        return c

    def owned(self) -> dict[str, set[int]]:
        return {n: {tp.partition for tp in c.assignment()} for n, c in self.consumers.items()}

    def poll_round(self) -> dict[str, set[int]]:
        for name, c in self.consumers.items():
            msg = c.poll(0.05)
            self.polls += 1
            if msg is not None:
                assert msg.error() is None, msg.error()
                self.records[name].append((int(msg.partition()), int(msg.offset())))
            owned = self.owned()
            seen: dict[int, str] = {}
            for n, parts in owned.items():
                for p in parts:
                    assert p not in seen, f"partition {p} owned by {seen[p]} and {n}: {owned}"
                    seen[p] = n
        return self.owned()

    def until(self, done: Callable[[dict[str, set[int]]], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            owned = self.poll_round()
            if done(owned):
                return
            assert time.monotonic() < deadline, f"not reached in {timeout} s: {owned}"

    def close(self, name: str) -> None:
        self.consumers.pop(name).close()

    def close_all(self) -> None:
        for name in list(self.consumers):
            self.close(name)


def _split(*sizes: int) -> Callable[[dict[str, set[int]]], bool]:
    def done(owned: dict[str, set[int]]) -> bool:
        every = set().union(*owned.values()) if owned else set()
        return every == set(range(PARTITIONS)) and sorted(map(len, owned.values())) == sorted(sizes)

    return done


def test_members_join_and_leave_partitions_move_never_owned_twice(bootstrap: str) -> None:
    topic, group = _unique("k848-split"), _unique("k848-split-g")
    create_topic(bootstrap, topic, PARTITIONS)
    members = Members(bootstrap, group, topic)
    try:
        members.add("c1")
        members.until(_split(6), 60)
        members.add("c2")
        members.until(_split(3, 3), 60)
        members.add("c3")
        members.until(_split(2, 2, 2), 60)
        members.close("c1")
        members.until(_split(3, 3), 60)
        assert members.polls > 10
    finally:
        members.close_all()


def test_a_static_member_back_within_its_session_gets_its_partitions_again(bootstrap: str) -> None:
    """Static membership (group.instance.id): a static member that closes (it leaves with
    member epoch -2, its partitions kept for its instance id) and comes back before its session
    times out gets the same partitions; the other member keeps its own, nothing revoked."""
    topic, group = _unique("k848-static"), _unique("k848-static-g")
    create_topic(bootstrap, topic, PARTITIONS)
    members = Members(bootstrap, group, topic)
    try:
        members.add("a", instance="a-static")
        members.add("b", instance="b-static")
        members.until(_split(3, 3), 60)
        before = members.owned()
        members.close("a")
        members.revoked.clear()
        deadline = time.monotonic() + 2  # four of b's heartbeats on wirebroker
        while time.monotonic() < deadline:
            assert members.poll_round() == {"b": before["b"]}  # a's partitions wait for a
        members.add("a2", instance="a-static")
        members.until(lambda owned: owned.get("a2") == before["a"], 30)
        assert members.owned()["b"] == before["b"]
        assert [r for r in members.revoked if r[1]] == [], members.revoked
    finally:
        members.close_all()


def test_committed_offsets_resume_after_a_restart(bootstrap: str) -> None:
    topic, group = _unique("k848-resume"), _unique("k848-resume-g")
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, PARTITIONS, 0, 5)
    first = Members(bootstrap, group, topic)
    try:
        c = first.add("c1")
        first.until(lambda _o: len(first.records["c1"]) == 5 * PARTITIONS, 60)
        result = c.commit(asynchronous=False)
        assert all(tp.error is None for tp in result), result
        committed = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 10)
        assert sorted((tp.partition, tp.offset) for tp in committed) == [
            (p, 5) for p in range(PARTITIONS)
        ]
    finally:
        first.close_all()
    produce(bootstrap, topic, PARTITIONS, 5, 2)
    second = Members(bootstrap, group, topic)
    try:
        second.add("c2")
        second.until(lambda _o: len(second.records["c2"]) >= 2 * PARTITIONS, 60)
        got = sorted(second.records["c2"])
        assert got == sorted((p, o) for p in range(PARTITIONS) for o in (5, 6)), got
    finally:
        second.close_all()


def test_admin_describes_and_lists_a_consumer_group(wirebroker: BrokerProcess) -> None:
    bootstrap = wirebroker.bootstrap
    topic, group = _unique("k848-admin"), _unique("k848-admin-g")
    create_topic(bootstrap, topic, PARTITIONS)
    members = Members(bootstrap, group, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        members.add("c1")
        members.add("c2")
        members.until(_split(3, 3), 60)
        described = admin.describe_consumer_groups([group], request_timeout=15)[group].result(15)
        assert str(described.state).endswith("STABLE"), described.state
        assert sorted(m.client_id for m in described.members) == ["c1", "c2"]
        assigned = sorted(
            tp.partition for m in described.members for tp in m.assignment.topic_partitions
        )
        assert assigned == list(range(PARTITIONS))
        listed = admin.list_consumer_groups(request_timeout=15).result(15)
        (mine,) = [g for g in listed.valid if g.group_id == group]
        assert "CONSUMER" in str(mine.type), mine.type
    finally:
        members.close_all()


def _group_epoch(bootstrap: str, group: str) -> tuple[int, list[str]]:
    """ConsumerGroupDescribe v1: the group epoch and the member ids."""
    with Wire(bootstrap) as w:
        answer = w.call(
            ApiKey.CONSUMER_GROUP_DESCRIBE,
            1,
            {"group_ids": [group], "include_authorized_operations": False},
        )
    (g,) = answer["groups"]
    assert g["error_code"] == 0, g
    return g["group_epoch"], sorted(m["member_id"] for m in g["members"])


def test_broker_restart_keeps_the_group_without_a_rebalance(wirebroker: BrokerProcess) -> None:
    """The group's records are reloaded: after a restart on the same data dir the members
    go on with their epochs and partitions (nothing revoked, the group epoch unchanged)."""
    bootstrap = wirebroker.bootstrap
    topic, group = _unique("k848-restart"), _unique("k848-restart-g")
    create_topic(bootstrap, topic, PARTITIONS)
    members = Members(bootstrap, group, topic)
    try:
        members.add("c1")
        members.add("c2")
        members.until(_split(3, 3), 60)
        members.until(lambda _o: _group_epoch(bootstrap, group)[0] > 0, 10)
        epoch, ids = _group_epoch(bootstrap, group)
        owned = members.owned()
        revoked_before = list(members.revoked)
        assert wirebroker.restart(same_port=True) == bootstrap
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # members heartbeat against the reloaded group
            members.poll_round()
        assert members.owned() == owned
        assert members.revoked == revoked_before
        assert _group_epoch(bootstrap, group) == (epoch, ids)
    finally:
        members.close_all()


def test_killed_member_loses_its_partitions_after_the_session_timeout(
    wirebroker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = wirebroker.bootstrap
    topic, group = _unique("k848-kill"), _unique("k848-kill-g")
    create_topic(bootstrap, topic, PARTITIONS)
    workers = [
        GroupWorker(
            bootstrap=bootstrap,
            topic=topic,
            group=group,
            name=f"w{i}",
            log_dir=tmp_path,
            client="confluent-848",
        )
        for i in range(2)
    ]

    def owned(w: GroupWorker) -> set[int]:
        mine: set[int] = set()
        for e in w.snapshot():
            if e["ev"] == "assigned":
                mine |= set(e["partitions"])
            elif e["ev"] == "revoked":
                mine -= set(e["partitions"])
        return mine

    def status() -> str:
        return "\n".join(w.describe() for w in workers)

    try:
        wait_until(
            lambda: (
                sorted(len(owned(w)) for w in workers) == [3, 3]
                and owned(workers[0]) | owned(workers[1]) == set(range(PARTITIONS))
            ),
            60,
            status,
        )
        t_kill = workers[1].kill9()
        wait_until(lambda: owned(workers[0]) == set(range(PARTITIONS)), 30, status)
        moved_after = time.monotonic() - t_kill
        assert moved_after >= SESSION_TIMEOUT_MS / 1000 - 1, moved_after
        assert moved_after <= SESSION_TIMEOUT_MS / 1000 + 5, moved_after
        assert not workers[0].errors(), status()
    finally:
        for w in workers:
            w.close()


def test_kafka_consumer_groups_tool_describes_both_group_types(wirebroker: BrokerProcess) -> None:
    """Kafka's kafka-consumer-groups (ConsumerGroupCommand, Java admin: ConsumerGroupDescribe
    for a consumer group, DescribeGroups after GROUP_ID_NOT_FOUND for a classic one)."""
    from compat.oracle.kafka import run_tool

    bootstrap = wirebroker.bootstrap
    topic = _unique("k848-tool")
    new, old = _unique("k848-tool-new"), _unique("k848-tool-old")
    create_topic(bootstrap, topic, PARTITIONS)
    members = Members(bootstrap, new, topic)
    classic = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": old, "group.protocol": "classic"}
        | librdkafka_extra()
    )
    classic.subscribe([topic])

    def tool(*args: str) -> str:
        done = run_tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            ["--bootstrap-server", bootstrap, *args],
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    try:
        members.add("c1")
        members.until(
            lambda o: _split(6)(o) and bool(classic.poll(0.05) or classic.assignment()), 60
        )
        state = tool("--describe", "--group", new, "--state")
        assert "uniform" in state and "Stable" in state, state
        rows = [line.split() for line in tool("--describe", "--group", new).splitlines()]
        assert sorted(int(r[2]) for r in rows if r and r[0] == new) == list(range(PARTITIONS))
        rows = [line.split() for line in tool("--describe", "--group", old).splitlines()]
        assert sorted(int(r[2]) for r in rows if r and r[0] == old) == list(range(PARTITIONS))
        listed = {tuple(line.split()) for line in tool("--list", "--type").splitlines()}
        assert {(new, "Consumer"), (old, "Classic")} <= listed, listed
    finally:
        classic.close()
        members.close_all()


def test_regex_subscription_follows_new_topics(bootstrap: str) -> None:
    """librdkafka sends a `^` subscription as SubscribedTopicRegex; the broker matches it
    against every topic, a topic created later joins the assignment."""
    prefix = _unique("k848rx")
    first, second = f"{prefix}-a", f"{prefix}-b"
    create_topic(bootstrap, first, 2)
    create_topic(bootstrap, f"{prefix}x-other", 2)  # does not match
    group = _unique("k848-rx-g")
    c = _consumer(bootstrap, group, "rx")
    try:
        c.subscribe([f"^{prefix}-.*"])

        def assigned() -> set[tuple[str, int]]:
            c.poll(0.1)
            return {(tp.topic, tp.partition) for tp in c.assignment()}

        wait_until(lambda: assigned() == {(first, 0), (first, 1)}, 60, lambda: str(assigned()))
        with Wire(bootstrap) as w:
            answer = w.call(
                ApiKey.CONSUMER_GROUP_DESCRIBE,
                1,
                {"group_ids": [group], "include_authorized_operations": False},
            )
        (member,) = answer["groups"][0]["members"]
        assert member["subscribed_topic_regex"] == f"(^{prefix}-.*)", member  # librdkafka wraps it
        create_topic(bootstrap, second, 1)
        want = {(first, 0), (first, 1), (second, 0)}
        wait_until(lambda: assigned() == want, 90, lambda: str(assigned()))
    finally:
        c.close()


def test_a_member_killed_mid_reconciliation(wirebroker: BrokerProcess, tmp_path: Path) -> None:
    """A member killed while it revokes partitions for a newcomer (kill -9 inside its revoke
    callback: the revocation never acknowledged): the newcomer gets none of those partitions
    while the killed member's session lasts, then all of them, and starts each at the
    offset the killed member committed (nothing committed lost, nothing read twice)."""
    bootstrap = wirebroker.bootstrap
    topic, group = _unique("k848-midrec"), _unique("k848-midrec-g")
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, PARTITIONS, 0, 4)
    worker = GroupWorker(
        bootstrap=bootstrap,
        topic=topic,
        group=group,
        name="a",
        log_dir=tmp_path,
        client="confluent-848",
        revoke_delay_s=60,
    )
    members = Members(bootstrap, group, topic)

    def committed() -> dict[int, int]:
        out: dict[int, int] = {}
        for e in worker.snapshot("commit"):
            out |= {int(p): o for p, o in e["offsets"].items()}
        return out

    try:
        wait_until(lambda: committed() == dict.fromkeys(range(PARTITIONS), 4), 60, worker.describe)
        members.add("b")
        wait_until(
            lambda: any(e["partitions"] for e in worker.snapshot("revoked")), 30, worker.describe
        )
        t_kill = worker.kill9()
        seen: list[set[int]] = []

        def all_at_once(owned: dict[str, set[int]]) -> bool:
            seen.append(owned["b"])  # none of a's unreleased partitions, until a is gone
            assert owned["b"] in (set(), set(range(PARTITIONS))), seen
            return owned["b"] == set(range(PARTITIONS))

        members.until(all_at_once, 30)
        moved_after = time.monotonic() - t_kill
        assert moved_after >= SESSION_TIMEOUT_MS / 1000 - 1, moved_after
        produce(bootstrap, topic, PARTITIONS, 4, 2)
        members.until(lambda _o: len(members.records["b"]) >= 2 * PARTITIONS, 30)
        got = sorted(members.records["b"])
        assert got == sorted((p, o) for p in range(PARTITIONS) for o in (4, 5)), got
    finally:
        members.close_all()
        worker.close()
