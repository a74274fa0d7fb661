"""BROKER resources: DescribeConfigs of the broker and of the cluster default, and the changes
AlterConfigs / IncrementalAlterConfigs make to the dynamic broker configs (Kafka 4.4's
answers, asked of it: tests/oracle/test_kafka_answers.py).

Describe (`describe_broker_configs`, resource name = this node id)
    every BROKER_CONFIGS entry with its effective value (this broker's dynamic value, the
    cluster default, server.properties, the built-in default; null when none), source and
    synonyms in that order (`_configs.broker_synonyms`), read_only false for the dynamic ones
    (wirebroker.dynamic_configs.DYNAMIC_BROKER_CONFIGS) and true for the rest; plus every key
    unknown to wirebroker set in server.properties or dynamically (type UNKNOWN, sensitive,
    value null, read-only -- Kafka treats keys it has no definition for as possibly sensitive);
    the broker quota configs (wirebroker.config.BROKER_QUOTA_CONFIGS: the replication
    throttles' rates) only once set, as Kafka: the value as written (untrimmed), type LONG,
    read_only false, no documentation, a synonym per level that sets them.
Describe the cluster default (`describe_default_configs`, resource name "")
    only the keys set dynamically for the whole cluster, each with the one synonym of that
    level (source DYNAMIC_DEFAULT_BROKER_CONFIG).

Changes (`legacy_compute`, `incremental_compute`: the entity's new dynamic configs from its
current ones, in this order of checks)
    AlterConfigs                  the request's configs replace all the entity's dynamic configs
    IncrementalAlterConfigs       SET replaces a key, DELETE removes it (a key not set, even a
                                  read-only one, is a no-op), APPEND / SUBTRACT add / remove
                                  comma-separated items of a LIST key starting from its current
                                  effective value: INVALID_CONFIG "Unknown config name: k" for a
                                  key wirebroker does not know, "Config value append is not
                                  allowed for config key: k" for one that is not a LIST
    a read-only key set           INVALID_REQUEST "Cannot update these configs dynamically:
                                  [k1, k2]" (the keys in request order)
    a bad value                   INVALID_REQUEST "Invalid value v for configuration k: <why>"
                                  (the topic configs' reasons: wirebroker.metadata.topic_configs)
    keys wirebroker does not know accepted and kept, as Kafka does
Kafka 4.4 refuses a per-broker min.insync.replicas while Eligible Leader Replicas are
enabled; wirebroker has no ELR, so it accepts it as a Kafka without ELR does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from protocol.errors import ErrorCode
from wirebroker.config import (
    BROKER_CONFIGS,
    BROKER_QUOTA_CONFIGS,
    BrokerConfig,
    ConfigSource,
    ConfigType,
)
from wirebroker.dynamic_configs import DYNAMIC_BROKER_CONFIGS, Compute
from wirebroker.handlers._configs import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    ConfigEntry,
    ConfigRequestError,
    Synonym,
    broker_synonym_names,
    broker_synonyms,
)
from wirebroker.metadata.errors import InvalidConfigError
from wirebroker.metadata.topic_configs import normalize_stored, parse_value

__all__ = [
    "describe_broker_configs",
    "describe_default_configs",
    "incremental_compute",
    "legacy_compute",
]

Op = tuple[str, int, "str | None"]


def _unknown(name: str, config: BrokerConfig) -> ConfigEntry:
    """A key wirebroker has no definition for: null, sensitive, read-only (Kafka's answer)."""
    synonyms = tuple(Synonym(name, None, src) for src, layer in config.layers() if name in layer)
    return ConfigEntry(
        name=name,
        value=None,
        source=synonyms[0].source if synonyms else ConfigSource.STATIC_BROKER_CONFIG,
        read_only=True,
        is_sensitive=True,
        config_type=ConfigType.UNKNOWN,
        documentation=None,
        synonyms=synonyms,
    )


def _quota(name: str, layers: Iterable[tuple[ConfigSource, Mapping[str, str]]]) -> ConfigEntry:
    """A broker quota config (BROKER_QUOTA_CONFIGS) that is set: Kafka describes it with the
    value as written (untrimmed) and no documentation."""
    synonyms = tuple(Synonym(name, layer[name], src) for src, layer in layers if name in layer)
    return ConfigEntry(
        name=name,
        value=synonyms[0].value,
        source=synonyms[0].source,
        read_only=False,
        is_sensitive=False,
        config_type=BROKER_QUOTA_CONFIGS[name].type,
        documentation=None,
        synonyms=synonyms,
    )


def describe_broker_configs(config: BrokerConfig) -> list[ConfigEntry]:
    """Every broker config (and every other key set: the broker quota configs, unknown
    keys), sorted by name."""
    names = set(BROKER_CONFIGS)
    for _source, layer in config.layers():
        names |= set(layer)
    out = []
    for name in sorted(names):
        d = BROKER_CONFIGS.get(name)
        if d is None:
            quota = name in BROKER_QUOTA_CONFIGS
            out.append(_quota(name, config.layers()) if quota else _unknown(name, config))
            continue
        synonyms = broker_synonyms(config, name)
        sensitive = d.type == ConfigType.PASSWORD
        if sensitive:
            synonyms = [Synonym(s.name, None, s.source) for s in synonyms]
        out.append(
            ConfigEntry(
                name=name,
                value=None if sensitive else normalize_stored(d, config.raw(name)),
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                read_only=name not in DYNAMIC_BROKER_CONFIGS,
                is_sensitive=sensitive,
                config_type=d.type,
                documentation=d.doc,
                synonyms=tuple(synonyms),
            )
        )
    return out


def describe_default_configs(config: BrokerConfig) -> list[ConfigEntry]:
    """The cluster-wide dynamic defaults (resource name ""), sorted by name."""
    level = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    layer = config.dynamic_default
    out = []
    for name in sorted(layer):
        d = BROKER_CONFIGS.get(name)
        if d is None and name in BROKER_QUOTA_CONFIGS:
            out.append(_quota(name, [(level, layer)]))
            continue
        if d is None:
            unknown = Synonym(name, None, level)
            out.append(
                ConfigEntry(
                    name=name,
                    value=None,
                    source=level,
                    read_only=True,
                    is_sensitive=True,
                    config_type=ConfigType.UNKNOWN,
                    synonyms=(unknown,),
                )
            )
            continue
        synonyms = [Synonym(n, layer[n], level) for n in broker_synonym_names(name) if n in layer]
        while synonyms and synonyms[0].name != name:
            synonyms.pop(0)
        out.append(
            ConfigEntry(
                name=name,
                value=normalize_stored(d, layer[name]),
                source=level,
                read_only=name not in DYNAMIC_BROKER_CONFIGS,
                is_sensitive=d.type == ConfigType.PASSWORD,
                config_type=d.type,
                documentation=d.doc,
                synonyms=tuple(synonyms),
            )
        )
    return out


def _check_update(props: Mapping[str, str], names: Iterable[str]) -> None:
    """The keys being set must be dynamic, and their new values valid (Kafka's checks)."""
    names = list(dict.fromkeys(names))
    read_only = [n for n in names if n in BROKER_CONFIGS and n not in DYNAMIC_BROKER_CONFIGS]
    if read_only:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: [" + ", ".join(read_only) + "]",
        )
    for name in names:
        d = BROKER_CONFIGS.get(name) or BROKER_QUOTA_CONFIGS.get(name)
        if d is None or name not in props:
            continue
        try:
            parse_value(d, props[name])
        except InvalidConfigError as exc:
            raise ConfigRequestError(ErrorCode.INVALID_REQUEST, str(exc)) from None


