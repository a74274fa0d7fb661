"""Configs beyond the sweeps: every config of the broker (v4 and v1) and of a topic, with
synonyms and documentation; DescribeConfigs, AlterConfigs and IncrementalAlterConfigs error
paths. Broker configs are only ever altered with validate_only (the oracle is shared)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import API, configs_resource, create, settle, step
from compat.conformance.script import Ctx, Item, Scenario

Body = Callable[[Ctx], dict[str, Any]]
Resource = Callable[[Ctx], dict[str, Any]]
DC, AC, IAC = API.DESCRIBE_CONFIGS, API.ALTER_CONFIGS, API.INCREMENTAL_ALTER_CONFIGS
TOPIC = "cfg-topic"
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def describe(
    resources: Callable[[Ctx], list[dict[str, Any]]], synonyms: bool = True, docs: bool = True
) -> Body:
    return lambda ctx: {
        "resources": resources(ctx),
        "include_synonyms": synonyms,
        "include_documentation": docs,
    }


def alter(resource: Resource, configs: list[dict[str, Any]], validate: bool = False) -> Body:
    return lambda ctx: {
        "resources": [{**resource(ctx), "configs": configs}],
        "validate_only": validate,
    }


def topic(ctx: Ctx) -> dict[str, Any]:
    return {"resource_type": 2, "resource_name": ctx.name(TOPIC)}


def broker(ctx: Ctx) -> dict[str, Any]:
    return {"resource_type": 4, "resource_name": str(ctx.side.node_id)}


def incremental(name: str, op: int, value: str | None) -> dict[str, Any]:
    return {"name": name, "config_operation": op, "value": value}


def _raw(
    resource_type: int, name: str, keys: list[str] | None = None
) -> Callable[[Ctx], list[dict[str, Any]]]:
    return lambda ctx: [
        {"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}
    ]


DESCRIBES: tuple[Item, ...] = (
    step(
        "configs.broker_v4",
        DC,
        4,
        describe(lambda ctx: [configs_resource(ctx, None)]),
        "every config of the broker: value, source, read_only, synonyms, type, documentation",
    ),
    step(
        "configs.broker_v1",
        DC,
        1,
        describe(lambda ctx: [configs_resource(ctx, None)], docs=False),
        "every config of the broker at v1",
    ),
    step(
        "configs.topic_v4",
        DC,
        4,
        describe(lambda ctx: [configs_resource(ctx, TOPIC)]),
        "every config of a topic with 2 set",
    ),
    step(
        "configs.topic_no_synonyms",
        DC,
        4,
        describe(lambda ctx: [configs_resource(ctx, TOPIC)], synonyms=False, docs=False),
        "the same without synonyms or documentation",
    ),
    step(
        "configs.topic_some_keys",
        DC,
        4,
        describe(
            lambda ctx: [
                configs_resource(
                    ctx, TOPIC, ["retention.ms", "segment.bytes", "conformance.unknown"]
                )
            ]
        ),
        "3 keys, one unknown",
    ),
    step(
        "configs.unknown_topic",
        DC,
        4,
        describe(lambda ctx: [configs_resource(ctx, "cfg-never")]),
        "a topic that does not exist",
    ),
    step(
        "configs.other_broker",
        DC,
        4,
        describe(_raw(4, "999")),
        "a broker id that is not this broker",
    ),
    step(
        "configs.broker_bad_name",
        DC,
        4,
        describe(_raw(4, "not-a-number")),
        "a broker resource whose name is not a number",
    ),
    step(
        "configs.cluster_default",
        DC,
        4,
        describe(_raw(4, "", ["log.retention.ms"])),
        "the cluster-wide default resource (empty broker name)",
    ),
    step(
        "configs.broker_logger",
        DC,
        4,
        describe(lambda ctx: _raw(8, str(ctx.side.node_id), ["root"])(ctx)),
        "the broker's root logger (BROKER_LOGGER)",
    ),
    step("configs.bad_type", DC, 4, describe(_raw(99, "x")), "resource type 99"),
)

ALTERS: tuple[Item, ...] = (
    step(
        "configs.alter_bad_value",
        AC,
        2,
        alter(topic, [{"name": "retention.ms", "value": "soon"}]),
        "retention.ms=soon",
    ),
    step(
        "configs.alter_unknown_key",
        AC,
        2,
        alter(topic, [{"name": "conformance.unknown", "value": "1"}]),
        "a config Kafka does not have",
    ),
    step(
        "configs.alter_unknown_topic",
        AC,
        2,
        alter(
            lambda ctx: {"resource_type": 2, "resource_name": ctx.name("cfg-never")},
            [{"name": "retention.ms", "value": "1000"}],
        ),
        "a topic that does not exist",
    ),
    step(
        "configs.alter_validate_only",
        AC,
        2,
        alter(topic, [{"name": "retention.ms", "value": "999"}], validate=True),
        "validate_only (nothing changes)",
    ),
    step(
        "configs.alter_broker_validate",
        AC,
        2,
        alter(broker, [{"name": "log.cleaner.threads", "value": "2"}], validate=True),
        "a dynamic broker config, validate only",
    ),
    step(
        "configs.alter_broker_read_only",
        AC,
        2,
        alter(broker, [{"name": "log.dirs", "value": "/tmp/x"}], validate=True),
        "a read-only broker config, validate only",
    ),
    step(
        "configs.incremental_delete",
        IAC,
        1,
        alter(topic, [incremental("retention.ms", DELETE, None)]),
        "DELETE retention.ms (back to the default)",
    ),
    step(
        "configs.incremental_subtract",
        IAC,
        1,
        alter(topic, [incremental("cleanup.policy", SUBTRACT, "delete")]),
        "SUBTRACT delete from cleanup.policy",
    ),
    step(
        "configs.incremental_append_scalar",
        IAC,
        1,
        alter(topic, [incremental("retention.ms", APPEND, "5")]),
        "APPEND to a config that is not a list",
    ),
    step(
        "configs.incremental_unknown_key",
        IAC,
        1,
        alter(topic, [incremental("conformance.unknown", SET, "1")]),
        "SET a config Kafka does not have",
    ),
    step(
        "configs.incremental_twice",
        IAC,
        1,
        alter(
            topic, [incremental("retention.ms", SET, "1"), incremental("retention.ms", SET, "2")]
        ),
        "the same config twice",
    ),
    step(
        "configs.incremental_broker_validate",
        IAC,
        1,
        alter(broker, [incremental("log.cleaner.threads", SET, "2")], validate=True),
        "a dynamic broker config, validate only",
    ),
    settle(TOPIC, {"retention.ms": "604800000", "cleanup.policy": "compact"}),
    step(
        "configs.topic_after",
        DC,
        4,
        describe(
            lambda ctx: [configs_resource(ctx, TOPIC, ["retention.ms", "cleanup.policy"])],
            docs=False,
        ),
        "the topic's configs afterwards",
    ),
)


def configs() -> Scenario:
    stage = create(TOPIC, 1, {"retention.ms": "123456", "cleanup.policy": "compact,delete"})
    return Scenario("configs", (stage, *DESCRIBES, *ALTERS))
