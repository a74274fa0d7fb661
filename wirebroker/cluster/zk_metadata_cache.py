"""What a broker of a ZooKeeper cluster knows of it: `ZkMetadataCache`, a `ClusterView`.

Live brokers and their epochs (the czxid of each registration), the controller, and every
topic as mirrored (`TopicMirror`: assignment, config overrides, partition states, each with the
zxid of its znode's last change as read, so an older read is never mirrored over a newer one).
Metadata, DescribeCluster and the follower fetchers read it; only the `MetadataMirror`
(zk_mirror.py) writes it, from ZooKeeper's watches. `mirrored_info` is the `TopicInfo` a
broker's `TopicStore` holds for a topic of the cluster. No I/O here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from wirebroker.coordination.api import Stat, Watch
from wirebroker.metadata.names import is_internal
from wirebroker.metadata.partition_state import PartitionState, TopicAssignment
from wirebroker.metadata.topic_store import TopicInfo, TopicStore
from wirebroker.metadata.view import BrokerNode, ClusterView, PartitionView

__all__ = ["TopicMirror", "ZkMetadataCache", "mirrored_info"]

LEADER_NOT_AVAILABLE = 5


@dataclass
class TopicMirror:
    """A topic as mirrored. The zxids are those of each znode's last change as read (its
    mzxid): an older read is never mirrored over a newer one."""

    assignment: TopicAssignment
    configs: dict[str, str] = field(default_factory=dict)
    assignment_zxid: int = 0
    states: dict[int, tuple[PartitionState, int]] = field(default_factory=dict)
    state_zxids: dict[int, int] = field(default_factory=dict)
    watches: list[Watch] = field(default_factory=list)
    state_watches: dict[int, Watch] = field(default_factory=dict)
    #: Bumped by every change of `states` (they change only through the two methods below),
    #: so a reader can tell its memo of the partitions' views is still current.
    version: int = 0

    def set_state(self, index: int, state: PartitionState, stat: Stat) -> bool:
        """Mirror a state read with `stat`, unless older than the mirrored one."""
        if stat.mzxid < self.state_zxids.get(index, 0):
            return False
        self.states[index] = (state, stat.version)
        self.state_zxids[index] = stat.mzxid
        self.version += 1
        return True

    def drop_state(self, index: int) -> None:
        self.states.pop(index, None)
        self.state_zxids.pop(index, None)
        self.version += 1


@dataclass(frozen=True)
class _ViewsMemo:
    """A topic's partition views as of a mirror, its assignment (held, so compared by
    identity), its version and the live brokers."""

    mirror: TopicMirror
    assignment: TopicAssignment
    version: int
    live: frozenset[int]
    views: tuple[PartitionView, ...]

    def current(self, mirror: TopicMirror, live: frozenset[int]) -> bool:
        return (
            mirror is self.mirror
            and mirror.assignment is self.assignment
            and mirror.version == self.version
            and live == self.live
        )


class ZkMetadataCache(ClusterView):
    """The ZooKeeper mirror as clients see it (see wirebroker.metadata.view)."""

    def __init__(self, topics: TopicStore) -> None:
        super().__init__(topics)
        self.brokers: dict[int, BrokerNode] = {}
        self.epochs: dict[int, int] = {}  # broker id -> czxid of its registration
        self.controller: int = -1
        self.topics: dict[str, TopicMirror] = {}
        # Metadata asks for every partition of a topic, often, and the views change only
        # with the mirror: a 1,000-partition topic is answered from the memo.
        self._views: dict[str, _ViewsMemo] = {}

    def live_brokers(self) -> list[BrokerNode]:
        return [self.brokers[b] for b in sorted(self.brokers)]

    def broker(self, node_id: int) -> BrokerNode | None:
        return self.brokers.get(node_id)

    def controller_id(self) -> int:
        return self.controller if self.controller in self.brokers else -1

    def broker_epoch(self, node_id: int) -> int:
        return self.epochs.get(node_id, -1)

    def partitions(self, topic: str) -> list[PartitionView]:
        mirror = self.topics.get(topic)
        if mirror is None:
            self._views.pop(topic, None)
            return []
        live = frozenset(self.brokers)
        memo = self._views.get(topic)
        if memo is None or not memo.current(mirror, live):
            views = tuple(self._view(mirror, p) for p in sorted(mirror.assignment.partitions))
            memo = _ViewsMemo(mirror, mirror.assignment, mirror.version, live, views)
            self._views[topic] = memo
        return list(memo.views)

    def partition(self, topic: str, index: int) -> PartitionView | None:
        mirror = self.topics.get(topic)
        if mirror is None or index not in mirror.assignment.partitions:
            return None
        return self._view(mirror, index)

    def _view(self, mirror: TopicMirror, index: int) -> PartitionView:
        replicas = list(mirror.assignment.replicas(index))
        offline = [r for r in replicas if r not in self.brokers]
        entry = mirror.states.get(index)
        if entry is None:
            return PartitionView(index, -1, -1, replicas, [], offline, LEADER_NOT_AVAILABLE)
        state, _version = entry
        if state.leader not in self.brokers:
            return PartitionView(
                index,
                -1,
                state.leader_epoch,
                replicas,
                list(state.isr),
                offline,
                LEADER_NOT_AVAILABLE,
            )
        return PartitionView(
            index, state.leader, state.leader_epoch, replicas, list(state.isr), offline
        )

    def state(self, topic: str, index: int) -> tuple[PartitionState, int] | None:
        mirror = self.topics.get(topic)
        return None if mirror is None else mirror.states.get(index)

    def movable_leaderships(self, node_id: int) -> list[tuple[str, int]]:
        """The partitions `node_id` leads that have another live in-sync replica."""
        out = []
        for name, mirror in self.topics.items():
            for index, (state, _v) in mirror.states.items():
                if state.leader != node_id:
                    continue
                others = [r for r in state.isr if r != node_id and r in self.brokers]
                if others:
                    out.append((name, index))
        return out


def mirrored_info(
    name: str,
    assignment: TopicAssignment,
    configs: Mapping[str, str],
    current: TopicInfo | None,
    *,
    keep: bool = True,
) -> TopicInfo:
    """The `TopicInfo` a broker's TopicStore holds for a topic of the cluster: its assignment
    (unless not `keep`) and config overrides; the topic id of the assignment (else the stored
    one, else one derived from the name)."""
    replicas = tuple(assignment.as_list())
    topic_id = assignment.topic_id
    return TopicInfo(
        name=name,
        topic_id=topic_id or (current.topic_id if current else _uuid_for(name)),
        partitions=len(replicas),
        replication_factor=len(replicas[0]) if replicas else 0,
        configs=configs,
        is_internal=is_internal(name),
        assignment=replicas if keep else (),
    )


def _uuid_for(name: str) -> uuid.UUID:
    """A topic written without an id (by an old tool): the same id on every broker."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"wirebroker-topic:{name}")
