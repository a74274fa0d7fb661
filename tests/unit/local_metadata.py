"""The metadata of a broker without cluster layer, for the unit tests' fixtures.

Every `Broker` runs the cluster code (`ZkTopicAdmin`, `ZkMetadataCache`; a single broker over
its in-process ZooKeeper). Unit tests that build the services by hand, synchronously, without
a ZooKeeper (the handler fixtures, the group and transaction runtimes, the replica manager)
use these instead:

- `LocalTopicAdmin`: a `TopicAdmin` over the `TopicStore` and the `LogManager`, with the one
  validation path (`TopicChecks`); it creates the logs in one batch, commits to the store, then
  tells its `PartitionListener` (the `ReplicaManager`); a failure deletes the new logs again.
- `LocalClusterView`: this broker is the only broker, the controller, and the leader of every
  partition; replicas and ISR come from the partitions themselves.
- `LocalBrokerConfigs`: the dynamic broker configs, in memory (a change applies at once).
- `lead_every_partition(replicas, now_ms)` and `Leader(replicas, clock)` (the `ReplicaManager`'s
  `PartitionListener` that also leads each new partition): this broker leads every partition
  through the calls the cluster layer makes (`make_leader`, replicas = ISR = [this broker],
  the log's latest leader epoch or 0), as a single broker's cluster code does
  (`wirebroker.cluster.local_cluster`).
- `coordinate_every_partition(coordinator)`: the group or transaction coordinator owns every
  partition of its topic at leader epoch 0 (`on_became_leader`, as the broker's role listener
  calls it) and has loaded them (`lead_coordinator`, then `coordinator_loaded`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import trio

from wirebroker.config import BrokerConfig
from wirebroker.coordinator.ownership import PartitionState
from wirebroker.coordinator.runtime import CoordinatorRuntime
from wirebroker.dynamic_configs import BrokerConfigUpdates, Compute
from wirebroker.log.config import LogConfig
from wirebroker.log.log_manager import LogManager
from wirebroker.log.partition_log import PartitionLog
from wirebroker.metadata.topic_admin import (
    CreateTopicResult,
    NewPartitions,
    NewTopic,
    PartitionListener,
    TopicAdmin,
    TopicChecks,
    create_each,
)
from wirebroker.metadata.topic_configs import effective_topic_configs, topic_log_config
from wirebroker.metadata.topic_store import TopicInfo, TopicStore
from wirebroker.metadata.view import BrokerNode, ClusterView, PartitionView
from wirebroker.replication.replica_manager import ReplicaManager

__all__ = [
    "Leader",
    "LocalBrokerConfigs",
    "LocalClusterView",
    "LocalTopicAdmin",
    "coordinate_every_partition",
    "coordinator_loaded",
    "lead_coordinator",
    "lead_every_partition",
]

log = logging.getLogger(__name__)


class LocalTopicAdmin(TopicAdmin):
    """`TopicAdmin` without ZooKeeper: the `TopicStore` is the metadata, `LogManager` the logs."""

    def __init__(
        self,
        config: BrokerConfig,
        topics: TopicStore,
        logs: LogManager,
        *,
        node_id: int,
        listener: PartitionListener | None = None,
    ) -> None:
        self.config = config
        self.topics = topics
        self.logs = logs
        self.node_id = node_id
        self.listener = listener
        self.checks = TopicChecks(config, topics, lambda: self.brokers)

    @property
    def brokers(self) -> list[int]:
        """The registered brokers: this one."""
        return [self.node_id]

    # -- reads -------------------------------------------------------------------------------
    def describe(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def effective_configs(self, name: str) -> dict[str, str | None]:
        """Every topic config of `name` (override, else broker value, else default)."""
        info = self.topics.get(name)
        return effective_topic_configs(self.config, info.configs if info is not None else {})

    def log_config(self, name: str) -> LogConfig:
        info = self.topics.get(name)
        return topic_log_config(self.config, info.configs if info is not None else {})

    # -- create ------------------------------------------------------------------------------
    def create_topics(
        self, topics: Sequence[NewTopic], *, now_ms: int, validate_only: bool = False
    ) -> list[CreateTopicResult]:
        return create_each(self.create, topics, now_ms=now_ms, validate_only=validate_only)

    def create(self, topic: NewTopic, *, now_ms: int, validate_only: bool = False) -> TopicInfo:
        """Check `topic` in Kafka's order, then create it (unless `validate_only`)."""
        info = self.checks.new_topic(topic)
        if not validate_only:
            self._add_partitions(info, 0, now_ms)
        return info

    def create_partitions(
        self, request: NewPartitions, *, now_ms: int, validate_only: bool = False
    ) -> None:
        info = self.checks.new_partitions(request)
        if validate_only:
            return
        self._add_partitions(
            dataclasses.replace(info, partitions=request.count), info.partitions, now_ms
        )

    def _add_partitions(self, info: TopicInfo, first: int, now_ms: int) -> None:
        """Logs `first`.. of `info` in one batch, then `info` into the store (the commit
        point), then the listener; on failure the new logs are deleted again."""
        log_config = topic_log_config(self.config, info.configs)
        created = self.logs.create_many(
            info.name, range(first, info.partitions), log_config, now_ms, info.topic_id
        )
        try:
            self.topics.put(info)
        except BaseException:
            for plog in created:
                try:
                    self.logs.delete(info.name, plog.partition)
                except Exception:  # pragma: no cover - best effort rollback
                    log.exception("rollback of %s-%d failed", info.name, plog.partition)
            raise
        if self.listener is not None:
            self.listener.on_partitions_created(info, created)

    # -- delete / alter ----------------------------------------------------------------------
    def delete_topic(self, name: str) -> TopicInfo:
        """Remove the topic from the store, tell the listener, delete its logs."""
        info = self.checks.deleted_topic(name)
        self.topics.remove(name)
        if self.listener is not None:
            self.listener.on_topic_deleted(info)
        for index in range(info.partitions):
            if self.logs.get(name, index) is not None:
                self.logs.delete(name, index)
        return info

    def alter_topic_configs(
        self, name: str, configs: Mapping[str, str | None], *, validate_only: bool = False
    ) -> None:
        """Replace the topic's overrides with `configs` (checked first, then the topic must
        exist); the listener applies them to the live partitions."""
        info, overrides = self.checks.topic_configs(name, configs)
        if validate_only:
            return
        changed = dataclasses.replace(info, configs=overrides)
        self.topics.put(changed)
        if self.listener is not None:
            self.listener.on_topic_configs_changed(changed)