_WRAPPED = "Invalid value org.apache.kafka.common.config.ConfigException: {} for configuration "
_WRAPPED += "Invalid dynamic configuration"


def _retention_limits(view: BrokerConfig, new: Mapping[str, str]) -> str | None:
    """Kafka's checks of the local (tiered) retention against the retention, at broker
    level, even without tiered storage (their text, Java wrapper included)."""
    for unit, total in (
        ("ms", view.retention_ms()),
        ("bytes", view.get_int("log.retention.bytes")),
    ):
        name = f"log.local.retention.{unit}"
        local = view.get_int(name)
        if name in new and local == -1 and total != -1:
            why = f"Value must not be -1 as log.retention.{unit} value is set as {total}."
            return _WRAPPED.format(f"Invalid value {local} for configuration {name}: {why}")
        if name in new and local >= 0 and total != -1 and local > total:
            why = f"Value must not be more than log.retention.{unit} property value: {total}"
            return _WRAPPED.format(f"Invalid value {local} for configuration {name}: {why}")
        effective = total if local == -2 else local
        lag_name = f"log.remote.copy.lag.{unit}"
        lag = view.get_int(lag_name)
        if lag_name in new and effective >= 0 and lag > effective:
            why = f"Value must not exceed {name} (effective value: {effective})"
            return _WRAPPED.format(f"Invalid value {lag} for configuration {lag_name}: {why}")
    return None


