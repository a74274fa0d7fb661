"""Topic configs: validation of overrides and the effective values a topic runs with.

A topic's `TopicInfo.configs` holds its explicit overrides (Kafka topic config names, values
normalised as Kafka's `ConfigDef.convertToString` prints them); every other topic config takes
the broker's synonym value or the built-in default (`BrokerConfig.topic_defaults`). A
partition's `LogConfig` is `LogConfig.from_topic_configs(effective_topic_configs(...))`.

`validate_topic_configs` is the one validation of overrides (CreateTopics, AlterConfigs,
IncrementalAlterConfigs, the group coordinator's `__consumer_offsets`): it raises
`InvalidConfigError` with Kafka's messages ("Unknown topic config name: x", "Invalid value v
for configuration k: <reason>", "Null value not supported for topic configs: a,b").
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from wirebroker.cluster.errors import InvalidConfigError
from wirebroker.config import TOPIC_CONFIGS, BrokerConfig, ConfigDef, ConfigError, ConfigType
from wirebroker.log.config import LogConfig

__all__ = [
    "effective_topic_configs",
    "min_insync_replicas",
    "normalize_stored",
    "parse_value",
    "topic_log_config",
    "validate_topic_configs",
]


def _invalid_value_reason(d: ConfigDef, raw: str) -> str:
    """Why `raw` is not a valid value of `d`, in the words of Kafka's ConfigDef."""
    t = d.type
    text = raw.strip()
    if t == ConfigType.BOOLEAN:
        return "Expected value to be either true or false"
    if t in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG, ConfigType.DOUBLE):
        try:
            number = float(text) if t == ConfigType.DOUBLE else int(text)
        except ValueError:
            return f"Not a number of type {t.name}"
        if d.minimum is not None and number < d.minimum:
            return f"Value must be at least {d.minimum}"
        if d.maximum is not None and number > d.maximum:
            return f"Value must be no more than {d.maximum}"
        return f"Not a number of type {t.name}"  # out of the type's range
    if d.choices is not None:
        return "String must be one of: " + ", ".join(d.choices)
    return "Invalid value"


def _format_parsed(d: ConfigDef, value: object) -> str:
    """Kafka's ConfigDef.convertToString for a parsed value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_value(d: ConfigDef, raw: str) -> str:
    """Validate `raw` for `d`; its normalised string, else InvalidConfigError."""
    try:
        parsed = d.parse(raw)
    except ConfigError as exc:
        reason = _invalid_value_reason(d, raw)
        if reason == "Invalid value":
            reason = str(exc)
        shown = raw
        if reason.startswith("Value must be") and d.type == ConfigType.DOUBLE:
            shown = repr(float(raw.strip()))  # Kafka prints the parsed Double: "2.0"
        raise InvalidConfigError(
            f"Invalid value {shown} for configuration {d.name}: {reason}"
        ) from exc
    return _format_parsed(d, parsed)


def normalize_stored(d: ConfigDef, raw: str | None) -> str | None:
    """A stored or configured value as Kafka would print it (unchanged when it does not parse)."""
    if raw is None:
        return None
    try:
        return _format_parsed(d, d.parse(raw))
    except ConfigError:
        return raw


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Check topic overrides as Kafka's LogConfig.validate does; returns normalised values.

    Raises InvalidConfigError for null values, unknown names, bad values,
    min.compaction.lag.ms > max.compaction.lag.ms and remote.storage.enable=true (tiered
    storage is not supported, as on a Kafka broker without it enabled).
    """
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise InvalidConfigError("Null value not supported for topic configs: " + ",".join(nulls))
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
    out: dict[str, str] = {}
    for name, value in configs.items():
        assert value is not None
        out[name] = parse_value(TOPIC_CONFIGS[name], value)
    _cross_check(out)
    return out


def _cross_check(configs: Mapping[str, str]) -> None:
    def as_int(name: str) -> int:
        raw = configs.get(name, TOPIC_CONFIGS[name].default)
        return int(str(raw))

    lo, hi = as_int("min.compaction.lag.ms"), as_int("max.compaction.lag.ms")
    if lo > hi:
        raise InvalidConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
            f"max.compaction.lag.ms ({hi})",
        )
    if configs.get("remote.storage.enable") == "true":
        raise InvalidConfigError(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be "
            "configured with remote log storage.",
        )


def effective_topic_configs(
    config: BrokerConfig, overrides: Mapping[str, str]
) -> dict[str, str | None]:
    """Every topic config: the topic override, else the broker value, else the default."""
    values = config.topic_defaults()
    values.update(overrides)
    return values


def topic_log_config(config: BrokerConfig, overrides: Mapping[str, str]) -> LogConfig:
    """The `LogConfig` of a topic with these overrides."""
    return LogConfig.from_topic_configs(effective_topic_configs(config, overrides))


def min_insync_replicas(config: BrokerConfig, overrides: Mapping[str, str]) -> int:
    """The topic's min.insync.replicas (1 when it does not parse)."""
    raw = overrides.get("min.insync.replicas")
    if raw is None:
        raw = config.broker_value_for_topic_config("min.insync.replicas")[0]
    try:
        return int(raw) if raw is not None else 1
    except ValueError:
        return 1
