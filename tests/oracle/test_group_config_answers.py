"""DescribeConfigs, IncrementalAlterConfigs and AlterConfigs on the GROUP resource (type 32,
KIP-848's group configs): the same sequence and the same assertions against Apache Kafka 4.4
(the oracle), a wirebroker and a wirebroker cluster -- the defaults of a group that does not
exist, a change and its description, each refusal with Kafka's text, validate_only, DELETE,
the empty name, the legacy API replacing every override, ListConfigResources."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
SESSION = "consumer.session.timeout.ms"

#: Kafka 4.4's group configs, in the order it describes them, with their defaults and synonyms.
DEFAULTS = [
    (SESSION, "45000", 3, "group.consumer.session.timeout.ms"),
    ("streams.assignor.name", "sticky", 2, "group.streams.assignors"),
    ("consumer.assignment.interval.ms", "1000", 3, "group.consumer.assignment.interval.ms"),
    (
        "errors.deadletterqueue.copy.record.enable",
        "false",
        1,
        "errors.deadletterqueue.copy.record.enable",
    ),
    ("share.auto.offset.reset", "latest", 2, "share.auto.offset.reset"),
    ("streams.rack.aware.assignment.tags", "", 7, "group.streams.rack.aware.assignment.tags"),
    ("share.renew.acknowledge.enable", "true", 1, "share.renew.acknowledge.enable"),
    ("streams.initial.rebalance.delay.ms", "3000", 3, "group.streams.initial.rebalance.delay.ms"),
    ("share.session.timeout.ms", "45000", 3, "group.share.session.timeout.ms"),
    ("streams.assignment.interval.ms", "1000", 3, "group.streams.assignment.interval.ms"),
    ("share.heartbeat.interval.ms", "5000", 3, "group.share.heartbeat.interval.ms"),
    ("streams.heartbeat.interval.ms", "5000", 3, "group.streams.heartbeat.interval.ms"),
    ("share.delivery.count.limit", "5", 3, "group.share.delivery.count.limit"),
    ("errors.deadletterqueue.topic.name", "", 2, "errors.deadletterqueue.topic.name"),
    ("consumer.heartbeat.interval.ms", "5000", 3, "group.consumer.heartbeat.interval.ms"),
    ("share.record.lock.duration.ms", "30000", 3, "group.share.record.lock.duration.ms"),
    ("share.assignment.interval.ms", "1000", 3, "group.share.assignment.interval.ms"),
    ("share.isolation.level", "read_uncommitted", 2, "share.isolation.level"),
    ("streams.session.timeout.ms", "45000", 3, "group.streams.session.timeout.ms"),
    ("share.partition.max.record.locks", "2000", 3, "group.share.partition.max.record.locks"),
    ("streams.num.standby.replicas", "0", 3, "group.streams.num.standby.replicas"),
]

REFUSALS = [
    ([(SESSION, SET, "1")], 40, f"{SESSION} must be in the range 45000 to 60000 inclusive."),
    (
        [(SESSION, SET, "abc")],
        40,
        f"Invalid value abc for configuration {SESSION}: Not a number of type INT",
    ),
    ([("no.such.config", SET, "1")], 40, "Unknown group config name: no.such.config"),
    (
        [("consumer.heartbeat.interval.ms", SET, "1")],
        40,
        "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
    ),
    (
        [("share.record.lock.duration.ms", SET, "1")],
        40,
        "Invalid value 1 for configuration share.record.lock.duration.ms: "
        "Value must be at least 1000",
    ),
    (
        [("streams.num.standby.replicas", SET, "3")],
        40,
        "streams.num.standby.replicas must be less than or equal to 2",
    ),
    (
        [("share.isolation.level", SET, "x")],
        40,
        "Invalid value x for configuration share.isolation.level: "
        "String must be one of: read_committed, read_uncommitted",
    ),
    (
        [("streams.assignor.name", SET, "greedy")],
        40,
        "streams.assignor.name 'greedy' is not a registered task assignor. "
        "Registered assignors are: [sticky].",
    ),
    (
        [("streams.rack.aware.assignment.tags", APPEND, "a")],
        40,
        "Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST.",
    ),
]
# Not sent: an unknown operation type (Kafka 4.4's controller fails on it and renounces its
# leadership; the shared oracle must not be disturbed, see compat/conformance/README.md)


class Groups:
    """The GROUP resource over one broker's wire."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    def describe(self, group: str, keys: list[str] | None = None) -> Any:
        body = {
            "resources": [
                {"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}
            ],
            "include_synonyms": True,
            "include_documentation": False,
        }
        return self.wire.call(ApiKey.DESCRIBE_CONFIGS, 4, body).results[0]

    def incremental(
        self, group: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False
    ) -> tuple[int, str | None]:
        configs = [{"name": n, "config_operation": o, "value": v} for n, o, v in ops]
        body = {
            "resources": [{"resource_type": GROUP, "resource_name": group, "configs": configs}],
            "validate_only": validate_only,
        }
        r = self.wire.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0]
        return r.error_code, r.error_message

    def legacy(self, group: str, configs: dict[str, str]) -> tuple[int, str | None]:
        entries = [{"name": n, "value": v} for n, v in configs.items()]
        body = {
            "resources": [{"resource_type": GROUP, "resource_name": group, "configs": entries}],
            "validate_only": False,
        }
        r = self.wire.call(ApiKey.ALTER_CONFIGS, 2, body).responses[0]
        return r.error_code, r.error_message

    def overrides(self, group: str) -> dict[str, str]:
        return {c.name: c.value for c in self.describe(group).configs if c.config_source == 8}

    def settled(self, group: str, wanted: dict[str, str]) -> dict[str, str]:
        """The group's overrides once they are `wanted` (Kafka's broker learns a change from
        its controller a moment after the answer; a wirebroker at once), else after 5 s."""
        deadline = time.monotonic() + 5
        while (found := self.overrides(group)) != wanted and time.monotonic() < deadline:
            time.sleep(0.05)
        return found


