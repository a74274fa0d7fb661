"""Broker and topic configuration: Kafka's key names, types, defaults and synonyms.

Every configuration wirebroker understands is declared once here as a `ConfigDef`. Topic-level
configs (`retention.ms`, ...) name their broker-level synonym (`log.retention.ms`, ...): a topic
value overrides the broker value, which overrides the built-in default, exactly as in Kafka.
DescribeConfigs reports each value with its source and synonyms from these tables.

Sources of a value (DescribeConfigs `ConfigSource`):
    TOPIC_CONFIG (1)           set on the topic (CreateTopics / AlterConfigs)
    STATIC_BROKER_CONFIG (4)   set in server.properties / on the command line
    DEFAULT_CONFIG (5)         the built-in default below

Values are kept as strings (as on the wire and in server.properties) and converted on read with
`ConfigDef.parse`. Where wirebroker's default differs from Kafka's, `ConfigDef.doc` says why.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647


class ConfigType(enum.IntEnum):
    """DescribeConfigs v3+ `ConfigType`."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigs v1+ `ConfigSource`."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigError(ValueError):
    """A config value that does not parse or is out of range (Kafka: INVALID_CONFIG)."""


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str | None
    doc: str = ""
    synonym: str | None = None  # for topic configs: the broker key that supplies the default
    choices: tuple[str, ...] | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    read_only: bool = False
    sensitive: bool = False
    extra_check: Callable[[str], None] | None = field(default=None, compare=False)

    def parse(self, raw: str | None) -> object:
        """Convert a string value to its Python value, raising ConfigError when invalid."""
        if raw is None:
            return None
        t = self.type
        try:
            if t == ConfigType.BOOLEAN:
                low = raw.strip().lower()
                if low not in ("true", "false"):
                    raise ConfigError(f"{self.name}: expected true or false, got {raw!r}")
                return low == "true"
            if t in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
                value: int | float = int(raw.strip())
                bound = {ConfigType.INT: INT_MAX, ConfigType.SHORT: 32767}.get(t, LONG_MAX)
                if not -bound - 1 <= value <= bound:
                    raise ConfigError(f"{self.name}: {raw!r} is out of range")
            elif t == ConfigType.DOUBLE:
                value = float(raw.strip())
            elif t == ConfigType.LIST:
                items = [s.strip() for s in raw.split(",") if s.strip()]
                if self.choices is not None:
                    for item in items:
                        if item not in self.choices:
                            raise ConfigError(f"{self.name}: {item!r} not in {self.choices}")
                return items
            else:
                if self.choices is not None and raw not in self.choices:
                    raise ConfigError(f"{self.name}: {raw!r} not in {list(self.choices)}")
                if self.extra_check is not None:
                    self.extra_check(raw)
                return raw
        except ValueError as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{self.name}: invalid value {raw!r}") from exc
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{self.name}: {raw!r} is below the minimum {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{self.name}: {raw!r} is above the maximum {self.maximum}")
        return value

    def validate(self, raw: str | None) -> None:
        if raw is None:
            if self.default is not None:
                raise ConfigError(f"{self.name}: null is not allowed")
            return
        self.parse(raw)


_T = ConfigType


def _default_data_dir() -> str:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "wirebroker" / "data")


