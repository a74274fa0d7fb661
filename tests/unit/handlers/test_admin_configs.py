"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs handlers (and _configs)."""

from __future__ import annotations

import logging

import pytest

import wirebroker.handlers.alter_configs
import wirebroker.handlers.create_topics
import wirebroker.handlers.describe_configs
import wirebroker.handlers.incremental_alter_configs  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.config import (
    BROKER_CONFIGS,
    BROKER_QUOTA_CONFIGS,
    TOPIC_CONFIGS,
    ConfigSource,
    ConfigType,
)
from wirebroker.dynamic_configs import DYNAMIC_BROKER_CONFIGS
from wirebroker.handlers import _configs
from wirebroker.metadata import topic_configs
from wirebroker.metadata.errors import InvalidConfigError

DESCRIBE = ApiKey.DESCRIBE_CONFIGS
ALTER = ApiKey.ALTER_CONFIGS
INCREMENTAL = ApiKey.INCREMENTAL_ALTER_CONFIGS
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS = 2, 4, 8, 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture
def topic(services):
    return services.admin.create_topic(
        "cfg", 2, 1, {"retention.ms": "1000"}, now_ms=services.clock()
    )


async def describe(call, rtype, name, keys=None, *, version=4, synonyms=False, docs=False):
    resp = await call(
        DESCRIBE,
        version,
        {
            "resources": [
                {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}
            ],
            "include_synonyms": synonyms,
            "include_documentation": docs,
        },
    )
    (result,) = resp.results
    return result


