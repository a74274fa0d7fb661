"""Topic administration in a ZooKeeper cluster: the same checks as a single broker, then
Kafka's znodes instead of local files (Kafka's AdminZkClient).

Every check (names, configs, replication factor against the registered brokers, manual
assignments) is `TopicChecks`'s (`wirebroker.metadata.topic_admin`, the one validation path a
unit tests' `LocalTopicAdmin` runs too); only the effects differ:

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
broker): each checks, then starts its ZooKeeper writes as a task of the member
(`ClusterMember.start_soon`) and returns. Handlers then `await admin.wait_settled(names,
timeout_s)`, which waits for those writes and until this broker's mirror shows the result
(every new partition has a leader, a deleted topic is gone), bounded by the request's
timeout: Kafka's CreateTopics/DeleteTopics also answer once the metadata has caught up, or
with REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.coordination.api import (
    CoordinationError,
    Create,
    NodeExistsError,
    NoNodeError,
    TransactionError,
)
from wirebroker.log.errors import LogError
from wirebroker.metadata.errors import ClusterError, TopicExistsError
from wirebroker.metadata.partition_state import TopicAssignment
from wirebroker.metadata.placement import BrokerMetadata, assign_added_partitions, assign_replicas
from wirebroker.metadata.reassignment import check_target, unknown_partition
from wirebroker.metadata.topic_admin import (
    CreateTopicResult,
    NewPartitions,
    NewTopic,
    TopicAdmin,
    TopicChecks,
    create_each,
)
from wirebroker.metadata.topic_configs import topic_log_config
from wirebroker.metadata.topic_store import TopicInfo

if TYPE_CHECKING:
    from wirebroker.cluster.zk_member import ClusterMember
    from wirebroker.config import BrokerConfig
    from wirebroker.log.log_manager import LogManager
    from wirebroker.metadata.view import PartitionView

__all__ = ["ZkTopicAdmin"]

UNKNOWN_SERVER_ERROR = -1
REQUEST_TIMED_OUT = 7
PREFERRED_LEADER_NOT_AVAILABLE = 80
ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
ELECTION_NOT_NEEDED = 84
ELECTION_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."  # Kafka's

#: How long a creation refuses a second create of the same name while the member has not
#: mirrored the topic into the store yet (a few checkpoints normally).
_MIRROR_WAIT_S = 30.0

log = logging.getLogger(__name__)


class ZkTopicAdmin(TopicAdmin):
    """`local_logs` (a single broker, which holds every partition and is the only broker that
    can create a topic): the new partitions' logs are created in one batch before the
    ZooKeeper write (as the unit tests' `LocalTopicAdmin` does before its commit), so a
    storage error is answered at once (nothing kept) and the member finds the logs in place.
    The checks are `checks` (`TopicChecks` over the member's topic store and registered
    brokers)."""

    def __init__(
        self,
        config: BrokerConfig,
        member: ClusterMember,
        logs: LogManager,
        *,
        local_logs: bool = False,
    ) -> None:
        self.config = config
        self.topics = member.topics
        self.logs = logs
        self.node_id = member.node_id
        self.checks = TopicChecks(config, member.topics, lambda: self.brokers)
        self.member = member
        self.local_logs = local_logs
        self._writes: list[trio.Event] = []
        self._failures: dict[str, CoordinationError] = {}
        #: What the last started write of a topic should lead to: ("exists", partitions),
        #: ("gone", 0), ("configs", 0) (the mirror holds `_configs[name]`) or ("written", 0).
        #: Kept until reached, so every waiter of a name sees it.
        self._intent: dict[str, tuple[str, int]] = {}
        self._configs: dict[str, dict[str, str]] = {}
        #: Topics whose creation was started here and is not in the store yet -> when to
        #: forget them anyway (inf while their ZooKeeper write runs).
        self._creating: dict[str, float] = {}
        self._pruning = False

    @property
    def brokers(self) -> list[int]:
        return sorted(self.member.cache.brokers)

    def describe(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

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

        self.member.start_soon(run)

    # -- create ------------------------------------------------------------------------------
    def create(self, topic: NewTopic, *, now_ms: int, validate_only: bool = False) -> TopicInfo:
        info = self.checks.new_topic(topic)
        if info.name in self._creating:
            raise TopicExistsError(f"Topic '{info.name}' already exists.")
        if topic.assignments:
            assignment = {i: list(r) for i, r in sorted(topic.assignments, key=lambda a: a[0])}
        else:
            assignment = assign_replicas(self._racks(), info.partitions, info.replication_factor)
        info = dataclasses.replace(
            info, assignment=tuple(tuple(assignment[i]) for i in sorted(assignment))
        )
        if validate_only:
            return info
        return self._commit(info, now_ms)

    def create_topics(
        self, topics: Sequence[NewTopic], *, now_ms: int, validate_only: bool = False
    ) -> list[CreateTopicResult]:
        """With `local_logs` (a single broker) and several topics: every topic checked and
        placed first, then the logs of all of them created in one batch (one round of
        fsyncs; when that fails, each topic's own creation answers its error), then each
        topic's ZooKeeper write started. Otherwise one topic after the other."""
        if validate_only or not self.local_logs or len(topics) < 2:
            return create_each(self.create, topics, now_ms=now_ms, validate_only=validate_only)
        planned: list[CreateTopicResult] = []
        for topic in topics:
            try:
                planned.append(self.create(topic, now_ms=now_ms, validate_only=True))
            except (ClusterError, LogError) as exc:
                planned.append(exc)
        infos = [p for p in planned if isinstance(p, TopicInfo)]
        batch = [
            (
                info,
                [
                    i
                    for i, r in enumerate(info.assignment)
                    if self.node_id in r and self.logs.get(info.name, i) is None
                ],
            )
            for info in infos
        ]
        made: dict[str, list[int]] = {}
        try:
            self.logs.create_topics(
                [
                    (info.name, wanted, topic_log_config(self.config, info.configs), info.topic_id)
                    for info, wanted in batch
                    if wanted
                ],
                now_ms,
            )
            made = {info.name: wanted for info, wanted in batch}
        except LogError as exc:
            log.warning("creating the logs of %d topics at once failed: %s", len(batch), exc)
        out: list[CreateTopicResult] = []
        for result in planned:
            if not isinstance(result, TopicInfo):
                out.append(result)
                continue
            try:
                out.append(self._commit(result, now_ms, made.get(result.name)))
            except (ClusterError, LogError) as exc:
                out.append(exc)
        return out

    def _commit(self, info: TopicInfo, now_ms: int, created: list[int] | None = None) -> TopicInfo:
        """Create a checked and placed topic: its local logs (unless `created`: made
        already), then its znodes (started; `wait_settled` waits for them)."""
        assignment = {i: list(r) for i, r in enumerate(info.assignment)}
        doc = zl.encode_topic(
            TopicAssignment({i: tuple(r) for i, r in assignment.items()}, info.topic_id)
        )
        configs = zl.encode_topic_config({k: v for k, v in info.configs.items()})
        if created is None:
            created = self._create_local_logs(info, assignment, 0, now_ms)
        name = info.name

        async def write() -> None:
            try:
                await self._write_topic(name, configs, doc)
                log.info("created topic %s with assignment %s", name, assignment)
            except CoordinationError:
                self._creating.pop(name, None)
                self._delete_local_logs(name, created)
                raise
            # Until the store has it, another create of the name is refused here.
            self._creating[name] = trio.current_time() + _MIRROR_WAIT_S
            self._prune_soon()

        self._creating[name] = math.inf  # (while the write runs)
        self._start(name, write, ("exists", info.partitions))
        return info

    async def _write_topic(self, name: str, configs: bytes, doc: bytes) -> None:
        """/config/topics/<T> then /brokers/topics/<T> (Kafka's order: whoever sees the topic
        finds its configs), in one multi (one round trip). A config znode left behind (a
        deletion interrupted) is overwritten; an existing topic znode raises NodeExistsError."""
        coord = self.member.coord
        try:
            await coord.multi(
                [Create(zl.topic_config_path(name), configs), Create(zl.topic_path(name), doc)]
            )
            return
        except TransactionError as exc:
            if exc.index == 1 or not isinstance(exc.cause, (NodeExistsError, NoNodeError)):
                raise exc.cause from exc
        # The config znode exists (or a parent is missing): the two steps one by one.
        try:
            await coord.create(zl.topic_config_path(name), configs, makepath=True)
        except NodeExistsError:
            await coord.set(zl.topic_config_path(name), configs)
        await coord.create(zl.topic_path(name), doc, makepath=True)

    def _prune_soon(self) -> None:
        """Start the one task that forgets the names of `_creating` once the store has them
        (or after _MIRROR_WAIT_S): one wake-up per member change, whatever the number of
        topics being created."""
        if self._pruning:
            return
        self._pruning = True
        self.member.start_soon(self._prune_creating)

    async def _prune_creating(self) -> None:
        try:
            while self._creating:
                now = trio.current_time()
                for name, deadline in list(self._creating.items()):
                    if now >= deadline or (
                        deadline != math.inf and self.topics.get(name) is not None
                    ):
                        del self._creating[name]
                if not self._creating or all(d == math.inf for d in self._creating.values()):
                    return  # (a write still running calls _prune_soon when it is done)
                with trio.move_on_at(min(self._creating.values())):
                    await self.member.changed.wait()
        finally:
            self._pruning = False

    def _create_local_logs(
        self, info: TopicInfo, assignment: Mapping[int, Sequence[int]], first: int, now_ms: int
    ) -> list[int]:
        """With `local_logs`: create the logs of the partitions from `first` this broker holds
        (one batch); the indexes created. Raises the storage error (nothing kept)."""
        if not self.local_logs:
            return []
        wanted = [
            i
            for i in sorted(assignment)
            if i >= first and self.node_id in assignment[i] and self.logs.get(info.name, i) is None
        ]
        if wanted:
            config = topic_log_config(self.config, info.configs)
            self.logs.create_many(info.name, wanted, config, now_ms, info.topic_id)
        return wanted

    def _delete_local_logs(self, name: str, indexes: Sequence[int]) -> None:
        """The ZooKeeper write that would have recorded them failed: the new logs go again."""
        for index in indexes:
            try:
                self.logs.delete(name, index)
            except Exception:  # pragma: no cover - best effort rollback
                log.exception("rollback of %s-%d failed", name, index)

    def create_partitions(
        self, request: NewPartitions, *, now_ms: int, validate_only: bool = False
    ) -> None:
        info = self.checks.new_partitions(request)
        if validate_only:
            return
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
        created = self._create_local_logs(info, new, current, now_ms)

        async def write() -> None:
            try:
                data, stat = await coord.get(zl.topic_path(name))
                old = zl.decode_topic(name, data)
                parts = dict(old.partitions)
                parts.update({i: tuple(r) for i, r in new.items()})
                await coord.set(
                    zl.topic_path(name),
                    zl.encode_topic(dataclasses.replace(old, partitions=parts)),
                    stat.version,
                )
            except CoordinationError:
                self._delete_local_logs(name, created)
                raise

        self._start(name, write, ("exists", request.count))

    # -- delete / alter ------------------------------------------------------------------------
    def delete_topic(self, name: str) -> TopicInfo:
        info = self.checks.deleted_topic(name)
        coord = self.member.coord

        async def write() -> None:
            with contextlib.suppress(NodeExistsError):
                await coord.create(f"{zl.ADMIN_DELETE_TOPICS}/{name}", makepath=True)

        self._start(name, write, ("gone", 0))
        return info

    def alter_topic_configs(
        self, name: str, configs: Mapping[str, str | None], *, validate_only: bool = False
    ) -> None:
        _, overrides = self.checks.topic_configs(name, configs)
        if validate_only:
            return
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

        self._configs[name] = dict(overrides)
        self._start(name, write, ("configs", 0))

    # -- reassignments (KIP-455, Kafka's ZooKeeper-mode controller) ----------------------------
    async def alter_reassignments(
        self, changes: Sequence[tuple[str, int, Sequence[int] | None]], *, allow_rf_change: bool
    ) -> dict[tuple[str, int], tuple[int, str | None]] | None:
        """Start or cancel reassignments: /brokers/topics/<T> gets, per partition, the full
        replica set (target first, then the replicas leaving) with adding_replicas and
        removing_replicas; the controller completes it once every target replica is in the ISR
        (see wirebroker.cluster.controller). Cancelling restores the original replicas."""
        cache = self.member.cache
        out: dict[tuple[str, int], tuple[int, str | None]] = {}
        by_topic: dict[str, dict[int, Sequence[int] | None]] = {}
        for topic, index, target in changes:
            mirror = cache.topics.get(topic)
            if mirror is None or index not in mirror.assignment.partitions:
                out[(topic, index)] = unknown_partition(
                    topic, index, topic_exists=mirror is not None
                )
                continue
            problem = self._check_target(mirror.assignment, index, target, allow_rf_change)
            if problem is not None:
                out[(topic, index)] = problem
                continue
            by_topic.setdefault(topic, {})[index] = target
        coord = self.member.coord
        for topic, wanted in by_topic.items():
            try:
                data, stat = await coord.get(zl.topic_path(topic))
                old = zl.decode_topic(topic, data)
                await coord.set(
                    zl.topic_path(topic), zl.encode_topic(reassigned(old, wanted)), stat.version
                )
            except CoordinationError as exc:
                for index in wanted:
                    out[(topic, index)] = (UNKNOWN_SERVER_ERROR, f"ZooKeeper write failed: {exc}")
                continue
            for index in wanted:
                out[(topic, index)] = (0, None)
        return out

    def _check_target(
        self,
        assignment: TopicAssignment,
        index: int,
        target: Sequence[int] | None,
        allow_rf_change: bool,
    ) -> tuple[int, str | None] | None:
        current = [
            r for r in assignment.replicas(index) if r not in assignment.adding.get(index, ())
        ]
        return check_target(
            current,
            target,
            ongoing=index in assignment.adding or index in assignment.removing,
            registered=self.member.cache.brokers,
            allow_rf_change=allow_rf_change,
        )

    def reassignments(self) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]] | None:
        out = {}
        for topic, mirror in self.member.cache.topics.items():
            a = mirror.assignment
            for index in sorted(set(a.adding) | set(a.removing)):
                out[(topic, index)] = (
                    list(a.replicas(index)),
                    list(a.adding.get(index, ())),
                    list(a.removing.get(index, ())),
                )
        return out

    # -- elections ------------------------------------------------------------------------
    async def elect_leaders(
        self, partitions: Sequence[tuple[str, int]], *, preferred: bool, timeout_s: float
    ) -> dict[tuple[str, int], tuple[int, str | None]] | None:
        """Ask the controller for elections, then wait until this broker's mirror shows them
        done. Preferred (/admin/preferred_replica_election): for the partitions whose preferred
        replica is live, in the ISR and not leading. Unclean (KIP-460;
        /wirebroker/unclean_leader_election): for the partitions without a leader that have a
        live replica; the controller elects the first live replica even when it is out of
        sync and the topic does not allow unclean elections by itself."""
        cache = self.member.cache
        out: dict[tuple[str, int], tuple[int, str | None]] = {}
        wanted: list[tuple[str, int]] = []
        for topic, index in partitions:
            view = cache.partition(topic, index)
            if view is None:
                continue
            answer = (
                _preferred_answer(view, cache.brokers, topic, index)
                if preferred
                else _unclean_answer(view, cache.brokers, topic, index)
            )
            if answer is None:
                wanted.append((topic, index))
            else:
                out[(topic, index)] = answer
        if not wanted:
            return out
        path = zl.PREFERRED_REPLICA_ELECTION if preferred else zl.UNCLEAN_LEADER_ELECTION
        pending = self._not_preferred if preferred else self._leaderless
        with trio.move_on_after(max(timeout_s, 0.0)):
            await self._ask_controller(path, zl.encode_preferred_election(wanted))
            while any(pending(t, i) for t, i in wanted):
                await self.member.changed.wait()
        what = "preferred" if preferred else "unclean"
        for topic, index in wanted:
            if pending(topic, index):
                out[(topic, index)] = (REQUEST_TIMED_OUT, f"The {what} leader was not elected")
            else:
                out[(topic, index)] = (0, None)
        return out

    async def _ask_controller(self, path: str, data: bytes) -> None:
        """Create the election request znode, once the previous request is done."""
        while True:
            try:
                await self.member.coord.create(path, data)
                return
            except NodeExistsError:
                await self.member.changed.wait()  # another election is running

    def _leaderless(self, topic: str, index: int) -> bool:
        view = self.member.cache.partition(topic, index)
        return view is None or view.leader < 0

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
            failure = self._failures.pop(name, None)
            if failure is not None:
                problems[name] = f"{type(failure).__name__}: {failure}"
            elif not self._settled(name):
                problems[name] = "timed out waiting for the cluster metadata"
                continue
            self._intent.pop(name, None)
            self._configs.pop(name, None)
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
        if want == "configs":
            stored = self.topics.get(name)
            wanted = self._configs.get(name)
            return (
                mirror is None
                or stored is None
                or (mirror.configs == wanted and dict(stored.configs) == wanted)
            )
        if mirror is None or mirror.assignment.count < partitions:
            return False
        if len(mirror.states) < mirror.assignment.count:
            return False  # (cheap: this runs after every change while a big topic is made)
        return all(
            (entry := mirror.states.get(i)) is not None and entry[0].leader >= 0
            for i in mirror.assignment.partitions
        )