#: Broker-level configs (server.properties keys); a topic config's default is its synonym's.
BROKER_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in [
        ConfigDef("node.id", _T.INT, "0", "this broker's id", read_only=True),
        ConfigDef("broker.id", _T.INT, "0", "alias of node.id", read_only=True),
        ConfigDef("listeners", _T.LIST, "PLAINTEXT://127.0.0.1:9092", "", read_only=True),
        ConfigDef("advertised.listeners", _T.LIST, None, "defaults to listeners", read_only=True),
        ConfigDef(
            "admin.listeners",
            _T.LIST,
            "",
            "wirebroker: the admin HTTP listener (HOST:PORT,...; empty: off), see docs/admin.md",
            read_only=True,
        ),
        ConfigDef("log.dirs", _T.LIST, None, "defaults to log.dir", read_only=True),
        ConfigDef(
            "log.dir",
            _T.STRING,
            _default_data_dir(),
            "wirebroker: a per-user data directory, not /tmp/kafka-logs",
            read_only=True,
        ),
        ConfigDef("num.partitions", _T.INT, "1", "partitions of an auto-created topic", minimum=1),
        ConfigDef("default.replication.factor", _T.INT, "1", "", minimum=1),
        ConfigDef("auto.create.topics.enable", _T.BOOLEAN, "true", ""),
        ConfigDef("delete.topic.enable", _T.BOOLEAN, "true", ""),
        ConfigDef("message.max.bytes", _T.INT, "1048588", "", minimum=0),
        ConfigDef(
            "socket.request.max.bytes",
            _T.INT,
            "104857600",
            "frame size cap",
            minimum=1,
            read_only=True,
        ),
        ConfigDef("connections.max.idle.ms", _T.LONG, "600000", "", read_only=True),
        ConfigDef(
            "max.connections",
            _T.INT,
            str(INT_MAX),
            "at the limit the broker stops accepting until a connection closes",
            minimum=0,
            read_only=True,
        ),
        ConfigDef(
            "max.connections.per.ip",
            _T.INT,
            str(INT_MAX),
            "a connection beyond it is closed at accept",
            minimum=0,
            read_only=True,
        ),
        ConfigDef(
            "compression.type",
            _T.STRING,
            "producer",
            "",
            choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),  # Kafka's order
        ),
        ConfigDef("log.cleanup.policy", _T.LIST, "delete", "", choices=("compact", "delete")),
        ConfigDef("log.cleaner.delete.retention.ms", _T.LONG, "86400000", ""),
        ConfigDef(
            "log.cleaner.backoff.ms", _T.LONG, "15000", "pause when nothing to clean", minimum=0
        ),
        ConfigDef("log.cleaner.enable", _T.BOOLEAN, "true", ""),
        ConfigDef("log.flush.offset.checkpoint.interval.ms", _T.INT, "60000", "", minimum=0),
        ConfigDef("log.cleaner.max.compaction.lag.ms", _T.LONG, str(LONG_MAX), ""),
        ConfigDef("log.cleaner.min.cleanable.ratio", _T.DOUBLE, "0.5", "", minimum=0, maximum=1),
        ConfigDef("log.cleaner.min.compaction.lag.ms", _T.LONG, "0", ""),
        ConfigDef("log.segment.delete.delay.ms", _T.LONG, "60000", ""),
        ConfigDef("log.flush.interval.messages", _T.LONG, str(LONG_MAX), "", minimum=1),
        ConfigDef(
            "log.flush.interval.ms",
            _T.LONG,
            str(LONG_MAX),
            "Kafka leaves this unset and falls back to the scheduler interval",
        ),
        ConfigDef("log.flush.scheduler.interval.ms", _T.LONG, str(LONG_MAX), ""),
        ConfigDef("log.index.interval.bytes", _T.INT, "4096", ""),
        ConfigDef("log.index.size.max.bytes", _T.INT, "10485760", "", minimum=4),
        ConfigDef("log.local.retention.bytes", _T.LONG, "-2", ""),
        ConfigDef("log.local.retention.ms", _T.LONG, "-2", ""),
        ConfigDef("log.message.timestamp.after.max.ms", _T.LONG, "3600000", ""),
        ConfigDef("log.message.timestamp.before.max.ms", _T.LONG, str(LONG_MAX), ""),
        ConfigDef(
            "log.message.timestamp.type",
            _T.STRING,
            "CreateTime",
            "",
            choices=("CreateTime", "LogAppendTime"),
        ),
        ConfigDef("log.preallocate", _T.BOOLEAN, "false", ""),
        ConfigDef("log.retention.bytes", _T.LONG, "-1", ""),
        ConfigDef(
            "log.retention.ms",
            _T.LONG,
            None,
            "unset: from log.retention.minutes, then log.retention.hours",
        ),
        ConfigDef("log.retention.minutes", _T.INT, None, ""),
        ConfigDef("log.retention.hours", _T.INT, "168", ""),
        ConfigDef("log.retention.check.interval.ms", _T.LONG, "300000", "", minimum=1),
        ConfigDef("log.roll.ms", _T.LONG, None, "unset: from log.roll.hours"),
        ConfigDef("log.roll.hours", _T.INT, "168", "", minimum=1),
        ConfigDef("log.roll.jitter.ms", _T.LONG, "0", ""),
        ConfigDef("log.segment.bytes", _T.INT, "1073741824", "", minimum=14),
        ConfigDef("min.insync.replicas", _T.INT, "1", "", minimum=1),
        ConfigDef("unclean.leader.election.enable", _T.BOOLEAN, "false", ""),
        ConfigDef(
            "transaction.partition.verification.enable",
            _T.BOOLEAN,
            "true",
            "KIP-890: leaders check with the coordinator before a transaction's first batch",
            read_only=True,
        ),
        ConfigDef("offsets.topic.num.partitions", _T.INT, "50", "", minimum=1, read_only=True),
        ConfigDef(
            "offsets.topic.replication.factor",
            _T.SHORT,
            "1",
            "wirebroker: 1 (Kafka: 3), so a single local broker works",
            read_only=True,
        ),
        ConfigDef("offsets.retention.minutes", _T.INT, "10080", "", minimum=1),
        ConfigDef(
            "offsets.commit.timeout.ms",
            _T.INT,
            "5000",
            "how long a group write waits for its replication",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "group.initial.rebalance.delay.ms",
            _T.INT,
            "0",
            "wirebroker: 0 (Kafka: 3000) so a local consumer starts at once",
        ),
        ConfigDef("group.min.session.timeout.ms", _T.INT, "6000", ""),
        ConfigDef("group.max.session.timeout.ms", _T.INT, "1800000", ""),
        ConfigDef("group.max.size", _T.INT, str(INT_MAX), "", minimum=1),
        ConfigDef("offsets.retention.check.interval.ms", _T.LONG, "600000", "", minimum=1),
        ConfigDef("offset.metadata.max.bytes", _T.INT, "4096", ""),
        ConfigDef(
            "offsets.topic.segment.bytes",
            _T.INT,
            "104857600",
            "segment.bytes of __consumer_offsets when the broker creates it",
            minimum=1,
            read_only=True,
        ),
        # transaction coordinator (wirebroker.txn.config / wirebroker.txn.runtime)
        ConfigDef(
            "transaction.state.log.num.partitions", _T.INT, "50", "", minimum=1, read_only=True
        ),
        ConfigDef(
            "transaction.state.log.replication.factor",
            _T.SHORT,
            "1",
            "wirebroker: 1 (Kafka: 3), capped by the live brokers at creation",
            read_only=True,
        ),
        ConfigDef(
            "transaction.state.log.min.isr",
            _T.INT,
            "1",
            "wirebroker: 1 (Kafka: 2)",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.state.log.segment.bytes",
            _T.INT,
            "104857600",
            "",
            minimum=1,
            read_only=True,
        ),
        ConfigDef("transaction.max.timeout.ms", _T.INT, "900000", "", minimum=1, read_only=True),
        ConfigDef(
            "transactional.id.expiration.ms", _T.INT, "604800000", "", minimum=1, read_only=True
        ),
        ConfigDef(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            _T.INT,
            "10000",
            "",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            _T.INT,
            "3600000",
            "",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.version",
            _T.SHORT,
            "2",
            "finalized transaction.version feature (Kafka sets it with kafka-features): 2 = "
            "KIP-890 part 2 (EndTxn v5 epoch bump, implicit AddPartitions); 0/1 = part 1 only",
            minimum=0,
            read_only=True,
        ),
        ConfigDef("request.timeout.ms", _T.INT, "30000", "", minimum=0, read_only=True),
        ConfigDef("cluster.id", _T.STRING, None, "generated on first start", read_only=True),
        ConfigDef(
            "zookeeper.connect",
            _T.STRING,
            None,
            "host:port[,host:port...][/chroot] of the cluster's ZooKeeper (unset: single broker)",
            read_only=True,
        ),
        ConfigDef(
            "zookeeper.session.timeout.ms",
            _T.INT,
            "6000",
            "ZooKeeper session timeout (Kafka: 18000; shorter here for quick local failover)",
            read_only=True,
            minimum=1,
        ),
        ConfigDef("zookeeper.connection.timeout.ms", _T.INT, "10000", "", read_only=True),
        ConfigDef("broker.rack", _T.STRING, None, "rack of this broker", read_only=True),
        ConfigDef("auto.leader.rebalance.enable", _T.BOOLEAN, "true", "", read_only=True),
        ConfigDef(
            "leader.imbalance.check.interval.seconds", _T.INT, "300", "", read_only=True, minimum=1
        ),
        ConfigDef("leader.imbalance.per.broker.percentage", _T.INT, "10", "", read_only=True),
        ConfigDef("controlled.shutdown.enable", _T.BOOLEAN, "true", "", read_only=True),
        ConfigDef("controlled.shutdown.timeout.ms", _T.INT, "10000", "", read_only=True),
        # replication (multi-broker mode; a single broker has no followers)
        ConfigDef("replica.lag.time.max.ms", _T.LONG, "30000", "", minimum=1, read_only=True),
        ConfigDef("replica.fetch.wait.max.ms", _T.INT, "500", "", minimum=0, read_only=True),
        ConfigDef("replica.fetch.min.bytes", _T.INT, "1", "", minimum=1, read_only=True),
        ConfigDef("replica.fetch.max.bytes", _T.INT, "1048576", "", minimum=0, read_only=True),
        ConfigDef(
            "replica.fetch.response.max.bytes", _T.INT, "10485760", "", minimum=0, read_only=True
        ),
        ConfigDef("replica.fetch.backoff.ms", _T.INT, "1000", "", minimum=0, read_only=True),
        ConfigDef("replica.socket.timeout.ms", _T.INT, "30000", "", minimum=1, read_only=True),
        ConfigDef(
            "replica.high.watermark.checkpoint.interval.ms",
            _T.LONG,
            "5000",
            "",
            minimum=1,
            read_only=True,
        ),
    ]
}