async def alter(call, rtype, name, configs, *, version=2, validate_only=False):
    resp = await call(
        ALTER,
        version,
        {
            "resources": [
                {
                    "resource_type": rtype,
                    "resource_name": name,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            "validate_only": validate_only,
        },
    )
    (r,) = resp.responses
    return r


async def incremental(call, rtype, name, ops, *, version=1, validate_only=False):
    resp = await call(
        INCREMENTAL,
        version,
        {
            "resources": [
                {
                    "resource_type": rtype,
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
    return r


def values(result):
    return {c.name: c.value for c in result.configs}


# -- DescribeConfigs ----------------------------------------------------------------------------
async def test_describe_topic_lists_every_topic_config(call, topic):
    result = await describe(call, TOPIC, "cfg")
    assert result.error_code == ErrorCode.NONE
    assert result.resource_name == "cfg" and result.resource_type == TOPIC
    entries = {c.name: c for c in result.configs}
    # every topic config but the internal one, which is described only when set (as Kafka)
    assert set(entries) == set(TOPIC_CONFIGS) - {"internal.segment.bytes"}
    assert entries["retention.ms"].value == "1000"
    assert entries["retention.ms"].config_source == ConfigSource.TOPIC_CONFIG
    assert entries["segment.bytes"].value == "1073741824"
    assert entries["segment.bytes"].config_source == ConfigSource.DEFAULT_CONFIG
    assert entries["cleanup.policy"].config_type == ConfigType.LIST
    assert entries["retention.ms"].config_type == ConfigType.LONG
    assert not any(c.read_only or c.is_sensitive for c in result.configs)
    assert all(c.synonyms == [] and c.documentation is None for c in result.configs)


async def test_describe_topic_synonyms_in_kafka_order(call_with, make_services):
    services = make_services(**{"log.segment.bytes": "5000000"})
    services.admin.create_topic("s", 1, 1, {"segment.bytes": "7000000"}, now_ms=services.clock())
    resp = await call_with(
        services,
        DESCRIBE,
        4,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "s",
                    "configuration_keys": ["segment.bytes", "retention.ms", "flush.ms"],
                }
            ],
            "include_synonyms": True,
        },
    )
    entries = {c.name: c for c in resp.results[0].configs}
    assert set(entries) == {"segment.bytes", "retention.ms", "flush.ms"}
    seg = entries["segment.bytes"]
    assert seg.value == "7000000"
    assert [(s.name, s.value, s.source) for s in seg.synonyms] == [
        ("segment.bytes", "7000000", ConfigSource.TOPIC_CONFIG),
        ("log.segment.bytes", "5000000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
    ]
    # Kafka drops synonyms until log.retention.ms, which has no default: none are left.
    ret = entries["retention.ms"]
    assert ret.value == "604800000" and ret.synonyms == []
    assert ret.config_source == ConfigSource.DEFAULT_CONFIG


async def test_describe_topic_static_broker_value(call_with, make_services):
    services = make_services(**{"log.retention.ms": "5000"})
    services.admin.create_topic("r", 1, 1, {}, now_ms=services.clock())
    resp = await call_with(
        services,
        DESCRIBE,
        4,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "r",
                    "configuration_keys": ["retention.ms"],
                }
            ],
            "include_synonyms": True,
        },
    )
    (entry,) = resp.results[0].configs
    assert entry.value == "5000"
    assert entry.config_source == ConfigSource.STATIC_BROKER_CONFIG
    assert [(s.name, s.source) for s in entry.synonyms] == [
        ("log.retention.ms", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", ConfigSource.DEFAULT_CONFIG),
    ]


async def test_describe_documentation_v3(call, topic):
    result = await describe(call, TOPIC, "cfg", ["cleanup.policy"], version=3, docs=True)
    (entry,) = result.configs
    assert entry.documentation == TOPIC_CONFIGS["cleanup.policy"].doc
    assert entry.config_type == ConfigType.LIST


@pytest.mark.parametrize("version", [1, 2, 3, 4])
async def test_describe_all_versions(call, topic, version):
    result = await describe(call, TOPIC, "cfg", ["retention.ms"], version=version)
    assert values(result) == {"retention.ms": "1000"}


async def test_describe_unknown_and_invalid_topic(call):
    result = await describe(call, TOPIC, "nope")
    assert result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert result.configs == []
    result = await describe(call, TOPIC, "bad name!")
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


async def test_describe_broker(call_with, make_services):
    services = make_services(**{"num.partitions": "3", "custom.unknown": "x"})
    resp = await call_with(
        services,
        DESCRIBE,
        4,
        {
            "resources": [
                {"resource_type": BROKER, "resource_name": "0", "configuration_keys": None}
            ],
            "include_synonyms": True,
        },
    )
    (result,) = resp.results
    assert result.error_code == ErrorCode.NONE
    entries = {c.name: c for c in result.configs}
    assert set(BROKER_CONFIGS) <= set(entries)
    assert entries["num.partitions"].value == "3"
    assert entries["num.partitions"].config_source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["log.segment.bytes"].config_source == ConfigSource.DEFAULT_CONFIG
    assert entries["custom.unknown"].is_sensitive and entries["custom.unknown"].value is None
    # read_only: false exactly for the configs wirebroker changes at run time (the broker
    # quota configs are listed only once set, as by Kafka)
    assert {c.name for c in result.configs if not c.read_only} == DYNAMIC_BROKER_CONFIGS - set(
        BROKER_QUOTA_CONFIGS
    )
    assert not set(BROKER_QUOTA_CONFIGS) & set(entries)


async def test_describe_broker_names(call):
    assert (await describe(call, BROKER, "")).configs == []
    wrong = await describe(call, BROKER, "5")
    assert wrong.error_code == ErrorCode.INVALID_REQUEST
    assert wrong.error_message == "Unexpected broker id, expected 0 or empty string, but received 5"
    bad = await describe(call, BROKER, "abc")
    assert bad.error_code == ErrorCode.INVALID_REQUEST
    assert bad.error_message == "Broker id must be an integer, but it is: abc"


async def test_describe_broker_logger(call):
    logging.getLogger("wirebroker.test_admin").setLevel(logging.WARNING)
    result = await describe(call, BROKER_LOGGER, "0")
    entries = values(result)
    assert entries["wirebroker.test_admin"] == "WARN"
    assert "root" in entries
    empty = await describe(call, BROKER_LOGGER, "")
    assert empty.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("version", [1, 3, 4])
async def test_describe_error_message_is_empty_without_an_error_text(call, topic, version):
    """Kafka sends "" (not null) as error_message of a result without an error, and of an
    error it gives no text (UNKNOWN_TOPIC_OR_PARTITION)."""
    assert (await describe(call, TOPIC, "cfg", version=version)).error_message == ""
    assert (await describe(call, BROKER, "0", version=version)).error_message == ""
    assert (await describe(call, BROKER_LOGGER, "0", version=version)).error_message == ""
    unknown = await describe(call, TOPIC, "nope", version=version)
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")


@pytest.mark.parametrize("docs", [False, True])
async def test_describe_broker_logger_documentation_is_empty(call, docs):
    """A logger's documentation (v3+) is "" whether asked for or not, as Kafka answers."""
    result = await describe(call, BROKER_LOGGER, "0", ["root"], version=3, docs=docs)
    (root,) = result.configs
    assert (root.documentation, root.config_type) == ("", ConfigType.UNKNOWN)


async def test_describe_unsupported_and_unknown_types(call):
    metrics = await describe(call, CLIENT_METRICS, "m")
    assert (metrics.error_code, metrics.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Unsupported resource type: CLIENT_METRICS",
    )
    resp = await call(
        DESCRIBE,
        4,
        {
            "resources": [
                {"resource_type": TOPIC, "resource_name": "x", "configuration_keys": None},
                {"resource_type": 99, "resource_name": "y", "configuration_keys": None},
            ]
        },
    )
    assert [r.error_code for r in resp.results] == [ErrorCode.INVALID_REQUEST] * 2


# -- AlterConfigs (legacy) ----------------------------------------------------------------------
async def test_alter_replaces_overrides_and_updates_live_logs(call, services, topic):
    r = await alter(call, TOPIC, "cfg", {"segment.bytes": "1048576", "retention.ms": "2000"})
    assert (r.error_code, r.error_message) == (ErrorCode.NONE, None)
    assert dict(services.cluster.topic("cfg").configs) == {
        "segment.bytes": "1048576",
        "retention.ms": "2000",
    }
    for part in services.replicas.partitions_of("cfg"):
        assert part.log.config.retention_ms == 2000
        assert part.log.config.segment_bytes == 1048576
    # Leaving a key out resets it.
    r = await alter(call, TOPIC, "cfg", {"segment.bytes": "1048576"})
    assert r.error_code == ErrorCode.NONE
    assert dict(services.cluster.topic("cfg").configs) == {"segment.bytes": "1048576"}
    assert services.replicas.partition("cfg", 0).log.config.retention_ms == 604800000


async def test_alter_validate_only(call, services, topic):
    r = await alter(call, TOPIC, "cfg", {"retention.ms": "5"}, validate_only=True)
    assert r.error_code == ErrorCode.NONE
    assert dict(services.cluster.topic("cfg").configs) == {"retention.ms": "1000"}
    assert services.replicas.partition("cfg", 0).log.config.retention_ms == 1000


@pytest.mark.parametrize(
    ("configs", "code", "message"),
    [
        ({"bogus": "1"}, ErrorCode.INVALID_CONFIG, "Unknown topic config name: bogus"),
        (
            {"retention.ms": "x"},
            ErrorCode.INVALID_CONFIG,
            "Invalid value x for configuration retention.ms: Not a number of type LONG",
        ),
        (
            {"retention.ms": None},
            ErrorCode.INVALID_REQUEST,
            "Null value not supported for : retention.ms",
        ),
    ],
)
async def test_alter_topic_errors(call, services, topic, configs, code, message):
    r = await alter(call, TOPIC, "cfg", configs)
    assert (r.error_code, r.error_message) == (code, message)
    assert dict(services.cluster.topic("cfg").configs) == {"retention.ms": "1000"}


async def test_alter_unknown_topic_and_names(call):
    r = await alter(call, TOPIC, "missing", {"retention.ms": "1"})
    assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert r.error_message == "The topic 'missing' does not exist."
    r = await alter(call, TOPIC, "", {"retention.ms": "1"})
    assert r.error_code == ErrorCode.INVALID_REQUEST
    r = await alter(call, BROKER_LOGGER, "0", {})
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST, "Unknown resource type 8")


async def test_alter_duplicates(call, topic):
    resp = await call(
        ALTER,
        1,
        {
            "resources": [
                {"resource_type": TOPIC, "resource_name": "cfg", "configs": []},
                {"resource_type": TOPIC, "resource_name": "cfg", "configs": []},
            ]
        },
    )
    assert [r.error_message for r in resp.responses] == [
        "Each resource must appear at most once."
    ] * 2
    resp = await call(
        ALTER,
        0,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": "cfg",
                    "configs": [
                        {"name": "retention.ms", "value": "1"},
                        {"name": "retention.ms", "value": "2"},
                    ],
                }
            ]
        },
    )
    assert resp.responses[0].error_code == ErrorCode.INVALID_REQUEST
    assert resp.responses[0].error_message == "Error due to duplicate config keys"


