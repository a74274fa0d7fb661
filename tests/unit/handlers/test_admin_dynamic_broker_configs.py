"""Dynamic broker configs through the handlers (AlterConfigs, IncrementalAlterConfigs,
DescribeConfigs on BROKER resources), as Kafka 4.4 answers them (asked of it in
tests/oracle/test_kafka_answers.py); the services keep them in memory (LocalBrokerConfigs):
ZooKeeper's side is tests/unit/cluster/test_zk_broker_configs.py."""

from __future__ import annotations

import pytest

import wirebroker.handlers.alter_configs
import wirebroker.handlers.describe_configs
import wirebroker.handlers.incremental_alter_configs  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.config import ConfigSource

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYN, DYN_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5


@pytest.fixture
def topic(services):
    return services.admin.create_topic("t", 2, 1, {}, now_ms=services.clock())


async def incremental(call, name, ops, *, validate_only=False):
    resp = await call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": BROKER,
                    "resource_name": name,
                    "configs": [
                        {"name": k, "config_operation": op, "value": v} for k, op, v in ops
                    ],
                }
            ],
            "validate_only": validate_only,
        },
    )
    (r,) = resp.responses
    return r.error_code, r.error_message


async def legacy(call, name, configs, *, validate_only=False):
    resp = await call(
        ApiKey.ALTER_CONFIGS,
        2,
        {
            "resources": [
                {
                    "resource_type": BROKER,
                    "resource_name": name,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            "validate_only": validate_only,
        },
    )
    (r,) = resp.responses
    return r.error_code, r.error_message


async def describe(call, rtype, name, keys=None):
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
    assert result.error_code == ErrorCode.NONE
    return {
        c.name: (
            c.value,
            c.config_source,
            c.read_only,
            [(s.name, s.value, s.source) for s in c.synonyms],
        )
        for c in result.configs
    }


OK = (ErrorCode.NONE, None)


async def test_a_broker_value_reaches_the_topics_and_their_logs(call, services, topic):
    assert await incremental(call, "0", [("log.retention.ms", SET, "5000")]) == OK
    assert await describe(call, BROKER, "0", ["log.retention.ms"]) == {
        "log.retention.ms": (
            "5000",
            DYN,
            False,
            [("log.retention.ms", "5000", DYN), ("log.retention.hours", "168", DEFAULT)],
        )
    }
    (value, source, _ro, synonyms) = (await describe(call, TOPIC, "t", ["retention.ms"]))[
        "retention.ms"
    ]
    assert (value, source) == ("5000", DYN)
    assert synonyms[0] == ("log.retention.ms", "5000", DYN)
    assert {p.log.config.retention_ms for p in services.replicas.partitions_of("t")} == {5000}
    # removed again: back to the default everywhere
    assert await incremental(call, "0", [("log.retention.ms", DELETE, None)]) == OK
    assert {p.log.config.retention_ms for p in services.replicas.partitions_of("t")} == {604800000}


async def test_the_cluster_default_and_the_broker_level(call, services, topic):
    assert await incremental(call, "", [("log.segment.bytes", SET, "2000000")]) == OK
    assert await describe(call, BROKER, "", None) == {
        "log.segment.bytes": (
            "2000000",
            DYN_DEFAULT,
            False,
            [("log.segment.bytes", "2000000", DYN_DEFAULT)],
        )
    }
    assert await incremental(call, "0", [("log.segment.bytes", SET, "3000000")]) == OK
    assert (await describe(call, BROKER, "0", ["log.segment.bytes"]))["log.segment.bytes"] == (
        "3000000",
        DYN,
        False,
        [
            ("log.segment.bytes", "3000000", DYN),
            ("log.segment.bytes", "2000000", DYN_DEFAULT),
            ("log.segment.bytes", "1073741824", DEFAULT),
        ],
    )
    assert {p.log.config.segment_bytes for p in services.replicas.partitions_of("t")} == {3000000}
    # a topic override still wins
    services.admin.alter_topic_configs("t", {"segment.bytes": "4000000"})
    assert {p.log.config.segment_bytes for p in services.replicas.partitions_of("t")} == {4000000}


async def test_legacy_alter_configs_replaces_the_whole_level(call, services):
    ops = [("log.retention.ms", SET, "5000"), ("message.max.bytes", SET, "2000")]
    assert await incremental(call, "0", ops) == OK
    assert await legacy(call, "0", {"log.cleaner.backoff.ms": "100"}) == OK
    assert services.config.dynamic_broker == {"log.cleaner.backoff.ms": "100"}
    assert await legacy(call, "0", {}) == OK
    assert services.config.dynamic_broker == {}


async def test_append_and_subtract_start_from_the_effective_value(call, services):
    assert await incremental(call, "0", [("log.cleanup.policy", APPEND, "compact")]) == OK
    assert services.config.dynamic_broker == {"log.cleanup.policy": "delete,compact"}
    assert await incremental(call, "0", [("log.cleanup.policy", SUBTRACT, "delete")]) == OK
    assert services.config.dynamic_broker == {"log.cleanup.policy": "compact"}
    assert await incremental(call, "0", [("log.retention.ms", APPEND, "1")]) == (
        ErrorCode.INVALID_CONFIG,
        "Config value append is not allowed for config key: log.retention.ms",
    )
    assert await incremental(call, "0", [("foo.list", APPEND, "x")]) == (
        ErrorCode.INVALID_CONFIG,
        "Unknown config name: foo.list",
    )


@pytest.mark.parametrize(
    ("name", "ops", "answer"),
    [
        (
            "0",
            [
                ("message.max.bytes", SET, "2000"),
                ("num.partitions", SET, "3"),
                ("log.dirs", SET, "/x"),
            ],
            "Cannot update these configs dynamically: [num.partitions, log.dirs]",
        ),
        (
            "",
            [("log.retention.hours", SET, "1")],
            "Cannot update these configs dynamically: [log.retention.hours]",
        ),
        (
            "0",
            [("log.segment.bytes", SET, "10"), ("num.partitions", SET, "3")],
            "Cannot update these configs dynamically: [num.partitions]",
        ),
        (
            "0",
            [("log.retention.ms", SET, "abc")],
            "Invalid value abc for configuration log.retention.ms: Not a number of type LONG",
        ),
        (
            "",
            [("log.message.timestamp.type", SET, "Bogus")],
            "Invalid value Bogus for configuration log.message.timestamp.type: String must be one "
            "of: CreateTime, LogAppendTime",
        ),
        (
            "0",
            [("compression.gzip.level", SET, "0")],
            "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 "
            "and 9 or equal to -1",
        ),
        (
            "0",
            [("min.insync.replicas", SET, "0")],
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
        ),
    ],
)
async def test_refused_as_kafka_refuses(call, services, name, ops, answer):
    assert await incremental(call, name, ops) == (ErrorCode.INVALID_REQUEST, answer)
    legacy_configs = {k: v for k, _op, v in ops}
    assert await legacy(call, name, legacy_configs) == (ErrorCode.INVALID_REQUEST, answer)
    assert (services.config.dynamic_broker, services.config.dynamic_default) == ({}, {})


async def test_validate_only_changes_nothing(call, services):
    assert await incremental(call, "0", [("log.retention.ms", SET, "5")], validate_only=True) == OK
    assert await legacy(call, "", {"log.retention.ms": "5"}, validate_only=True) == OK
    assert (services.config.dynamic_broker, services.config.dynamic_default) == ({}, {})


async def test_unknown_keys_are_kept_and_described_as_kafka_does(call, services):
    assert (
        await incremental(call, "0", [("foo.bar", SET, "x"), ("num.partitions", DELETE, None)])
        == OK
    )
    assert await describe(call, BROKER, "0", ["foo.bar"]) == {
        "foo.bar": (None, DYN, True, [("foo.bar", None, DYN)])
    }
    resp = await call(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": BROKER, "resource_name": "0", "configuration_keys": ["foo.bar"]}
            ]
        },
    )
    assert resp.results[0].configs[0].is_sensitive


async def test_min_insync_replicas_reaches_the_partitions(call, services, topic):
    assert await incremental(call, "", [("min.insync.replicas", SET, "2")]) == OK
    assert {p.min_insync_replicas for p in services.replicas.partitions_of("t")} == {2}
    assert (
        services.config.source("min.insync.replicas") == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    )