def lead(replicas: ReplicaManager, topic: str, indexes: Iterable[int], now_ms: int) -> None:
    """This broker leads each partition `indexes` of `topic` it hosts, alone (replicas = ISR =
    [this broker]), at its log's latest leader epoch (0 for an empty log), as
    `wirebroker.cluster.local_cluster` seeds it."""
    node = replicas.node_id
    for index in indexes:
        part = replicas.partition(topic, index)
        if part is None:
            continue
        replicas.make_leader(
            topic,
            index,
            leader_epoch=part.log.latest_epoch or 0,
            isr=[node],
            replicas=[node],
            partition_epoch=0,
            now_ms=now_ms,
        )


def lead_every_partition(replicas: ReplicaManager, now_ms: int) -> None:
    """After `replicas.load`: this broker hosts (`ensure_partition`: a missing log is created)
    and leads (`lead`) every partition of every topic of the store, as a single broker's
    cluster layer does at start."""
    for info in replicas.topics.all():
        for index in range(info.partitions):
            replicas.ensure_partition(info, index, now_ms=now_ms)
        lead(replicas, info.name, range(info.partitions), now_ms)


class Leader:
    """The `ReplicaManager`'s `PartitionListener` that also makes this broker lead each new
    partition (`lead`) once the replica manager built it."""

    def __init__(self, replicas: ReplicaManager, clock: Callable[[], int]) -> None:
        self.replicas = replicas
        self.clock = clock

    def on_partitions_created(self, info: TopicInfo, logs: Sequence[PartitionLog]) -> None:
        self.replicas.on_partitions_created(info, logs)
        lead(self.replicas, info.name, [plog.partition for plog in logs], self.clock())

    def on_topic_deleted(self, info: TopicInfo) -> None:
        self.replicas.on_topic_deleted(info)

    def on_topic_configs_changed(self, info: TopicInfo) -> None:
        self.replicas.on_topic_configs_changed(info)


class Coordinator(Protocol):
    """The group or the transaction coordinator's runtime."""

    @property
    def runtime(self) -> CoordinatorRuntime: ...

    def on_became_leader(self, partition: int, leader_epoch: int) -> None: ...


def lead_coordinator(coordinator: Coordinator) -> None:
    """The coordinator leads every partition of its topic at leader epoch 0 (loads scheduled)."""
    for partition in range(coordinator.runtime.partitions):
        coordinator.on_became_leader(partition, 0)


async def coordinator_loaded(coordinator: Coordinator) -> None:
    """Until no partition of the (running) coordinator is loading."""
    runtime = coordinator.runtime
    while any(
        runtime.ownership.state(p) is PartitionState.LOADING for p in range(runtime.partitions)
    ):
        await trio.lowlevel.checkpoint()


async def coordinate_every_partition(coordinator: Coordinator) -> None:
    """The running coordinator leads and has loaded every partition of its topic."""
    lead_coordinator(coordinator)
    await coordinator_loaded(coordinator)


class LocalPartition(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def leader_id(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def replicas(self) -> list[int]: ...
    @property
    def isr(self) -> list[int]: ...


class LocalPartitions(Protocol):
    def partitions_of(self, topic: str) -> Iterable[LocalPartition]: ...
    def partition(self, topic: str, index: int) -> LocalPartition | None: ...


class LocalClusterView(ClusterView):
    """A single broker: itself (address filled once bound) over its own partitions."""

    def __init__(
        self,
        node_id: int,
        address: Callable[[], tuple[str, int]],
        partitions: LocalPartitions,
        topics: TopicStore,
        rack: str | None = None,
        endpoints: Callable[[], tuple[tuple[str, str, int], ...]] = tuple,
    ) -> None:
        super().__init__(topics)
        self.node_id = node_id
        self._address = address
        self._endpoints = endpoints
        self._parts = partitions
        self.rack = rack

    def _self(self) -> BrokerNode:
        host, port = self._address()
        return BrokerNode(self.node_id, host, port, self.rack, self._endpoints())

    def live_brokers(self) -> list[BrokerNode]:
        return [self._self()]

    def broker(self, node_id: int) -> BrokerNode | None:
        return self._self() if node_id == self.node_id else None

    def controller_id(self) -> int:
        return self.node_id

    def partitions(self, topic: str) -> list[PartitionView]:
        return [
            PartitionView(p.index, p.leader_id, p.leader_epoch, p.replicas, p.isr)
            for p in self._parts.partitions_of(topic)
        ]

    def partition(self, topic: str, index: int) -> PartitionView | None:
        p = self._parts.partition(topic, index)
        if p is None:
            return None
        return PartitionView(p.index, p.leader_id, p.leader_epoch, p.replicas, p.isr)


class LocalBrokerConfigs(BrokerConfigUpdates):
    """Dynamic broker configs held in memory only (services without coordination)."""

    async def update(self, entity: str, compute: Compute, *, validate_only: bool) -> None:
        new = compute(self.current(entity))
        if not validate_only:
            self.apply(entity, new)
