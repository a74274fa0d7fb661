"""Config definitions measured against Apache Kafka 4.4 (compat/conformance found them
different; tests/oracle/test_kafka_answers.py asks Kafka the same): configs without a default
of their own, config types, the topic configs Kafka 4.4 has (compression levels, the share
groups' dead-letter queue flag, max.decompressed.message.bytes, tiered storage) and their
validation messages."""

from __future__ import annotations

import pytest

import wirebroker.handlers.create_topics
import wirebroker.handlers.describe_configs  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.config import LONG_MAX, BrokerConfig, ConfigSource, ConfigType
from wirebroker.metadata.errors import InvalidConfigError
from wirebroker.metadata.topic_configs import topic_log_config, validate_topic_configs

TOPIC, BROKER = 2, 4
DEFAULT = ConfigSource.DEFAULT_CONFIG


async def describe(call, rtype, name, keys):
    resp = await call(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}
            ],
            "include_synonyms": True,
        },
    )
    (result,) = resp.results
    return {
        c.name: (c.value, c.config_type, [(s.name, s.value, s.source) for s in c.synonyms])
        for c in result.configs
    }


async def test_broker_configs_without_a_default_are_null(call):
    got = await describe(call, BROKER, "0", ["log.flush.interval.ms", "log.roll.jitter.ms"])
    # Kafka: null, and no synonyms (log.flush.scheduler.interval.ms / log.roll.jitter.hours are
    # dropped by its synonym rule: nothing before the config's own name is listed)
    assert got == {
        "log.flush.interval.ms": (None, ConfigType.LONG, []),
        "log.roll.jitter.ms": (None, ConfigType.LONG, []),
    }


