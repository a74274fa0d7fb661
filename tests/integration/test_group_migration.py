"""KIP-848 online migration between classic and consumer groups with confluent-kafka
(librdkafka) consumers, on a wirebroker subprocess and on Apache Kafka 4.4 (the oracle),
which must show the same group transitions.

What passing proves, Kafka's behaviour being the spec:
- upgrade: two classic consumers (`group.protocol=classic`, eager range or
  cooperative-sticky) consume and commit;
  one is restarted with `group.protocol=consumer` (the group becomes a consumer group with a
  classic member), then the other (a consumer group of two consumer-protocol members). At
  every observed moment no partition is owned by two consumers; every record is consumed and
  the committed offsets end at the log end (none lost across the switches);
- downgrade, the reverse: two consumer-protocol members, one restarted as classic (a classic
  member inside the consumer group), then the other: when the last consumer-protocol member
  leaves, the group becomes a classic group again;
- after each step ListGroups gives the same group type and state, and ConsumerGroupDescribe
  the same member types (0 classic, 1 consumer), on wirebroker as on Kafka 4.4 (the same
  expected transitions asserted against both).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from _client_env import librdkafka_extra
from _group_procs import create_topic, produce
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from compat.scenarios.wire import Wire
from protocol.api import ApiKey

pytestmark = pytest.mark.compat

PARTITIONS = 4
BROKER_SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
}
STEP_TIMEOUT = 90.0


def _consumer(bootstrap: str, group: str, name: str, protocol: str, strategy: str = "range") -> Any:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "group.protocol": protocol,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        "socket.timeout.ms": 10_000,
    }
    if protocol == "classic":
        conf |= {
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "partition.assignment.strategy": strategy,
        }
    return Consumer(conf | librdkafka_extra())


class Migrating:
    """Consumers of one group polled in turn; each record is committed once processed and
    after every poll no partition has two owners."""

    def __init__(self, bootstrap: str, group: str, topic: str, strategy: str) -> None:
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.strategy = strategy
        self.consumers: dict[str, Any] = {}
        self.consumed: list[tuple[int, int]] = []
        self.commit_failures = 0

    def add(self, name: str, protocol: str) -> None:
        c = _consumer(self.bootstrap, self.group, name, protocol, self.strategy)
        c.subscribe([self.topic])
        self.consumers[name] = c

    def close(self, name: str) -> None:
        self.consumers.pop(name).close()

    def close_all(self) -> None:
        for name in list(self.consumers):
            self.close(name)

    def owned(self) -> dict[str, set[int]]:
        return {n: {tp.partition for tp in c.assignment()} for n, c in self.consumers.items()}

    def poll_round(self) -> dict[str, set[int]]:
        for c in self.consumers.values():
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                self.consumed.append((int(msg.partition()), int(msg.offset())))
                try:
                    c.commit(message=msg, asynchronous=False)
                except KafkaException:
                    self.commit_failures += 1  # a rebalance in between: read again later
            owned = self.owned()
            seen: dict[int, str] = {}
            for n, parts in owned.items():
                for p in parts:
                    assert p not in seen, f"partition {p} owned by {seen[p]} and {n}: {owned}"
                    seen[p] = n
        return self.owned()

    def until(self, done: Callable[[dict[str, set[int]]], bool], what: str) -> None:
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            owned = self.poll_round()
            if done(owned):
                return
            assert time.monotonic() < deadline, f"{what}: not reached: {owned}"

    def consumed_all(self, per_partition: int) -> Callable[[dict[str, set[int]]], bool]:
        want = {(p, o) for p in range(PARTITIONS) for o in range(per_partition)}
        return lambda owned: want <= set(self.consumed) and _split(owned)


def _split(owned: dict[str, set[int]]) -> bool:
    """Every partition owned, two each."""
    every = set().union(*owned.values()) if owned else set()
    return every == set(range(PARTITIONS)) and sorted(map(len, owned.values())) == [2, 2]


def _observe(bootstrap: str, group: str) -> tuple[Any, ...]:
    """(group type, state) from ListGroups, the member types ConsumerGroupDescribe gives
    (() for a classic group) and DescribeGroups v5's (error, state, protocol type)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups(request_timeout=15).result(15)
    (mine,) = [g for g in listed.valid if g.group_id == group]
    kind = str(mine.type).rsplit(".", 1)[-1].lower()
    state = str(mine.state).rsplit(".", 1)[-1].lower()
    with Wire(bootstrap) as w:
        answer = w.call(
            ApiKey.CONSUMER_GROUP_DESCRIBE,
            1,
            {"group_ids": [group], "include_authorized_operations": False},
        )
        (classic,) = w.call(
            ApiKey.DESCRIBE_GROUPS,
            5,
            {"groups": [group], "include_authorized_operations": False},
        )["groups"]
    (g,) = answer["groups"]
    types: tuple[int, ...] = ()
    if g["error_code"] == 0:
        types = tuple(sorted(m["member_type"] for m in g["members"]))
    described = (classic["error_code"], classic["group_state"], classic["protocol_type"])
    return kind, state, types, described


