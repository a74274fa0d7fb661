"""Broker and topic configuration: Kafka's key names, types, defaults and synonyms.

Every configuration wirebroker understands is declared once here as a `ConfigDef`. Topic-level
configs (`retention.ms`, ...) name their broker-level synonym (`log.retention.ms`, ...): a topic
value overrides the broker value, which overrides the built-in default, exactly as in Kafka.
DescribeConfigs reports each value with its source and synonyms from these tables.

Sources of a value (DescribeConfigs `ConfigSource`), most precedent first:
    TOPIC_CONFIG (1)                   set on the topic (CreateTopics / AlterConfigs)
    DYNAMIC_BROKER_CONFIG (2)          set at run time for this broker (wirebroker.dynamic_configs)
    DYNAMIC_DEFAULT_BROKER_CONFIG (3)  set at run time for every broker (the cluster default)
    STATIC_BROKER_CONFIG (4)           set in server.properties / on the command line
    DEFAULT_CONFIG (5)                 the built-in default below
Kafka's log.flush.interval.ms and log.roll.jitter.ms have no default of their own (null): the
topic configs flush.ms and segment.jitter.ms then take log.flush.scheduler.interval.ms and
log.roll.jitter.hours.

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
    #: values allowed outside [minimum, maximum] (compression.gzip.level's -1, "the default")
    also_allowed: tuple[int, ...] = ()
    read_only: bool = False
    sensitive: bool = False
    extra_check: Callable[[str], None] | None = field(default=None, compare=False)
    #: Kafka's `defineInternal`: accepted and described only where it is set (no default)
    internal: bool = False

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
                # Kafka's ConfigDef: "" is no item, else every comma separates one (empty
                # items kept: "a,,b" is three; ValidList refuses them where it applies)
                items = [s.strip() for s in raw.split(",")] if raw.strip() else []
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
        if value in self.also_allowed:
            return value
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
            _T.LIST,
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
            "max.connection.creation.rate",
            _T.INT,
            str(INT_MAX),
            "new connections per second, broker-wide (not the inter-broker listener; per "
            "listener: listener.name.<l>.max.connection.creation.rate); over it the acceptor "
            "waits (KIP-612)",
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
        # KIP-390 compression levels: accepted and described; wirebroker stores batches as
        # produced and never recompresses, so they have no effect (README, Configuration).
        ConfigDef(
            "compression.gzip.level",
            _T.INT,
            "-1",
            "gzip level of batches the broker compresses (-1: the codec's default)",
            minimum=1,
            maximum=9,
            also_allowed=(-1,),
        ),
        ConfigDef(
            "compression.lz4.level",
            _T.INT,
            "9",
            "lz4 level of batches the broker compresses",
            minimum=1,
            maximum=17,
        ),
        ConfigDef(
            "compression.zstd.level",
            _T.INT,
            "3",
            "zstd level of batches the broker compresses",
            minimum=-131072,
            maximum=22,
        ),
        ConfigDef(
            "max.decompressed.message.bytes",
            _T.INT,
            str(INT_MAX - 8),
            "largest decompressed record (accepted; wirebroker's own bound is 64 MiB per batch)",
            minimum=1,
            maximum=INT_MAX - 8,
        ),
        # tiered storage (KIP-405): not supported; the values are kept and described
        ConfigDef("log.remote.copy.lag.bytes", _T.LONG, "-1", "tiered storage", minimum=-1),
        ConfigDef("log.remote.copy.lag.ms", _T.LONG, "0", "tiered storage", minimum=-1),
        ConfigDef("log.cleanup.policy", _T.LIST, "delete", "", choices=("compact", "delete")),
        ConfigDef("log.cleaner.delete.retention.ms", _T.LONG, "86400000", "", minimum=0),
        ConfigDef(
            "log.cleaner.backoff.ms", _T.LONG, "15000", "pause when nothing to clean", minimum=0
        ),
        ConfigDef("log.cleaner.enable", _T.BOOLEAN, "true", ""),
        ConfigDef("log.flush.offset.checkpoint.interval.ms", _T.INT, "60000", "", minimum=0),
        ConfigDef("log.cleaner.max.compaction.lag.ms", _T.LONG, str(LONG_MAX), "", minimum=1),
        ConfigDef("log.cleaner.min.cleanable.ratio", _T.DOUBLE, "0.5", "", minimum=0, maximum=1),
        ConfigDef("log.cleaner.min.compaction.lag.ms", _T.LONG, "0", "", minimum=0),
        ConfigDef("log.segment.delete.delay.ms", _T.LONG, "60000", "", minimum=0),
        ConfigDef("log.flush.interval.messages", _T.LONG, str(LONG_MAX), "", minimum=1),
        ConfigDef(
            "log.flush.interval.ms",
            _T.LONG,
            None,
            "unset: from log.flush.scheduler.interval.ms (Kafka's fallback)",
        ),
        ConfigDef("log.flush.scheduler.interval.ms", _T.LONG, str(LONG_MAX), ""),
        ConfigDef("log.index.interval.bytes", _T.INT, "4096", "", minimum=0),
        ConfigDef("log.index.size.max.bytes", _T.INT, "10485760", "", minimum=4),
        ConfigDef("log.local.retention.bytes", _T.LONG, "-2", "", minimum=-2),
        ConfigDef("log.local.retention.ms", _T.LONG, "-2", "", minimum=-2),
        ConfigDef("log.message.timestamp.after.max.ms", _T.LONG, "3600000", "", minimum=0),
        ConfigDef("log.message.timestamp.before.max.ms", _T.LONG, str(LONG_MAX), "", minimum=0),
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
        ConfigDef("log.roll.jitter.ms", _T.LONG, None, "unset: from log.roll.jitter.hours"),
        ConfigDef("log.roll.jitter.hours", _T.INT, "0", "", minimum=0, read_only=True),
        ConfigDef("log.segment.bytes", _T.INT, "1073741824", "", minimum=1048576),
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
        # KIP-848 / KIP-932 / KIP-1071 group settings: the GROUP config resource's defaults
        # and bounds (wirebroker.metadata.group_configs)
        ConfigDef(
            "group.consumer.session.timeout.ms", _T.INT, "45000", "", minimum=1, read_only=True
        ),
        ConfigDef("group.consumer.min.session.timeout.ms", _T.INT, "45000", "", read_only=True),
        ConfigDef("group.consumer.max.session.timeout.ms", _T.INT, "60000", "", read_only=True),
        ConfigDef(
            "group.consumer.heartbeat.interval.ms", _T.INT, "5000", "", minimum=1, read_only=True
        ),
        ConfigDef("group.consumer.min.heartbeat.interval.ms", _T.INT, "5000", "", read_only=True),
        ConfigDef("group.consumer.max.heartbeat.interval.ms", _T.INT, "15000", "", read_only=True),
        ConfigDef("group.consumer.assignment.interval.ms", _T.INT, "1000", "", minimum=0),
        ConfigDef("group.consumer.min.assignment.interval.ms", _T.INT, "0", "", read_only=True),
        ConfigDef("group.consumer.max.assignment.interval.ms", _T.INT, "15000", "", read_only=True),
        ConfigDef(
            "group.consumer.migration.policy",
            _T.STRING,
            "bidirectional",
            "online migration between classic and consumer groups (any case)",
            read_only=True,
        ),
        ConfigDef("group.share.session.timeout.ms", _T.INT, "45000", "", minimum=1, read_only=True),
        ConfigDef("group.share.min.session.timeout.ms", _T.INT, "45000", "", read_only=True),
        ConfigDef("group.share.max.session.timeout.ms", _T.INT, "60000", "", read_only=True),
        ConfigDef(
            "group.share.heartbeat.interval.ms", _T.INT, "5000", "", minimum=1, read_only=True
        ),
        ConfigDef("group.share.min.heartbeat.interval.ms", _T.INT, "5000", "", read_only=True),
        ConfigDef("group.share.max.heartbeat.interval.ms", _T.INT, "15000", "", read_only=True),
        ConfigDef(
            "group.share.record.lock.duration.ms", _T.INT, "30000", "", minimum=1000, read_only=True
        ),
        ConfigDef("group.share.min.record.lock.duration.ms", _T.INT, "15000", "", read_only=True),
        ConfigDef("group.share.max.record.lock.duration.ms", _T.INT, "60000", "", read_only=True),
        ConfigDef("group.share.delivery.count.limit", _T.INT, "5", "", minimum=2, read_only=True),
        ConfigDef("group.share.min.delivery.count.limit", _T.INT, "2", "", read_only=True),
        ConfigDef("group.share.max.delivery.count.limit", _T.INT, "10", "", read_only=True),
        ConfigDef(
            "group.share.partition.max.record.locks",
            _T.INT,
            "2000",
            "",
            minimum=100,
            read_only=True,
        ),
        ConfigDef("group.share.min.partition.max.record.locks", _T.INT, "100", "", read_only=True),
        ConfigDef("group.share.max.partition.max.record.locks", _T.INT, "4000", "", read_only=True),
        ConfigDef("group.share.assignment.interval.ms", _T.INT, "1000", "", minimum=0),
        ConfigDef("group.share.min.assignment.interval.ms", _T.INT, "0", "", read_only=True),
        ConfigDef("group.share.max.assignment.interval.ms", _T.INT, "15000", "", read_only=True),
        ConfigDef(
            "group.streams.session.timeout.ms", _T.INT, "45000", "", minimum=1, read_only=True
        ),
        ConfigDef("group.streams.min.session.timeout.ms", _T.INT, "45000", "", read_only=True),
        ConfigDef("group.streams.max.session.timeout.ms", _T.INT, "60000", "", read_only=True),
        ConfigDef(
            "group.streams.heartbeat.interval.ms", _T.INT, "5000", "", minimum=1, read_only=True
        ),
        ConfigDef("group.streams.min.heartbeat.interval.ms", _T.INT, "5000", "", read_only=True),
        ConfigDef("group.streams.max.heartbeat.interval.ms", _T.INT, "15000", "", read_only=True),
        ConfigDef("group.streams.num.standby.replicas", _T.INT, "0", "", minimum=0, read_only=True),
        ConfigDef("group.streams.max.standby.replicas", _T.INT, "2", "", read_only=True),
        ConfigDef(
            "group.streams.initial.rebalance.delay.ms",
            _T.INT,
            "3000",
            "",
            minimum=0,
            read_only=True,
        ),
        ConfigDef("group.streams.assignment.interval.ms", _T.INT, "1000", "", minimum=0),
        ConfigDef("group.streams.min.assignment.interval.ms", _T.INT, "0", "", read_only=True),
        ConfigDef("group.streams.max.assignment.interval.ms", _T.INT, "15000", "", read_only=True),
        ConfigDef("group.streams.assignors", _T.LIST, "sticky", "", read_only=True),
        ConfigDef("group.streams.rack.aware.assignment.tags", _T.LIST, "", "", read_only=True),
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
        # share coordinator (KIP-932; wirebroker.share_coordinator.config)
        ConfigDef(
            "share.coordinator.state.topic.num.partitions",
            _T.INT,
            "50",
            "",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "share.coordinator.state.topic.replication.factor",
            _T.SHORT,
            "1",
            "wirebroker: 1 (Kafka: 3), capped by the live brokers at creation",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "share.coordinator.state.topic.min.isr",
            _T.SHORT,
            "1",
            "wirebroker: 1 (Kafka: 2)",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "share.coordinator.state.topic.segment.bytes",
            _T.INT,
            "104857600",
            "",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "share.coordinator.snapshot.update.records.per.snapshot",
            _T.INT,
            "500",
            "",
            minimum=0,
            maximum=500,
            read_only=True,
        ),
        ConfigDef(
            "share.coordinator.write.timeout.ms", _T.INT, "5000", "", minimum=1, read_only=True
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
            "leader.imbalance.check.interval.seconds", _T.LONG, "300", "", read_only=True, minimum=1
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
        # incremental fetch sessions (KIP-227): wirebroker.replication.fetch_sessions
        ConfigDef(
            "max.incremental.fetch.session.cache.slots",
            _T.INT,
            "1000",
            "fetch sessions the broker keeps (8 shards of slots // 8 each: fewer than 8, none)",
            minimum=0,
            read_only=True,
        ),
        ConfigDef(
            "min.incremental.fetch.session.eviction.ms",
            _T.LONG,
            "120000",
            "how long a session is safe from eviction after its creation and before it is "
            "stale (wirebroker's: Kafka fixes it at 120000)",
            minimum=0,
            read_only=True,
        ),
        # replication throttles (KIP-73): the windows their byte rates are measured over
        ConfigDef(
            "replication.quota.window.num",
            _T.INT,
            "11",
            "samples of a replication quota's byte rate kept in memory",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "replication.quota.window.size.seconds",
            _T.INT,
            "1",
            "the time span of each sample of a replication quota",
            minimum=1,
            read_only=True,
        ),
        # client quotas (wirebroker.security.quota_manager): the windows their rates use
        ConfigDef(
            "quota.window.num",
            _T.INT,
            "11",
            "samples of a client quota's rate kept in memory",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "quota.window.size.seconds",
            _T.INT,
            "1",
            "the time span of each sample of a client quota",
            minimum=1,
            read_only=True,
        ),
        # controller mutation quotas (KIP-599): the token bucket's burst is num x size x quota
        ConfigDef(
            "controller.quota.window.num",
            _T.INT,
            "11",
            "samples of a controller mutation quota (its bucket holds num x size x quota)",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "controller.quota.window.size.seconds",
            _T.INT,
            "1",
            "the time span of each sample of a controller mutation quota",
            minimum=1,
            read_only=True,
        ),
    ]
}

#: Kafka's broker quota configs (its QuotaConfig, set with `kafka-configs --entity-type
#: brokers`): not KafkaConfig keys, so Kafka's DescribeConfigs lists them only once set (with
#: the value as it was written, untrimmed) and IncrementalAlterConfigs APPEND/SUBTRACT calls
#: them unknown. Only their dynamic values throttle (per broker, else the cluster default; a
#: value in server.properties is described but ignored, as by Kafka 4.4's broker config
#: handler); unset, replication is not throttled. wirebroker.replication.quota applies the
#: two replication rates; wirebroker moves no replica between log dirs, so the third is
#: accepted, described and has nothing to throttle.
BROKER_QUOTA_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in [
        ConfigDef(
            "leader.replication.throttled.rate",
            _T.LONG,
            str(LONG_MAX),
            "bytes/s a leader sends of its throttled replicas (leader.replication.throttled."
            "replicas) to followers out of the ISR",
            minimum=0,
        ),
        ConfigDef(
            "follower.replication.throttled.rate",
            _T.LONG,
            str(LONG_MAX),
            "bytes/s a follower fetches of its throttled replicas (follower.replication."
            "throttled.replicas) while out of the ISR",
            minimum=0,
        ),
        ConfigDef(
            "replica.alter.log.dirs.io.max.bytes.per.second",
            _T.LONG,
            str(LONG_MAX),
            "bytes/s of moving replicas between log dirs (wirebroker moves none)",
            minimum=0,
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
        _topic("compression.gzip.level", "compression.gzip.level", "gzip level (no effect)"),
        _topic("compression.lz4.level", "compression.lz4.level", "lz4 level (no effect)"),
        _topic("compression.zstd.level", "compression.zstd.level", "zstd level (no effect)"),
        ConfigDef(
            "errors.deadletterqueue.group.enable",
            _T.BOOLEAN,
            "false",
            "KIP-1191: may share groups use this topic as a dead-letter queue (stored; "
            "wirebroker writes no share group DLQ yet: docs/share-groups.md)",
        ),
        _topic(
            "max.decompressed.message.bytes",
            "max.decompressed.message.bytes",
            "largest decompressed record (accepted, not enforced: see the broker config)",
        ),
        _topic("delete.retention.ms", "log.cleaner.delete.retention.ms", minimum=0),
        _topic("file.delete.delay.ms", "log.segment.delete.delay.ms", minimum=0),
        _topic("flush.messages", "log.flush.interval.messages", "fsync after this many messages"),
        _topic(
            "flush.ms",
            "log.flush.interval.ms",
            "fsync when the oldest unflushed append is this old",
            default=str(LONG_MAX),
            minimum=0,
        ),
        _topic("index.interval.bytes", "log.index.interval.bytes", minimum=0),
        ConfigDef(
            "internal.segment.bytes",
            _T.INT,
            None,
            "for tests: the segment size, in place of segment.bytes and below its 1 MiB minimum "
            "(Kafka's internal topic config, not validated)",
            internal=True,
        ),
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
        _topic("remote.copy.lag.bytes", "log.remote.copy.lag.bytes", "tiered storage"),
        _topic("remote.copy.lag.ms", "log.remote.copy.lag.ms", "tiered storage"),
        ConfigDef("remote.log.copy.disable", _T.BOOLEAN, "false", "tiered storage"),
        ConfigDef("remote.log.delete.on.disable", _T.BOOLEAN, "false", "tiered storage"),
        ConfigDef("remote.storage.enable", _T.BOOLEAN, "false", "tiered storage (not supported)"),
        _topic("retention.bytes", "log.retention.bytes"),
        _topic("retention.ms", "log.retention.ms", default="604800000", minimum=-1),
        _topic("segment.bytes", "log.segment.bytes"),
        _topic("segment.index.bytes", "log.index.size.max.bytes"),
        _topic("segment.jitter.ms", "log.roll.jitter.ms", default="0", minimum=0),
        _topic("segment.ms", "log.roll.ms", default="604800000", minimum=1),
        _topic("unclean.leader.election.enable", "unclean.leader.election.enable"),
        ConfigDef("leader.replication.throttled.replicas", _T.LIST, "", ""),
        ConfigDef("follower.replication.throttled.replicas", _T.LIST, "", ""),
    ]
}


#: topic config -> (its broker synonym, the broker key it falls back to, that key's unit in ms)
_FALLBACKS = {
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms", 1),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours", 3_600_000),
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
    """The broker's configuration: dynamic values over static ones over built-in defaults.

    `values` are the static ones (server.properties, --override). Unknown keys are kept (and
    reported as such at start-up) so a Kafka server.properties loads without edits.
    `dynamic_broker` and `dynamic_default` are the dynamic configs of this broker and of the
    cluster-wide default (Kafka's DYNAMIC_BROKER_CONFIG and DYNAMIC_DEFAULT_BROKER_CONFIG,
    set with AlterConfigs / IncrementalAlterConfigs: wirebroker.dynamic_configs); the effective
    value of a key is the first of: this broker's dynamic value, the cluster default, the
    static value, the built-in default. Every reader (`raw`, `get*`, the topic defaults) sees
    a change at once.
    """

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values: dict[str, str] = dict(values or {})
        for key, raw in self.values.items():
            d = BROKER_CONFIGS.get(key) or TOPIC_CONFIGS.get(key)
            if d is not None and raw is not None:
                d.parse(raw)
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[str, str] = {}

    def layers(self) -> tuple[tuple[ConfigSource, Mapping[str, str]], ...]:
        """The explicit values by source, in precedence order (Kafka's synonym order)."""
        return (
            (ConfigSource.DYNAMIC_BROKER_CONFIG, self.dynamic_broker),
            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default),
            (ConfigSource.STATIC_BROKER_CONFIG, self.values),
        )

    def is_set(self, name: str) -> bool:
        """Set explicitly (statically or dynamically), not left to the built-in default."""
        return any(name in layer for _source, layer in self.layers())

    def explicit(self, name: str) -> str | None:
        """The explicit value of `name` (dynamic or static), None when left to the default."""
        for _source, layer in self.layers():
            if name in layer:
                return layer[name]
        return None

    def set_dynamic(
        self, *, default: Mapping[str, str] | None = None, broker: Mapping[str, str] | None = None
    ) -> set[str]:
        """Replace the dynamic configs of the cluster default and/or this broker; the keys
        whose explicit value changed. Values that do not parse are the caller's to refuse."""
        before = {k: self.explicit(k) for k in (*self.dynamic_default, *self.dynamic_broker)}
        if default is not None:
            self.dynamic_default = dict(default)
        if broker is not None:
            self.dynamic_broker = dict(broker)
        keys = set(before) | set(self.dynamic_default) | set(self.dynamic_broker)
        return {k for k in keys if self.explicit(k) != before.get(k, self.values.get(k))}

    def with_dynamic(
        self, *, default: Mapping[str, str] | None = None, broker: Mapping[str, str] | None = None
    ) -> BrokerConfig:
        """A copy with these dynamic configs (the checks of a change look at the result)."""
        copy = BrokerConfig.__new__(BrokerConfig)
        copy.values = self.values
        copy.dynamic_default = dict(self.dynamic_default if default is None else default)
        copy.dynamic_broker = dict(self.dynamic_broker if broker is None else broker)
        return copy

    def unknown_keys(self) -> list[str]:
        return sorted(
            k
            for k in self.values
            if k not in BROKER_CONFIGS and k not in BROKER_QUOTA_CONFIGS and not is_security_key(k)
        )

    def raw(self, name: str) -> str | None:
        """The effective string value of a broker config (explicit or default)."""
        value = self.explicit(name)
        if value is not None:
            return value
        d = BROKER_CONFIGS.get(name)
        return d.default if d is not None else None

    def source(self, name: str) -> ConfigSource:
        for source, layer in self.layers():
            if name in layer:
                return source
        return ConfigSource.DEFAULT_CONFIG

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
            value = self.explicit(key)
            if value is not None:
                return int(value) * unit if int(value) >= 0 else -1
        return 168 * 3_600_000

    def roll_ms(self) -> int:
        value = self.explicit("log.roll.ms")
        if value is not None:
            return int(value)
        return int(self.raw("log.roll.hours") or 168) * 3_600_000

    def broker_value_for_topic_config(self, topic_key: str) -> tuple[str | None, ConfigSource]:
        """The broker-level value that a topic config falls back to, and where it came from."""
        d = TOPIC_CONFIGS[topic_key]
        if topic_key == "retention.ms":
            names: tuple[str, ...] = tuple(k for k, _ in _RETENTION_UNITS)
            return str(self.retention_ms()), self._first_source(names)
        if topic_key == "segment.ms":
            return str(self.roll_ms()), self._first_source(("log.roll.ms", "log.roll.hours"))
        fallback = _FALLBACKS.get(topic_key)
        if fallback is not None:
            # Kafka's log.flush.interval.ms / log.roll.jitter.ms have no default of their own:
            # unset, they take log.flush.scheduler.interval.ms / log.roll.jitter.hours.
            own, other, unit = fallback
            if self.is_set(own):
                return self.explicit(own), self.source(own)
            other_value = self.explicit(other)
            if other_value is not None:
                return str(int(other_value) * unit), self.source(other)
            return d.default, ConfigSource.DEFAULT_CONFIG
        if d.synonym is not None and self.is_set(d.synonym):
            return self.explicit(d.synonym), self.source(d.synonym)
        return d.default, ConfigSource.DEFAULT_CONFIG

    def _first_source(self, names: tuple[str, ...]) -> ConfigSource:
        """The most precedent source any of `names` is set in (DEFAULT_CONFIG: none is)."""
        sources = [self.source(n) for n in names if self.is_set(n)]
        return min(sources, default=ConfigSource.DEFAULT_CONFIG)

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


#: The listener and security settings read by wirebroker/listeners.py, wirebroker/net/endpoints.py,
#: wirebroker/security/tls.py and wirebroker/security/authorizer.py (docs/security.md),
#: straight from the static values.
_SECURITY_KEYS = frozenset(
    {
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "security.inter.broker.protocol",
        "controller.listener.names",
        "connections.max.reauth.ms",
        "connection.failed.authentication.delay.ms",
        "authorizer.class.name",
        "super.users",
        "allow.everyone.if.no.acl.found",
    }
)


def is_security_key(key: str) -> bool:
    """A listener / TLS / SASL setting (read by the listener code, not a `ConfigDef`)."""
    return key in _SECURITY_KEYS or key.startswith(("ssl.", "sasl.", "listener.name."))


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
