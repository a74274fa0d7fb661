"""The controller: one broker at a time decides every partition's leader and ISR changes
that its leader cannot make itself (Kafka's KafkaController, ZooKeeper mode).

Elected by `ClusterMember` (/controller + /controller_epoch); runs until cancelled (it lost
/controller or its session) or until a write finds a newer controller epoch
(`ControllerMovedError`). Its writes are multis [check /controller_epoch at the version this
controller wrote, create or setData of a state znode at its version], so a controller that
was replaced can never change a partition (Kafka's wrapRequestWithControllerEpochCheck).

Triggers (watches): /brokers/ids (brokers come and go; a broker that re-registered with a new
czxid, "bounced", is handled as a failure then a start), /brokers/topics and each topic's
assignment (new topics and partitions), /admin/delete_topics (deletion), /wirebroker/
controlled_shutdown (brokers asking to stop), /admin/preferred_replica_election (preferred
leader election; the znode is deleted when done, as Kafka does).

Each trigger runs one pass over every partition (`_reconcile`): read its state znode, ask
`elections.decide`, write what changed; new leaders first, ISR-only changes after every
partition was read (`_pass`), so a dead leader's partitions are served again before the
controller spends time shrinking other ISRs. A trigger is handled as soon as it arrives (no
debounce; triggers that queued up during a pass are collapsed into the next one). A pass is
O(partitions) ZooKeeper reads, 16 in flight, which is fine for the few hundred partitions of a
local or test cluster; Kafka keeps the states in memory instead and batches its writes.
Brokers learn the result from their own state watches. Reassignments are started and completed
at the end of a pass over their topics (`controller_reassignments.Reassignments`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import trio

from wirebroker.cluster import workers
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller_reassignments import Reassignments
from wirebroker.cluster.elections import decide
from wirebroker.coordination.api import (
    Check,
    CoordinationError,
    Create,
    NoNodeError,
    Op,
    SetData,
    TransactionError,
    Watch,
)

if TYPE_CHECKING:
    from wirebroker.cluster.zk_member import ClusterMember

__all__ = ["ZkController"]

log = logging.getLogger("wirebroker.controller")


T = TypeVar("T")

REBALANCE = "rebalance"
_TOPIC = "topic:"  # trigger prefix: one topic's assignment or a reassigning state changed
#: ZooKeeper requests one controller pass keeps in flight (a broker failure touches every
#: partition it led or followed; one at a time would take a round trip each).
_PARALLEL_WRITES = 16
#: Partitions whose first states one multi creates (3 znodes each; ZooKeeper bounds a
#: request by jute.maxbuffer, 1 MB by default).
_STATES_PER_MULTI = 500
_ZK_ERRORS = (CoordinationError,)


def _raise_first(failures: list[Exception]) -> None:
    """The first failure, a fencing one (the controller epoch moved: TransactionError at
    index 0) before any other."""
    moved = [f for f in failures if isinstance(f, TransactionError) and f.index == 0]
    if moved or failures:
        raise (moved or failures)[0]


async def _each(items: list[str], job: Callable[[str], Awaitable[None]]) -> None:
    """`job(item)` for every item, _PARALLEL_WRITES at a time; `_raise_first` of the
    ZooKeeper failures once all have run."""
    _raise_first(await workers.each(items, job, limit=_PARALLEL_WRITES, catch=_ZK_ERRORS))


async def _together(*jobs: Callable[[], Awaitable[None]]) -> None:
    """Run the jobs side by side (ZooKeeper requests in flight together); raises as `_each`."""
    _raise_first(await workers.together(*jobs, catch=_ZK_ERRORS))


def _every(interval_s: float, job: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    async def loop() -> None:
        while True:
            await trio.sleep(interval_s)
            job()

    return loop


class ZkController:
    def __init__(self, member: ClusterMember, epoch: int, epoch_version: int) -> None:
        self.member = member
        self.coord = member.coord
        self.epoch = epoch
        self.epoch_version = epoch_version
        self._send, self._recv = trio.open_memory_channel[str](math.inf)
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self._czxids: dict[int, int] = {}
        self._preferred: set[tuple[str, int]] = set()
        self._seen_topics: set[str] = set()
        self._reassignments = Reassignments(self, lambda topic: self._trigger(_TOPIC + topic))

    def _trigger(self, why: str, *, skip_first: bool = False) -> Callable[..., None]:
        """A watch callback queueing `why`; `skip_first`: not for the watch's first call (the
        current value, which the pass that set the watch reads right after)."""
        first = [skip_first]

        def callback(*_args: object) -> None:
            if first[0]:
                first[0] = False
                return
            self._send.send_nowait(why)

        return callback

    async def run(self) -> None:

        try:
            for path in (
                zl.BROKER_IDS,
                zl.BROKER_TOPICS,
                zl.ADMIN_DELETE_TOPICS,
                zl.CONTROLLED_SHUTDOWN,
            ):
                self._watches.append(await self.coord.watch_children(path, self._trigger(path)))
            for path in (zl.PREFERRED_REPLICA_ELECTION, zl.UNCLEAN_LEADER_ELECTION):
                self._watches.append(await self.coord.watch_data(path, self._trigger(path)))
            config = self.member.config
            async with trio.open_nursery() as nursery:
                if config is not None and config.get_bool("auto.leader.rebalance.enable"):
                    interval = config.get_int("leader.imbalance.check.interval.seconds")
                    nursery.start_soon(_every(interval, lambda: self._send.send_nowait(REBALANCE)))
                await self._loop()
                nursery.cancel_scope.cancel()
        finally:
            for watch in [*self._watches, *self._topic_watches.values()]:
                watch.cancel()
            self._reassignments.cancel()

    async def _loop(self) -> None:
        from wirebroker.cluster.zk_member import ControllerMovedError

        while True:
            whys = {await self._recv.receive()}
            # Collapse a burst of triggers into one pass.
            while True:
                try:
                    whys.add(self._recv.receive_nowait())
                except trio.WouldBlock:
                    break
            why = ", ".join(sorted(whys))
            rebalance = REBALANCE in whys
            # Only topic triggers (a new topic, an assignment or a reassigning partition's state
            # changed): a pass over those topics, not every partition of the cluster.
            only: set[str] | None = None
            if all(w.startswith(_TOPIC) or w == zl.BROKER_TOPICS for w in whys):
                only = {w[len(_TOPIC) :] for w in whys if w.startswith(_TOPIC)}
                if zl.BROKER_TOPICS in whys:
                    only |= set(await self._children(zl.BROKER_TOPICS)) - self._seen_topics
            try:
                await self._reconcile(rebalance=rebalance, only=only)
            except TransactionError as exc:
                if exc.index == 0:
                    raise ControllerMovedError() from exc
                log.info("controller write raced (%s); another pass follows", exc)
                self._send.send_nowait("retry")
            except CoordinationError as exc:
                log.warning("controller pass after %s failed: %s", why, exc)
                await trio.sleep(0.2)
                self._send.send_nowait("retry")
            self.member.changed.set()

    async def _write(self, op: Op) -> None:
        await self.coord.multi([Check(zl.CONTROLLER_EPOCH, self.epoch_version), op])

    async def _write_all(self, ops: list[Op]) -> None:
        """One multi of `ops` fenced by the controller epoch (TransactionError.index counts
        the check as 0, as `_write` does)."""
        await self.coord.multi([Check(zl.CONTROLLER_EPOCH, self.epoch_version), *ops])

    async def _children(self, path: str) -> list[str]:
        try:
            return await self.coord.get_children(path)
        except NoNodeError:
            return []

    async def _reconcile(self, *, rebalance: bool = False, only: set[str] | None = None) -> None:
        """One pass: every partition (`only`: the partitions of those topics, through
        `_topics_pass`: new topics get their states in two round trips)."""
        if only is not None and not rebalance:
            await self._topics_pass(only)
            return
        live: set[int] = set()
        bounced: set[int] = set()
        for child in await self._children(zl.BROKER_IDS):
            if not child.isdigit():
                continue
            stat = await self.coord.exists(zl.broker_path(int(child)))
            if stat is None:
                continue
            broker = int(child)
            live.add(broker)
            old = self._czxids.get(broker)
            if old is not None and old != stat.czxid:
                bounced.add(broker)
            self._czxids[broker] = stat.czxid
        for gone in set(self._czxids) - live:
            del self._czxids[gone]
        shutting = {int(c) for c in await self._children(zl.CONTROLLED_SHUTDOWN) if c.isdigit()}
        for topic in await self._children(zl.ADMIN_DELETE_TOPICS):
            await self._delete_topic(topic)
        preferred = await self._election_requests(zl.PREFERRED_REPLICA_ELECTION)
        unclean = await self._election_requests(zl.UNCLEAN_LEADER_ELECTION)
        asked = bool(preferred)
        if rebalance:
            preferred |= await self._imbalanced(live)
        if bounced and only is None:
            # A bounced broker lost its session: its leaderships move first (failure), then it
            # is a live broker again (start-up).
            await self._pass(live - bounced, shutting, set())
        await self._pass(live, shutting, preferred, only=only, unclean_asked=unclean)
        for path, done in (
            (zl.PREFERRED_REPLICA_ELECTION, asked),
            (zl.UNCLEAN_LEADER_ELECTION, unclean),
        ):
            if done:
                with contextlib.suppress(NoNodeError):
                    await self.coord.delete(path)

    async def _topics_pass(self, only: set[str]) -> None:
        """A pass for topic triggers only (new topics, an assignment changed).

        Round 1, all requests in flight together (_PARALLEL_WRITES topics at a time): the
        live brokers, those shutting down and, for each topic this controller has not
        handled yet, its watch, its assignment and whether it has partition states (a
        /partitions znode). Round 2: every such topic without states gets all its first
        states in one multi per _STATES_PER_MULTI partitions, parents included, fenced by
        the controller epoch (`decide` of no state: the first live replica not shutting down
        leads, the live replicas are the ISR, leader epoch 0; Kafka's controller also
        creates a new topic's states in one batch of requests). So a new topic costs the
        controller two round trips after the trigger's. The other topics (with states, under
        reassignment, or whose states appeared meanwhile: a multi is all or nothing) go
        through the partition-by-partition pass (`_pass`).

        Broker epochs (bounces), topic deletions and preferred elections are left to the
        passes their own triggers start, which read them (so a bounce is never hidden from
        the next broker pass by a topic pass in between)."""
        got: dict[str, list[str]] = {}
        fresh = sorted(t for t in only if t not in self._seen_topics)
        read: dict[str, tuple[bytes | None, bool]] = {}

        async def children(path: str) -> None:
            got[path] = await self._children(path)

        async def reads() -> None:
            await _each(fresh, functools.partial(self._read_new_topic, into=read))

        await _together(
            functools.partial(children, zl.BROKER_IDS),
            functools.partial(children, zl.CONTROLLED_SHUTDOWN),
            reads,
        )
        live = {int(c) for c in got[zl.BROKER_IDS] if c.isdigit()}
        shutting = {int(c) for c in got[zl.CONTROLLED_SHUTDOWN] if c.isdigit()}
        done = {topic for topic, (data, _states) in read.items() if data is None}  # gone
        new = [topic for topic, (data, states) in sorted(read.items()) if data and not states]

        async def create(topic: str) -> None:
            data = read[topic][0]
            assert data is not None
            if await self._create_states(topic, data, live, shutting):
                done.add(topic)

        try:
            await _each(new, create)
        finally:
            self._seen_topics |= done
        rest = only - done
        if rest:
            await self._pass(live, shutting, set(), only=rest)

    async def _read_new_topic(
        self, topic: str, *, into: dict[str, tuple[bytes | None, bool]]
    ) -> None:
        """Watch the topic's assignment and read it and whether /partitions exists, together:
        into[topic] = (assignment document or None when gone, has partition states)."""
        got: dict[str, object] = {}

        async def watch() -> None:
            if topic not in self._topic_watches:
                self._topic_watches[topic] = await self.coord.watch_data(
                    zl.topic_path(topic), self._trigger(_TOPIC + topic, skip_first=True)
                )

        async def data() -> None:
            with contextlib.suppress(NoNodeError):
                got["data"] = (await self.coord.get(zl.topic_path(topic)))[0]

        async def states() -> None:
            with contextlib.suppress(NoNodeError):
                await self.coord.get_children(zl.partitions_path(topic))
                got["states"] = True

        await _together(watch, data, states)
        raw = got.get("data")
        into[topic] = (raw if isinstance(raw, bytes) else None, bool(got.get("states")))

    async def _create_states(
        self, topic: str, data: bytes, live: set[int], shutting: set[int]
    ) -> bool:
        """See `_topics_pass` (round 2). True when the topic is handled here."""
        try:
            assignment = zl.decode_topic(topic, data)
        except zl.LayoutError as exc:
            log.warning("ignoring topic %s: %s", topic, exc)
            return True
        if assignment.adding or assignment.removing or not assignment.partitions:
            return False
        states: dict[int, zl.PartitionState] = {}
        ops: list[Op] = [Create(zl.partitions_path(topic))]
        for index, replicas in sorted(assignment.partitions.items()):
            new = decide(
                replicas, None, live=live, shutting_down=shutting, controller_epoch=self.epoch
            )
            assert new is not None  # decide() always starts a partition without state
            states[index] = new
            ops.append(Create(zl.partition_path(topic, index)))
            ops.append(Create(zl.state_path(topic, index), zl.encode_partition_state(new)))
        try:
            for start in range(0, len(ops), _STATES_PER_MULTI * 2):
                await self._write_all(ops[start : start + _STATES_PER_MULTI * 2])
        except TransactionError as exc:
            if exc.index == 0:
                raise
            log.info("%s: partition states appeared meanwhile (%s)", topic, exc)
            return False
        for index, new in states.items():
            log.info(
                "%s-%d: leader %d, leader epoch %d, ISR %s (controller epoch %d)",
                topic,
                index,
                new.leader,
                new.leader_epoch,
                list(new.isr),
                self.epoch,
            )
        return True

    async def _imbalanced(self, live: set[int]) -> set[tuple[str, int]]:
        """Kafka's checkAndTriggerAutoLeaderRebalance: the partitions whose preferred leader
        (head of the assignment) is live but does not lead, for every broker whose share of
        such partitions is above leader.imbalance.per.broker.percentage."""
        config = self.member.config
        limit = config.get_int("leader.imbalance.per.broker.percentage") if config else 10
        preferred: dict[int, list[tuple[str, int]]] = {}
        not_leading: dict[int, list[tuple[str, int]]] = {}
        for topic in await self._children(zl.BROKER_TOPICS):
            try:
                data, _stat = await self.coord.get(zl.topic_path(topic))
                assignment = zl.decode_topic(topic, data)
            except (NoNodeError, zl.LayoutError):
                continue
            for index, replicas in assignment.partitions.items():
                if not replicas or replicas[0] not in live:
                    continue
                head = replicas[0]
                preferred.setdefault(head, []).append((topic, index))
                try:
                    raw, _s = await self.coord.get(zl.state_path(topic, index))
                    leader = zl.decode_partition_state(topic, index, raw).leader
                except (NoNodeError, zl.LayoutError):
                    continue
                if leader != head:
                    not_leading.setdefault(head, []).append((topic, index))
        out: set[tuple[str, int]] = set()
        for broker, parts in not_leading.items():
            if len(parts) * 100 > limit * len(preferred[broker]):
                log.info("broker %d leads too few of its preferred partitions: rebalancing", broker)
                out.update(parts)
        return out

    async def _election_requests(self, path: str) -> set[tuple[str, int]]:
        """The partitions a preferred or unclean election request (`path`) names."""
        try:
            data, _stat = await self.coord.get(path)
        except NoNodeError:
            return set()
        try:
            return set(zl.decode_preferred_election(data, path))
        except zl.LayoutError as exc:
            log.warning("ignoring %s: %s", path, exc)
            return set()

    async def _pass(
        self,
        live: set[int],
        shutting: set[int],
        preferred: set[tuple[str, int]],
        *,
        only: set[str] | None = None,
        unclean_asked: frozenset[tuple[str, int]] | set[tuple[str, int]] = frozenset(),
    ) -> None:
        """Every partition of every topic (`only`: of those topics), in two phases, each with
        up to _PARALLEL_WRITES ZooKeeper requests in flight:

        1. read each topic's assignment and configs;
        2. read each partition's state and decide; a new leader (an election: the leader died,
           is shutting down, a preferred election, a partition without state) is written at
           once, an ISR-only change (a dead or stopping follower leaves the ISR) waits until
           every partition was read, then those are written. Partitions that the broker's
           mirror shows led by a broker that is not live (or shutting down, or asked for a
           preferred election) are read first. An unclean election is allowed where the
           topic's unclean.leader.election.enable says so, and for the partitions of an
           ElectLeaders UNCLEAN (`unclean_asked`).

        So a broker failure makes partitions available again before the controller spends any
        time on the ISRs it only shrinks: Kafka's onBrokerFailure also elects the offline
        partitions' leaders (OnlinePartition) before it moves the dead replicas to
        OfflineReplica (removing them from the ISRs)."""
        topics = sorted(await self._children(zl.BROKER_TOPICS))
        self._seen_topics &= set(topics)
        if only is not None:
            topics = [t for t in topics if t in only]
        # Only a topic this pass handles counts as seen: one created while the pass ran is
        # picked up by the next /brokers/topics trigger.
        self._seen_topics.update(topics)
        for topic in topics:
            if topic not in self._topic_watches:
                self._topic_watches[topic] = await self.coord.watch_data(
                    zl.topic_path(topic), self._trigger(_TOPIC + topic, skip_first=True)
                )
        read: dict[str, tuple[zl.TopicAssignment, int, bool]] = {}

        async def read_topic(topic: str) -> None:
            try:
                data, stat = await self.coord.get(zl.topic_path(topic))
                assignment = zl.decode_topic(topic, data)
            except NoNodeError:
                return
            except zl.LayoutError as exc:
                log.warning("ignoring topic %s: %s", topic, exc)
                return
            read[topic] = (assignment, stat.version, await self._unclean(topic))

        await self._parallel(topics, read_topic)

        items = [
            (topic, index, replicas)
            for topic in topics
            if topic in read
            for index, replicas in sorted(read[topic][0].partitions.items())
        ]
        items.sort(key=lambda item: not self._urgent(item[0], item[1], live, shutting, preferred))
        states: dict[str, dict[int, zl.PartitionState | None]] = {t: {} for t in read}
        deferred: list[tuple[str, int, zl.PartitionState, zl.PartitionState, int]] = []

        async def decide_partition(item: tuple[str, int, tuple[int, ...]]) -> None:
            topic, index, replicas = item
            unclean = read[topic][2] or (topic, index) in unclean_asked
            state, version, new = await self._decide(
                topic, index, replicas, live, shutting, unclean, (topic, index) in preferred
            )
            states[topic][index] = state
            if new is None:
                return
            if state is not None and new.leader == state.leader:
                deferred.append((topic, index, state, new, version))
                return
            await self._write_state(topic, index, state, new, version)
            states[topic][index] = new

        await self._parallel(items, decide_partition)

        async def write_deferred(
            item: tuple[str, int, zl.PartitionState, zl.PartitionState, int],
        ) -> None:
            topic, index, state, new, version = item
            await self._write_state(topic, index, state, new, version)
            states[topic][index] = new

        await self._parallel(deferred, write_deferred)
        for topic, (assignment, version, _unclean) in read.items():
            if assignment.adding or assignment.removing:
                await self._reassignments.advance(topic, assignment, version, states[topic], live)

    def _urgent(
        self,
        topic: str,
        index: int,
        live: set[int],
        shutting: set[int],
        preferred: set[tuple[str, int]],
    ) -> bool:
        """Whether the broker's mirror (a hint only: the pass reads the state znode) shows the
        partition needing a new leader."""
        if (topic, index) in preferred:
            return True
        entry = self.member.cache.state(topic, index)
        if entry is None:
            return True
        leader = entry[0].leader
        return leader not in live or leader in shutting

    async def _parallel(self, items: Sequence[T], job: Callable[[T], Awaitable[None]]) -> None:
        """`job` for every item, in order, up to _PARALLEL_WRITES at once (`workers.each`).
        Raises the first failure after all ran; a ControllerMovedError cause (the epoch check
        of a write failed) first."""
        failures = await workers.each(
            items, job, limit=_PARALLEL_WRITES, catch=(CoordinationError, zl.LayoutError)
        )
        _raise_first(failures)

    async def _unclean(self, topic: str) -> bool:
        try:
            data, _stat = await self.coord.get(zl.topic_config_path(topic))
            value = zl.decode_topic_config(topic, data).get("unclean.leader.election.enable")
        except (NoNodeError, zl.LayoutError):
            value = None
        if value is None:
            config = self.member.config
            value = config.raw("unclean.leader.election.enable") if config else None
        return (value or "false").lower() == "true"

    async def _decide(
        self,
        topic: str,
        index: int,
        replicas: tuple[int, ...],
        live: set[int],
        shutting: set[int],
        unclean: bool,
        preferred: bool,
    ) -> tuple[zl.PartitionState | None, int, zl.PartitionState | None]:
        """(current state or None, its znode version or -1, the state to write or None)."""
        path = zl.state_path(topic, index)
        try:
            data, stat = await self.coord.get(path)
            state: zl.PartitionState | None = zl.decode_partition_state(topic, index, data)
            version = stat.version
        except NoNodeError:
            state, version = None, -1
        new = decide(
            replicas,
            state,
            live=live,
            shutting_down=shutting,
            unclean=unclean,
            controller_epoch=self.epoch,
            preferred=preferred,
        )
        return state, version, new

    async def _write_state(
        self,
        topic: str,
        index: int,
        state: zl.PartitionState | None,
        new: zl.PartitionState,
        version: int,
    ) -> None:
        path = zl.state_path(topic, index)
        encoded = zl.encode_partition_state(new)
        if state is None:
            await self.coord.ensure_path(zl.partition_path(topic, index))
            await self._write(Create(path, encoded))
        else:
            await self._write(SetData(path, encoded, version))
        log.info(
            "%s-%d: leader %d, leader epoch %d, ISR %s (controller epoch %d)",
            topic,
            index,
            new.leader,
            new.leader_epoch,
            list(new.isr),
            self.epoch,
        )

    async def _delete_topic(self, topic: str) -> None:
        log.info("deleting topic %s", topic)
        for path in (zl.topic_path(topic), zl.topic_config_path(topic)):
            with contextlib.suppress(NoNodeError):
                await self.coord.delete(path, recursive=True)
        watch = self._topic_watches.pop(topic, None)
        if watch is not None:
            watch.cancel()
        with contextlib.suppress(NoNodeError):
            await self.coord.delete(f"{zl.ADMIN_DELETE_TOPICS}/{topic}")
