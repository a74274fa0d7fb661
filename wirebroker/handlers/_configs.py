"""Config description and validation shared by the admin handlers (Kafka 4.x semantics).

Used by CreateTopics (the v5+ `configs` of a new topic), DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs. Pure: no trio, no I/O besides Python's `logging` registry for the
BROKER_LOGGER resource.

Resource types (DescribeConfigs/AlterConfigs `resource_type`, Kafka's ConfigResource.Type)
    TOPIC (2), BROKER (4), BROKER_LOGGER (8), CLIENT_METRICS (16), GROUP (32); anything else
    is UNKNOWN. wirebroker serves TOPIC, BROKER, BROKER_LOGGER and GROUP (the group configs:
    wirebroker.handlers._group_configs); CLIENT_METRICS resources are answered with
    INVALID_REQUEST by the handlers (Kafka serves them).

Topic config values (`describe_topic_configs`), as Kafka's ConfigHelper computes them
    value     the topic override when set, else the broker value for it
              (`BrokerConfig.broker_value_for_topic_config`), normalised like Kafka's
              `ConfigDef.convertToString` (ints without spaces, booleans lower case, lists
              joined by ",")
    synonyms  [the topic override (TOPIC_CONFIG)] + the broker synonyms: first every
              synonym name set dynamically for this broker (DYNAMIC_BROKER_CONFIG), then for
              the cluster (DYNAMIC_DEFAULT_BROKER_CONFIG), then in server.properties
              (STATIC_BROKER_CONFIG), then every synonym name with a built-in default
              (DEFAULT_CONFIG), then -- Kafka's quirk, kept on
              purpose -- leading entries are dropped until the first one named like the topic
              config's own broker synonym. So `retention.ms` without an override has no
              synonyms at all (its only defaulted synonym is `log.retention.hours`), exactly
              what `kafka-configs --describe --all` prints against Kafka.
    source    the first synonym's source, else DEFAULT_CONFIG
    read_only false; is_sensitive false (no topic config is a password)

Broker config values: wirebroker.handlers._broker_configs (with the dynamic broker configs).

BROKER_LOGGER (`describe_loggers` / `alter_loggers`)
    Python's loggers stand in for log4j's: "root" plus every logger created so far, with its
    effective level in log4j names (CRITICAL -> FATAL, WARNING -> WARN, below DEBUG -> TRACE),
    source DYNAMIC_BROKER_LOGGER_CONFIG (6), documentation "" (v3+, asked for or not: Kafka
    never fills it for a logger). IncrementalAlterConfigs SET sets a level, DELETE
    resets one to inherit (not allowed for root), as Kafka's RuntimeLoggerManager does.

Topic config validation is `wirebroker.metadata.topic_configs.validate_topic_configs` (run by
the `TopicAdmin`); `as_request_error` maps its errors (and any error carrying a Kafka code) to a
per-resource `ConfigRequestError`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from protocol.errors import ErrorCode
from wirebroker.config import BROKER_CONFIGS, TOPIC_CONFIGS, BrokerConfig, ConfigSource, ConfigType
from wirebroker.metadata.names import validate_topic_name
from wirebroker.metadata.topic_configs import normalize_stored

if TYPE_CHECKING:
    from wirebroker.dynamic_configs import Compute
    from wirebroker.handlers.context import Services
    from wirebroker.metadata.topic_admin import TopicAdmin

if TYPE_CHECKING:
    from protocol.messages import alter_configs
    from protocol.messages import incremental_alter_configs as incremental
    from protocol.messages.alter_configs import AlterConfigsResourceResponse, AlterConfigsResponse
    from protocol.messages.create_topics import CreatableTopicConfigs
    from protocol.messages.describe_configs import DescribeConfigsResourceResult

    #: A resource / config entry of AlterConfigs or IncrementalAlterConfigs.
    AlterResource = alter_configs.AlterConfigsResource | incremental.AlterConfigsResource
    AlterConfig = alter_configs.AlterableConfig | incremental.AlterableConfig

# -- resource types and operations -----------------------------------------------------------
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_CLIENT_METRICS = 16
RESOURCE_GROUP = 32
KNOWN_RESOURCE_TYPES = frozenset(
    {
        RESOURCE_TOPIC,
        RESOURCE_BROKER,
        RESOURCE_BROKER_LOGGER,
        RESOURCE_CLIENT_METRICS,
        RESOURCE_GROUP,
    }
)
RESOURCE_TYPE_NAMES = {
    RESOURCE_TOPIC: "TOPIC",
    RESOURCE_BROKER: "BROKER",
    RESOURCE_BROKER_LOGGER: "BROKER_LOGGER",
    RESOURCE_CLIENT_METRICS: "CLIENT_METRICS",
    RESOURCE_GROUP: "GROUP",
}

OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3
OP_NAMES = {OP_SET: "SET", OP_DELETE: "DELETE", OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}

#: DescribeConfigs ConfigSource 6 (not in wirebroker.config.ConfigSource: only loggers use it).
SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG = 6

#: Kafka's default message for INVALID_REQUEST (Errors.INVALID_REQUEST.message()).
INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or "
    "the message was sent to an incompatible broker. See the broker logs for more details."
)

#: Kafka's DynamicBrokerConfig.brokerConfigSynonyms: names that supply one another's value.
_BROKER_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


class ConfigRequestError(Exception):
    """A per-resource (or per-topic) failure: the Kafka error code and message to return."""

    def __init__(self, error_code: ErrorCode, message: str | None) -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code
        self.message = message


@contextmanager
def as_request_error() -> Iterator[None]:
    """Turn an error that carries a Kafka error code (`error_of`) into a ConfigRequestError."""
    try:
        yield
    except ConfigRequestError:
        raise
    except Exception as exc:
        found = error_of(exc)
        if found is None:
            raise
        raise ConfigRequestError(*found) from exc


def error_of(exc: BaseException) -> tuple[ErrorCode, str | None] | None:
    """(error code, message) of an exception that carries a Kafka error code, else None.

    Services raise typed errors with an `error_code` attribute (wirebroker.metadata.errors,
    wirebroker.replication, wirebroker.log.errors); the message is `str(exc)`.
    """
    if isinstance(exc, ConfigRequestError):
        return exc.error_code, exc.message
    code = getattr(exc, "error_code", None)
    if code is None:
        return None
    try:
        code = ErrorCode(int(code))
    except ValueError:
        return None
    text = str(exc)
    return code, (text or None)


def apply_incremental(
    current: Mapping[str, str], ops: Iterable[tuple[str, int, str | None]]
) -> dict[str, str]:
    """Apply IncrementalAlterConfigs (name, operation, value) ops to a topic's overrides.

    Kafka's ConfigurationControlManager: SET replaces, DELETE removes, APPEND adds the
    comma-separated items missing from the current list (the override, else the default),
    SUBTRACT removes them. APPEND/SUBTRACT on a non-LIST (or unknown) key is INVALID_CONFIG
    "Can't APPEND to key k because its type is not LIST."; an unknown operation is
    INVALID_REQUEST. The result is not validated here (see validate_topic_configs).
    """
    result = dict(current)
    for name, op, value in ops:
        if op == OP_SET:
            assert value is not None
            result[name] = value
        elif op == OP_DELETE:
            result.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            d = TOPIC_CONFIGS.get(name)
            if d is None or d.type != ConfigType.LIST:
                raise ConfigRequestError(
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.",
                )
            base = result.get(name, d.default) or ""
            items = [p for p in base.split(",") if p]
            for item in (value or "").split(","):
                if op == OP_APPEND:
                    if item not in items:
                        items.append(item)
                elif item in items:
                    items.remove(item)
            result[name] = ",".join(items)
        else:
            raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op}")
    return result


# -- description ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class ConfigEntry:
    """One described config, independent of the response version."""

    name: str
    value: str | None
    source: int
    read_only: bool = False
    is_sensitive: bool = False
    config_type: int = ConfigType.UNKNOWN
    documentation: str | None = None
    synonyms: tuple[Synonym, ...] = field(default=())
    #: Sent even when the request did not ask for documentation (a logger's "", as Kafka).
    documentation_always: bool = False

    def describe_dict(
        self, *, include_synonyms: bool, include_documentation: bool
    ) -> DescribeConfigsResourceResult:
        """A DescribeConfigsResourceResult (v1-4)."""
        return {
            **self.creatable_dict(),
            "synonyms": [
                {"name": s.name, "value": s.value, "source": s.source} for s in self.synonyms
            ]
            if include_synonyms
            else [],
            "config_type": self.config_type,
            "documentation": self.documentation
            if include_documentation or self.documentation_always
            else None,
        }

    def creatable_dict(self) -> CreatableTopicConfigs:
        """A CreateTopics v5+ CreatableTopicConfigs entry."""
        return {
            "name": self.name,
            "value": self.value,
            "read_only": self.read_only,
            "config_source": self.source,
            "is_sensitive": self.is_sensitive,
        }


def broker_synonym_names(name: str) -> tuple[str, ...]:
    for group in _BROKER_SYNONYM_GROUPS:
        if name in group:
            return group
    return (name,)


def broker_synonyms(config: BrokerConfig, name: str) -> list[Synonym]:
    """Kafka's ConfigHelper.configSynonyms for broker key `name`: every synonym name set in
    each layer, in precedence order (this broker's dynamic configs, the cluster-wide dynamic
    default, server.properties), then every one with a built-in default; leading entries
    dropped until the first one named `name` (Kafka's rule, see the module docstring)."""
    names = broker_synonym_names(name)
    out = [
        Synonym(n, layer[n], source)
        for source, layer in config.layers()
        for n in names
        if layer.get(n) is not None
    ]
    for n in names:
        d = BROKER_CONFIGS.get(n)
        if d is not None and d.default is not None:
            out.append(Synonym(n, d.default, ConfigSource.DEFAULT_CONFIG))
    while out and out[0].name != name:
        out.pop(0)
    return out


def describe_topic_config(
    config: BrokerConfig, overrides: Mapping[str, str], name: str
) -> ConfigEntry:
    d = TOPIC_CONFIGS[name]
    synonyms = broker_synonyms(config, d.synonym) if d.synonym is not None else []
    if name in overrides:
        value = normalize_stored(d, overrides[name])
        synonyms.insert(0, Synonym(name, value, ConfigSource.TOPIC_CONFIG))
    else:
        value = normalize_stored(d, config.broker_value_for_topic_config(name)[0])
    source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
    return ConfigEntry(
        name=name,
        value=value,
        source=source,
        read_only=False,
        is_sensitive=d.type == ConfigType.PASSWORD,
        config_type=d.type,
        documentation=d.doc,
        synonyms=tuple(synonyms),
    )


def describe_topic_configs(config: BrokerConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every topic config of a topic with these overrides, sorted by name (an internal one
    only when set, as Kafka)."""
    return [
        describe_topic_config(config, overrides, name)
        for name in sorted(TOPIC_CONFIGS)
        if not TOPIC_CONFIGS[name].internal or name in overrides
    ]


def filter_entries(entries: Iterable[ConfigEntry], keys: Iterable[str] | None) -> list[ConfigEntry]:
    """DescribeConfigs `configuration_keys`: null or empty means every config."""
    if not keys:
        return list(entries)
    wanted = set(keys)
    return [e for e in entries if e.name in wanted]


def check_broker_resource_name(
    name: str | None, node_id: int, *, allow_empty: bool, describe: bool
) -> None:
    """Kafka's checks of a BROKER resource name (this node's id, or empty when allowed)."""
    if not name:
        if allow_empty:
            return
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    try:
        requested = int(name)
    except ValueError:
        what = "Broker id" if describe else "Node id"
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST, f"{what} must be an integer, but it is: {name}"
        ) from None
    if requested != node_id:
        if describe:
            expected = f"{node_id} or empty string," if allow_empty else f"{node_id}"
            msg = f"Unexpected broker id, expected {expected} but received {name}"
        else:
            msg = f"Unexpected broker id, expected {node_id}, but received {name}"
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, msg)


def check_topic_resource_name(name: str | None) -> str:
    """A TOPIC resource name for AlterConfigs: not empty, a legal topic name."""
    if not name:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."
        )
    with as_request_error():
        validate_topic_name(name)
    return name


# -- BROKER_LOGGER ------------------------------------------------------------------------------
ROOT_LOGGER = "root"
TRACE = 5
_LOG4J_LEVELS = {
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": TRACE,
}
_VALID_LEVELS_TEXT = ", ".join(sorted(_LOG4J_LEVELS))


def _log4j_level(level: int) -> str:
    if level >= logging.CRITICAL:
        return "FATAL"
    if level >= logging.ERROR:
        return "ERROR"
    if level >= logging.WARNING:
        return "WARN"
    if level >= logging.INFO:
        return "INFO"
    if level >= logging.DEBUG:
        return "DEBUG"
    return "TRACE"


def _existing_loggers() -> dict[str, logging.Logger]:
    out: dict[str, logging.Logger] = {ROOT_LOGGER: logging.getLogger()}
    for name, obj in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(obj, logging.Logger):
            out[name] = obj
    return out


def describe_loggers() -> list[ConfigEntry]:
    """Every logger with its effective level (log4j names), sorted by name."""
    return [
        ConfigEntry(
            name=name,
            value=_log4j_level(logger.getEffectiveLevel()),
            source=SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG,
            documentation="",
            documentation_always=True,
        )
        for name, logger in sorted(_existing_loggers().items())
    ]


def alter_loggers(ops: Iterable[tuple[str, int, str | None]], *, validate_only: bool) -> None:
    """Kafka's RuntimeLoggerManager: validate every op, then apply them (unless validate_only)."""
    loggers = _existing_loggers()
    ops = list(ops)
    for name, op, value in ops:
        if op in (OP_SET, OP_DELETE) and name not in loggers:
            raise ConfigRequestError(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
        if op == OP_SET:
            if value not in _LOG4J_LEVELS:
                raise ConfigRequestError(
                    ErrorCode.INVALID_CONFIG,
                    f"Cannot set the log level of {name} to {value} as it is not a supported "
                    f"log level. Valid log levels are {_VALID_LEVELS_TEXT}",
                )
        elif op == OP_DELETE:
            if name == ROOT_LOGGER:
                raise ConfigRequestError(
                    ErrorCode.INVALID_REQUEST,
                    f"Removing the log level of the {ROOT_LOGGER} logger is not allowed",
                )
        elif op in (OP_APPEND, OP_SUBTRACT):
            raise ConfigRequestError(
                ErrorCode.INVALID_REQUEST,
                f"{OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource",
            )
        else:
            raise ConfigRequestError(
                ErrorCode.INVALID_REQUEST,
                f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource",
            )
    if validate_only:
        return
    for name, op, value in ops:
        logger = loggers[name]
        if op == OP_SET:
            assert value is not None
            logger.setLevel(_LOG4J_LEVELS[value])
        else:
            logger.setLevel(logging.NOTSET)


# -- request preprocessing shared by AlterConfigs and IncrementalAlterConfigs -------------------
def duplicate_resources(resources: Iterable[AlterResource]) -> set[tuple[int, str]]:
    """(type, name) pairs that appear more than once in a request."""
    seen: set[tuple[int, str]] = set()
    dups: set[tuple[int, str]] = set()
    for r in resources:
        key = (int(r["resource_type"]), r["resource_name"])
        if key in seen:
            dups.add(key)
        seen.add(key)
    return dups


def _operation(config: Mapping[str, object]) -> object:
    """An IncrementalAlterConfigs entry's config_operation (AlterConfigs has none: SET)."""
    return config.get("config_operation", OP_SET)


def check_config_list(configs: Iterable[AlterConfig], *, null_allowed_for_delete: bool) -> None:
    """Kafka's ConfigAdminManager.preprocess checks of one resource's config list."""
    configs = list(configs)
    names = [c["name"] for c in configs]
    if len(set(names)) != len(names):
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [
        c["name"]
        for c in configs
        if c["value"] is None and not (null_allowed_for_delete and _operation(c) == OP_DELETE)
    ]
    if nulls:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
        )


def resource_result(
    resource: AlterResource, error: ErrorCode = ErrorCode.NONE, message: str | None = None
) -> AlterConfigsResourceResponse:
    """An AlterConfigs / IncrementalAlterConfigs per-resource response."""
    return {
        "error_code": error,
        "error_message": message,
        "resource_type": int(resource["resource_type"]),
        "resource_name": resource["resource_name"],
    }


_R = TypeVar("_R", "alter_configs.AlterConfigsResource", "incremental.AlterConfigsResource")


async def alter_resources(
    resources: list[_R] | None,
    validate_only: bool,
    alter_one: Callable[[_R, bool], Awaitable[None]],
) -> AlterConfigsResponse:
    """The AlterConfigs / IncrementalAlterConfigs response: `await alter_one(resource,
    validate_only)` for each of the request's `resources` in order, duplicates refused, a
    ConfigRequestError becoming that resource's error."""
    resources = list(resources or [])
    dups = duplicate_resources(resources)
    responses: list[AlterConfigsResourceResponse] = []
    for resource in resources:
        if (int(resource["resource_type"]), resource["resource_name"]) in dups:
            responses.append(
                resource_result(
                    resource, ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
                )
            )
            continue
        try:
            await alter_one(resource, validate_only)
        except ConfigRequestError as exc:
            responses.append(resource_result(resource, exc.error_code, exc.message))
            continue
        responses.append(resource_result(resource))
    return {"throttle_time_ms": 0, "responses": responses}


#: How long AlterConfigs / IncrementalAlterConfigs wait for their topic changes to be in this
#: broker's metadata (the requests have no timeout of their own).
SETTLE_TIMEOUT_S = 30.0


async def settle_topic_changes(admin: TopicAdmin, response: AlterConfigsResponse) -> None:
    """Wait until the topics this response reports altered are so in this broker's metadata
    (`TopicAdmin.wait_settled`; at once on the unit tests' `LocalTopicAdmin`), so that a
    DescribeConfigs or an incremental change right after sees them; REQUEST_TIMED_OUT for
    those that are not."""
    altered = [
        r["resource_name"]
        for r in response["responses"]
        if r["resource_type"] == RESOURCE_TOPIC and r["error_code"] == ErrorCode.NONE
    ]
    if not altered:
        return
    problems = await admin.wait_settled(altered, SETTLE_TIMEOUT_S)
    for r in response["responses"]:
        problem = problems.get(r["resource_name"])
        if r["resource_type"] == RESOURCE_TOPIC and problem is not None:
            r["error_code"] = ErrorCode.REQUEST_TIMED_OUT
            r["error_message"] = problem


async def update_broker_configs(
    services: Services, resource_name: str, compute: Compute, validate_only: bool
) -> None:
    """A BROKER resource's change (`compute`: wirebroker.handlers._broker_configs) applied to
    the dynamic configs of this broker or of the cluster default; without dynamic configs
    every key set is refused as read-only."""
    updates = services.broker_configs
    if updates is None:
        names = list(compute({}))
        if names:
            raise ConfigRequestError(
                ErrorCode.INVALID_REQUEST,
                "Cannot update these configs dynamically: [" + ", ".join(names) + "]",
            )
        return
    with as_request_error():
        await updates.update(updates.entity(resource_name), compute, validate_only=validate_only)


def apply_topic_overrides(
    admin: TopicAdmin, name: str, overrides: Mapping[str, str | None], validate_only: bool
) -> None:
    """Replace topic `name`'s overrides through the admin (which checks them, then that the
    topic exists), mapping errors as Kafka does."""
    with as_request_error():
        admin.alter_topic_configs(name, overrides, validate_only=validate_only)
