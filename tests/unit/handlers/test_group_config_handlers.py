"""DescribeConfigs, IncrementalAlterConfigs and AlterConfigs on the GROUP resource (type 32),
through the real codec, over the in-memory group config store (the ZooKeeper one is
tests/unit/cluster/test_zk_group_configs.py)."""

from __future__ import annotations

import pytest

import wirebroker.handlers.alter_configs
import wirebroker.handlers.describe_configs
import wirebroker.handlers.incremental_alter_configs  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from tests.unit.handlers.test_admin_configs import alter, describe, incremental
from tests.unit.handlers.test_authorization_refusals import ask
from wirebroker.config import ConfigSource
from wirebroker.metadata.group_configs import DYNAMIC_GROUP_CONFIG, GROUP_CONFIGS

GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
SESSION = "consumer.session.timeout.ms"


def overridden(result) -> dict[str, str]:
    return {c.name: c.value for c in result.configs if c.config_source == DYNAMIC_GROUP_CONFIG}


async def test_describe_any_group_gives_every_config_in_kafkas_order(call) -> None:
    result = await describe(call, GROUP, "no-such-group", synonyms=True, docs=True)
    assert (result.error_code, result.error_message) == (ErrorCode.NONE, "")
    assert [c.name for c in result.configs] == list(GROUP_CONFIGS)
    session = result.configs[0]
    assert (session.name, session.value, session.config_source) == (
        SESSION,
        "45000",
        ConfigSource.DEFAULT_CONFIG,
    )
    assert (session.read_only, session.is_sensitive, session.config_type) == (False, False, 3)
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        ("group.consumer.session.timeout.ms", "45000", 5)
    ]
    assert session.documentation == GROUP_CONFIGS[SESSION].doc
    plain = await describe(call, GROUP, "g", [SESSION, "nope"])
    assert [(c.name, c.synonyms, c.documentation) for c in plain.configs] == [(SESSION, [], None)]


async def test_set_describe_delete(call, services) -> None:
    changes: list[tuple[str, dict[str, str]]] = []
    services.group_configs.add_listener(lambda g, c: changes.append((g, dict(c))))
    r = await incremental(call, GROUP, "g1", [(SESSION, SET, "50000")])
    assert (r.error_code, r.error_message) == (ErrorCode.NONE, None)
    assert services.group_configs.get("g1") == {SESSION: "50000"}
    assert changes == [("g1", {SESSION: "50000"})]
    result = await describe(call, GROUP, "g1", [SESSION], synonyms=True)
    (session,) = result.configs
    assert (session.value, session.config_source) == ("50000", 8)
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        (SESSION, "50000", 8),
        ("group.consumer.session.timeout.ms", "45000", 5),
    ]
    assert overridden(await describe(call, GROUP, "g2")) == {}
    r = await incremental(call, GROUP, "g1", [(SESSION, DELETE, None), ("no.such", DELETE, None)])
    assert r.error_code == ErrorCode.NONE
    assert overridden(await describe(call, GROUP, "g1")) == {}
    assert changes[-1] == ("g1", {})


async def test_validate_only_keeps_nothing(call, services) -> None:
    r = await incremental(call, GROUP, "g", [(SESSION, SET, "50000")], validate_only=True)
    assert r.error_code == ErrorCode.NONE
    r = await alter(call, GROUP, "g", {SESSION: "50000"}, validate_only=True)
    assert r.error_code == ErrorCode.NONE
    assert services.group_configs.get("g") == {}
    r = await incremental(call, GROUP, "g", [(SESSION, SET, "1")], validate_only=True)
    assert r.error_code == ErrorCode.INVALID_CONFIG


@pytest.mark.parametrize(
    ("ops", "code", "text"),
    [
        (
            [(SESSION, SET, "1")],
            40,
            "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            [(SESSION, SET, "abc")],
            40,
            "Invalid value abc for configuration consumer.session.timeout.ms: "
            "Not a number of type INT",
        ),
        ([("no.such.config", SET, "1")], 40, "Unknown group config name: no.such.config"),
        (
            [("streams.rack.aware.assignment.tags", APPEND, "a")],
            40,
            "Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST.",
        ),
        (
            [(SESSION, SUBTRACT, "1")],
            40,
            "Can't SUBTRACT to key consumer.session.timeout.ms because its type is not LIST.",
        ),
        ([(SESSION, 7, "1")], 42, "Unknown operation type 7"),  # Kafka: a controller fault
        ([(SESSION, SET, None)], 42, "Null value not supported for : consumer.session.timeout.ms"),
        (
            [(SESSION, SET, "50000"), (SESSION, SET, "50000")],
            42,
            "Error due to duplicate config keys",
        ),
    ],
)
async def test_incremental_refusals(call, services, ops, code, text) -> None:
    r = await incremental(call, GROUP, "g", ops)
    assert (r.error_code, r.error_message) == (code, text)
    assert services.group_configs.get("g") == {}


async def test_empty_names(call) -> None:
    r = await incremental(call, GROUP, "", [(SESSION, SET, "abc")])
    assert (r.error_code, r.error_message) == (42, "Default group resources are not allowed.")
    r = await alter(call, GROUP, "", {SESSION: "50000"})
    assert (r.error_code, r.error_message) == (42, "Default group resources are not allowed.")
    d = await describe(call, GROUP, "")
    assert (d.error_code, d.error_message, d.configs) == (42, "Group name must not be empty", [])


async def test_legacy_alter_replaces_every_override(call, services) -> None:
    r = await incremental(
        call, GROUP, "g", [(SESSION, SET, "50000"), ("share.delivery.count.limit", SET, "3")]
    )
    assert r.error_code == ErrorCode.NONE
    r = await alter(call, GROUP, "g", {"share.isolation.level": "read_committed"})
    assert (r.error_code, r.error_message) == (ErrorCode.NONE, None)
    assert services.group_configs.get("g") == {"share.isolation.level": "read_committed"}
    r = await alter(call, GROUP, "g", {SESSION: "1"})
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert services.group_configs.get("g") == {"share.isolation.level": "read_committed"}
    r = await alter(call, GROUP, "g", {})
    assert r.error_code == ErrorCode.NONE
    assert services.group_configs.get("g") == {}


async def test_group_configs_need_describe_or_alter_configs_on_the_group() -> None:
    described = await ask(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": GROUP, "resource_name": "g", "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    (result,) = described.results
    assert (result.error_code, result.error_message, result.configs) == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        "Group authorization failed.",
        [],
    )
    resource = {
        "resource_type": GROUP,
        "resource_name": "g",
        "configs": [{"name": SESSION, "config_operation": SET, "value": "50000"}],
    }
    altered = await ask(
        ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource], "validate_only": False}
    )
    assert [(r.error_code, r.error_message) for r in altered.responses] == [
        (ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    ]


async def test_list_config_resources_lists_the_groups_with_overrides(call) -> None:
    import wirebroker.handlers.list_config_resources  # noqa: F401

    for group in ("zz", "aa", "gone"):
        r = await incremental(call, GROUP, group, [(SESSION, SET, "50000")])
        assert r.error_code == ErrorCode.NONE
    await incremental(call, GROUP, "gone", [(SESSION, DELETE, None)])
    resp = await call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [GROUP]})
    assert [(r.resource_name, r.resource_type) for r in resp.config_resources] == [
        ("aa", GROUP),
        ("zz", GROUP),
    ]
