"""The GROUP config resource's table, checks and descriptions (wirebroker.metadata.
group_configs), with the texts Kafka 4.4 answered (tests/oracle/test_group_config_answers.py
puts the same requests to Kafka and to wirebroker)."""

from __future__ import annotations

import pytest

from wirebroker.config import BrokerConfig, ConfigSource, ConfigType
from wirebroker.metadata.group_configs import (
    DYNAMIC_GROUP_CONFIG,
    GROUP_CONFIGS,
    GroupConfigError,
    check_overrides,
    describe,
    effective_values,
    normalize,
)

#: Kafka 4.4's DescribeConfigs GROUP answer: (name, type, default, synonym), in its order.
KAFKA_44 = [
    ("consumer.session.timeout.ms", ConfigType.INT, "45000", "group.consumer.session.timeout.ms"),
    ("streams.assignor.name", ConfigType.STRING, "sticky", "group.streams.assignors"),
    (
        "consumer.assignment.interval.ms",
        ConfigType.INT,
        "1000",
        "group.consumer.assignment.interval.ms",
    ),
    (
        "errors.deadletterqueue.copy.record.enable",
        ConfigType.BOOLEAN,
        "false",
        "errors.deadletterqueue.copy.record.enable",
    ),
    ("share.auto.offset.reset", ConfigType.STRING, "latest", "share.auto.offset.reset"),
    (
        "streams.rack.aware.assignment.tags",
        ConfigType.LIST,
        "",
        "group.streams.rack.aware.assignment.tags",
    ),
    (
        "share.renew.acknowledge.enable",
        ConfigType.BOOLEAN,
        "true",
        "share.renew.acknowledge.enable",
    ),
    (
        "streams.initial.rebalance.delay.ms",
        ConfigType.INT,
        "3000",
        "group.streams.initial.rebalance.delay.ms",
    ),
    ("share.session.timeout.ms", ConfigType.INT, "45000", "group.share.session.timeout.ms"),
    (
        "streams.assignment.interval.ms",
        ConfigType.INT,
        "1000",
        "group.streams.assignment.interval.ms",
    ),
    ("share.heartbeat.interval.ms", ConfigType.INT, "5000", "group.share.heartbeat.interval.ms"),
    (
        "streams.heartbeat.interval.ms",
        ConfigType.INT,
        "5000",
        "group.streams.heartbeat.interval.ms",
    ),
    ("share.delivery.count.limit", ConfigType.INT, "5", "group.share.delivery.count.limit"),
    (
        "errors.deadletterqueue.topic.name",
        ConfigType.STRING,
        "",
        "errors.deadletterqueue.topic.name",
    ),
    (
        "consumer.heartbeat.interval.ms",
        ConfigType.INT,
        "5000",
        "group.consumer.heartbeat.interval.ms",
    ),
    (
        "share.record.lock.duration.ms",
        ConfigType.INT,
        "30000",
        "group.share.record.lock.duration.ms",
    ),
    (
        "share.assignment.interval.ms",
        ConfigType.INT,
        "1000",
        "group.share.assignment.interval.ms",
    ),
    ("share.isolation.level", ConfigType.STRING, "read_uncommitted", "share.isolation.level"),
    ("streams.session.timeout.ms", ConfigType.INT, "45000", "group.streams.session.timeout.ms"),
    (
        "share.partition.max.record.locks",
        ConfigType.INT,
        "2000",
        "group.share.partition.max.record.locks",
    ),
    ("streams.num.standby.replicas", ConfigType.INT, "0", "group.streams.num.standby.replicas"),
]


def test_defaults_types_order_and_synonyms_are_kafkas() -> None:
    described = describe(BrokerConfig(), {})
    assert [(s.name, s.config_type, s.value, s.synonyms[0][0]) for s in described] == KAFKA_44
    for s in described:
        assert s.source == ConfigSource.DEFAULT_CONFIG
        assert s.synonyms == ((s.synonyms[0][0], s.value, ConfigSource.DEFAULT_CONFIG),)
        assert s.doc