async def test_alter_broker_read_only_keys_are_refused(call):
    r = await alter(
        call, BROKER, "0", {"log.retention.ms": "1000", "num.partitions": "3", "log.dirs": "/x"}
    )
    assert r.error_code == ErrorCode.INVALID_REQUEST
    # Kafka 4.4's text: the read-only keys in request order
    assert r.error_message == "Cannot update these configs dynamically: [num.partitions, log.dirs]"
    r = await alter(call, BROKER, "7", {"num.partitions": "3"})
    assert r.error_message == "Unexpected broker id, expected 0, but received 7"
    r = await alter(call, BROKER, "", {})
    assert r.error_code == ErrorCode.NONE


# -- IncrementalAlterConfigs ----------------------------------------------------------------------
async def test_incremental_set_and_delete(call, services, topic):
    r = await incremental(
        call, TOPIC, "cfg", [("segment.ms", SET, "60000"), ("retention.ms", DELETE, None)]
    )
    assert r.error_code == ErrorCode.NONE, r.error_message
    assert dict(services.cluster.topic("cfg").configs) == {"segment.ms": "60000"}
    assert services.replicas.partition("cfg", 1).log.config.segment_ms == 60000
    assert services.replicas.partition("cfg", 1).log.config.retention_ms == 604800000


