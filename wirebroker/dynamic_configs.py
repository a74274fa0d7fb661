"""Dynamic broker configs: which broker configs change without a restart, and where they live.

Kafka lets AlterConfigs / IncrementalAlterConfigs (and `kafka-configs --entity-type brokers
--alter`) change some broker configs at run time, for one broker (resource name = its id:
DYNAMIC_BROKER_CONFIG, source 2) or for every broker (resource name "": the cluster-wide
default, DYNAMIC_DEFAULT_BROKER_CONFIG, source 3). The effective value of a key is this
broker's dynamic value, else the cluster default, else server.properties, else the built-in
default (`BrokerConfig.layers`).

Which keys (`DYNAMIC_BROKER_CONFIGS`): those of Kafka 4.4's dynamic broker configs that
wirebroker has and applies live (DescribeConfigs answers read_only=false for them, true for the
rest, and AlterConfigs refuses the rest: INVALID_REQUEST "Cannot update these configs
dynamically: [k]"):

    the topic configs' broker defaults  compression.type, compression.{gzip,lz4,zstd}.level,
        log.cleaner.{delete.retention.ms, max/min.compaction.lag.ms, min.cleanable.ratio},
        log.cleanup.policy, log.flush.interval.{messages,ms}, log.index.interval.bytes,
        log.index.size.max.bytes, log.local.retention.{bytes,ms}, log.message.timestamp.*,
        log.preallocate, log.remote.copy.lag.{bytes,ms}, log.retention.{bytes,ms},
        log.roll.{ms,jitter.ms}, log.segment.bytes, log.segment.delete.delay.ms,
        max.decompressed.message.bytes, message.max.bytes, min.insync.replicas,
        unclean.leader.election.enable: every hosted partition of a topic that does not
        override the key takes the new value at once (`ReplicaManager.on_topic_configs_changed`);
        a cluster's controller reads unclean.leader.election.enable at each election
    log.cleaner.backoff.ms             the cleaner's next pause
    max.connections, max.connections.per.ip, max.connection.creation.rate
                                       the listener's quotas (existing connections stay; the
                                       rate: broker-wide, the next connection)
    transaction.partition.verification.enable
                                       the next transactional produce
    leader.replication.throttled.rate, follower.replication.throttled.rate
                                       the replication throttles' bounds, at once
                                       (wirebroker.replication.quota); with
                                       replica.alter.log.dirs.io.max.bytes.per.second they are
                                       Kafka's broker quota configs: described only once set,
                                       and only their dynamic values apply
                                       (wirebroker.config.BROKER_QUOTA_CONFIGS)

Kafka also updates `listeners` (and its SSL, SASL, quota and thread-pool configs) at run time;
wirebroker cannot rebind a listener, so `listeners` stays read-only here.

Keys Kafka does not know are accepted and kept as Kafka does (described with a null value,
sensitive, read-only).

Where they live: a cluster keeps them in ZooKeeper as Kafka's ZooKeeper mode did,
`/config/brokers/<id>` and `/config/brokers/<default>` (`{"version":1,"config":{...}}`, plus a
`/config/changes/config_change_<seq>` notification), and every broker watches its own and the
default (`wirebroker.cluster.zk_broker_configs`). A single broker keeps them in its topic
store (`wirebroker-topics.json`, "broker_configs") and seeds its in-process ZooKeeper from it at
start. The unit tests' `LocalBrokerConfigs` (tests/unit/local_metadata.py) holds them in
memory, for services built without coordination.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from wirebroker.config import BrokerConfig

__all__ = [
    "DEFAULT_ENTITY",
    "DYNAMIC_BROKER_CONFIGS",
    "BrokerConfigUpdates",
    "Compute",
    "OnChange",
]

#: ZooKeeper's entity name of the cluster-wide default (resource name "" on the wire).
DEFAULT_ENTITY = "<default>"

DYNAMIC_BROKER_CONFIGS: frozenset[str] = frozenset(
    {
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "follower.replication.throttled.rate",
        "group.consumer.assignment.interval.ms",
        "group.share.assignment.interval.ms",
        "group.streams.assignment.interval.ms",
        "leader.replication.throttled.rate",
        "log.cleaner.backoff.ms",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleanup.policy",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.index.interval.bytes",
        "log.index.size.max.bytes",
        "log.local.retention.bytes",
        "log.local.retention.ms",
        "log.message.timestamp.after.max.ms",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.type",
        "log.preallocate",
        "log.remote.copy.lag.bytes",
        "log.remote.copy.lag.ms",
        "log.retention.bytes",
        "log.retention.ms",
        "log.roll.jitter.ms",
        "log.roll.ms",
        "log.segment.bytes",
        "log.segment.delete.delay.ms",
        "max.connection.creation.rate",
        "max.connections",
        "max.connections.per.ip",
        "max.decompressed.message.bytes",
        "message.max.bytes",
        "min.insync.replicas",
        "replica.alter.log.dirs.io.max.bytes.per.second",
        "transaction.partition.verification.enable",
        "unclean.leader.election.enable",
    }
)

#: A change's computation: the entity's current dynamic configs -> the new ones (raises to
#: refuse the change; wirebroker.handlers._broker_configs builds them).
Compute = Callable[[Mapping[str, str]], dict[str, str]]
#: Called with the keys whose effective value changed, once the change is applied.
OnChange = Callable[[set[str]], None]


class BrokerConfigUpdates:
    """Reads and changes the dynamic configs of this broker (entity: its id as a string) and
    of the cluster default (`DEFAULT_ENTITY`)."""

    def __init__(self, config: BrokerConfig, node_id: int, on_change: OnChange) -> None:
        self.config = config
        self.node_id = node_id
        self.on_change = on_change

    def entity(self, resource_name: str) -> str:
        """The entity of a BROKER resource name ("" or this broker's id)."""
        return DEFAULT_ENTITY if resource_name == "" else str(self.node_id)

    def current(self, entity: str) -> dict[str, str]:
        layer = self.config.dynamic_default if entity == DEFAULT_ENTITY else None
        if layer is None:
            layer = self.config.dynamic_broker
        return dict(layer)

    def apply(self, entity: str, configs: Mapping[str, str]) -> None:
        """Make `configs` the entity's dynamic configs in this broker's `BrokerConfig`."""
        if entity == DEFAULT_ENTITY:
            changed = self.config.set_dynamic(default=configs)
        elif entity == str(self.node_id):
            changed = self.config.set_dynamic(broker=configs)
        else:
            return
        if changed:
            self.on_change(changed)

    async def update(self, entity: str, compute: Compute, *, validate_only: bool) -> None:
        """Compute the entity's new dynamic configs from its current ones and apply them
        (durably where the implementation keeps them) before returning."""
        raise NotImplementedError