def _requirement_problem(view: BrokerConfig, new: Mapping[str, str]) -> str | None:
    """Kafka's checks of the broker's whole resulting config ("requirement failed: ...")."""
    if view.retention_ms() == 0:
        return (
            "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or "
            "equal to 1"
        )
    if view.roll_ms() < 1:
        return "requirement failed: log.roll.ms must be greater than or equal to 1"
    jitter = view.broker_value_for_topic_config("segment.jitter.ms")[0]
    if jitter is not None and int(jitter) < 0:
        return "requirement failed: log.roll.jitter.ms must be greater than or equal to 0"
    if "max.connections" in new and view.get_int("max.connections") == 0:
        return _WRAPPED.format("Invalid max.connections 0")
    if "max.connections.per.ip" in new and view.get_int("max.connections.per.ip") == 0:
        return (
            "requirement failed: max.connections.per.ip can be set to zero only if "
            "max.connections.per.ip.overrides property is set."
        )
    return _retention_limits(view, new)


def _check_result(config: BrokerConfig, default_level: bool, new: Mapping[str, str]) -> None:
    """The change's result as a whole (the keys' own checks passed)."""
    known = {k: v for k, v in new.items() if k in BROKER_CONFIGS}
    view = config.with_dynamic(**{"default" if default_level else "broker": known})
    problem = _requirement_problem(view, new)
    if problem is not None:
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, problem)


def legacy_compute(
    config: BrokerConfig, configs: Mapping[str, str], default_level: bool
) -> Compute:
    """AlterConfigs: the request's configs become the entity's whole dynamic config."""
    new = dict(configs)

    def compute(_current: Mapping[str, str]) -> dict[str, str]:
        _check_update(new, new)
        _check_result(config, default_level, new)
        return new

    return compute


def _list_edit(name: str, op: int, base: str, value: str | None) -> str:
    d = BROKER_CONFIGS.get(name)
    if d is None:
        raise ConfigRequestError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
    if d.type != ConfigType.LIST:
        verb = "append" if op == OP_APPEND else "subtract"
        raise ConfigRequestError(
            ErrorCode.INVALID_CONFIG,
            f"Config value {verb} is not allowed for config key: {name}",
        )
    items = [p.strip() for p in base.split(",") if p.strip()]
    for item in (p.strip() for p in (value or "").split(",")):
        if op == OP_APPEND and item not in items:
            items.append(item)
        elif op == OP_SUBTRACT and item in items:
            items.remove(item)
    return ",".join(items)


def incremental_compute(config: BrokerConfig, ops: Iterable[Op], default_level: bool) -> Compute:
    """IncrementalAlterConfigs: the ops applied to the entity's current dynamic configs."""
    ops = list(ops)
    effective: Callable[[str], str | None] = config.raw

    def compute(current: Mapping[str, str]) -> dict[str, str]:
        props = dict(current)
        for name, op, value in ops:
            if op == OP_SET:
                assert value is not None
                props[name] = value
            elif op == OP_DELETE:
                props.pop(name, None)
            elif op in (OP_APPEND, OP_SUBTRACT):
                base = props[name] if name in props else (effective(name) or "")
                props[name] = _list_edit(name, op, base, value)
            else:
                raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
        _check_update(props, (name for name, op, _v in ops if op != OP_DELETE))
        _check_result(config, default_level, props)
        return props

    return compute