def _settle(m: Migrating, bootstrap: str, group: str, want_types: tuple[int, ...]) -> Any:
    """Poll until the group is Stable with members of `want_types` (or for a classic group
    `()`), then observe it."""
    deadline = time.monotonic() + STEP_TIMEOUT
    while True:
        m.poll_round()
        seen = _observe(bootstrap, group)
        if seen[1] == "stable" and seen[2] == want_types and _split(m.owned()):
            return seen
        assert time.monotonic() < deadline, f"not settled: {seen} {m.owned()}"


def _committed(bootstrap: str, group: str, topic: str) -> list[tuple[int, int]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group} | librdkafka_extra())
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 15)
        return sorted((tp.partition, tp.offset) for tp in got)
    finally:
        c.close()


def _migrate(bootstrap: str, start: str, then: str, strategy: str) -> list[Any]:
    """Two `start` consumers, restarted one at a time as `then`: the observed transitions."""
    topic, group = f"mig-{uuid.uuid4().hex[:8]}", f"mig-g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, PARTITIONS, 0, 5)
    m = Migrating(bootstrap, group, topic, strategy)
    code = {"classic": 0, "consumer": 1}
    seen = []
    try:
        m.add("a", start)
        m.add("b", start)
        m.until(m.consumed_all(5), "both consume")
        both_start = () if start == "classic" else (1, 1)
        seen.append(_settle(m, bootstrap, group, both_start))
        m.close("a")
        m.add("a", then)
        mixed = tuple(sorted((code[start], code[then])))
        seen.append(_settle(m, bootstrap, group, mixed))
        produce(bootstrap, topic, PARTITIONS, 5, 3)
        m.until(m.consumed_all(8), "mixed consume")
        m.close("b")
        m.add("b", then)
        both_then = () if then == "classic" else (1, 1)
        seen.append(_settle(m, bootstrap, group, both_then))
        produce(bootstrap, topic, PARTITIONS, 8, 2)
        m.until(m.consumed_all(10), "after the switch")
    finally:
        m.close_all()
    assert _committed(bootstrap, group, topic) == [(p, 10) for p in range(PARTITIONS)]
    return seen


#: what each broker must show after each step: (ListGroups type and state, the member
#: types ConsumerGroupDescribe gives, DescribeGroups v5's error, state and protocol type --
#: Dead for a consumer group, as Kafka 4.4 answers)
CLASSIC = ("classic", "stable", (), (0, "Stable", "consumer"))
MIXED = ("consumer", "stable", (0, 1), (0, "Dead", ""))
MODERN = ("consumer", "stable", (1, 1), (0, "Dead", ""))
EXPECTED = {
    ("classic", "consumer"): [CLASSIC, MIXED, MODERN],
    ("consumer", "classic"): [MODERN, MIXED, CLASSIC],
}


@pytest.fixture(params=["wirebroker", "kafka"])
def bootstrap(request: pytest.FixtureRequest, broker_factory: Any) -> str:
    if request.param == "kafka":
        return str(request.getfixturevalue("apache_kafka"))
    return str(broker_factory(**BROKER_SETTINGS).bootstrap)


@pytest.mark.parametrize(
    ("start", "then", "strategy"),
    [
        ("classic", "consumer", "range"),
        ("classic", "consumer", "cooperative-sticky"),
        ("consumer", "classic", "range"),
    ],
)
def test_online_migration(bootstrap: str, start: str, then: str, strategy: str) -> None:
    """The same transitions on wirebroker and on Kafka 4.4 (the `kafka` parameter); the
    classic consumers eager (range) or incremental (cooperative-sticky: they report what they
    own and revoke only what moves)."""
    assert _migrate(bootstrap, start, then, strategy) == EXPECTED[(start, then)]
