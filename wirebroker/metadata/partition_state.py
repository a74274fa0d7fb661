"""What the cluster's metadata says of a topic and a partition: the replica assignment and the
partition's state (leader, leader epoch, ISR). Pure data, shared by the election rules
(`elections`), the replicas (`wirebroker.replication.partition`) and the ZooKeeper runtime,
whose `wirebroker.cluster.zk_layout` reads and writes them as Kafka's znode documents.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["NO_LEADER", "PartitionState", "TopicAssignment"]

#: A partition's `leader` when it has none (it is offline), as in Kafka's LeaderAndIsr.
NO_LEADER = -1


@dataclass(frozen=True)
class TopicAssignment:
    """A topic's replica assignment: partition -> replicas, head = preferred leader."""

    partitions: Mapping[int, tuple[int, ...]]
    topic_id: uuid.UUID | None = None
    adding: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.partitions)

    def replicas(self, partition: int) -> tuple[int, ...]:
        return self.partitions.get(partition, ())

    def as_list(self) -> list[tuple[int, ...]]:
        return [self.partitions[p] for p in sorted(self.partitions)]


@dataclass(frozen=True)
class PartitionState:
    """A partition's state znode: `leader` (NO_LEADER when offline), its epoch, the ISR, the
    epoch of the controller that wrote it."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    recovering: bool = False  # leader_recovery_state 1: an unclean leader is recovering
