"""wirebroker's KIP-848 assignors (wirebroker/group/assignors.py) against Kafka 4.4's own
`UniformAssignor` and `RangeAssignor`, run in a JVM on the same inputs (AssignorProbe.java,
compiled against Kafka's jars; no broker needed).

Random groups evolve over a few steps (members join, leave, change subscriptions, topics grow);
at each step both assignors get wirebroker's previous assignment as the current one, so moves
are counted from the same state, and Kafka gets the members in member id order (a TreeMap; a
Kafka broker walks them in its hash map's order, which no client sees). Asserted:
- `range`: the very same assignment as Kafka's;
- `uniform`, heterogeneous groups (members subscribed to different topics): the very same
  assignment;
- `uniform`, homogeneous groups: the same partition counts per member and the same number of
  partitions moved (Kafka fills the partitions nobody holds in its HashSet's order of topic
  ids, wirebroker in topic id order, so the assignment itself differs now and then).
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from compat.oracle.javac import compile_java
from compat.oracle.kafka import classpath, java
from wirebroker.group.assignors import (
    RANGE,
    UNIFORM,
    Assignment,
    Assignor,
    MemberSpec,
    TopicKey,
    TopicSpec,
)

SCENARIOS = int(os.environ.get("ASSIGNOR_ORACLE_SCENARIOS", "150"))


def kafka_id(topic: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic.bytes).rstrip(b"=").decode()


def from_kafka_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def case(name: str, members: Mapping[str, MemberSpec], topics: Mapping) -> dict[str, Any]:
    return {
        "assignor": name,
        "topics": {kafka_id(t): s.partitions for t, s in topics.items()},
        "members": {
            m: {
                "subscribed": [kafka_id(t) for t in s.subscribed],
                "instance": s.instance_id,
                "assigned": {kafka_id(t): sorted(ps) for t, ps in s.assigned.items()},
            }
            for m, s in members.items()
        },
    }


@pytest.fixture(scope="module")
def kafka_assign(tmp_path_factory: pytest.TempPathFactory) -> Any:
    classes = compile_java("assignor-probe", [Path(__file__).with_name("AssignorProbe.java")])
    log4j = tmp_path_factory.mktemp("assignor-probe") / "log4j2.properties"
    log4j.write_text("rootLogger.level = OFF\n")
    command = [
        java(),
        "-Xmx512m",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        f"{classes}{os.pathsep}{classpath()}",
        "AssignorProbe",
    ]

    def run(cases: list[dict[str, Any]]) -> list[Assignment]:
        done = subprocess.run(
            command, input=json.dumps(cases), capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        results = json.loads(done.stdout)
        assert all("error" not in r for r in results), results
        return [
            {m: {from_kafka_id(t): frozenset(ps) for t, ps in a.items()} for m, a in r.items()}
            for r in results
        ]

    return run


Step = tuple[dict[str, MemberSpec], dict[TopicKey, TopicSpec], bool]


def evolve(rng: random.Random, assignor: Assignor) -> Iterator[Step]:
    """A random group over 7 steps; each step's members carry `assignor`'s previous result."""
    topic_ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(rng.randint(1, 5))]
    topics = {t: TopicSpec(rng.randint(1, 12)) for t in topic_ids}
    homogeneous = rng.random() < 0.5
    common = frozenset(rng.sample(topic_ids, rng.randint(1, len(topic_ids))))

    def subscription() -> frozenset[TopicKey]:
        if homogeneous:
            return common
        return frozenset(rng.sample(topic_ids, rng.randint(0, len(topic_ids))))

    def instance() -> str | None:
        return name() if rng.random() < 0.3 else None

    def name() -> str:  # a few past U+FFFF and near it: Java orders strings by UTF-16 units
        return rng.choice(["m", "n", "\U0001f600", "\uffff"]) + str(rng.randint(0, 99))

    subs = {name(): (subscription(), instance()) for _ in range(8)}
    subs = dict(list(subs.items())[: rng.randint(1, 8)])
    previous: Assignment = {}
    for _ in range(7):
        members = {
            m: MemberSpec(s, instance_id=i, assigned=previous.get(m, {}))
            for m, (s, i) in subs.items()
        }
        yield members, dict(topics), homogeneous
        previous = assignor.assign(members, topics)
        op = rng.choice(["join", "leave", "subscribe", "grow"])
        if op == "join":
            subs[name()] = (subscription(), instance())
        elif op == "leave" and len(subs) > 1:
            subs.pop(rng.choice(sorted(subs)))
        elif op == "subscribe":
            member = rng.choice(sorted(subs))
            subs[member] = (subscription(), subs[member][1])
        else:
            grown = rng.choice(topic_ids)
            topics[grown] = TopicSpec(topics[grown].partitions + rng.randint(1, 4))


def scenarios(assignor: Assignor) -> list[Step]:
    rng = random.Random(848)
    steps: list[Step] = []
    for _ in range(SCENARIOS):
        steps.extend(evolve(rng, assignor))
    return steps


def counts(result: Assignment) -> list[int]:
    return sorted(sum(len(ps) for ps in a.values()) for a in result.values())


def moved(members: Mapping[str, MemberSpec], result: Assignment) -> int:
    return sum(
        1
        for m, s in members.items()
        for t, ps in s.assigned.items()
        for p in ps
        if p not in result[m].get(t, ())
    )


def test_range_is_kafkas(kafka_assign: Any) -> None:
    steps = scenarios(RANGE)
    theirs = kafka_assign([case("range", members, topics) for members, topics, _ in steps])
    for (members, topics, _), kafka in zip(steps, theirs, strict=True):
        assert RANGE.assign(members, topics) == kafka, (members, topics)


def test_uniform_is_kafkas_but_for_the_topic_order_of_homogeneous_groups(
    kafka_assign: Any,
) -> None:
    steps = scenarios(UNIFORM)
    theirs = kafka_assign([case("uniform", members, topics) for members, topics, _ in steps])
    same = {True: 0, False: 0}
    total = {True: 0, False: 0}
    for (members, topics, _), kafka in zip(steps, theirs, strict=True):
        ours = UNIFORM.assign(members, topics)
        homogeneous = len({s.subscribed for s in members.values()}) <= 1
        if homogeneous:
            # Kafka fills in its HashSet's order of topic ids, wirebroker in topic id order
            assert counts(ours) == counts(kafka), (members, topics)
            assert moved(members, ours) == moved(members, kafka), (members, topics)
        else:
            assert ours == kafka, (members, topics)
        same[homogeneous] += ours == kafka
        total[homogeneous] += 1
    assert total[False] > len(steps) // 4 and same[True] > 0, (same, total)
