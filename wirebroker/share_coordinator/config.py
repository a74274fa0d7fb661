"""The share coordinator's settings (Kafka 4.4's `ShareCoordinatorConfig`, pure).

    share.coordinator.state.topic.num.partitions            50
    share.coordinator.state.topic.replication.factor        wirebroker 1 (Kafka 3), capped by
                                                            the live brokers at creation
    share.coordinator.state.topic.min.isr                   wirebroker 1 (Kafka 2)
    share.coordinator.state.topic.segment.bytes             104857600
    share.coordinator.snapshot.update.records.per.snapshot  500 (0..500)
    share.coordinator.write.timeout.ms                      5000

`__share_group_state` is created with cleanup.policy=delete and retention.ms=-1, as Kafka
does (ShareCoordinatorService's topic configs): its records are never compacted or expired;
every `prune_interval_ms` (Kafka's internal share.coordinator.state.topic.prune.interval.ms,
300000) the coordinator deletes the records below the oldest snapshot still needed
(`ShardState.redundant_offset`), as Kafka prunes them with DeleteRecords; every
`cold_snapshot_interval_ms` (Kafka's internal share.coordinator.cold.partition.snapshot.interval.ms,
300000) states whose last snapshot is that old get a new one, so pruning moves on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig

__all__ = ["SHARE_STATE_TOPIC", "ShareCoordinatorConfig"]

SHARE_STATE_TOPIC = "__share_group_state"


@dataclass(frozen=True)
class ShareCoordinatorConfig:
    num_partitions: int = 50
    replication_factor: int = 1
    min_isr: int = 1
    segment_bytes: int = 104857600
    updates_per_snapshot: int = 500
    write_timeout_ms: int = 5000
    #: Kafka's internal share.coordinator.state.topic.prune.interval.ms (not a broker config)
    prune_interval_ms: int = 300_000
    #: Kafka's internal share.coordinator.cold.partition.snapshot.interval.ms
    cold_snapshot_interval_ms: int = 300_000

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> ShareCoordinatorConfig:
        return cls(
            num_partitions=config.get_int("share.coordinator.state.topic.num.partitions"),
            replication_factor=config.get_int("share.coordinator.state.topic.replication.factor"),
            min_isr=config.get_int("share.coordinator.state.topic.min.isr"),
            segment_bytes=config.get_int("share.coordinator.state.topic.segment.bytes"),
            updates_per_snapshot=config.get_int(
                "share.coordinator.snapshot.update.records.per.snapshot"
            ),
            write_timeout_ms=config.get_int("share.coordinator.write.timeout.ms"),
        )