@pytest.fixture
def groups(any_broker: str) -> Any:
    with Wire(any_broker) as wire:
        yield Groups(wire)


def test_any_group_is_described_with_kafkas_defaults(groups: Groups, unique: Callable) -> None:
    result = groups.describe(unique("g-none"))
    assert (result.error_code, result.error_message) == (0, "")
    got = [
        (c.name, c.value, c.config_type, [(s.name, s.value, s.source) for s in c.synonyms])
        for c in result.configs
    ]
    assert got == [(n, v, t, [(syn, v, 5)]) for n, v, t, syn in DEFAULTS]
    assert {(c.config_source, c.read_only, c.is_sensitive) for c in result.configs} == {
        (5, False, False)
    }
    keyed = groups.describe(unique("g-none"), [SESSION, "no.such.config"])
    assert [c.name for c in keyed.configs] == [SESSION]


def test_set_describe_delete(groups: Groups, unique: Callable) -> None:
    group = unique("g1")
    assert groups.incremental(group, [(SESSION, SET, "50000")]) == (0, None)
    assert groups.settled(group, {SESSION: "50000"}) == {SESSION: "50000"}
    (entry,) = groups.describe(group, [SESSION]).configs
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        (SESSION, "50000", 8),
        ("group.consumer.session.timeout.ms", "45000", 5),
    ]
    assert groups.incremental(group, [(SESSION, DELETE, None), ("nope", DELETE, None)]) == (0, None)
    assert groups.settled(group, {}) == {}


@pytest.mark.parametrize(("ops", "code", "text"), REFUSALS)
def test_refusals(groups: Groups, unique: Callable, ops: Any, code: int, text: str | None) -> None:
    group = unique("g-bad")
    assert groups.incremental(group, ops) == (code, text)
    assert groups.incremental(group, ops, validate_only=True) == (code, text)


def test_validate_only_and_empty_names(groups: Groups, unique: Callable) -> None:
    group = unique("g-v")
    assert groups.incremental(group, [(SESSION, SET, "50000")], validate_only=True) == (0, None)
    # a change made afterwards shows alone, so the validate_only one was not kept
    assert groups.incremental(group, [("share.delivery.count.limit", SET, "3")]) == (0, None)
    assert groups.settled(group, {"share.delivery.count.limit": "3"}) == {
        "share.delivery.count.limit": "3"
    }
    refused = (42, "Default group resources are not allowed.")
    assert groups.incremental("", [(SESSION, SET, "abc")]) == refused
    assert groups.legacy("", {SESSION: "50000"}) == refused
    empty = groups.describe("")
    assert (empty.error_code, empty.error_message, empty.configs) == (
        42,
        "Group name must not be empty",
        [],
    )


def test_legacy_alter_replaces_every_override(groups: Groups, unique: Callable) -> None:
    group = unique("g-legacy")
    both = {SESSION: "50000", "share.delivery.count.limit": "3"}
    assert groups.incremental(group, [(k, SET, v) for k, v in both.items()]) == (0, None)
    assert groups.settled(group, both) == both
    assert groups.legacy(group, {"share.isolation.level": "read_committed"}) == (0, None)
    only = {"share.isolation.level": "read_committed"}
    assert groups.settled(group, only) == only
    assert groups.legacy(group, {SESSION: "1"}) == (
        40,
        f"{SESSION} must be in the range 45000 to 60000 inclusive.",
    )
    assert groups.legacy(group, {}) == (0, None)
    assert groups.settled(group, {}) == {}


def test_list_config_resources_names_a_group_with_overrides(
    groups: Groups, unique: Callable
) -> None:
    group = unique("g-listed")
    assert groups.incremental(group, [(SESSION, SET, "50000")]) == (0, None)
    groups.settled(group, {SESSION: "50000"})
    answer = groups.wire.call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [GROUP]})
    assert answer.error_code == 0
    assert (group, GROUP) in [(r.resource_name, r.resource_type) for r in answer.config_resources]


def test_a_groups_heartbeat_interval_reaches_its_members(
    single_broker: str, unique: Callable
) -> None:
    """consumer.heartbeat.interval.ms set on a group is what its members' ConsumerGroupHeartbeat
    answers carry (another group keeps the broker's 5000)."""
    with Wire(single_broker) as wire:
        wire.ensure_offsets_topic()
        groups = Groups(wire)
        group, other = unique("g-hb"), unique("g-hb-other")
        interval = "consumer.heartbeat.interval.ms"
        assert groups.incremental(group, [(interval, SET, "6000")]) == (0, None)
        assert groups.settled(group, {interval: "6000"}) == {interval: "6000"}
        for name, expected in ((group, 6000), (other, 5000)):
            member = uuid.uuid4().hex
            body: dict[str, Any] = {
                "group_id": name,
                "member_id": member,
                "member_epoch": 0,
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout_ms": 30000,
                "subscribed_topic_names": [unique("t")],
                "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": [],
            }
            joined = wire.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)
            assert (joined.error_code, joined.heartbeat_interval_ms) == (0, expected), joined
            body.update(member_epoch=-1, rebalance_timeout_ms=-1, topic_partitions=None)
            body.update(subscribed_topic_names=None)
            assert wire.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body).error_code == 0
