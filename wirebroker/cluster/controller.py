"""The controller's runtime: one broker at a time decides every partition's leader and ISR
changes that its leader cannot make itself (Kafka's KafkaController, ZooKeeper mode).

Elected by `ClusterMember` (/controller + /controller_epoch); runs until cancelled (it lost
/controller or its session) or until a write finds a newer controller epoch (then `run`
returns: this broker is no longer the controller). Its writes are multis [check
/controller_epoch at the version this controller wrote, create or setData of a state znode at
its version], so a controller that was replaced can never change a partition (Kafka's
wrapRequestWithControllerEpochCheck).

The decisions are pure (`controller_context.plan`); this runtime keeps a long-lived
`ControllerContext`, as Kafka's ZooKeeper-mode controller keeps its ControllerContext:

    become controller    load the whole context once (`ContextReader.load`), then plan every
                         partition (Kafka's onControllerFailover); stale ISR change
                         notifications are deleted
    /brokers/ids         re-read the broker registrations only; plan every partition from
                         the context (a bounced broker, same id with a new czxid, is planned
                         as a failure, then as a start-up)
    /wirebroker/controlled_shutdown
                         re-read that list only; plan every partition
    /brokers/topics      read only the new topics (their assignment, and states when they
                         have some; a new topic's first states are created in one multi per
                         _STATES_PER_MULTI partitions); forget the deleted ones
    /brokers/topics/<T>  re-read that topic's assignment only (new partitions, reassignment)
    /isr_change_notification
                         a leader changed an ISR (`zk_isr.IsrWriter` writes the notification in
                         the multi of its state write): re-read only the partitions named,
                         delete the notifications; last in a pass, PARALLEL notifications at a
                         time, and a broker gone or stopping (`_URGENT`) waiting in the queue
                         stops it between two of those (the rest is queued again): moving a
                         leadership never waits behind ISR bookkeeping
    /admin/delete_topics, /admin/preferred_replica_election, /wirebroker/
    unclean_leader_election
                         read that request; plan only the partitions named
    a reassigning partition's state (`controller_reassignments`)
                         re-read that state only
    rebalance timer      `imbalanced` from the context (no reads)

Its own writes keep the context current: a successful multi records the written state (or
assignment) at the znode's next version (`ControllerContext.wrote`); a write refused because
the znode changed meanwhile (its version check failed) re-reads only the partitions involved
and plans them again; a refused controller epoch check ends `run` (resign). Any other
ZooKeeper failure (a read or a write whose outcome is unknown) marks the context stale: the
next pass loads it whole again. The unclean.leader.election.enable of a topic is read just
before planning a partition of it that has no live ISR member (`unclean_candidates`).
Triggers that queue up during a pass are handled together by the next one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TYPE_CHECKING, Protocol

import trio

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
    unclean_candidates,
)
from wirebroker.cluster.controller_reads import PARALLEL, ContextReader, each
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

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig

__all__ = ["ControllerMember", "ZkController"]

log = logging.getLogger("wirebroker.controller")

REBALANCE = "rebalance"
RELOAD = "reload"
_TOPIC = "topic:"  # trigger prefix: one topic's assignment changed
_STATE = "state:"  # trigger prefix: one partition's state must be read ("state:<topic>:<p>")
#: Partitions whose first states one multi creates (3 znodes each; ZooKeeper bounds a
#: request by jute.maxbuffer, 1 MB by default).
_STATES_PER_MULTI = 500
#: Passes over partitions whose conditional write was refused before they wait for a trigger.
_STALE_ROUNDS = 3
#: Triggers that the reading of ISR change notifications yields to: a broker gone or stopping
#: (its leaderships move now; a leader's ISR growing can wait).
_URGENT = frozenset({zl.BROKER_IDS, zl.CONTROLLED_SHUTDOWN})


class ControllerMember(Protocol):
    """What the controller uses of the broker that elected it (`ClusterMember`)."""

    @property
    def coord(self) -> Coordination: ...

    @property
    def config(self) -> BrokerConfig | None: ...

    @property
    def changed(self) -> trio.Event: ...  # set after every controller pass


class _Resign(Exception):
    """A write found a newer controller epoch."""


def _every(interval_s: float, job: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    async def loop() -> None:
        while True:
            await trio.sleep(interval_s)
            job()

    return loop


def state_trigger(topic: str, index: int) -> str:
    return f"{_STATE}{topic}:{index}"


class ZkController:
    def __init__(self, member: ControllerMember, epoch: int, epoch_version: int) -> None:
        self.member = member
        self.coord = member.coord
        self.context = ControllerContext(epoch, epoch_version)
        self.reader = ContextReader(self.coord, self.context, member.config)
        self.loaded = False  # the context was loaded and kept current since
        self._moved = False  # a write inside a batch found a newer controller epoch
        self._send, self._recv = trio.open_memory_channel[str](math.inf)
        self._pending: set[str] = set()  # triggers received, for the next pass
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self._isr_children: list[str] = []
        self._topic_children: list[str] = []
        self._ignored: set[str] = set()  # topics whose assignment cannot be decoded
        self._reassignments = Reassignments(
            self.coord,
            self.context,
            self._write_all,
            lambda topic, index: self._trigger(state_trigger(topic, index)),
        )

    @property
    def epoch(self) -> int:
        return self.context.epoch

    @property
    def epoch_version(self) -> int:
        return self.context.epoch_version

    def _trigger(self, why: str, *, skip_first: bool = False) -> Callable[..., None]:
        """A watch callback queueing `why`; `skip_first`: not for the watch's first call (the
        current value, which whoever set the watch reads right after)."""
        first = [skip_first]

        def callback(*_args: object) -> None:
            if first[0]:
                first[0] = False
                return
            self._send.send_nowait(why)

        return callback

    def _children_trigger(self, why: str, keep: list[str]) -> Callable[..., None]:
        """A children watch callback keeping the latest children in `keep`, queueing `why`."""

        def callback(children: list[str] | None) -> None:
            keep[:] = children or []
            self._send.send_nowait(why)

        return callback

    async def run(self) -> None:
        try:
            for path in (zl.BROKER_IDS, zl.ADMIN_DELETE_TOPICS, zl.CONTROLLED_SHUTDOWN):
                self._watches.append(await self.coord.watch_children(path, self._trigger(path)))
            for path, keep in (
                (zl.BROKER_TOPICS, self._topic_children),
                (zl.ISR_CHANGE_NOTIFICATION, self._isr_children),
            ):
                callback = self._children_trigger(path, keep)
                self._watches.append(await self.coord.watch_children(path, callback))
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
            if not self._pending:
                self._pending.add(await self._recv.receive())
            self._drain()  # a burst of triggers: one pass
            whys, self._pending = self._pending, set()
            try:
                await self._handle(whys)
            except _Resign:
                log.warning("controller epoch moved on: resigning")
                return
            except (CoordinationError, zl.LayoutError) as exc:
                log.warning("controller pass failed (%s): reloading its context", exc)
                self.loaded = False
                await trio.sleep(0.2)
                self._send.send_nowait(RELOAD)
            self.member.changed.set()

    def _drain(self) -> None:
        """Move the triggers queued meanwhile into `_pending`."""
        while True:
            try:
                self._pending.add(self._recv.receive_nowait())
            except trio.WouldBlock:
                return

    def _urgent_waiting(self) -> bool:
        self._drain()
        return bool(self._pending & _URGENT)

    # -- one pass ------------------------------------------------------------------------------
    async def _handle(self, whys: set[str]) -> None:
        """Read what the triggers say changed into the context, plan, write (see the module
        docstring)."""
        context = self.context
        keys: set[PartitionKey] = set()
        everything = False
        bounced: set[int] = set()
        loading = not self.loaded
        if loading:
            bounced = await self.reader.load()
            self.loaded = True
            everything = True
            whys |= {zl.ADMIN_DELETE_TOPICS, zl.PREFERRED_REPLICA_ELECTION}
            whys |= {zl.UNCLEAN_LEADER_ELECTION, zl.BROKER_TOPICS}
            await self._watch_topics(context.topics)
            await self.reader.isr_changes(self._isr_children)  # the states were just read
        else:
            if zl.BROKER_IDS in whys:
                bounced = await self.reader.brokers()
                everything = True
            if zl.CONTROLLED_SHUTDOWN in whys:
                await self.reader.shutting_down()
                everything = True
            keys |= await self._partition_triggers(whys)
        if zl.BROKER_TOPICS in whys:
            keys |= await self._topics_changed()
        if zl.ADMIN_DELETE_TOPICS in whys:
            for topic in await self.reader.children(zl.ADMIN_DELETE_TOPICS):
                await self._delete_topic(topic)
        preferred: set[PartitionKey] = set()
        unclean: set[PartitionKey] = set()
        if zl.PREFERRED_REPLICA_ELECTION in whys:
            preferred = await self.reader.election_requests(zl.PREFERRED_REPLICA_ELECTION)
        if zl.UNCLEAN_LEADER_ELECTION in whys:
            unclean = await self.reader.election_requests(zl.UNCLEAN_LEADER_ELECTION)
        asked = bool(preferred)
        if REBALANCE in whys:
            preferred |= self._imbalanced()
        keys |= preferred | unclean
        todo = context.partitions() if everything else sorted(keys)
        if bounced:
            # A bounced broker lost its session: its leaderships move first (failure), then it
            # is a live broker again (start-up).
            await self._reconcile(todo, failed=bounced)
        await self._reconcile(todo, preferred=preferred, unclean=unclean)
        await self._advance_reassignments({topic for topic, _p in todo})
        for path, done in (
            (zl.PREFERRED_REPLICA_ELECTION, asked),
            (zl.UNCLEAN_LEADER_ELECTION, unclean),
        ):
            if done:
                with contextlib.suppress(NoNodeError):
                    await self.coord.delete(path)
        if zl.ISR_CHANGE_NOTIFICATION in whys and not loading:
            await self._isr_changes()

    async def _isr_changes(self) -> None:
        """Re-read and plan the partitions that the ISR change notifications name, PARALLEL
        notifications at a time (each deleted once read); an `_URGENT` trigger waiting after
        one such step ends this pass and queues the rest."""
        names = sorted(self._isr_children)
        for start in range(0, len(names), PARALLEL):
            if start and self._urgent_waiting():
                self._pending.add(zl.ISR_CHANGE_NOTIFICATION)
                return
            changed = await self.reader.isr_changes(names[start : start + PARALLEL])
            await self.reader.states(changed)
            await self._reconcile(sorted(changed))
            await self._advance_reassignments({topic for topic, _p in changed})

    async def _partition_triggers(self, whys: set[str]) -> set[PartitionKey]:
        """Re-read what the topic and state triggers name: the partitions to plan."""
        keys: set[PartitionKey] = set()
        states: set[PartitionKey] = set()
        topics = sorted(w[len(_TOPIC) :] for w in whys if w.startswith(_TOPIC))
        for why in whys:
            if why.startswith(_STATE):
                topic, _sep, index = why[len(_STATE) :].rpartition(":")
                states.add((topic, int(index)))
        for topic in topics:
            self._ignored.discard(topic)
            if not await self.reader.topic(topic):
                continue
            parts = self.context.partitions([topic])
            keys.update(parts)
            states.update(k for k in parts if k not in self.context.states)  # new partitions
        await self.reader.states(states)
        return keys | states

    async def _topics_changed(self) -> set[PartitionKey]:
        """/brokers/topics changed: forget the deleted topics, read the new ones (a new topic
        without states gets them here, `_create_states`); the partitions to plan."""
        children = set(self._topic_children)
        for gone in set(self.context.topics) - children:
            self._forget_topic(gone)
        self._ignored &= children
        fresh = sorted(children - set(self.context.topics) - self._ignored)
        if not fresh:
            return set()
        read = await self.reader.new_topics(fresh, self._watch_topic)
        created: set[str] = set()

        async def create(topic: str) -> None:
            data, version, has_states = read[topic]
            if data is None or has_states:
                return
            if await self._fenced(self._create_states(topic, data, version)):
                created.add(topic)

        await each(sorted(read), create)
        self._resign_if_moved()
        keys: set[PartitionKey] = set()
        for topic in sorted(set(read) - created):
            if read[topic][0] is None or not await self.reader.topic(topic):
                self._ignored.add(topic)
                continue
            parts = self.context.partitions([topic])
            await self.reader.states(parts)
            keys.update(parts)
        return keys

    async def _watch_topics(self, topics: Collection[str]) -> None:
        await each(sorted(topics), self._watch_topic)

    async def _watch_topic(self, topic: str) -> None:
        if topic not in self._topic_watches:
            self._topic_watches[topic] = await self.coord.watch_data(
                zl.topic_path(topic), self._trigger(_TOPIC + topic, skip_first=True)
            )

    def _forget_topic(self, topic: str) -> None:
        self.context.drop_topic(topic)
        watch = self._topic_watches.pop(topic, None)
        if watch is not None:
            watch.cancel()
        self._reassignments.forget(topic)

    def _reassigning(self) -> set[str]:
        return {
            topic
            for topic, entry in self.context.topics.items()
            if entry.assignment.adding or entry.assignment.removing
        }

    def _imbalanced(self) -> set[PartitionKey]:
        """The partitions to move to their preferred leader (`controller_context.imbalanced`,
        Kafka's checkAndTriggerAutoLeaderRebalance), from the context."""
        config = self.member.config
        limit = config.get_int("leader.imbalance.per.broker.percentage") if config else 10
        out, brokers = imbalanced(self.context, limit)
        for broker in brokers:
            log.info("broker %d leads too few of its preferred partitions: rebalancing", broker)
        return out

    # -- planning and writing ------------------------------------------------------------------
    async def _reconcile(
        self,
        keys: Sequence[PartitionKey],
        *,
        preferred: Collection[PartitionKey] = frozenset(),
        unclean: Collection[PartitionKey] = frozenset(),
        failed: Collection[int] = frozenset(),
    ) -> None:
        """Plan `keys` and write the result in two phases: the new leaders (PARALLEL at a
        time), then, planned again from the context those writes updated, the ISR-only
        changes; so a dead or stopping leader's partitions are served again before the
        controller spends time on ISRs it only shrinks (Kafka's onBrokerFailure elects the
        offline partitions before it moves the dead replicas to OfflineReplica). In each
        phase a partition whose write was refused (its znode changed: an ISR change not yet
        read) is read again and planned again, up to _STALE_ROUNDS times, before the next
        phase; then it is left to a trigger of its own, queued."""
        event = Reconcile(list(keys), preferred, unclean, failed)
        await self.reader.unclean(unclean_candidates(self.context, event.partitions, failed))
        for elections_only in (True, False):
            todo = list(keys)
            for _round in range(_STALE_ROUNDS):
                writes = plan(self.context, dataclasses.replace(event, partitions=todo))
                if elections_only:
                    writes = [w for w in writes if w.election]
                stale: set[PartitionKey] = set()
                await each(writes, functools.partial(self._write_state, stale=stale))
                self._resign_if_moved()
                if not stale:
                    break
                await self.reader.states(stale)
                todo = [k for k in todo if k in stale]
                await self.reader.unclean(unclean_candidates(self.context, todo, failed))
            else:  # still refused: left to a trigger of its own
                for key in todo:
                    self._send.send_nowait(state_trigger(*key))
                keys = [k for k in keys if k not in todo]

    async def _write_all(self, ops: list[Op]) -> None:
        """One multi of `ops` fenced by the controller epoch (TransactionError.index counts
        the check as 0): `_Resign` when the epoch moved on."""
        try:
            await self.coord.multi([Check(zl.CONTROLLER_EPOCH, self.epoch_version), *ops])
        except TransactionError as exc:
            if exc.index == 0:
                raise _Resign from exc
            raise

    async def _fenced(self, write: Awaitable[bool]) -> bool:
        """`write` as a job of a batch: a newer controller epoch only sets `_moved` (the
        batch's caller resigns once every job ended, `_resign_if_moved`)."""
        try:
            return await write
        except _Resign:
            self._moved = True
            return False

    def _resign_if_moved(self) -> None:
        if self._moved:
            raise _Resign

    async def _write_state(self, write: StateWrite, *, stale: set[PartitionKey]) -> None:
        """Write one planned state; a refused version check adds the partition to `stale`."""
        topic, index = write.key
        path = zl.state_path(topic, index)

        async def apply() -> bool:
            if write.version < 0:
                await self.coord.ensure_path(zl.partition_path(topic, index))
                await self._write_all([Create(path, _encoded(write))])
            else:
                await self._write_all([SetData(path, _encoded(write), write.version)])
            return True

        try:
            if not await self._fenced(apply()):
                return
        except TransactionError as exc:
            log.info("%s-%d: state changed meanwhile (%s); reading it again", topic, index, exc)
            stale.add(write.key)
            return
        self.context.wrote(write)
        self._log_write(write)

    async def _create_states(self, topic: str, data: bytes, version: int) -> bool:
        """A new topic's first states (`plan` of partitions without state), in one multi per
        _STATES_PER_MULTI partitions, parents included (Kafka's controller also creates a new
        topic's states in one batch of requests). True when the topic is handled here; False
        when its states appeared meanwhile or it is being reassigned (read, then planned)."""
        try:
            assignment = zl.decode_topic(topic, data)
        except zl.LayoutError as exc:
            log.warning("ignoring topic %s: %s", topic, exc)
            self._ignored.add(topic)
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
            log.info("%s: partition states appeared meanwhile (%s)", topic, exc)
            return False
        for write in writes:
            context.wrote(write)
            self._log_write(write)
        return True

    async def _advance_reassignments(self, topics: set[str]) -> None:
        """Start or complete the reassignments of `topics` (`Reassignments.advance`); a
        write refused because the assignment or a state changed reads that topic again."""
        for topic in sorted(topics & self._reassigning()):
            try:
                await self._reassignments.advance(topic, self.context.live)
            except TransactionError as exc:
                log.info("%s: reassignment write raced (%s); reading it again", topic, exc)
                self._send.send_nowait(_TOPIC + topic)

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
        self._forget_topic(topic)
        with contextlib.suppress(NoNodeError):
            await self.coord.delete(f"{zl.ADMIN_DELETE_TOPICS}/{topic}")


def _encoded(write: StateWrite) -> bytes:
    return zl.encode_partition_state(write.new)
