"""Metadata with allow_auto_topic_creation, asked of wirebroker (alone and as a cluster) and of
Apache Kafka 4.4 with the same assertions (tests/oracle/conftest.py).

What Kafka does (its AutoTopicCreationManager): the answer that starts a creation says
UNKNOWN_TOPIC_OR_PARTITION with no partitions and a nil topic id; the topic shows in a later
answer once it exists. Illegal names answer INVALID_TOPIC_EXCEPTION and are never created; a
creation the controller refuses (a name colliding with an existing one once '.' and '_' are
unified) keeps answering UNKNOWN_TOPIC_OR_PARTITION; the internal names are marked is_internal
and __transaction_state is created with its own partition count (50). With
auto.create.topics.enable=false nothing is created.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from compat.oracle.kafka import ApacheKafka
from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.testing import running

NIL = uuid.UUID(int=0)
UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
DEADLINE_S = 60.0


def metadata(bootstrap: str, names: list[str], version: int = 12, allow: bool = True) -> Any:
    with Wire(bootstrap) as wire:
        return wire.call(
            ApiKey.METADATA,
            version,
            {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": allow},
        )


def answers(resp: Any) -> dict[str, tuple[int, bool, int]]:
    """name -> (error code, is_internal, partitions); Kafka's answer is not in request order."""
    return {t.name: (t.error_code, t.is_internal, len(t.partitions)) for t in resp.topics}


def wait_for_topic(bootstrap: str, name: str) -> Any:
    """The topic's Metadata entry once it exists with a leader for every partition (asked
    without auto-creation)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        [topic] = metadata(bootstrap, [name], allow=False).topics
        if topic.error_code == 0 and all(p.leader_id >= 0 for p in topic.partitions):
            return topic
        assert time.monotonic() < deadline, f"{name}: still {ErrorCode(topic.error_code).name}"
        time.sleep(0.05)


@pytest.mark.parametrize("version", [4, 9, 12, 13])
def test_the_creating_answer_is_unknown_topic_then_the_topic_exists(
    any_broker: str, unique: Callable[[str], str], version: int
) -> None:
    name = unique("auto")
    [first] = metadata(any_broker, [name], version).topics
    assert (first.name, first.error_code, first.is_internal, list(first.partitions)) == (
        name,
        UNKNOWN,
        False,
        [],
    )
    if version >= 10:
        assert first.topic_id == NIL
    created = wait_for_topic(any_broker, name)
    assert len(created.partitions) == 1  # num.partitions (1 on both)
    [again] = metadata(any_broker, [name], version).topics
    assert (again.error_code, len(again.partitions)) == (ErrorCode.NONE, 1)


def test_without_allow_nothing_is_created(any_broker: str, unique: Callable[[str], str]) -> None:
    name = unique("no-auto")
    for _ in range(2):
        assert answers(metadata(any_broker, [name], allow=False)) == {name: (UNKNOWN, False, 0)}


@pytest.mark.parametrize("allow", [True, False])
def test_illegal_names_are_never_created(any_broker: str, allow: bool) -> None:
    names = ["bad name!", "x" * 250, ".."]
    expected = {n: (ErrorCode.INVALID_TOPIC_EXCEPTION, False, 0) for n in names}
    assert answers(metadata(any_broker, names, allow=allow)) == expected
    assert answers(metadata(any_broker, names, allow=False)) == expected


def test_a_colliding_name_is_refused_after_the_answer(
    any_broker: str, unique: Callable[[str], str]
) -> None:
    dotted = unique("col.x")
    with Wire(any_broker) as wire:
        wire.create_topic(dotted, 1)
    underscored = dotted.replace(".", "_")
    for _ in range(3):
        assert answers(metadata(any_broker, [underscored])) == {underscored: (UNKNOWN, False, 0)}
    assert answers(metadata(any_broker, [underscored], allow=False)) == {
        underscored: (UNKNOWN, False, 0)
    }


def test_transaction_state_is_created_as_an_internal_topic(single_broker: str) -> None:
    name = "__transaction_state"
    [before] = metadata(single_broker, [name], allow=False).topics
    [asked] = metadata(single_broker, [name]).topics
    assert asked.is_internal
    if before.error_code == UNKNOWN:  # not made yet by an earlier test: this answer makes it
        assert (asked.error_code, list(asked.partitions)) == (UNKNOWN, [])
    topic = wait_for_topic(single_broker, name)
    assert topic.is_internal and len(topic.partitions) == 50


def test_share_group_state_is_internal(any_broker: str) -> None:
    [topic] = metadata(any_broker, ["__share_group_state"], allow=False).topics
    assert topic.is_internal


# -- auto.create.topics.enable=false ---------------------------------------------------------


@pytest.fixture(scope="module", params=["wirebroker", "apache-kafka"])
def no_auto_create(request: pytest.FixtureRequest) -> Iterator[str]:
    """A broker of each kind with auto.create.topics.enable=false (Kafka: one more start)."""
    overrides = {"auto.create.topics.enable": "false"}
    if request.param == "wirebroker":
        with running(overrides=overrides) as broker:
            yield broker.bootstrap
    else:
        with ApacheKafka(overrides=overrides) as kafka:
            yield kafka.bootstrap


@pytest.mark.parametrize("version", [1, 12])
def test_auto_create_disabled_on_the_broker(
    no_auto_create: str, unique: Callable[[str], str], version: int
) -> None:
    name = unique("off")
    names = [name, "__consumer_offsets", "bad name"]
    expected = {
        name: (UNKNOWN, False, 0),
        "__consumer_offsets": (UNKNOWN, True, 0),
        "bad name": (ErrorCode.INVALID_TOPIC_EXCEPTION, False, 0),
    }
    assert answers(metadata(no_auto_create, names, version)) == expected
    assert answers(metadata(no_auto_create, names, 12, allow=False)) == expected


@pytest.mark.parametrize("version", [8, 10])
def test_authorized_operations(any_broker: str, unique: Callable[[str], str], version: int) -> None:
    """No authorizer: every operation Kafka supports on the resource (topic 3576, cluster 8096:
    no token operations, which belong to other resources)."""
    name = unique("ops")
    with Wire(any_broker) as wire:
        wire.create_topic(name, 1)
        resp = wire.call(
            ApiKey.METADATA,
            version,
            {
                "topics": [{"name": name}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": True,
                "include_topic_authorized_operations": True,
            },
        )
    assert (resp.cluster_authorized_operations, resp.topics[0].topic_authorized_operations) == (
        8096,
        3576,
    )
