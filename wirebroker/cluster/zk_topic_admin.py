"""Topic administration in a ZooKeeper cluster: the same checks as a single broker, then
Kafka's znodes instead of local files (Kafka's AdminZkClient).

Every check (names, configs, replication factor against the *live* brokers, manual
assignments) is `LocalTopicAdmin`'s; only the effects differ:

    create topic        placement (`placement.assign_replicas`: Kafka's random start and shift,
                        rack-aware when every broker has a rack) or the manual assignment, then
                        /config/topics/<T> and /brokers/topics/<T> (Kafka's order); the
                        controller creates the partition states, every broker's watch creates
                        its replicas
    create partitions   `placement.assign_added_partitions`, setData /brokers/topics/<T> at the
                        version read (a concurrent change is refused, not overwritten)
    delete topic        the /admin/delete_topics/<T> marker; the controller deletes the znodes,
                        the brokers their replicas
    alter configs       /config/topics/<T> and a /config/changes notification

The methods stay synchronous (the `TopicAdmin` interface the handlers share with a single
broker): each checks, then starts its ZooKeeper writes in the member's nursery and returns.
Handlers then `await admin.wait_settled(names, timeout_s)`, which waits for those writes and
until this broker's mirror shows the result (every new partition has a leader, a deleted topic
is gone), bounded by the request's timeout: Kafka's CreateTopics/DeleteTopics also answer once
the metadata has caught up, or with REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.errors import UnknownTopicError
from wirebroker.cluster.placement import BrokerMetadata, assign_added_partitions, assign_replicas
from wirebroker.cluster.topic_admin import LocalTopicAdmin, NewPartitions, NewTopic
from wirebroker.cluster.topic_configs import validate_topic_configs
from wirebroker.cluster.topic_store import TopicInfo
from wirebroker.coordination.api import CoordinationError, Create, NodeExistsError, NoNodeError

if TYPE_CHECKING:
    from wirebroker.cluster.zk_member import ClusterMember
    from wirebroker.config import BrokerConfig
    from wirebroker.log.log_manager import LogManager

__all__ = ["ZkTopicAdmin"]

REQUEST_TIMED_OUT = 7
PREFERRED_LEADER_NOT_AVAILABLE = 80
ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
ELECTION_NOT_NEEDED = 84

log = logging.getLogger(__name__)


class ZkTopicAdmin(LocalTopicAdmin):
    def __init__(self, config: BrokerConfig, member: ClusterMember, logs: LogManager) -> None:
        super().__init__(config, member.topics, logs, node_id=member.node_id, listener=None)
        self.member = member
        self._writes: list[trio.Event] = []
        self._failures: dict[str, CoordinationError] = {}
        #: What the last started write of a topic should lead to: ("exists", partitions),
        #: ("gone", 0) or ("written", 0).
        self._intent: dict[str, tuple[str, int]] = {}

    @property
    def brokers(self) -> list[int]:
        return sorted(self.member.cache.brokers)

    def _racks(self) -> list[BrokerMetadata]:
        return [BrokerMetadata(b.node_id, b.rack) for b in self.member.cache.live_brokers()]

    def _start(
        self, name: str, write: Callable[[], Awaitable[None]], intent: tuple[str, int]
    ) -> None:
        self._intent[name] = intent
        done = trio.Event()
        self._writes.append(done)
        self._failures.pop(name, None)

        async def run() -> None:
            try:
                await write()
            except CoordinationError as exc:
                log.warning("topic %s: ZooKeeper write failed: %s", name, exc)
                self._failures[name] = exc
            finally:
                done.set()

        nursery = self.member._nursery
        assert nursery is not None, "the cluster member is not running"
        nursery.start_soon(run)

    # -- create ------------------------------------------------------------------------------
    def create(self, topic: NewTopic, *, now_ms: int, validate_only: bool = False) -> TopicInfo:
        info = super().create(topic, now_ms=now_ms, validate_only=True)
        if topic.assignments:
            assignment = {i: list(r) for i, r in sorted(topic.assignments, key=lambda a: a[0])}
        else:
            assignment = assign_replicas(self._racks(), info.partitions, info.replication_factor)
        info = dataclasses.replace(
            info, assignment=tuple(tuple(assignment[i]) for i in sorted(assignment))
        )
        if validate_only:
            return info
        doc = zl.encode_topic(
            zl.TopicAssignment({i: tuple(r) for i, r in assignment.items()}, info.topic_id)
        )
        configs = zl.encode_topic_config({k: v for k, v in info.configs.items()})
        coord = self.member.coord

        async def write() -> None:
            try:
                await coord.create(zl.topic_config_path(info.name), configs, makepath=True)
            except NodeExistsError:
                await coord.set(zl.topic_config_path(info.name), configs)
            await coord.create(zl.topic_path(info.name), doc, makepath=True)
            log.info("created topic %s with assignment %s", info.name, assignment)

        self._start(info.name, write, ("exists", info.partitions))
        return info

    def create_partitions(
        self, request: NewPartitions, *, now_ms: int, validate_only: bool = False
    ) -> None:
        super().create_partitions(request, now_ms=now_ms, validate_only=True)
        if validate_only:
            return
        info = self.topics.get(request.name)
        assert info is not None
        current = info.partitions
        added = request.count - current
        if request.assignments is not None:
            new = {current + i: list(r) for i, r in enumerate(request.assignments)}
        else:
            head = info.assignment[0] if info.assignment else (self.node_id,)
            new = assign_added_partitions(
                self._racks(), head, current, added, info.replication_factor
            )
        coord = self.member.coord
        name = request.name

        async def write() -> None:
            data, stat = await coord.get(zl.topic_path(name))
            old = zl.decode_topic(name, data)
            parts = dict(old.partitions)
            parts.update({i: tuple(r) for i, r in new.items()})
            await coord.set(
                zl.topic_path(name),
                zl.encode_topic(dataclasses.replace(old, partitions=parts)),
                stat.version,
            )

        self._start(name, write, ("exists", request.count))

    # -- delete / alter ------------------------------------------------------------------------
    def delete_topic(self, name: str) -> TopicInfo:
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicError("This server does not host this topic-partition.")
        coord = self.member.coord

        async def write() -> None:
            with contextlib.suppress(NodeExistsError):
                await coord.create(f"{zl.ADMIN_DELETE_TOPICS}/{name}", makepath=True)

        self._start(name, write, ("gone", 0))
        return info

    def alter_topic_configs(
        self, name: str, configs: Mapping[str, str | None], *, validate_only: bool = False
    ) -> None:
        super_validate = LocalTopicAdmin.alter_topic_configs
        super_validate(self, name, configs, validate_only=True)
        if validate_only:
            return
        overrides = validate_topic_configs(configs)
        data = zl.encode_topic_config(overrides)
        coord = self.member.coord

        async def write() -> None:
            try:
                await coord.set(zl.topic_config_path(name), data)
            except NoNodeError:
                await coord.create(zl.topic_config_path(name), data, makepath=True)
            await coord.multi(
                [
                    Create(
                        f"{zl.CONFIG_CHANGES}/config_change_",
                        zl.encode_config_change(name),
                        sequential=True,
                    )
                ]
            )

        self._start(name, write, ("written", 0))

    # -- elections ------------------------------------------------------------------------
    async def elect_leaders(
        self, partitions: Sequence[tuple[str, int]], *, preferred: bool, timeout_s: float
    ) -> dict[tuple[str, int], tuple[int, str | None]] | None:
        """Preferred: ask the controller (/admin/preferred_replica_election) for the partitions
        whose preferred replica is live, in the ISR and not leading, then wait until this
        broker's mirror shows it leading. Unclean elections are only run by the controller on
        its own (when `unclean.leader.election.enable`); asked for, they answer as Kafka does
        when no election is possible or needed."""
        cache = self.member.cache
        out: dict[tuple[str, int], tuple[int, str | None]] = {}
        wanted: list[tuple[str, int]] = []
        for topic, index in partitions:
            view = cache.partition(topic, index)
            if view is None:
                continue
            head = view.replicas[0] if view.replicas else -1
            if not preferred:
                if view.leader >= 0:
                    out[(topic, index)] = (ELECTION_NOT_NEEDED, "Leader election not needed")
                else:
                    out[(topic, index)] = (
                        ELIGIBLE_LEADERS_NOT_AVAILABLE,
                        f"No eligible leader for {topic}-{index}",
                    )
            elif view.leader == head:
                out[(topic, index)] = (ELECTION_NOT_NEEDED, "Leader election not needed")
            elif head not in cache.brokers or head not in view.isr:
                out[(topic, index)] = (
                    PREFERRED_LEADER_NOT_AVAILABLE,
                    f"Failed to elect leader for partition {topic}-{index} under strategy "
                    "PreferredReplicaPartitionLeaderElectionStrategy",
                )
            else:
                wanted.append((topic, index))
        if not wanted:
            return out
        coord = self.member.coord
        data = zl.encode_preferred_election(wanted)
        with trio.move_on_after(max(timeout_s, 0.0)):
            while True:
                try:
                    await coord.create(zl.PREFERRED_REPLICA_ELECTION, data)
                    break
                except NodeExistsError:
                    await self.member.changed.wait()  # another election is running
            while any(self._not_preferred(t, i) for t, i in wanted):
                await self.member.changed.wait()
        for topic, index in wanted:
            if self._not_preferred(topic, index):
                out[(topic, index)] = (REQUEST_TIMED_OUT, "The preferred leader was not elected")
            else:
                out[(topic, index)] = (0, None)
        return out

    def _not_preferred(self, topic: str, index: int) -> bool:
        view = self.member.cache.partition(topic, index)
        return view is None or not view.replicas or view.leader != view.replicas[0]

    # -- settling ------------------------------------------------------------------------------
    async def wait_settled(self, names: Sequence[str], timeout_s: float) -> dict[str, str]:
        """Wait for the started writes, then for the mirror to show `names` settled (every
        partition led, or the topic gone). Returns name -> problem for those that did not."""
        writes, self._writes = self._writes, []
        problems: dict[str, str] = {}
        with trio.move_on_after(max(timeout_s, 0.0)):
            for done in writes:
                await done.wait()
            for name in names:
                while not self._settled(name):
                    await self.member.changed.wait()
        for name in names:
            settled = self._settled(name)
            self._intent.pop(name, None)
            failure = self._failures.pop(name, None)
            if failure is not None:
                problems[name] = f"{type(failure).__name__}: {failure}"
            elif not settled:
                problems[name] = "timed out waiting for the cluster metadata"
        return problems

    def _settled(self, name: str) -> bool:
        if name in self._failures:
            return True
        want, partitions = self._intent.get(name, ("written", 0))
        mirror = self.member.cache.topics.get(name)
        if want == "gone":
            return mirror is None
        if want == "written":
            return True
        if mirror is None or mirror.assignment.count < partitions:
            return False
        return all(
            (entry := mirror.states.get(i)) is not None and entry[0].leader >= 0
            for i in mirror.assignment.partitions
        )
