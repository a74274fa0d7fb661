"""What the cluster looks like to clients: live brokers, the controller, the topics (name, id,
configs) and each partition's leader, replicas and in-sync replicas. Every handler reads topic
metadata from the one `ClusterView` (`Services.cluster`): names and ids (`topic`,
`topic_by_id`, `all_topics`) and partitions (`partitions`, `partition`) from the same place, never
the topic store beside it. The topics are those of the `TopicStore` the view is given (in a
cluster the mirror writes a topic's partitions into the view before the store, and drops them
after it, so a topic a handler finds has its partitions here).

The view: `wirebroker.cluster.zk_metadata_cache.ZkMetadataCache` (a cluster, and a single
  broker, which runs the cluster code over its in-process ZooKeeper): a mirror of ZooKeeper's
  /brokers/ids, /controller, /brokers/topics and the partition state znodes, kept current by
  watches. A partition whose leader is not a live broker answers LEADER_NOT_AVAILABLE with
  leader -1 (Kafka's ZkMetadataCache); its replica and ISR lists stay unfiltered and the dead
  replicas are listed as offline (Metadata v5+). The unit tests' `LocalClusterView`
  (tests/unit/local_metadata.py) is the other: a broker without cluster layer.
"""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wirebroker.metadata.topic_store import TopicInfo, TopicStore

__all__ = ["BrokerNode", "ClusterView", "PartitionView"]


@dataclass(frozen=True)
class BrokerNode:
    """A live broker. `host`/`port`: where other brokers reach it (its inter-broker
    listener); `endpoints`: (listener name, host, port) of every listener it advertises."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    endpoints: tuple[tuple[str, str, int], ...] = ()

    def address(self, listener: str) -> tuple[str, int] | None:
        """Its address on `listener` (None: it has no such listener); a broker registered
        without endpoints answers its one address for any listener."""
        if not self.endpoints:
            return self.host, self.port
        for name, host, port in self.endpoints:
            if name == listener:
                return host, port
        return None


@dataclass(frozen=True)
class PartitionView:
    index: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline: list[int] = field(default_factory=list)
    error_code: int = 0  # LEADER_NOT_AVAILABLE (5) while the partition has no live leader


class ClusterView(abc.ABC):
    def __init__(self, topics: TopicStore) -> None:
        #: The durable image of the topics (see the module docstring); handlers read it only
        #: through `topic`, `topic_by_id` and `all_topics`.
        self.topic_store = topics

    def topic(self, name: str) -> TopicInfo | None:
        """A topic by name, or None."""
        return self.topic_store.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        """A topic by id, or None."""
        return self.topic_store.by_id(topic_id)

    def all_topics(self) -> list[TopicInfo]:
        """Every topic, sorted by name."""
        return self.topic_store.all()

    @abc.abstractmethod
    def live_brokers(self) -> list[BrokerNode]:
        """The registered brokers, sorted by id."""

    @abc.abstractmethod
    def broker(self, node_id: int) -> BrokerNode | None:
        """A live broker by id."""

    def broker_epoch(self, node_id: int) -> int:
        """The broker's current registration epoch (its znode's czxid); -1 when unknown."""
        return -1

    @abc.abstractmethod
    def controller_id(self) -> int:
        """The controller's broker id (-1: none elected right now)."""

    @abc.abstractmethod
    def partitions(self, topic: str) -> list[PartitionView]:
        """Every partition of `topic` in index order ([] for an unknown topic)."""

    @abc.abstractmethod
    def partition(self, topic: str, index: int) -> PartitionView | None: ...

    def leader(self, topic: str, index: int) -> BrokerNode | None:
        """The live leader of a partition, or None."""
        view = self.partition(topic, index)
        if view is None or view.leader < 0:
            return None
        return self.broker(view.leader)
