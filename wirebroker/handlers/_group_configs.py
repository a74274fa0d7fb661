"""The GROUP config resource (type 32) for DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs, as Kafka 4.4 answers it.

The table, checks and descriptions are wirebroker.metadata.group_configs; the overrides live
in `services.group_configs` (wirebroker.metadata.group_config_store; ZooKeeper on a broker).

    DescribeConfigs          any group name, existing or not: every group config (Kafka's
                             order), the group's overrides with source DYNAMIC_GROUP_CONFIG (8);
                             empty name: INVALID_REQUEST "Group name must not be empty"
    AlterConfigs (legacy)    the configs given replace all the group's overrides (an empty
                             list clears them), checked as a whole
    IncrementalAlterConfigs  SET / DELETE (a name not set, even an unknown one, is a no-op) on
                             the group's overrides, then the result is checked; APPEND and
                             SUBTRACT are refused for every group config, LIST-typed or not
                             (INVALID_CONFIG "Can't APPEND to key k because its type is not
                             LIST.", as Kafka); an unknown operation: INVALID_REQUEST
                             "Unknown operation type 7", as for a topic (Kafka 4.4's controller
                             fails on it with a NullPointerException, renounces its leadership
                             and answers UNKNOWN_SERVER_ERROR: not imitated)
    both alters              empty name: INVALID_REQUEST "Default group resources are not
                             allowed." (before anything else); a refused result:
                             INVALID_CONFIG with Kafka's text; `validate_only` checks and keeps
                             nothing; applied on this broker before the answer
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.config import BrokerConfig
from wirebroker.handlers._configs import (
    OP_APPEND,
    OP_DELETE,
    OP_NAMES,
    OP_SET,
    OP_SUBTRACT,
    ConfigEntry,
    ConfigRequestError,
    Synonym,
    as_request_error,
)
from wirebroker.metadata.group_configs import Compute, check_overrides, describe

if TYPE_CHECKING:
    from wirebroker.handlers.context import Services

__all__ = [
    "alter_group_configs",
    "check_group_name",
    "describe_group_configs",
    "incremental_compute",
    "legacy_compute",
]


def describe_group_configs(services: Services, name: str | None) -> list[ConfigEntry]:
    """Every group config of group `name` (DescribeConfigs)."""
    if not name:
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    overrides = services.group_configs.get(name)
    return [
        ConfigEntry(
            name=s.name,
            value=s.value,
            source=s.source,
            read_only=False,
            is_sensitive=False,
            config_type=s.config_type,
            documentation=s.doc,
            synonyms=tuple(Synonym(n, v, src) for n, v, src in s.synonyms),
        )
        for s in describe(services.config, overrides)
    ]


def check_group_name(name: str | None) -> str:
    """A GROUP resource name of AlterConfigs / IncrementalAlterConfigs: not empty."""
    if not name:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
        )
    return name


def _checked(config: BrokerConfig, overrides: dict[str, str]) -> dict[str, str]:
    with as_request_error():
        check_overrides(config, overrides)
    return overrides


def incremental_compute(
    config: BrokerConfig, ops: Iterable[tuple[str, int, str | None]]
) -> Compute:
    """IncrementalAlterConfigs ops as a change of a group's overrides (refused ops raise at
    once, the result's checks when computed)."""
    ops = list(ops)
    for name, op, _value in ops:
        if op in (OP_APPEND, OP_SUBTRACT):
            raise ConfigRequestError(
                ErrorCode.INVALID_CONFIG,
                f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.",
            )
        if op not in (OP_SET, OP_DELETE):
            raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op}")

    def compute(current: Mapping[str, str]) -> dict[str, str]:
        new = dict(current)
        for name, op, value in ops:
            if op == OP_SET:
                assert value is not None
                new[name] = value
            else:
                new.pop(name, None)
        return _checked(config, new)

    return compute


def legacy_compute(config: BrokerConfig, configs: Mapping[str, str]) -> Compute:
    """AlterConfigs: `configs` replace the group's overrides."""
    wanted = dict(configs)

    def compute(_current: Mapping[str, str]) -> dict[str, str]:
        return _checked(config, dict(wanted))

    return compute


async def alter_group_configs(
    services: Services, name: str, compute: Compute, validate_only: bool
) -> None:
    """Apply a change of group `name`'s overrides (stored and applied here on return)."""
    with as_request_error():
        await services.group_configs.update(name, compute, validate_only=validate_only)
