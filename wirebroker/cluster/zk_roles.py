"""Role changes: the mirrored partition states applied to this broker's replicas.

`PartitionRoles` is the one place that tells the broker's ReplicaManager (seen only through
the `ReplicaRoles` protocol, so `cluster` never imports `replication`) what to be, after every
change of a partition this broker holds a replica of: leader == self -> `make_leader`; other
leader -> `make_follower` (leader -1: follower of nobody, the partition is offline); not a
replica any more, or the topic deleted -> `stop_replica(delete=True)`. The replica set is the
assignment's, taken even with a state that is not newer (the `MetadataMirror` decides which
states and assignments are mirrored). It keeps the set of partitions hosted here.

Session lost: every leadership is dropped at once (`drop_leaderships`: `stop_replica` without
deleting, clients get NOT_LEADER_OR_FOLLOWER). Shutting down (`shutting_down`): a partition
whose ISR no longer holds this broker is not followed any more (`stop_replica` without
deleting: Kafka's StopReplica), so that its leader cannot take the stopping broker back into
the ISR.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from wirebroker.cluster.zk_metadata_cache import ZkMetadataCache
from wirebroker.cluster.zk_registration import Registration
from wirebroker.metadata.topic_store import TopicInfo, TopicStore

__all__ = ["PartitionRoles", "ReplicaRoles"]

log = logging.getLogger("wirebroker.cluster")


class ReplicaRoles(Protocol):
    """What the member asks of the broker's ReplicaManager."""

    def ensure_partition(self, info: TopicInfo, index: int, *, now_ms: int) -> object: ...

    def ensure_partitions(
        self, batch: list[tuple[TopicInfo, list[int]]], *, now_ms: int
    ) -> None: ...

    def make_leader(
        self,
        topic: str,
        index: int,
        *,
        leader_epoch: int,
        isr: list[int],
        replicas: list[int],
        partition_epoch: int,
        now_ms: int,
    ) -> bool: ...

    def make_follower(
        self,
        topic: str,
        index: int,
        *,
        leader_id: int,
        leader_epoch: int,
        isr: list[int],
        replicas: list[int],
        partition_epoch: int,
        now_ms: int,
    ) -> bool: ...

    def stop_replica(self, topic: str, index: int, *, delete: bool) -> None: ...

    def isr_committed(
        self, topic: str, index: int, *, isr: list[int], partition_epoch: int
    ) -> None: ...

    def isr_rejected(
        self,
        topic: str,
        index: int,
        *,
        leader_epoch: int | None = None,
        partition_epoch: int | None = None,
    ) -> None: ...

    def on_topic_configs_changed(self, info: TopicInfo) -> None: ...


class PartitionRoles:
    """Applies the mirror's states to the ReplicaManager (see the module docstring)."""

    def __init__(
        self,
        *,
        node_id: int,
        cache: ZkMetadataCache,
        topics: TopicStore,
        replicas: ReplicaRoles,
        clock: Callable[[], int],
        registration: Registration,
        store_assignments: bool,
    ) -> None:
        self.node_id = node_id
        self.cache = cache
        self.topics = topics
        self.replicas = replicas
        self.clock = clock
        self.registration = registration
        self.store_assignments = store_assignments
        self.hosted: set[tuple[str, int]] = set()
        self.shutting_down = False

    def apply(self, name: str, index: int) -> None:
        """Apply the partition's mirrored assignment and state to its local replica."""
        mirror = self.cache.topics.get(name)
        info = self.topics.get(name)
        if mirror is None or info is None:
            return
        replicas = list(mirror.assignment.replicas(index))
        if self.node_id not in replicas:
            if (name, index) in self.hosted:
                self.hosted.discard((name, index))
                self.replicas.stop_replica(name, index, delete=True)
            return
        self.replicas.ensure_partition(info, index, now_ms=self.clock())
        self.hosted.add((name, index))
        entry = mirror.states.get(index)
        if entry is None or not self.registration.registered:
            return
        state, version = entry
        now = self.clock()
        if state.leader == self.node_id:
            self.replicas.make_leader(
                name,
                index,
                leader_epoch=state.leader_epoch,
                isr=list(state.isr),
                replicas=replicas,
                partition_epoch=version,
                now_ms=now,
            )
        elif self.shutting_down and self.node_id not in state.isr:
            # Out of the ISR while shutting down (the controller removes a stopping broker):
            # stop fetching, as Kafka's controller sends StopReplica, or the leader would
            # take it back into the ISR as soon as it caught up, and hold acks=-1 writes
            # back once it is gone.
            self.replicas.stop_replica(name, index, delete=False)
        else:
            self.replicas.make_follower(
                name,
                index,
                leader_id=state.leader,
                leader_epoch=state.leader_epoch,
                isr=list(state.isr),
                replicas=replicas,
                partition_epoch=version,
                now_ms=now,
            )

    async def reapply_all(self) -> None:
        """Apply every hosted partition's role again (an event: controlled shutdown)."""
        for name, index in sorted(self.hosted):
            self.apply(name, index)

    def create_hosted(self, infos: list[TopicInfo]) -> None:
        """Build this broker's replicas of new topics, their logs created in one batch (one
        round of fsyncs); a storage error is logged and left to `apply`, which tries again
        partition by partition."""
        if not self.store_assignments:
            return  # a single broker: its admin created the logs before the ZooKeeper write
        batch = [
            (info, [i for i in range(info.partitions) if info.hosted_by(self.node_id, i)])
            for info in infos
        ]
        batch = [(info, indexes) for info, indexes in batch if indexes]
        if not batch:
            return
        try:
            self.replicas.ensure_partitions(batch, now_ms=self.clock())
        except Exception:
            log.exception("creating the local replicas of %d new topic(s) failed", len(batch))
            return
        for info, indexes in batch:
            self.hosted.update((info.name, i) for i in indexes)

    def delete_topic(self, info: TopicInfo) -> None:
        """The topic is gone (already removed from the store): delete its local replicas."""
        for index in range(info.partitions):
            if info.hosted_by(self.node_id, index):
                self.hosted.discard((info.name, index))
                self.replicas.stop_replica(info.name, index, delete=True)

    def drop_leaderships(self) -> None:
        """The session is lost: stop leading at once, every partition led here.

        stop_replica, not make_follower: the state znode still names this broker leader at
        the same (leader epoch, version), which a Partition ignores as not newer, so a
        make_follower of nobody would leave it leading (a zombie taking writes)."""
        for name, mirror in self.cache.topics.items():
            for index, (state, _version) in mirror.states.items():
                if state.leader == self.node_id and (name, index) in self.hosted:
                    self.replicas.stop_replica(name, index, delete=False)
