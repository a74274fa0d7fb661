"""The controller's runtime: one broker at a time decides every partition's leader and ISR
changes that its leader cannot make itself (Kafka's KafkaController, ZooKeeper mode).

Elected by `ClusterMember` (/controller + /controller_epoch); runs until cancelled (it lost
/controller or its session) or until a write finds a newer controller epoch (then `run`
returns: this broker is no longer the controller). Its writes are multis [check
/controller_epoch at the version this controller wrote, create or setData of a state znode at
its version], so a controller that was replaced can never change a partition (Kafka's
wrapRequestWithControllerEpochCheck).

The decisions are pure (`controller_context`): this module reads ZooKeeper into the
`ControllerContext`, asks `plan` for the state writes, applies them and records what it wrote.
A write that finds a state changed meanwhile (its version check fails) makes the pass fail:
another pass reads again and plans again.

Triggers (watches): /brokers/ids (brokers come and go; a broker that re-registered with a new
czxid, "bounced", is handled as a failure then a start), /brokers/topics and each topic's
assignment (new topics and partitions), /admin/delete_topics (deletion), /wirebroker/
controlled_shutdown (brokers asking to stop), /admin/preferred_replica_election (preferred
leader election; the znode is deleted when done, as Kafka does).

Each trigger runs one pass over every partition (`_reconcile`): read each topic's assignment
and each partition's state into the context, plan, write. Partitions that the broker's mirror
shows needing a new leader are read, planned and written first, then the others; ISR-only
changes are written after every partition's new leader (`_pass`), so a dead leader's
partitions are served again before the controller spends time shrinking other ISRs. A trigger
is handled as soon as it arrives (no debounce; triggers that queued up during a pass are
collapsed into the next one). A pass is O(partitions) ZooKeeper reads, 16 in flight, which is
fine for the few hundred partitions of a local or test cluster; Kafka keeps the states in
memory instead (watched through its LeaderAndIsr answers) and batches its writes. Brokers
learn the result from their own state watches. Reassignments are started and completed at the
end of a pass over their topics (`controller_reassignments.Reassignments`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

import trio

from wirebroker.cluster import workers
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller_context import (
    ControllerContext,
    PartitionKey,
    Reconcile,
    StateEntry,
    StateWrite,
    TopicEntry,
    imbalanced,
    plan,
)
from wirebroker.cluster.controller_reassignments import Reassignments
from wirebroker.coordination.api import (
    Check,
    Coordination,
    CoordinationError,
    Create,
    NoNodeError,
    Op,
    SetData,
    TransactionError,
    Watch,
)
from wirebroker.metadata.partition_state import PartitionState

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig

__all__ = ["ControllerMember", "ZkController"]

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
#: The failures a job of a pass may have; the others end the pass at once.
_CATCH = (CoordinationError, zl.LayoutError)


class _StateHints(Protocol):
    def state(self, topic: str, index: int) -> tuple[PartitionState, int] | None: ...


class ControllerMember(Protocol):
    """What the controller uses of the broker that elected it (`ClusterMember`)."""

    @property
    def coord(self) -> Coordination: ...

    @property
    def config(self) -> BrokerConfig | None: ...

    @property
    def cache(self) -> _StateHints: ...  # the broker's mirror of the partition states

    @property
    def changed(self) -> trio.Event: ...  # set after every controller pass


def _raise_first(failures: list[Exception]) -> None:
    """The first failure, a fencing one (the controller epoch moved: TransactionError at
    index 0) before any other."""
    moved = [f for f in failures if isinstance(f, TransactionError) and f.index == 0]
    if moved or failures:
        raise (moved or failures)[0]


async def _each(items: Sequence[T], job: Callable[[T], Awaitable[None]]) -> list[Exception]:
    """`job` for every item, in order, _PARALLEL_WRITES at a time: the failures."""
    return await workers.each(items, job, limit=_PARALLEL_WRITES, catch=_CATCH)


def _every(interval_s: float, job: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    async def loop() -> None:
        while True:
            await trio.sleep(interval_s)
            job()

    return loop


class ZkController:
    def __init__(self, member: ControllerMember, epoch: int, epoch_version: int) -> None:
        self.member = member
        self.coord = member.coord
        self.context = ControllerContext(epoch, epoch_version)
        self._send, self._recv = trio.open_memory_channel[str](math.inf)
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self._seen_topics: set[str] = set()
        self._reassignments = Reassignments(
            self.coord, self.context, self._write_all, lambda topic: self._trigger(_TOPIC + topic)
        )

    @property
    def epoch(self) -> int:
        return self.context.epoch

    @property
    def epoch_version(self) -> int:
        return self.context.epoch_version

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
        """Passes until a write finds a newer controller epoch."""
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
                    log.warning("controller epoch moved on: resigning")
                    return
                log.info("controller write raced (%s); another pass follows", exc)
                self._send.send_nowait("retry")
            except CoordinationError as exc:
                log.warning("controller pass after %s failed: %s", why, exc)
                await trio.sleep(0.2)
                self._send.send_nowait("retry")
            self.member.changed.set()

    async def _write(self, op: Op) -> None:
        await self._write_all([op])

    async def _write_all(self, ops: list[Op]) -> None:
        """One multi of `ops` fenced by the controller epoch (TransactionError.index counts
        the check as 0)."""
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
        epochs: dict[int, int] = {}
        for child in await self._children(zl.BROKER_IDS):
            if not child.isdigit():
                continue
            stat = await self.coord.exists(zl.broker_path(int(child)))
            if stat is not None:
                epochs[int(child)] = stat.czxid
        bounced = self.context.set_brokers(epochs)
        self.context.shutting_down = await self._ids(zl.CONTROLLED_SHUTDOWN)
        for topic in await self._children(zl.ADMIN_DELETE_TOPICS):
            await self._delete_topic(topic)
        preferred = await self._election_requests(zl.PREFERRED_REPLICA_ELECTION)
        unclean = await self._election_requests(zl.UNCLEAN_LEADER_ELECTION)
        asked = bool(preferred)
        if rebalance:
            preferred |= await self._imbalanced()
        if bounced and only is None:
            # A bounced broker lost its session: its leaderships move first (failure), then it
            # is a live broker again (start-up).
            await self._pass(failed=bounced)
        await self._pass(preferred=preferred, only=only, unclean=unclean)
        for path, done in (
            (zl.PREFERRED_REPLICA_ELECTION, asked),
            (zl.UNCLEAN_LEADER_ELECTION, unclean),
        ):
            if done:
                with contextlib.suppress(NoNodeError):
                    await self.coord.delete(path)

    async def _ids(self, path: str) -> set[int]:
        return {int(c) for c in await self._children(path) if c.isdigit()}

    async def _topics_pass(self, only: set[str]) -> None:
        """A pass for topic triggers only (new topics, an assignment changed).

        Round 1, all requests in flight together (_PARALLEL_WRITES topics at a time): the
        live brokers, those shutting down and, for each topic this controller has not
        handled yet, its watch, its assignment and whether it has partition states (a
        /partitions znode). Round 2: every such topic without states gets all its first
        states (`plan` of partitions without state) in one multi per _STATES_PER_MULTI
        partitions, parents included, fenced by the controller epoch (Kafka's controller
        also creates a new topic's states in one batch of requests). So a new topic costs
        the controller two round trips after the trigger's. The other topics (with states,
        under reassignment, or whose states appeared meanwhile: a multi is all or nothing)
        go through the partition-by-partition pass (`_pass`).

        Broker epochs (bounces), topic deletions and preferred elections are left to the
        passes their own triggers start, which read them (so a bounce is never hidden from
        the next broker pass by a topic pass in between)."""
        got: dict[str, set[int]] = {}
        fresh = sorted(t for t in only if t not in self._seen_topics)
        read: dict[str, tuple[bytes | None, int, bool]] = {}

        async def ids(path: str) -> None:
            got[path] = await self._ids(path)

        async def reads() -> None:
            await self._raise(_each(fresh, functools.partial(self._read_new_topic, into=read)))

        await self._raise(
            workers.together(
                functools.partial(ids, zl.BROKER_IDS),
                functools.partial(ids, zl.CONTROLLED_SHUTDOWN),
                reads,
                catch=_CATCH,
            )
        )
        self.context.live = got[zl.BROKER_IDS]
        self.context.shutting_down = got[zl.CONTROLLED_SHUTDOWN]
        done = {topic for topic, (data, _v, _states) in read.items() if data is None}  # gone
        new = [topic for topic, (data, _v, states) in sorted(read.items()) if data and not states]

        async def create(topic: str) -> None:
            data, version, _states = read[topic]
            assert data is not None
            if await self._create_states(topic, data, version):
                done.add(topic)

        try:
            await self._raise(_each(new, create))
        finally:
            self._seen_topics |= done
        rest = only - done
        if rest:
            await self._pass(only=rest)

    async def _raise(self, failures: Awaitable[list[Exception]]) -> None:
        _raise_first(await failures)

    async def _read_new_topic(
        self, topic: str, *, into: dict[str, tuple[bytes | None, int, bool]]
    ) -> None:
        """Watch the topic's assignment and read it and whether /partitions exists, together:
        into[topic] = (assignment document or None when gone, its version, has partition
        states)."""
        got: dict[str, object] = {}

        async def watch() -> None:
            if topic not in self._topic_watches:
                self._topic_watches[topic] = await self.coord.watch_data(
                    zl.topic_path(topic), self._trigger(_TOPIC + topic, skip_first=True)
                )

        async def data() -> None:
            with contextlib.suppress(NoNodeError):
                got["data"], stat = await self.coord.get(zl.topic_path(topic))
                got["version"] = stat.version

        async def states() -> None:
            with contextlib.suppress(NoNodeError):
                await self.coord.get_children(zl.partitions_path(topic))
                got["states"] = True

        await self._raise(workers.together(watch, data, states, catch=_CATCH))
        raw, version = got.get("data"), got.get("version")
        into[topic] = (
            raw if isinstance(raw, bytes) else None,
            version if isinstance(version, int) else -1,
            bool(got.get("states")),
        )

    async def _create_states(self, topic: str, data: bytes, version: int) -> bool:
        """See `_topics_pass` (round 2). True when the topic is handled here."""
        try:
            assignment = zl.decode_topic(topic, data)
        except zl.LayoutError as exc:
            log.warning("ignoring topic %s: %s", topic, exc)
            return True
        if assignment.adding or assignment.removing or not assignment.partitions:
            return False
        context = self.context
        context.set_topic(topic, TopicEntry(assignment, version))
        for index in assignment.partitions:
            context.set_state(topic, index, StateEntry(None))
        writes = plan(context, Reconcile(context.partitions([topic])))
        ops: list[Op] = [Create(zl.partitions_path(topic))]
        for write in writes:
            ops.append(Create(zl.partition_path(topic, write.partition)))
            ops.append(Create(zl.state_path(topic, write.partition), _encoded(write)))
        try:
            for start in range(0, len(ops), _STATES_PER_MULTI * 2):
                await self._write_all(ops[start : start + _STATES_PER_MULTI * 2])
        except TransactionError as exc:
            for index in assignment.partitions:
                context.forget_state(topic, index)
            if exc.index == 0:
                raise
            log.info("%s: partition states appeared meanwhile (%s)", topic, exc)
            return False
        for write in writes:
            context.wrote(write)
            self._log_write(write)
        return True

    async def _imbalanced(self) -> set[PartitionKey]:
        """The partitions to move to their preferred leader (`controller_context.imbalanced`,
        Kafka's checkAndTriggerAutoLeaderRebalance) after reading every topic's assignment
        and the state of each partition whose preferred leader is live."""
        config = self.member.config
        limit = config.get_int("leader.imbalance.per.broker.percentage") if config else 10
        context = self.context
        topics = await self._children(zl.BROKER_TOPICS)
        context.keep_topics(topics)

        async def read_topic(topic: str) -> None:
            try:
                data, stat = await self.coord.get(zl.topic_path(topic))
                assignment = zl.decode_topic(topic, data)
            except (NoNodeError, zl.LayoutError):
                context.drop_topic(topic)
                return
            old = context.topics.get(topic)
            context.set_topic(
                topic, TopicEntry(assignment, stat.version, bool(old and old.unclean))
            )

        async def read_state(key: PartitionKey) -> None:
            with contextlib.suppress(zl.LayoutError):  # left out, as a state not there
                await self._read_state(key)

        await self._raise(_each(topics, read_topic))
        heads = [
            key
            for key in context.partitions()
            if (replicas := context.replicas(*key)) and replicas[0] in context.live
        ]
        await self._raise(_each(heads, read_state))
        out, brokers = imbalanced(context, limit)
        for broker in brokers:
            log.info("broker %d leads too few of its preferred partitions: rebalancing", broker)
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
        *,
        preferred: set[PartitionKey] | frozenset[PartitionKey] = frozenset(),
        only: set[str] | None = None,
        unclean: set[PartitionKey] | frozenset[PartitionKey] = frozenset(),
        failed: set[int] | frozenset[int] = frozenset(),
    ) -> None:
        """Every partition of every topic (`only`: of those topics), with up to
        _PARALLEL_WRITES ZooKeeper requests in flight:

        1. read each topic's assignment and configs into the context;
        2. the partitions that the broker's mirror shows led by a broker that is not live
           (or shutting down, or asked for a preferred election), then the others: read
           their states, `plan`, write the new leaders at once;
        3. write the ISR-only changes (a dead or stopping follower leaves the ISR) of both.

        So a broker failure makes partitions available again before the controller spends any
        time on the ISRs it only shrinks: Kafka's onBrokerFailure also elects the offline
        partitions' leaders (OnlinePartition) before it moves the dead replicas to
        OfflineReplica (removing them from the ISRs). An unclean election is allowed where
        the topic's unclean.leader.election.enable says so, and for the partitions of an
        ElectLeaders UNCLEAN (`unclean`). `failed`: brokers handled as dead (bounced)."""
        topics = await self._pass_topics(only)
        keys = self.context.partitions(topics)
        hints = {key: self._urgent(key, preferred, failed) for key in keys}
        urgent = [k for k in keys if hints[k]]
        others = [k for k in keys if not hints[k]]
        fresh: set[PartitionKey] = set()
        deferred: list[StateWrite] = []
        failures: list[Exception] = []
        for batch in (urgent, others):
            failures += await _each(batch, functools.partial(self._read_state, into=fresh))
            read = [k for k in batch if k in fresh]
            writes = plan(self.context, Reconcile(read, preferred, unclean, failed))
            deferred += [w for w in writes if not w.election]
            failures += await _each([w for w in writes if w.election], self._write_state)
        _raise_first(failures)
        await self._raise(_each(deferred, self._write_state))
        for topic in topics:
            assignment = self.context.topics[topic].assignment
            if assignment.adding or assignment.removing:
                await self._reassignments.advance(topic, self.context.live - set(failed))

    async def _pass_topics(self, only: set[str] | None) -> list[str]:
        """Read the topics of a pass (`only`: those) into the context, watching each; the
        topics read."""
        topics = sorted(await self._children(zl.BROKER_TOPICS))
        self._seen_topics &= set(topics)
        self.context.keep_topics(topics)
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
        read: set[str] = set()

        async def read_topic(topic: str) -> None:
            try:
                data, stat = await self.coord.get(zl.topic_path(topic))
                assignment = zl.decode_topic(topic, data)
            except NoNodeError:
                return
            except zl.LayoutError as exc:
                log.warning("ignoring topic %s: %s", topic, exc)
                return
            unclean = await self._unclean(topic)
            self.context.set_topic(topic, TopicEntry(assignment, stat.version, unclean))
            read.add(topic)

        await self._raise(_each(topics, read_topic))
        return [t for t in topics if t in read]

    def _urgent(
        self, key: PartitionKey, preferred: Collection[PartitionKey], failed: Collection[int]
    ) -> bool:
        """Whether the broker's mirror (a hint only: the pass reads the state znode) shows the
        partition needing a new leader."""
        if key in preferred:
            return True
        entry = self.member.cache.state(*key)
        if entry is None:
            return True
        leader = entry[0].leader
        return (
            leader not in self.context.live
            or leader in failed
            or (leader in self.context.shutting_down)
        )

    async def _read_state(
        self, key: PartitionKey, *, into: set[PartitionKey] | None = None
    ) -> None:
        """Read a partition's state into the context (forgotten when it cannot be read);
        `into` collects the partitions read."""
        topic, index = key
        self.context.forget_state(topic, index)
        try:
            data, stat = await self.coord.get(zl.state_path(topic, index))
            entry = StateEntry(zl.decode_partition_state(topic, index, data), stat.version)
        except NoNodeError:
            entry = StateEntry(None)
        self.context.set_state(topic, index, entry)
        if into is not None:
            into.add(key)

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

    async def _write_state(self, write: StateWrite) -> None:
        topic, index = write.key
        path = zl.state_path(topic, index)
        if write.version < 0:
            await self.coord.ensure_path(zl.partition_path(topic, index))
            await self._write(Create(path, _encoded(write)))
        else:
            await self._write(SetData(path, _encoded(write), write.version))
        self.context.wrote(write)
        self._log_write(write)

    def _log_write(self, write: StateWrite) -> None:
        log.info(
            "%s-%d: leader %d, leader epoch %d, ISR %s (controller epoch %d)",
            write.topic,
            write.partition,
            write.new.leader,
            write.new.leader_epoch,
            list(write.new.isr),
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


def _encoded(write: StateWrite) -> bytes:
    return zl.encode_partition_state(write.new)
