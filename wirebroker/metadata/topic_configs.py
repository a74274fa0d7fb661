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

import math
import re
from collections.abc import Mapping
from decimal import Decimal

from wirebroker.config import (
    INT_MAX,
    LONG_MAX,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigDef,
    ConfigError,
    ConfigType,
)
from wirebroker.log.config import LogConfig
from wirebroker.metadata.errors import InvalidConfigError

__all__ = [
    "effective_topic_configs",
    "java_double",
    "min_insync_replicas",
    "normalize_stored",
    "parse_value",
    "topic_log_config",
    "validate_topic_configs",
]


_TYPE_BOUNDS = {ConfigType.INT: INT_MAX, ConfigType.SHORT: 32767, ConfigType.LONG: LONG_MAX}


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
        bound = _TYPE_BOUNDS.get(t)
        if bound is not None and not -bound - 1 <= number <= bound:
            return f"Not a number of type {t.name}"
        low, high = d.minimum, d.maximum
        if d.also_allowed and low is not None and high is not None:
            allowed = ", ".join(str(v) for v in d.also_allowed)
            return f"Value must be between {low} and {high} or equal to {allowed}"
        if low is not None and number < low:
            return f"Value must be at least {low}"
        if high is not None and number > high:
            return f"Value must be no more than {high}"
        return f"Not a number of type {t.name}"
    if d.choices is not None:
        return "String must be one of: " + ", ".join(d.choices)
    return "Invalid value"


def java_double(value: float) -> str:
    """Java's Double.toString: decimal between 10^-3 and 10^7, else d.dddE<n>."""
    if value != value or value in (math.inf, -math.inf):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    magnitude = abs(value)
    if magnitude == 0 or 1e-3 <= magnitude < 1e7:
        return repr(float(value))
    _sign, digits, exponent = Decimal(repr(magnitude)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    mantissa = text[0] + "." + (text[1:] or "0")
    return ("-" if value < 0 else "") + f"{mantissa}E{len(text) - 1 + exponent}"


def _format_parsed(d: ConfigDef, value: object) -> str:
    """Kafka's ConfigDef.convertToString for a parsed value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return java_double(value)
    return str(value)


#: Kafka's ThrottledReplicaListValidator: "*" (the items joined, so "*," too) or
#: partition:broker pairs (empty items allowed, as by its pattern).
_THROTTLED = frozenset(
    {"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)
_REPLICA = re.compile(r"(\d+:\d+)?")


def _special_check(d: ConfigDef, raw: str) -> None:
    """Kafka's checks beyond a value's type and range, with its messages."""
    items = [item.strip() for item in raw.split(",")]
    if d.choices is not None and d.type == ConfigType.LIST and raw.strip() and "" in items:
        raise InvalidConfigError(f"Configuration '{d.name}' values must not be empty.")
    if d.name in _THROTTLED and raw.strip():
        if "".join(items) == "*" or all(_REPLICA.fullmatch(item) for item in items):
            return
        raise InvalidConfigError(
            f"Invalid value [{', '.join(items)}] for configuration {d.name}: {d.name} must be "
            "the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )


def _shown(d: ConfigDef, raw: str) -> str:
    """How Kafka prints a refused value: trimmed (but a boolean), a double as Java prints it."""
    if d.type == ConfigType.BOOLEAN:
        return raw
    text = raw.strip()
    if d.type == ConfigType.DOUBLE:
        try:
            return java_double(float(text))
        except ValueError:
            return text
    return text


def parse_value(d: ConfigDef, raw: str) -> str:
    """Validate `raw` for `d`; its normalised string, else InvalidConfigError."""
    _special_check(d, raw)
    try:
        parsed = d.parse(raw)
    except ConfigError as exc:
        reason = _invalid_value_reason(d, raw)
        if reason == "Invalid value":
            reason = str(exc)
        raise InvalidConfigError(
            f"Invalid value {_shown(d, raw)} for configuration {d.name}: {reason}"
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