async def test_topic_configs_falling_back_to_them(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    got = await describe(call, TOPIC, "t", ["flush.ms", "segment.jitter.ms"])
    assert got == {
        "flush.ms": (str(LONG_MAX), ConfigType.LONG, []),
        "segment.jitter.ms": ("0", ConfigType.LONG, []),
    }


@pytest.mark.parametrize(
    ("broker", "flush_ms", "jitter_ms"),
    [
        ({}, LONG_MAX, 0),
        ({"log.flush.scheduler.interval.ms": "1000", "log.roll.jitter.hours": "2"}, 1000, 7200000),
        (
            {
                "log.flush.interval.ms": "50",
                "log.flush.scheduler.interval.ms": "1000",
                "log.roll.jitter.ms": "7",
                "log.roll.jitter.hours": "2",
            },
            50,
            7,
        ),
    ],
)
def test_the_fallbacks_reach_the_log(broker, flush_ms, jitter_ms):
    log_config = topic_log_config(BrokerConfig(broker), {})
    assert (log_config.flush_ms, log_config.segment_jitter_ms) == (flush_ms, jitter_ms)
    # a topic override still wins
    overridden = topic_log_config(BrokerConfig(broker), {"flush.ms": "5", "segment.jitter.ms": "6"})
    assert (overridden.flush_ms, overridden.segment_jitter_ms) == (5, 6)


async def test_types_as_kafka_reports_them(call):
    keys = ["log.dir", "leader.imbalance.check.interval.seconds", "log.roll.jitter.hours"]
    got = await describe(call, BROKER, "0", keys)
    assert {name: t for name, (_v, t, _s) in got.items()} == {
        "log.dir": ConfigType.LIST,
        "leader.imbalance.check.interval.seconds": ConfigType.LONG,
        "log.roll.jitter.hours": ConfigType.INT,
    }


#: Kafka 4.4's topic configs that wirebroker lacked: default, type, synonyms when not set.
NEW_TOPIC_CONFIGS = {
    "compression.gzip.level": ("-1", ConfigType.INT, [("compression.gzip.level", "-1", DEFAULT)]),
    "compression.lz4.level": ("9", ConfigType.INT, [("compression.lz4.level", "9", DEFAULT)]),
    "compression.zstd.level": ("3", ConfigType.INT, [("compression.zstd.level", "3", DEFAULT)]),
    "errors.deadletterqueue.group.enable": ("false", ConfigType.BOOLEAN, []),
    "max.decompressed.message.bytes": (
        "2147483639",
        ConfigType.INT,
        [("max.decompressed.message.bytes", "2147483639", DEFAULT)],
    ),
    "remote.copy.lag.bytes": (
        "-1",
        ConfigType.LONG,
        [("log.remote.copy.lag.bytes", "-1", DEFAULT)],
    ),
    "remote.copy.lag.ms": ("0", ConfigType.LONG, [("log.remote.copy.lag.ms", "0", DEFAULT)]),
    "remote.log.copy.disable": ("false", ConfigType.BOOLEAN, []),
    "remote.log.delete.on.disable": ("false", ConfigType.BOOLEAN, []),
}


async def test_kafka_4_4_topic_configs_are_described(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    assert await describe(call, TOPIC, "t", list(NEW_TOPIC_CONFIGS)) == NEW_TOPIC_CONFIGS


async def test_they_are_accepted_and_stored(call, services):
    configs = {
        "compression.gzip.level": "9",
        "compression.zstd.level": "-5",
        "errors.deadletterqueue.group.enable": "true",
        "max.decompressed.message.bytes": "1000",
        "remote.copy.lag.ms": "-1",
        "remote.log.copy.disable": "true",
    }
    resp = await call(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": "n",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            "timeout_ms": 1000,
            "validate_only": False,
        },
    )
    assert resp.topics[0].error_code == ErrorCode.NONE, resp.topics[0].error_message
    got = await describe(call, TOPIC, "n", list(configs))
    assert {name: value for name, (value, _t, _s) in got.items()} == configs
    assert got["remote.log.copy.disable"][2] == [
        ("remote.log.copy.disable", "true", ConfigSource.TOPIC_CONFIG)
    ]


#: Kafka 4.4's answers to CreateTopics (validate_only) with these values (INVALID_CONFIG).
INVALID = {
    ("compression.gzip.level", "0"): "Value must be between 1 and 9 or equal to -1",
    ("compression.gzip.level", "-2"): "Value must be between 1 and 9 or equal to -1",
    ("compression.gzip.level", "x"): "Not a number of type INT",
    ("compression.lz4.level", "0"): "Value must be at least 1",
    ("compression.lz4.level", "18"): "Value must be no more than 17",
    ("compression.zstd.level", "23"): "Value must be no more than 22",
    ("compression.zstd.level", "-131073"): "Value must be at least -131072",
    ("max.decompressed.message.bytes", "0"): "Value must be at least 1",
    ("max.decompressed.message.bytes", "2147483647"): "Value must be no more than 2147483639",
    ("max.decompressed.message.bytes", "2147483648"): "Not a number of type INT",
    ("errors.deadletterqueue.group.enable", "yes"): "Expected value to be either true or false",
    ("remote.copy.lag.bytes", "-2"): "Value must be at least -1",
    ("remote.copy.lag.ms", "-2"): "Value must be at least -1",
    # Kafka's order of the choices, and its trimmed value
    ("cleanup.policy", " x"): "String must be one of: compact, delete",
    (
        "compression.type",
        "x",
    ): "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
    ("segment.bytes", " 5"): "Value must be at least 1048576",
    ("internal.segment.bytes", "ten"): "Not a number of type INT",
    # a double printed as Java prints it
    ("min.cleanable.dirty.ratio", "2"): "Value must be no more than 1",
    ("min.cleanable.dirty.ratio", "-0.0001"): "Value must be at least 0",
    ("min.cleanable.dirty.ratio", "2147483648"): "Value must be no more than 1",
}

#: how Kafka prints the refused value in those messages (when not the raw value)
SHOWN = {
    ("cleanup.policy", " x"): "x",
    ("segment.bytes", " 5"): "5",
    ("min.cleanable.dirty.ratio", "2"): "2.0",
    ("min.cleanable.dirty.ratio", "-0.0001"): "-1.0E-4",
    ("min.cleanable.dirty.ratio", "2147483648"): "2.147483648E9",
}


@pytest.mark.parametrize(("key", "reason"), INVALID.items(), ids=lambda v: str(v))
def test_validation_messages(key, reason):
    name, value = key
    with pytest.raises(InvalidConfigError) as exc:
        validate_topic_configs({name: value})
    shown = SHOWN.get(key, value)
    assert str(exc.value) == f"Invalid value {shown} for configuration {name}: {reason}"


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        (
            {"cleanup.policy": "compact,,delete"},
            "Configuration 'cleanup.policy' values must not be empty.",
        ),
        (
            {"leader.replication.throttled.replicas": "0:x, 1:2"},
            "Invalid value [0:x, 1:2] for configuration leader.replication.throttled.replicas: "
            "leader.replication.throttled.replicas must be the literal '*' or a list of replicas "
            "in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
        ),
        (
            {"follower.replication.throttled.replicas": "*,0:1"},
            "Invalid value [*, 0:1] for configuration follower.replication.throttled.replicas: "
            "follower.replication.throttled.replicas must be the literal '*' or a list of "
            "replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
        ),
    ],
)
def test_kafkas_other_checks(configs, message):
    with pytest.raises(InvalidConfigError) as exc:
        validate_topic_configs(configs)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    "configs",
    [
        {"compression.gzip.level": "-1"},
        {"compression.gzip.level": "1"},
        {"compression.lz4.level": "17"},
        {"compression.zstd.level": "-131072"},
        {"compression.zstd.level": "0"},
        {"max.decompressed.message.bytes": "2147483639"},
        {"remote.log.delete.on.disable": "true"},
        {"remote.copy.lag.bytes": "5"},
        {"cleanup.policy": ""},
        {"leader.replication.throttled.replicas": "*"},
        {"leader.replication.throttled.replicas": "0:1,1:2"},
        {"follower.replication.throttled.replicas": ""},
        # Kafka's list keeps empty items, and its validator allows them ("*" joined too)
        {"follower.replication.throttled.replicas": "0:1,,1:2"},
        {"follower.replication.throttled.replicas": ",0:1"},
        {"leader.replication.throttled.replicas": "*,"},
    ],
)
def test_valid_values(configs):
    assert validate_topic_configs(configs) == configs