def _topic(
    name: str,
    synonym: str,
    doc: str = "",
    *,
    default: str | None = None,
    minimum: float | None = None,
) -> ConfigDef:
    """A topic config with its broker synonym's type, default, choices and minimum (Kafka's
    topic configs fall back to their synonym), but for the `default` and `minimum` given."""
    base = BROKER_CONFIGS[synonym]
    return replace(
        base,
        name=name,
        doc=doc,
        synonym=synonym,
        default=base.default if default is None else default,
        minimum=base.minimum if minimum is None else minimum,
    )


#: Topic-level configs, as Kafka 4.x's `LogConfig` defines them.
TOPIC_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in [
        _topic("cleanup.policy", "log.cleanup.policy", "delete and/or compact"),
        _topic("compression.type", "compression.type"),
        _topic("delete.retention.ms", "log.cleaner.delete.retention.ms", minimum=0),
        _topic("file.delete.delay.ms", "log.segment.delete.delay.ms", minimum=0),
        _topic("flush.messages", "log.flush.interval.messages", "fsync after this many messages"),
        _topic(
            "flush.ms",
            "log.flush.interval.ms",
            "fsync when the oldest unflushed append is this old",
            minimum=0,
        ),
        _topic("index.interval.bytes", "log.index.interval.bytes", minimum=0),
        _topic(
            "local.retention.bytes",
            "log.local.retention.bytes",
            "tiered storage (not supported)",
            minimum=-2,
        ),
        _topic(
            "local.retention.ms",
            "log.local.retention.ms",
            "tiered storage (not supported)",
            minimum=-2,
        ),
        _topic("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", minimum=1),
        _topic("max.message.bytes", "message.max.bytes", "largest record batch"),
        _topic("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", minimum=0),
        _topic("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", minimum=0),
        _topic("message.timestamp.type", "log.message.timestamp.type"),
        _topic("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", minimum=0),
        _topic("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", minimum=0),
        _topic("min.insync.replicas", "min.insync.replicas"),
        _topic("preallocate", "log.preallocate"),
        ConfigDef("remote.storage.enable", _T.BOOLEAN, "false", "tiered storage (not supported)"),
        _topic("retention.bytes", "log.retention.bytes"),
        _topic("retention.ms", "log.retention.ms", default="604800000", minimum=-1),
        _topic("segment.bytes", "log.segment.bytes"),
        _topic("segment.index.bytes", "log.index.size.max.bytes"),
        _topic("segment.jitter.ms", "log.roll.jitter.ms", minimum=0),
        _topic("segment.ms", "log.roll.ms", default="604800000", minimum=1),
        _topic("unclean.leader.election.enable", "unclean.leader.election.enable"),
        ConfigDef("leader.replication.throttled.replicas", _T.LIST, "", ""),
        ConfigDef("follower.replication.throttled.replicas", _T.LIST, "", ""),
    ]
}