def test_an_override_is_described_before_its_broker_default() -> None:
    described = {
        s.name: s for s in describe(BrokerConfig(), {"consumer.session.timeout.ms": " 50000 "})
    }
    session = described["consumer.session.timeout.ms"]
    assert (session.value, session.source) == ("50000", DYNAMIC_GROUP_CONFIG)
    assert session.synonyms == (
        ("consumer.session.timeout.ms", "50000", DYNAMIC_GROUP_CONFIG),
        ("group.consumer.session.timeout.ms", "45000", ConfigSource.DEFAULT_CONFIG),
    )


def test_a_broker_setting_is_the_default_with_its_source() -> None:
    config = BrokerConfig({"group.consumer.heartbeat.interval.ms": "6000"})
    (hb,) = [s for s in describe(config, {}) if s.name == "consumer.heartbeat.interval.ms"]
    assert (hb.value, hb.source) == ("6000", ConfigSource.STATIC_BROKER_CONFIG)
    assert hb.synonyms == (
        ("group.consumer.heartbeat.interval.ms", "6000", ConfigSource.STATIC_BROKER_CONFIG),
        ("group.consumer.heartbeat.interval.ms", "5000", ConfigSource.DEFAULT_CONFIG),
    )
    # a dynamic cluster default (Kafka 4.4: the assignment intervals are dynamic broker configs)
    config.set_dynamic(default={"group.consumer.assignment.interval.ms": "2000"})
    overrides = {"consumer.assignment.interval.ms": "3000"}
    (interval,) = [s for s in describe(config, overrides) if s.name.startswith("consumer.assign")]
    assert interval.synonyms == (
        ("consumer.assignment.interval.ms", "3000", DYNAMIC_GROUP_CONFIG),
        (
            "group.consumer.assignment.interval.ms",
            "2000",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ),
        ("group.consumer.assignment.interval.ms", "1000", ConfigSource.DEFAULT_CONFIG),
    )


ERRORS = [
    ({"no.such.config": "1"}, "Unknown group config name: no.such.config"),
    ({"zzz": "1", "aaa": "1"}, "Unknown group config name: aaa"),
    (
        {"consumer.session.timeout.ms": "abc"},
        "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT",
    ),
    (
        {"share.delivery.count.limit": "99999999999"},
        "Invalid value 99999999999 for configuration share.delivery.count.limit: "
        "Not a number of type INT",
    ),
    (
        {"consumer.session.timeout.ms": "0"},
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1",
    ),
    (
        {"share.record.lock.duration.ms": "1"},
        "Invalid value 1 for configuration share.record.lock.duration.ms: "
        "Value must be at least 1000",
    ),
    (
        {"consumer.session.timeout.ms": "1"},
        "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
    ),
    (
        {"consumer.session.timeout.ms": "1", "consumer.heartbeat.interval.ms": "1"},
        "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.",
    ),
    (
        {"consumer.assignment.interval.ms": "2147483647"},
        "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive.",
    ),
    (
        {"share.delivery.count.limit": "11"},
        "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
    ),
    (
        {"share.partition.max.record.locks": " 50000 "},
        "share.partition.max.record.locks must be in the range 100 to 4000 inclusive.",
    ),
    (
        {"streams.num.standby.replicas": "3"},
        "streams.num.standby.replicas must be less than or equal to 2",
    ),
    (
        {"share.renew.acknowledge.enable": " 1 "},
        "Invalid value  1  for configuration share.renew.acknowledge.enable: "
        "Expected value to be either true or false",
    ),
    (
        {"share.isolation.level": " x "},
        "Invalid value x for configuration share.isolation.level: "
        "String must be one of: read_committed, read_uncommitted",
    ),
    (
        {"share.auto.offset.reset": "by_duration:-PT1H"},
        "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid "
        "value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be "
        "either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
    ),
    (
        {"streams.assignor.name": "greedy"},
        "streams.assignor.name 'greedy' is not a registered task assignor. "
        "Registered assignors are: [sticky].",
    ),
    (
        # a parse error is found before any bound
        {"consumer.session.timeout.ms": "1", "share.isolation.level": "x"},
        "Invalid value x for configuration share.isolation.level: "
        "String must be one of: read_committed, read_uncommitted",
    ),
]


