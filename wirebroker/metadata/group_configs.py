"""The GROUP config resource (KIP-848 / KIP-932 / KIP-1071 group configs), as Kafka 4.4 has it.

Pure: the table of group configs, the checks of a group's overrides with Kafka's texts, and
each config's effective value with its source and synonyms. The stores (ZooKeeper and memory)
are `wirebroker.cluster.zk_group_configs` and `LocalGroupConfigs` below; the handlers are
DescribeConfigs / AlterConfigs / IncrementalAlterConfigs on resource type 32.

The table (`GROUP_CONFIGS`, in the order Kafka 4.4 describes them): each config's type, the
broker config it defaults from (its one synonym; the five configs of no broker config --
share.auto.offset.reset, share.isolation.level, share.renew.acknowledge.enable and the two
errors.deadletterqueue.* -- name themselves with their built-in default), the lowest value
its definition accepts (`at_least`) and the broker configs bounding it (`bounds`).

Checks of a group's overrides (`check_overrides`; Kafka's GroupConfig.validate, every failure
INVALID_CONFIG), in this order:
    1. every name is a group config: "Unknown group config name: x" (the first in name order)
    2. every value parses (table order): INT "Invalid value abc for configuration k: Not a
       number of type INT" (also beyond 32 bits), "... Value must be at least 1" below the
       definition's minimum; BOOLEAN "... Expected value to be either true or false" (case
       ignored); share.isolation.level "... String must be one of: read_committed,
       read_uncommitted"; share.auto.offset.reset earliest, latest or by_duration:<ISO-8601
       duration, not negative> (Kafka's long text); strings and lists anything. Values are
       trimmed as Kafka's ConfigDef trims them; texts quote the value as given (the trimmed
       one for strings).
    3. the bounds, on the effective values (overrides over the broker's defaults), in
       `RANGE_ORDER`: "k must be in the range 45000 to 60000 inclusive." (the broker's
       group.<kind>.min/max.* configs); streams.num.standby.replicas "... must be less than or
       equal to 2" (group.streams.max.standby.replicas); then
    4. streams.assignor.name must be one of the broker's group.streams.assignors: "streams.
       assignor.name 'x' is not a registered task assignor. Registered assignors are:
       [sticky]."; then each kind's session timeout must exceed its heartbeat interval ("k
       must be greater than h"; unreachable with Kafka's default bounds, text as Kafka 3.9's).

Describe (`describe`): value = the override when the group sets it (source
DYNAMIC_GROUP_CONFIG 8), else the broker's effective value with the broker's source
(DEFAULT_CONFIG 5 unless set in server.properties or dynamically); synonyms: the override, then
the broker config in every layer that sets it (dynamic per broker, cluster default, static),
then its built-in default; values normalised as Kafka prints them (ints without spaces,
booleans lower case). read_only false, never sensitive.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from wirebroker.config import BROKER_CONFIGS, INT_MAX, BrokerConfig, ConfigSource, ConfigType

__all__ = [
    "DYNAMIC_GROUP_CONFIG",
    "GROUP_CONFIGS",
    "GroupConfigDef",
    "GroupConfigError",
    "GroupSetting",
    "check_overrides",
    "describe",
    "effective_values",
    "normalize",
    "parse_value",
]

#: DescribeConfigs ConfigSource of a group's override.
DYNAMIC_GROUP_CONFIG = 8

INVALID_CONFIG = 40
_T = ConfigType


class GroupConfigError(ValueError):
    """A group config change Kafka refuses (`error_code`: INVALID_CONFIG)."""

    def __init__(self, message: str, error_code: int = INVALID_CONFIG) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class GroupConfigDef:
    name: str
    type: ConfigType
    #: the broker config supplying the default (None: `default` below, the config itself)
    broker_key: str | None
    doc: str
    default: str | None = None
    at_least: int | None = None
    #: broker configs bounding the value: (minimum key or None, maximum key)
    bounds: tuple[str | None, str] | None = None


def _int(
    name: str, broker_key: str, doc: str, at_least: int, bounds: tuple[str | None, str] | None
) -> GroupConfigDef:
    return GroupConfigDef(name, _T.INT, broker_key, doc, at_least=at_least, bounds=bounds)


def _bounds(kind: str, what: str) -> tuple[str, str]:
    return f"group.{kind}.min.{what}", f"group.{kind}.max.{what}"


_TIMEOUT_DOC = "The timeout to detect client failures when using the {} group protocol."
_INTERVAL_DOC = "The interval between assignment updates for a {} group."
_SHARE_RESET_DOC = (
    "The strategy to initialize the share-partition start offset. <ul><li>earliest: "
    "automatically reset the offset to the earliest offset</li><li>latest: automatically reset "
    "the offset to the latest offset</li><li>by_duration:&lt;duration&gt;: automatically reset "
    "the offset to a configured duration from the current timestamp. &lt;duration&gt; must be "
    "specified in ISO8601 format (PnDTnHnMn.nS). Negative duration is not allowed.</li>"
    "<li>anything else: throw exception to the share consumer.</li></ul>"
)

#: Every group config, in the order Kafka 4.4 describes them.
GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    d.name: d
    for d in [
        _int(
            "consumer.session.timeout.ms",
            "group.consumer.session.timeout.ms",
            _TIMEOUT_DOC.format("consumer"),
            1,
            _bounds("consumer", "session.timeout.ms"),
        ),
        GroupConfigDef(
            "streams.assignor.name",
            _T.STRING,
            "group.streams.assignors",
            "The task assignor to use for this streams group, selected by short name from the "
            "assignors registered via the broker configuration group.streams.assignors. When "
            "unset, the group defaults to the first assignor configured in the broker's "
            "group.streams.assignors setting. Changing the assignor does not trigger a "
            "rebalance for the group; the new assignor takes effect on the next rebalance.",
        ),
        _int(
            "consumer.assignment.interval.ms",
            "group.consumer.assignment.interval.ms",
            _INTERVAL_DOC.format("consumer"),
            0,
            _bounds("consumer", "assignment.interval.ms"),
        ),
        GroupConfigDef(
            "errors.deadletterqueue.copy.record.enable",
            _T.BOOLEAN,
            None,
            "When writing onto the dead-letter queue topic, whether to copy the original record "
            "onto the DLQ topic, or just write a record containing the context information "
            "headers.",
            default="false",
        ),
        GroupConfigDef(
            "share.auto.offset.reset", _T.STRING, None, _SHARE_RESET_DOC, default="latest"
        ),
        GroupConfigDef(
            "streams.rack.aware.assignment.tags",
            _T.LIST,
            "group.streams.rack.aware.assignment.tags",
            "List of client tag keys used to distribute standby replicas across Kafka Streams "
            "instances. When configured, and the used broker-side assignor supports it, it will "
            "make a best-effort to distribute standby tasks over each client tag dimension.",
        ),
        GroupConfigDef(
            "share.renew.acknowledge.enable",
            _T.BOOLEAN,
            None,
            "Whether the renew acknowledge type is enabled for the share group.",
            default="true",
        ),
        _int(
            "streams.initial.rebalance.delay.ms",
            "group.streams.initial.rebalance.delay.ms",
            "The amount of time the group coordinator will wait for more streams clients to "
            "join a new group before performing the first rebalance. A longer delay means "
            "potentially fewer rebalances.",
            0,
            None,
        ),
        _int(
            "share.session.timeout.ms",
            "group.share.session.timeout.ms",
            _TIMEOUT_DOC.format("share"),
            1,
            _bounds("share", "session.timeout.ms"),
        ),
        _int(
            "streams.assignment.interval.ms",
            "group.streams.assignment.interval.ms",
            _INTERVAL_DOC.format("streams"),
            0,
            _bounds("streams", "assignment.interval.ms"),
        ),
        _int(
            "share.heartbeat.interval.ms",
            "group.share.heartbeat.interval.ms",
            "The heartbeat interval given to the members of a share group.",
            1,
            _bounds("share", "heartbeat.interval.ms"),
        ),
        _int(
            "streams.heartbeat.interval.ms",
            "group.streams.heartbeat.interval.ms",
            "The heartbeat interval given to the members.",
            1,
            _bounds("streams", "heartbeat.interval.ms"),
        ),
        _int(
            "share.delivery.count.limit",
            "group.share.delivery.count.limit",
            "The maximum number of delivery attempts for a record delivered to a share group.",
            2,
            _bounds("share", "delivery.count.limit"),
        ),
        GroupConfigDef(
            "errors.deadletterqueue.topic.name",
            _T.STRING,
            None,
            "The name of the topic to be used as the dead-letter queue (DLQ) topic for this "
            "share group. If blank (the default), the group does not have a DLQ topic.",
            default="",
        ),
        _int(
            "consumer.heartbeat.interval.ms",
            "group.consumer.heartbeat.interval.ms",
            "The heartbeat interval given to the members of a consumer group.",
            1,
            _bounds("consumer", "heartbeat.interval.ms"),
        ),
        _int(
            "share.record.lock.duration.ms",
            "group.share.record.lock.duration.ms",
            "The record acquisition lock duration in milliseconds for share groups.",
            1000,
            _bounds("share", "record.lock.duration.ms"),
        ),
        _int(
            "share.assignment.interval.ms",
            "group.share.assignment.interval.ms",
            _INTERVAL_DOC.format("share"),
            0,
            _bounds("share", "assignment.interval.ms"),
        ),
        GroupConfigDef(
            "share.isolation.level",
            _T.STRING,
            None,
            'Controls how to read records written transactionally. If set to "read_committed", '
            "the share group will only deliver transactional records which have been committed. "
            'If set to "read_uncommitted", the share group will return all messages, even '
            "transactional messages which have been aborted. Non-transactional records will be "
            "returned unconditionally in either mode.",
            default="read_uncommitted",
        ),
        _int(
            "streams.session.timeout.ms",
            "group.streams.session.timeout.ms",
            _TIMEOUT_DOC.format("streams"),
            1,
            _bounds("streams", "session.timeout.ms"),
        ),
        _int(
            "share.partition.max.record.locks",
            "group.share.partition.max.record.locks",
            "Share-group record lock limit per share-partition.",
            100,
            _bounds("share", "partition.max.record.locks"),
        ),
        _int(
            "streams.num.standby.replicas",
            "group.streams.num.standby.replicas",
            "The number of standby replicas for each task.",
            0,
            (None, "group.streams.max.standby.replicas"),
        ),
    ]
}

#: The order of the bound checks (Kafka 4.4 reports a consumer heartbeat interval out of its
#: range before a session timeout).
RANGE_ORDER = (
    "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms",
    "consumer.assignment.interval.ms",
    "share.heartbeat.interval.ms",
    "share.session.timeout.ms",
    "share.record.lock.duration.ms",
    "share.delivery.count.limit",
    "share.partition.max.record.locks",
    "share.assignment.interval.ms",
    "streams.heartbeat.interval.ms",
    "streams.session.timeout.ms",
    "streams.num.standby.replicas",
    "streams.assignment.interval.ms",
)
_SESSION_OVER_HEARTBEAT = ("consumer", "share", "streams")

_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
_DURATION = re.compile(
    r"(?P<sign>[-+]?)P(?:(?P<d>[-+]?[0-9]+)D)?"
    r"(?:T(?=[-+0-9])(?:(?P<h>[-+]?[0-9]+)H)?(?:(?P<m>[-+]?[0-9]+)M)?"
    r"(?:(?P<s>[-+]?[0-9]+)(?:[.,](?P<f>[0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def _duration_ms(text: str) -> float | None:
    """An ISO-8601 duration as Java's Duration.parse reads it, in ms (None: does not parse)."""
    m = _DURATION.fullmatch(text)
    if m is None or text.upper().endswith(("P", "T")):
        return None
    parts = {k: int(v) for k, v in m.groupdict().items() if k in ("d", "h", "m", "s") and v}
    if not parts:
        return None
    ms: float = (
        parts.get("d", 0) * 86_400_000
        + parts.get("h", 0) * 3_600_000
        + parts.get("m", 0) * 60_000
        + parts.get("s", 0) * 1000
    )
    fraction = m.group("f")
    if fraction:
        seconds_text = m.group("s") or ""
        frac_ms = int(fraction.ljust(9, "0")) / 1_000_000
        ms += -frac_ms if seconds_text.startswith("-") else frac_ms
    return -ms if m.group("sign") == "-" else ms