_RETENTION_UNITS = (
    ("log.retention.ms", 1),
    ("log.retention.minutes", 60_000),
    ("log.retention.hours", 3_600_000),
)


def parse_properties(text: str) -> dict[str, str]:
    """Parse server.properties text (key=value or key: value; # and ! comments)."""
    out: dict[str, str] = {}
    pending = ""
    for raw_line in text.splitlines():
        line = pending + raw_line.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        for i, ch in enumerate(line):
            if ch in "=:":
                key, value = line[:i].strip(), line[i + 1 :].strip()
                break
        else:
            key, value = line, ""
        out[key] = value
    return out


class BrokerConfig:
    """Static broker configuration: explicit values over built-in defaults.

    Unknown keys are kept (and reported as such at start-up) so a Kafka server.properties loads
    without edits.
    """

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values: dict[str, str] = dict(values or {})
        for key, raw in self.values.items():
            d = BROKER_CONFIGS.get(key) or TOPIC_CONFIGS.get(key)
            if d is not None and raw is not None:
                d.parse(raw)

    def unknown_keys(self) -> list[str]:
        return sorted(k for k in self.values if k not in BROKER_CONFIGS)

    def raw(self, name: str) -> str | None:
        """The effective string value of a broker config (explicit or default)."""
        if name in self.values:
            return self.values[name]
        d = BROKER_CONFIGS.get(name)
        return d.default if d is not None else None

    def source(self, name: str) -> ConfigSource:
        return (
            ConfigSource.STATIC_BROKER_CONFIG
            if name in self.values
            else ConfigSource.DEFAULT_CONFIG
        )

    def get(self, name: str) -> object:
        d = BROKER_CONFIGS[name]
        return d.parse(self.raw(name))

    def get_int(self, name: str) -> int:
        """The effective value of an INT/LONG/SHORT broker config, parsed."""
        value = self.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{name} is not an integer config")
        return value

    def get_bool(self, name: str) -> bool:
        """The effective value of a BOOLEAN broker config, parsed."""
        value = self.get(name)
        if not isinstance(value, bool):
            raise ConfigError(f"{name} is not a boolean config")
        return value

    def get_str(self, name: str) -> str:
        """The effective string value of a broker config ("" when it has none)."""
        raw = self.raw(name)
        return "" if raw is None else raw

    # -- derived values -------------------------------------------------------------------
    def retention_ms(self) -> int:
        for key, unit in _RETENTION_UNITS:
            if key in self.values:
                return int(self.values[key]) * unit if int(self.values[key]) >= 0 else -1
        return 168 * 3_600_000

    def roll_ms(self) -> int:
        if "log.roll.ms" in self.values:
            return int(self.values["log.roll.ms"])
        return int(self.raw("log.roll.hours") or 168) * 3_600_000

    def broker_value_for_topic_config(self, topic_key: str) -> tuple[str | None, ConfigSource]:
        """The broker-level value that a topic config falls back to, and where it came from."""
        d = TOPIC_CONFIGS[topic_key]
        if topic_key == "retention.ms":
            explicit = any(k in self.values for k, _ in _RETENTION_UNITS)
            return str(self.retention_ms()), (
                ConfigSource.STATIC_BROKER_CONFIG if explicit else ConfigSource.DEFAULT_CONFIG
            )
        if topic_key == "segment.ms":
            explicit = "log.roll.ms" in self.values or "log.roll.hours" in self.values
            return str(self.roll_ms()), (
                ConfigSource.STATIC_BROKER_CONFIG if explicit else ConfigSource.DEFAULT_CONFIG
            )
        if d.synonym is not None and d.synonym in self.values:
            return self.values[d.synonym], ConfigSource.STATIC_BROKER_CONFIG
        return d.default, ConfigSource.DEFAULT_CONFIG

    def topic_defaults(self) -> dict[str, str | None]:
        """Every topic config's broker-level default, as strings."""
        return {k: self.broker_value_for_topic_config(k)[0] for k in TOPIC_CONFIGS}

    # -- common typed accessors -------------------------------------------------------------
    @property
    def node_id(self) -> int:
        if "node.id" in self.values:
            return int(self.values["node.id"])
        return int(self.raw("broker.id") or 0)

    @property
    def log_dirs(self) -> list[str]:
        dirs = self.values.get("log.dirs")
        if dirs:
            return [s.strip() for s in dirs.split(",") if s.strip()]
        return [self.get_str("log.dir")]

    @property
    def listeners(self) -> list[tuple[str, str, int]]:
        """(name, host, port) for each entry of `listeners`."""
        return parse_listeners(self.get_str("listeners"))

    @property
    def advertised_listeners(self) -> list[tuple[str, str, int]]:
        raw = self.values.get("advertised.listeners")
        return parse_listeners(raw) if raw else self.listeners

    @property
    def num_partitions(self) -> int:
        return self.get_int("num.partitions")

    @property
    def auto_create_topics(self) -> bool:
        return self.get_bool("auto.create.topics.enable")

    @property
    def socket_request_max_bytes(self) -> int:
        return self.get_int("socket.request.max.bytes")


def parse_listeners(raw: str) -> list[tuple[str, str, int]]:
    """`PLAINTEXT://host:port,NAME://[::1]:port` -> [(name, host, port)]. Empty host = all."""
    out = []
    for item in (s.strip() for s in raw.split(",")):
        if not item:
            continue
        if "://" not in item:
            raise ConfigError(f"listener {item!r} is not NAME://HOST:PORT")
        name, rest = item.split("://", 1)
        host, _, port = rest.rpartition(":")
        host = host.strip("[]")
        try:
            out.append((name, host, int(port)))
        except ValueError as exc:
            raise ConfigError(f"listener {item!r} has no valid port") from exc
    return out