async def test_incremental_keeps_other_overrides(call, services, topic):
    r = await incremental(call, TOPIC, "cfg", [("max.message.bytes", SET, "2000")])
    assert r.error_code == ErrorCode.NONE
    assert dict(services.cluster.topic("cfg").configs) == {
        "retention.ms": "1000",
        "max.message.bytes": "2000",
    }


async def test_incremental_append_subtract(call, services, topic):
    r = await incremental(call, TOPIC, "cfg", [("cleanup.policy", APPEND, "compact")])
    assert r.error_code == ErrorCode.NONE, r.error_message
    assert services.cluster.topic("cfg").configs["cleanup.policy"] == "delete,compact"
    r = await incremental(call, TOPIC, "cfg", [("cleanup.policy", SUBTRACT, "delete")])
    assert r.error_code == ErrorCode.NONE
    assert services.cluster.topic("cfg").configs["cleanup.policy"] == "compact"
    assert services.replicas.partition("cfg", 0).log.config.cleanup_policy == ("compact",)


@pytest.mark.parametrize("op", [APPEND, SUBTRACT])
async def test_incremental_append_needs_list(call, topic, op):
    r = await incremental(call, TOPIC, "cfg", [("retention.ms", op, "5")])
    assert r.error_code == ErrorCode.INVALID_CONFIG
    verb = "APPEND" if op == APPEND else "SUBTRACT"
    assert r.error_message == f"Can't {verb} to key retention.ms because its type is not LIST."


async def test_incremental_errors(call, services, topic):
    dup = await incremental(
        call, TOPIC, "cfg", [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)]
    )
    assert (dup.error_code, dup.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Error due to duplicate config keys",
    )
    null = await incremental(call, TOPIC, "cfg", [("retention.ms", SET, None)])
    assert null.error_code == ErrorCode.INVALID_REQUEST
    bad = await incremental(call, TOPIC, "cfg", [("retention.ms", SET, "-9")])
    assert bad.error_code == ErrorCode.INVALID_CONFIG
    assert "retention.ms" in bad.error_message
    unknown = await incremental(call, TOPIC, "cfg", [("bogus", SET, "1")])
    assert unknown.error_message == "Unknown topic config name: bogus"
    missing = await incremental(call, TOPIC, "missing", [("retention.ms", SET, "1")])
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    bad_op = await incremental(call, TOPIC, "cfg", [("retention.ms", 9, "1")])
    assert bad_op.error_code == ErrorCode.INVALID_REQUEST
    assert dict(services.cluster.topic("cfg").configs) == {"retention.ms": "1000"}


async def test_incremental_validate_only(call, services, topic):
    r = await incremental(call, TOPIC, "cfg", [("retention.ms", SET, "42")], validate_only=True)
    assert r.error_code == ErrorCode.NONE
    assert services.cluster.topic("cfg").configs["retention.ms"] == "1000"


async def test_incremental_duplicate_resources(call, topic):
    resp = await call(
        INCREMENTAL,
        1,
        {
            "resources": [
                {"resource_type": TOPIC, "resource_name": "cfg", "configs": []},
                {"resource_type": TOPIC, "resource_name": "cfg", "configs": []},
            ]
        },
    )
    assert [r.error_code for r in resp.responses] == [ErrorCode.INVALID_REQUEST] * 2