#: share.auto.offset.reset's by_duration:<duration> in ms (the share partitions resolve it)
duration_ms = _duration_ms


def _invalid(raw: str, name: str, why: str) -> GroupConfigError:
    return GroupConfigError(f"Invalid value {raw} for configuration {name}: {why}")


def parse_value(d: GroupConfigDef, raw: str) -> object:
    """The value of `raw` for config `d` (Kafka's ConfigDef parse and validator), else
    GroupConfigError with Kafka's text."""
    text = raw.strip()
    if d.type == _T.INT:
        if not _INT_TEXT.fullmatch(text) or not -INT_MAX - 1 <= int(text) <= INT_MAX:
            raise _invalid(raw, d.name, "Not a number of type INT")
        value = int(text)
        if d.at_least is not None and value < d.at_least:
            raise _invalid(str(value), d.name, f"Value must be at least {d.at_least}")
        return value
    if d.type == _T.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise _invalid(raw, d.name, "Expected value to be either true or false")
        return text.lower() == "true"
    if d.type == _T.LIST:
        return [item.strip() for item in text.split(",")] if text else []
    if d.name == "share.isolation.level" and text not in _ISOLATION_LEVELS:
        raise _invalid(text, d.name, "String must be one of: " + ", ".join(_ISOLATION_LEVELS))
    if d.name == "share.auto.offset.reset" and not _valid_reset(text):
        raise _invalid(
            text,
            d.name,
            f"Invalid value `{text}` for configuration {d.name}. The value must be either "
            "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        )
    return text


def _valid_reset(text: str) -> bool:
    if text in ("earliest", "latest"):
        return True
    if not text.startswith("by_duration:"):
        return False
    ms = _duration_ms(text.removeprefix("by_duration:"))
    return ms is not None and ms >= 0


def normalize(name: str, raw: str) -> str:
    """A stored value as Kafka prints it (the raw text when it does not parse)."""
    d = GROUP_CONFIGS.get(name)
    if d is None:
        return raw
    try:
        value = parse_value(d, raw)
    except GroupConfigError:
        return raw
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def broker_default(config: BrokerConfig, d: GroupConfigDef) -> tuple[str, int]:
    """(value, source) of the config's default: its broker config's effective value and
    where that is set, else its own built-in default."""
    if d.broker_key is None:
        return d.default or "", ConfigSource.DEFAULT_CONFIG
    for source, layer in config.layers():
        if layer.get(d.broker_key) is not None:
            return normalize(d.name, layer[d.broker_key]), source
    bd = BROKER_CONFIGS.get(d.broker_key)
    return (bd.default if bd is not None and bd.default is not None else ""), (
        ConfigSource.DEFAULT_CONFIG
    )


def _broker_int(config: BrokerConfig, key: str) -> int:
    if key in BROKER_CONFIGS:
        return config.get_int(key)
    return int(config.values.get(key, "0"))


def check_overrides(config: BrokerConfig, overrides: Mapping[str, str]) -> None:
    """Raise GroupConfigError (Kafka's text) unless `overrides` are a valid set of a group's
    configs under this broker's bounds (the module docstring gives the order)."""
    unknown = sorted(n for n in overrides if n not in GROUP_CONFIGS)
    if unknown:
        raise GroupConfigError(f"Unknown group config name: {unknown[0]}")
    values: dict[str, object] = {}
    for name, d in GROUP_CONFIGS.items():
        if name in overrides:
            values[name] = parse_value(d, overrides[name])
    for name, d in GROUP_CONFIGS.items():
        if name not in overrides:
            try:
                values[name] = parse_value(d, broker_default(config, d)[0])
            except GroupConfigError:
                values[name] = None  # a broker default the group config refuses: unchecked
    for name in RANGE_ORDER:
        _check_bounds(config, GROUP_CONFIGS[name], values[name])
    assignors = _assignor_names(config)
    chosen = values["streams.assignor.name"]
    if "streams.assignor.name" in overrides and chosen not in assignors:
        raise GroupConfigError(
            f"streams.assignor.name '{chosen}' is not a registered task assignor. "
            f"Registered assignors are: [{', '.join(assignors)}]."
        )
    for kind in _SESSION_OVER_HEARTBEAT:
        session, heartbeat = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
        low, high = values[heartbeat], values[session]
        if isinstance(low, int) and isinstance(high, int) and high <= low:
            raise GroupConfigError(f"{session} must be greater than {heartbeat}")
    dlq = values["errors.deadletterqueue.topic.name"]
    if isinstance(dlq, str) and dlq.startswith("__"):  # Kafka 4.4's GroupConfig (KIP-1191)
        raise GroupConfigError(
            "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
        )


def _check_bounds(config: BrokerConfig, d: GroupConfigDef, value: object) -> None:
    if d.bounds is None or not isinstance(value, int):
        return
    low_key, high_key = d.bounds
    high = _broker_int(config, high_key)
    number = value
    if low_key is None:
        if number > high:
            raise GroupConfigError(f"{d.name} must be less than or equal to {high}")
        return
    low = _broker_int(config, low_key)
    if not low <= number <= high:
        raise GroupConfigError(f"{d.name} must be in the range {low} to {high} inclusive.")


def _assignor_names(config: BrokerConfig) -> list[str]:
    """The short names of the broker's group.streams.assignors (a class name: its simple
    name without "Assignor", lower case)."""
    raw = config.raw("group.streams.assignors") or ""
    names = []
    for item in raw.split(","):
        item = item.strip()
        if item:
            names.append(item.rsplit(".", 1)[-1].removesuffix("TaskAssignor").lower())
    return names


@dataclass(frozen=True)
class GroupSetting:
    """One described group config (the handlers turn it into a DescribeConfigs entry)."""

    name: str
    value: str
    source: int
    config_type: ConfigType
    doc: str
    #: (name, value, source), most precedent first
    synonyms: tuple[tuple[str, str, int], ...]


def describe(config: BrokerConfig, overrides: Mapping[str, str]) -> list[GroupSetting]:
    """Every group config of a group with these overrides, in Kafka's order."""
    out = []
    for name, d in GROUP_CONFIGS.items():
        default, default_source = broker_default(config, d)
        synonyms = _broker_synonyms(config, d)
        if name in overrides:
            value, source = normalize(name, overrides[name]), DYNAMIC_GROUP_CONFIG
            synonyms.insert(0, (name, value, source))
        else:
            value, source = default, int(default_source)
        out.append(GroupSetting(name, value, source, d.type, d.doc, tuple(synonyms)))
    return out


def _broker_synonyms(config: BrokerConfig, d: GroupConfigDef) -> list[tuple[str, str, int]]:
    """The default's synonyms: the broker config in every layer that sets it (this broker's
    dynamic, the cluster default, server.properties), then its built-in default."""
    if d.broker_key is None:
        return [(d.name, d.default or "", int(ConfigSource.DEFAULT_CONFIG))]
    key = d.broker_key
    out = [
        (key, normalize(d.name, layer[key]), int(source))
        for source, layer in config.layers()
        if layer.get(key) is not None
    ]
    bd = BROKER_CONFIGS.get(key)
    if bd is not None and bd.default is not None:
        out.append((key, bd.default, int(ConfigSource.DEFAULT_CONFIG)))
    return out


def effective_values(config: BrokerConfig, overrides: Mapping[str, str]) -> dict[str, object]:
    """Every group config's value for a group with these overrides, parsed (int, bool, str,
    list of str): the override, else the broker's default (what the group coordinator reads:
    e.g. `effective_values(config, group_configs.get(g))["consumer.session.timeout.ms"]`).
    An override that does not parse (written by another tool) gives way to the default; a
    default that does not parse either is left out."""
    out: dict[str, object] = {}
    for name, d in GROUP_CONFIGS.items():
        candidates = [overrides[name]] if name in overrides else []
        candidates.append(broker_default(config, d)[0])
        for text in candidates:
            try:
                out[name] = parse_value(d, text)
            except GroupConfigError:
                continue
            break
    return out


#: A change's computation: the group's current overrides -> its new ones (raises to refuse).
Compute = Callable[[Mapping[str, str]], dict[str, str]]