@pytest.mark.parametrize(("overrides", "text"), ERRORS)
def test_refusals_carry_kafkas_text(overrides: dict[str, str], text: str) -> None:
    with pytest.raises(GroupConfigError) as info:
        check_overrides(BrokerConfig(), overrides)
    assert (str(info.value), info.value.error_code) == (text, 40)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"consumer.session.timeout.ms": " 50000 ", "share.delivery.count.limit": "+5"},
        {"share.auto.offset.reset": "by_duration:PT1H"},
        {"share.auto.offset.reset": "earliest"},
        {"share.renew.acknowledge.enable": "TRUE"},
        {"streams.rack.aware.assignment.tags": "a,b"},
        {"errors.deadletterqueue.topic.name": "anything"},
        {"streams.assignor.name": "sticky", "streams.num.standby.replicas": "2"},
        {"streams.initial.rebalance.delay.ms": "2147483647"},
    ],
)
def test_accepted(overrides: dict[str, str]) -> None:
    check_overrides(BrokerConfig(), overrides)


def test_bounds_come_from_the_broker_config() -> None:
    config = BrokerConfig(
        {
            "group.consumer.min.session.timeout.ms": "1000",
            "group.consumer.max.session.timeout.ms": "2000",
            "group.consumer.min.heartbeat.interval.ms": "1000",
            "group.streams.max.standby.replicas": "5",
            "group.streams.assignors": "sticky,org.example.GreedyTaskAssignor",
        }
    )
    check_overrides(
        config,
        {
            "consumer.session.timeout.ms": "1500",
            "consumer.heartbeat.interval.ms": "1000",
            "streams.num.standby.replicas": "5",
            "streams.assignor.name": "greedy",
        },
    )
    with pytest.raises(GroupConfigError, match="in the range 1000 to 2000 inclusive"):
        check_overrides(config, {"consumer.session.timeout.ms": "3000"})
    # ... and each kind's session timeout must exceed its heartbeat interval
    with pytest.raises(GroupConfigError) as info:
        check_overrides(
            config,
            {"consumer.session.timeout.ms": "1500", "consumer.heartbeat.interval.ms": "1500"},
        )
    assert str(info.value) == (
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    )


def test_normalize_prints_values_as_kafka() -> None:
    assert normalize("consumer.session.timeout.ms", " +50000 ") == "50000"
    assert normalize("share.renew.acknowledge.enable", "TRUE") == "true"
    assert normalize("streams.rack.aware.assignment.tags", " a , b ") == "a,b"
    assert normalize("share.isolation.level", " read_committed ") == "read_committed"
    assert normalize("consumer.session.timeout.ms", "abc") == "abc"  # kept when it fails
    assert normalize("unknown", " x ") == " x "


def test_every_synonym_is_a_broker_config_or_the_config_itself() -> None:
    from wirebroker.config import BROKER_CONFIGS

    for d in GROUP_CONFIGS.values():
        if d.broker_key is not None:
            assert d.broker_key in BROKER_CONFIGS, d.broker_key
        else:
            assert d.default is not None
        for key in d.bounds or ():
            assert key is None or key in BROKER_CONFIGS, key


def test_effective_values_for_the_group_coordinator() -> None:
    config = BrokerConfig({"group.consumer.heartbeat.interval.ms": "6000"})
    values = effective_values(
        config,
        {
            "consumer.session.timeout.ms": " 50000 ",
            "share.renew.acknowledge.enable": "FALSE",
            "streams.rack.aware.assignment.tags": "a,b",
            "share.delivery.count.limit": "bad",  # another tool's: the default instead
        },
    )
    assert values["consumer.session.timeout.ms"] == 50000
    assert values["consumer.heartbeat.interval.ms"] == 6000
    assert values["share.renew.acknowledge.enable"] is False
    assert values["streams.rack.aware.assignment.tags"] == ["a", "b"]
    assert values["share.delivery.count.limit"] == 5
    assert values["share.auto.offset.reset"] == "latest"
    assert set(values) == set(GROUP_CONFIGS)


def test_a_dlq_topic_name_may_not_be_internal() -> None:
    """Kafka 4.4's GroupConfig (KIP-1191), its text (the oracle, 2026-12-08); any other name
    is taken, without the broker's errors.deadletterqueue.topic.name.prefix."""
    with pytest.raises(GroupConfigError) as info:
        check_overrides(BrokerConfig(), {"errors.deadletterqueue.topic.name": "__x"})
    assert str(info.value) == (
        "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
    )
    check_overrides(BrokerConfig(), {"errors.deadletterqueue.topic.name": "nodlqprefix"})