def test_lists_are_stored_as_kafka_prints_them():
    """Items trimmed, empty ones kept (Kafka's ConfigDef LIST: the trimmed value split at
    every comma)."""
    assert validate_topic_configs({"follower.replication.throttled.replicas": " 0:1 , 1:2,"}) == {
        "follower.replication.throttled.replicas": "0:1,1:2,"
    }


def test_doubles_are_stored_as_java_prints_them():
    assert validate_topic_configs({"min.cleanable.dirty.ratio": "1e-5"}) == {
        "min.cleanable.dirty.ratio": "1.0E-5"
    }


def test_remote_storage_is_refused_as_by_a_kafka_without_it():
    with pytest.raises(InvalidConfigError) as exc:
        validate_topic_configs({"remote.storage.enable": "true", "remote.log.copy.disable": "true"})
    assert str(exc.value) == (
        "Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
        "with remote log storage."
    )


async def test_internal_segment_bytes_is_described_only_where_set(call, services):
    """Kafka 4's internal topic config (for tests): any int, described only on a topic that
    sets it (TOPIC_CONFIG, no broker synonym); it is the segment size there."""
    services.admin.create_topic("plain", 1, now_ms=services.clock())
    configs = {"internal.segment.bytes": "-5", "segment.bytes": "1048576"}
    services.admin.create_topic("small", 1, configs=configs, now_ms=services.clock())
    assert await describe(call, TOPIC, "plain", ["internal.segment.bytes"]) == {}
    assert "internal.segment.bytes" not in await describe(call, TOPIC, "plain", None)
    described = await describe(call, TOPIC, "small", None)
    assert described["internal.segment.bytes"] == (
        "-5",
        ConfigType.INT,
        [("internal.segment.bytes", "-5", ConfigSource.TOPIC_CONFIG)],
    )
    overrides = services.cluster.topic("small").configs
    assert topic_log_config(BrokerConfig(), overrides).segment_bytes == -5