def reassigned(old: TopicAssignment, wanted: Mapping[int, Sequence[int] | None]) -> TopicAssignment:
    """The topic document after starting (target) or cancelling (None) reassignments.

    Start: replicas = target + the current replicas not in it (Kafka's order: the target's
    head becomes the preferred leader), adding = target - current, removing = current -
    target. A new target replaces an ongoing one (current = the original replicas). Cancel:
    replicas = the original replicas, nothing adding or removing."""
    partitions = dict(old.partitions)
    adding = dict(old.adding)
    removing = dict(old.removing)
    for index, target in wanted.items():
        original = [r for r in old.replicas(index) if r not in old.adding.get(index, ())]
        adding.pop(index, None)
        removing.pop(index, None)
        if target is None or list(target) == original:
            partitions[index] = tuple(original)
            continue
        partitions[index] = (*target, *(r for r in original if r not in target))
        new = tuple(r for r in target if r not in original)
        gone = tuple(r for r in original if r not in target)
        if new:
            adding[index] = new
        if gone:
            removing[index] = gone
    return dataclasses.replace(old, partitions=partitions, adding=adding, removing=removing)


def _preferred_answer(
    view: PartitionView, live: Collection[int], topic: str, index: int
) -> tuple[int, str | None] | None:
    """A preferred election's answer when no election is needed or possible, else None."""
    head = view.replicas[0] if view.replicas else -1
    if view.leader == head:
        return ELECTION_NOT_NEEDED, ELECTION_NOT_NEEDED_MESSAGE
    if head not in live or head not in view.isr:
        return (
            PREFERRED_LEADER_NOT_AVAILABLE,
            f"Failed to elect leader for partition {topic}-{index} under strategy "
            "PreferredReplicaPartitionLeaderElectionStrategy",
        )
    return None


def _unclean_answer(
    view: PartitionView, live: Collection[int], topic: str, index: int
) -> tuple[int, str | None] | None:
    """An unclean election's answer when no election is needed or possible, else None."""
    if view.leader >= 0:
        return ELECTION_NOT_NEEDED, ELECTION_NOT_NEEDED_MESSAGE
    if not any(r in live for r in view.replicas):
        return ELIGIBLE_LEADERS_NOT_AVAILABLE, f"No eligible leader for {topic}-{index}"
    return None