async def test_incremental_broker(call):
    r = await incremental(call, BROKER, "0", [("num.partitions", SET, "2")])
    assert r.error_code == ErrorCode.INVALID_REQUEST
    assert r.error_message == "Cannot update these configs dynamically: [num.partitions]"
    r = await incremental(call, BROKER, "0", [("num.partitions", DELETE, None)])
    assert r.error_code == ErrorCode.NONE
    r = await incremental(call, BROKER, "0", [("num.partitions", APPEND, "2")])
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert r.error_message == "Config value append is not allowed for config key: num.partitions"
    r = await incremental(call, CLIENT_METRICS, "m", [("x", SET, "1")])
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Unknown resource type 16",
    )


async def test_incremental_broker_logger(call):
    name = "wirebroker.test_admin.logger"
    logger = logging.getLogger(name)
    try:
        r = await incremental(call, BROKER_LOGGER, "0", [(name, SET, "DEBUG")])
        assert r.error_code == ErrorCode.NONE, r.error_message
        assert logger.level == logging.DEBUG
        assert values(await describe(call, BROKER_LOGGER, "0", [name])) == {name: "DEBUG"}
        r = await incremental(call, BROKER_LOGGER, "0", [(name, SET, "LOUD")])
        assert r.error_code == ErrorCode.INVALID_CONFIG
        r = await incremental(call, BROKER_LOGGER, "0", [("root", DELETE, None)])
        assert r.error_code == ErrorCode.INVALID_REQUEST
        r = await incremental(call, BROKER_LOGGER, "0", [("no.such.logger.x", SET, "INFO")])
        assert r.error_message == "Logger no.such.logger.x does not exist!"
        r = await incremental(call, BROKER_LOGGER, "0", [(name, DELETE, None)])
        assert r.error_code == ErrorCode.NONE
        assert logger.level == logging.NOTSET
    finally:
        logger.setLevel(logging.NOTSET)


# -- round trip ---------------------------------------------------------------------------------
async def test_round_trip_create_describe_alter_describe(call, services):
    resp = await call(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": "rt",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [
                        {"name": "retention.ms", "value": "86400000"},
                        {"name": "cleanup.policy", "value": "compact, delete"},
                    ],
                }
            ]
        },
    )
    assert resp.topics[0].error_code == ErrorCode.NONE
    first = values(await describe(call, TOPIC, "rt", ["retention.ms", "cleanup.policy"]))
    assert first == {"retention.ms": "86400000", "cleanup.policy": "compact,delete"}
    r = await incremental(call, TOPIC, "rt", [("retention.ms", SET, "3600000")])
    assert r.error_code == ErrorCode.NONE
    second = await describe(call, TOPIC, "rt", ["retention.ms"], synonyms=True)
    (entry,) = second.configs
    assert entry.value == "3600000"
    assert entry.synonyms[0].source == ConfigSource.TOPIC_CONFIG
    assert services.replicas.partition("rt", 0).log.config.retention_ms == 3600000
    r = await alter(call, TOPIC, "rt", {})
    assert r.error_code == ErrorCode.NONE
    third = await describe(call, TOPIC, "rt", ["retention.ms", "cleanup.policy"])
    assert values(third) == {"retention.ms": "604800000", "cleanup.policy": "delete"}
    assert {c.config_source for c in third.configs} == {ConfigSource.DEFAULT_CONFIG}


# -- pure helpers -------------------------------------------------------------------------------
def test_validate_topic_configs_normalises():
    assert topic_configs.validate_topic_configs(
        {"retention.ms": " 100 ", "preallocate": "TRUE", "cleanup.policy": "compact , delete"}
    ) == {"retention.ms": "100", "preallocate": "true", "cleanup.policy": "compact,delete"}


def test_validate_topic_configs_rejects_remote_storage():
    with pytest.raises(InvalidConfigError) as info:
        topic_configs.validate_topic_configs({"remote.storage.enable": "true"})
    assert info.value.error_code == ErrorCode.INVALID_CONFIG


def test_apply_incremental_append_starts_from_default():
    out = _configs.apply_incremental({}, [("cleanup.policy", APPEND, "compact,delete")])
    assert out == {"cleanup.policy": "delete,compact"}
    out = _configs.apply_incremental(out, [("cleanup.policy", SUBTRACT, "delete,compact")])
    assert out == {"cleanup.policy": ""}
