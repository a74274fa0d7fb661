"""A broker's membership of a ZooKeeper-coordinated cluster (Kafka's ZooKeeper mode).

`ClusterMember` runs on every broker of a cluster, over one `Coordination` session:

    start       create Kafka's persistent paths; register /brokers/ids/<id> (ephemeral; its
                czxid is the broker epoch); a registration held by another session (this
                broker's previous process, killed, whose session has not expired yet) is
                waited out for at most the session timeout + REGISTRATION_MARGIN_S, with one
                log line; still held then: BrokerIdTakenError (another live broker has this
                id: Kafka's registration fails at once); watch /brokers/ids, /controller,
                /brokers/topics, each topic's assignment, config and partition state znodes
    mirror      `ZkMetadataCache` (a `ClusterView`): live brokers, the controller, every
                topic's assignment and partition states, for Metadata and the follower
                fetchers; topics are mirrored into the local `TopicStore` (with their
                assignment), so the rest of the broker sees them as on a single broker
    roles       after every change of a partition this broker holds a replica of:
                leader == self -> `make_leader`; other leader -> `make_follower` (leader -1:
                follower of nobody, the partition is offline); not a replica any more, or the
                topic deleted -> `stop_replica(delete=True)`. The replica set is the
                assignment's, taken even with a state that is not newer; a partition under
                reassignment applies a state only with an assignment read at the state's
                zxid or later, and the reverse (`_fresher_assignment`)
    ISR         the `IsrChangeListener` of the ReplicaManager: a leader's ISR change is one
                conditional setData of the state znode (version = partition epoch, leader
                epoch unchanged); success -> `isr_committed`, a stale version -> `isr_rejected`
                (a zombie leader cannot shrink the ISR, so it can never acknowledge acks=all
                alone); an unknown outcome (connection lost) is retried, see `_set_state`
    controller  when /controller is empty every broker tries the election multi [create
                /controller (ephemeral), setData /controller_epoch = e+1 at its version]; the
                winner runs `wirebroker.cluster.controller.Controller` until it loses the
                znode or its session
    session     LOST: every leadership is dropped at once (`stop_replica` without deleting:
                clients get NOT_LEADER_OR_FOLLOWER) and the controller stops; CONNECTED again
                (new session): register again (a new broker epoch), read the state of every
                hosted partition afresh and re-apply it
    shutdown    `controlled_shutdown()`: ask the controller (/wirebroker/controlled_shutdown/
                <id>) to move this broker's leaderships away, wait until it leads nothing that
                has another live in-sync replica (bounded), then return; meanwhile a partition
                whose ISR no longer holds this broker is not followed any more
                (`stop_replica` without deleting: Kafka's StopReplica), so that its leader
                cannot take the stopping broker back into the ISR

Every callback (watch or session) only queues an event; one task applies them in order, so
broker state changes in one place, one event at a time (Kafka's controller event queue idea).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import trio

from wirebroker.cluster import workers
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.names import is_internal
from wirebroker.cluster.topic_store import TopicInfo, TopicStore
from wirebroker.cluster.view import BrokerNode, ClusterView, PartitionView
from wirebroker.coordination.api import (
    BadVersionError,
    Coordination,
    CoordinationError,
    Create,
    NodeExistsError,
    NoNodeError,
    SessionState,
    SetData,
    Stat,
    TransactionError,
    Watch,
)

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig

__all__ = [
    "BrokerIdTakenError",
    "ClusterMember",
    "ReplicaRoles",
    "ZkMetadataCache",
    "mirrored_info",
    "resolve_cluster_id",
]

log = logging.getLogger("wirebroker.cluster")

LEADER_NOT_AVAILABLE = 5
DEFAULT_SESSION_TIMEOUT_MS = 6000  # (wirebroker.config's default; used without a config)
#: Beyond the session timeout, how long a registration held by a previous session is waited
#: for: ZooKeeper expires a session up to one tick after its timeout (Kafka's sample
#: zookeeper.properties has tickTime=2000), and the expiry must reach us.
REGISTRATION_MARGIN_S = 3.0

#: An ISR write whose outcome is unknown (connection lost) is retried this often, doubling.
ISR_RETRY_MIN_S = 0.1
ISR_RETRY_MAX_S = 2.0


class BrokerIdTakenError(CoordinationError):
    """/brokers/ids/<id> stays registered by another live session: another broker has our id."""


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


async def resolve_cluster_id(coord: Coordination, proposed: str) -> str:
    """The cluster's id: /cluster/id, created with `proposed` when the cluster is new."""
    try:
        await coord.create(zl.CLUSTER_ID, zl.encode_cluster_id(proposed), makepath=True)
        return proposed
    except NodeExistsError:
        data, _stat = await coord.get(zl.CLUSTER_ID)
        return zl.decode_cluster_id(data)


@dataclass
class _TopicMirror:
    """A topic as mirrored. The zxids are those of each znode's last change as read (its
    mzxid): an older read is never mirrored over a newer one."""

    assignment: zl.TopicAssignment
    configs: dict[str, str] = field(default_factory=dict)
    assignment_zxid: int = 0
    states: dict[int, tuple[zl.PartitionState, int]] = field(default_factory=dict)
    state_zxids: dict[int, int] = field(default_factory=dict)
    watches: list[Watch] = field(default_factory=list)
    state_watches: dict[int, Watch] = field(default_factory=dict)

    def set_state(self, index: int, state: zl.PartitionState, stat: Stat) -> bool:
        """Mirror a state read with `stat`, unless older than the mirrored one."""
        if stat.mzxid < self.state_zxids.get(index, 0):
            return False
        self.states[index] = (state, stat.version)
        self.state_zxids[index] = stat.mzxid
        return True

    def drop_state(self, index: int) -> None:
        self.states.pop(index, None)
        self.state_zxids.pop(index, None)


class ZkMetadataCache(ClusterView):
    """The ZooKeeper mirror as clients see it (see wirebroker.cluster.view)."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerNode] = {}
        self.epochs: dict[int, int] = {}  # broker id -> czxid of its registration
        self.controller: int = -1
        self.topics: dict[str, _TopicMirror] = {}

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
            return []
        return [self._view(mirror, p) for p in sorted(mirror.assignment.partitions)]

    def partition(self, topic: str, index: int) -> PartitionView | None:
        mirror = self.topics.get(topic)
        if mirror is None or index not in mirror.assignment.partitions:
            return None
        return self._view(mirror, index)

    def _view(self, mirror: _TopicMirror, index: int) -> PartitionView:
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

    def state(self, topic: str, index: int) -> tuple[zl.PartitionState, int] | None:
        mirror = self.topics.get(topic)
        return None if mirror is None else mirror.states.get(index)


Event = Callable[[], Awaitable[None]]


class ClusterMember:
    """One broker's side of the cluster (see the module docstring)."""

    def __init__(
        self,
        coord: Coordination,
        *,
        node_id: int,
        rack: str | None,
        topics: TopicStore,
        replicas: ReplicaRoles,
        address: Callable[[], tuple[str, int]],
        clock: Callable[[], int],
        config: BrokerConfig | None = None,
        controller_factory: Callable[[ClusterMember, int, int], Controller] | None = None,
        store_assignments: bool = True,
        registration_wait_s: float | None = None,
    ) -> None:
        self.coord = coord
        self.node_id = node_id
        self.rack = rack
        self.topics = topics
        self.replicas = replicas
        self.address = address
        self.clock = clock
        self.config = config
        self.cache = ZkMetadataCache()
        self.broker_epoch = -1
        self._send, self._recv = trio.open_memory_channel[Event](math.inf)
        self._nursery: trio.Nursery | None = None
        self._controller_scope: trio.CancelScope | None = None
        self._controller_factory = controller_factory or _default_controller
        #: False on a single broker, which holds every partition: its store keeps no
        #: assignment (TopicInfo.assignment () = every partition here), as it always had.
        self.store_assignments = store_assignments
        if registration_wait_s is None:
            timeout_ms = (
                config.get_int("zookeeper.session.timeout.ms")
                if config is not None
                else DEFAULT_SESSION_TIMEOUT_MS
            )
            registration_wait_s = timeout_ms / 1000 + REGISTRATION_MARGIN_S
        #: how long a registration held by another session is waited out (see _register)
        self.registration_wait_s = registration_wait_s
        self._registered = False
        self._shutting_down = False
        self._hosted: set[tuple[str, int]] = set()
        self.changed = trio.Event()  # set (and replaced) after every applied change

    # -- lifetime ------------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for path in zl.PERSISTENT_PATHS:
                await self.coord.ensure_path(path)
            if not await self._exists(zl.CONTROLLER_EPOCH):
                with contextlib.suppress(NodeExistsError):
                    await self.coord.create(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(0))
            with contextlib.suppress(NoNodeError):
                await self.coord.delete(f"{zl.CONTROLLED_SHUTDOWN}/{self.node_id}")
            await self._register()
            self.coord.add_session_listener(self._on_session)
            await self.coord.watch_children(zl.BROKER_IDS, self._queue(self._on_brokers))
            await self.coord.watch_data(zl.CONTROLLER, self._queue(self._on_controller))
            await self.coord.watch_children(zl.BROKER_TOPICS, self._queue(self._on_topics))
            # Apply what the watches reported before saying we are up.
            while True:
                try:
                    event = self._recv.receive_nowait()
                except trio.WouldBlock:
                    break
                await self._apply_event(event)
            task_status.started()
            async for event in self._recv:
                await self._apply_event(event)

    async def _apply_event(self, event: Event) -> None:
        try:
            await event()
        except CoordinationError as exc:
            log.warning(
                "cluster event failed (%s: %s); will be retried on the next change",
                type(exc).__name__,
                exc,
            )
        except Exception:
            log.exception("cluster event failed")
        self.changed.set()
        self.changed = trio.Event()

    def _queue(self, handler: Callable[..., Awaitable[None]]) -> Callable[..., None]:
        def callback(*args: object) -> None:
            async def event() -> None:
                await handler(*args)

            self._send.send_nowait(event)

        return callback

    async def _exists(self, path: str) -> bool:
        return await self.coord.exists(path) is not None

    # -- registration --------------------------------------------------------------------------
    async def _register(self) -> None:
        """Create /brokers/ids/<id> (ephemeral). When it exists and another session owns it,
        wait for it to go, at most `registration_wait_s`: a broker restarted right after a
        kill -9 finds its previous process's registration there until that session expires
        (at most a session timeout after the kill, plus ZooKeeper's tick). Still there after
        that: another live broker has this id, which Kafka refuses at once
        (BrokerIdTakenError; the broker exits with that one line)."""
        host, port = self.address()
        reg = zl.BrokerRegistration(self.node_id, host, port, self.rack, self.clock())
        path = zl.broker_path(self.node_id)
        deadline: float | None = None
        while True:
            try:
                await self.coord.create(path, zl.encode_broker(reg), ephemeral=True)
                break
            except NodeExistsError:
                pass
            gone = trio.Event()

            def on_change(_data: bytes | None, stat: Stat | None, gone: trio.Event = gone) -> None:
                if stat is None or stat.ephemeral_owner == self.coord.session_id:
                    gone.set()

            # (the watch's first call is the current value: gone already, or ours after a
            # lost answer of our own create; the loop then creates or finds it ours)
            watch = await self.coord.watch_data(path, on_change)
            try:
                stat = await self.coord.exists(path)
                if stat is not None and stat.ephemeral_owner == self.coord.session_id:
                    break
                if deadline is None:
                    deadline = trio.current_time() + self.registration_wait_s
                    log.warning(
                        "broker id %d is registered by another ZooKeeper session: waiting up to "
                        "%.1f s for the previous session of broker %d to expire",
                        self.node_id,
                        self.registration_wait_s,
                        self.node_id,
                    )
                with trio.move_on_at(deadline):
                    await gone.wait()
            finally:
                watch.cancel()
            if not gone.is_set():
                raise BrokerIdTakenError(
                    f"broker id {self.node_id} is registered in ZooKeeper by another live "
                    f"session after {self.registration_wait_s:.1f} s (is another broker running "
                    f"with node.id {self.node_id}?)"
                )
        stat = await self.coord.exists(path)
        assert stat is not None
        self.broker_epoch = stat.czxid
        self._registered = True
        log.info(
            "registered broker %d at %s:%d (broker epoch %d)",
            self.node_id,
            host,
            port,
            self.broker_epoch,
        )

    def _on_session(self, state: SessionState) -> None:
        if state is SessionState.LOST:
            self._registered = False
            self._send.send_nowait(self._session_lost)
        elif state is SessionState.CONNECTED and not self._registered:
            self._send.send_nowait(self._session_back)

    async def _session_lost(self) -> None:
        log.warning("ZooKeeper session lost: dropping every leadership until registered again")
        self._registered = False
        self._stop_controller()
        # stop_replica, not make_follower: the state znode still names this broker leader at
        # the same (leader epoch, version), which a Partition ignores as not newer, so a
        # make_follower of nobody would leave it leading (a zombie taking writes).
        for name, mirror in self.cache.topics.items():
            for index, (state, _version) in mirror.states.items():
                if state.leader == self.node_id and (name, index) in self._hosted:
                    self.replicas.stop_replica(name, index, delete=False)

    async def _session_back(self) -> None:
        if self._registered:
            return
        await self._register()
        # The mirror may be older than ZooKeeper (the watches are re-read after this event):
        # read the state of every hosted partition first, so that a leadership that moved
        # while the session was gone is not taken up again at its old epoch. (A watch
        # delivery of an older read may still follow; the read it sets delivers the latest.)
        for name in list(self.cache.topics):
            mirror = self.cache.topics.get(name)
            if mirror is None:
                continue
            for index in sorted(mirror.assignment.partitions):
                if (name, index) in self._hosted:
                    await self._read_state(name, mirror, index)
                self._apply_role(name, index)
        data_stat = await self.coord.exists(zl.CONTROLLER)
        if data_stat is None:
            await self._try_elect()

    async def _read_state(self, name: str, mirror: _TopicMirror, index: int) -> None:
        """Read the partition's state into the mirror (`_on_state`'s rules)."""
        try:
            data, stat = await self.coord.get(zl.state_path(name, index))
        except NoNodeError:
            await self._on_state(name, index, None, None)
            return
        await self._on_state(name, index, data, stat, apply=False)

    # -- brokers and controller ------------------------------------------------------------
    async def _on_brokers(self, children: list[str] | None) -> None:
        """Every registration is read again: a broker that re-registered (a new session) has
        a new czxid, its broker epoch, even when the list of ids looks the same."""
        ids = {int(c) for c in children or [] if c.lstrip("-").isdigit()}
        for gone in set(self.cache.brokers) - ids:
            del self.cache.brokers[gone]
            self.cache.epochs.pop(gone, None)
        for broker in sorted(ids):
            try:
                data, stat = await self.coord.get(zl.broker_path(broker))
                reg = zl.decode_broker(broker, data)
            except NoNodeError:
                self.cache.brokers.pop(broker, None)
                self.cache.epochs.pop(broker, None)
                continue
            except zl.LayoutError as exc:
                log.warning("ignoring broker %d: %s", broker, exc)
                continue
            self.cache.brokers[broker] = BrokerNode(broker, reg.host, reg.port, reg.rack)
            self.cache.epochs[broker] = stat.czxid

    async def _on_controller(self, data: bytes | None, _stat: Stat | None) -> None:
        if data is None:
            # The notification may be stale (a watch collapses changes): read the znode.
            try:
                data, _stat = await self.coord.get(zl.CONTROLLER)
            except NoNodeError:
                self.cache.controller = -1
                self._stop_controller()
                await self._try_elect()
                return
        try:
            self.cache.controller = zl.decode_controller(data)
        except zl.LayoutError as exc:
            log.warning("unreadable /controller: %s", exc)
            return
        if self.cache.controller != self.node_id:
            self._stop_controller()

    async def _try_elect(self) -> None:
        if not self._registered or self._shutting_down:
            return
        try:
            data, stat = await self.coord.get(zl.CONTROLLER_EPOCH)
            epoch = zl.decode_controller_epoch(data)
            results = await self.coord.multi(
                [
                    Create(
                        zl.CONTROLLER,
                        zl.encode_controller(self.node_id, self.clock()),
                        ephemeral=True,
                    ),
                    SetData(
                        zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(epoch + 1), stat.version
                    ),
                ]
            )
        except TransactionError:
            return  # another broker won
        epoch_stat = results[1]
        assert isinstance(epoch_stat, Stat)
        self.cache.controller = self.node_id
        log.info("broker %d is the controller (controller epoch %d)", self.node_id, epoch + 1)
        controller = self._controller_factory(self, epoch + 1, epoch_stat.version)
        scope = trio.CancelScope()
        self._controller_scope = scope
        assert self._nursery is not None
        self._nursery.start_soon(self._run_controller, controller, scope)

    async def _run_controller(self, controller: Controller, scope: trio.CancelScope) -> None:
        with scope:
            try:
                await controller.run()
            except ControllerMovedError:
                log.warning("controller epoch moved on: resigning")
            except CoordinationError as exc:
                log.warning("controller stopped: %s", exc)
        if self._controller_scope is scope:
            self._controller_scope = None

    def _stop_controller(self) -> None:
        if self._controller_scope is not None:
            log.info("broker %d stops being the controller", self.node_id)
            self._controller_scope.cancel()
            self._controller_scope = None

    @property
    def is_controller(self) -> bool:
        return self._controller_scope is not None

    # -- topics ------------------------------------------------------------------------------
    async def _on_topics(self, children: list[str] | None) -> None:
        """The topic list changed: drop the topics gone; mirror every new one.

        The new topics of one notification (a CreateTopics of many topics, or many creates
        in a row, arrive together) are handled as one batch, _PARALLEL_READS topics at a
        time for the ZooKeeper requests:

            1. the watches of each topic's assignment and config, whose first calls (made
               before `watch_data` returns) are the reads: one round trip each;
            2. the store written once for all of them (`TopicStore.put_many`: one atomic,
               fsynced rewrite);
            3. the watches of every partition state; their first calls are queued as events
               and apply the roles once this event is done;
            4. the logs of the partitions this broker holds, created _LOG_BATCH topics at a
               time (`ReplicaManager.ensure_partitions`: one round of fsyncs each).

        Later calls of the assignment and config watches are queued events (`_on_assignment`,
        `_on_config`). One line per batch logs where the time went."""
        names = set(children or [])
        known = set(self.cache.topics) | {info.name for info in self.topics.all()}
        for gone in known - names:
            log.info("topic %s is gone from the cluster: deleting its local replicas", gone)
            self._drop_topic(gone)
        new = sorted(names - set(self.cache.topics))
        if not new:
            return
        t0 = time.perf_counter()
        failure: CoordinationError | None = None
        try:
            await _each(new, self._mirror_topic)
        except CoordinationError as exc:
            failure = exc  # (raised once the topics that were mirrored are stored)
        added = [name for name in new if name in self.cache.topics]
        t1 = time.perf_counter()
        try:
            infos = self._sync_store_many(added)
        except BaseException:
            for name in added:  # not stored: the next change of the topic list tries again
                mirror = self.cache.topics.pop(name, None)
                for watch in mirror.watches if mirror is not None else ():
                    watch.cancel()
            raise
        t2 = time.perf_counter()
        await _each(added, self._watch_states)
        t3 = time.perf_counter()
        # Last: creating logs blocks this thread (file system calls; a worker thread would
        # wait for the interpreter lock after each of them, several times slower on a busy
        # broker), and this broker's controller (same thread) has sent its writes for these
        # topics meanwhile. In chunks, other tasks running in between.
        for start in range(0, len(infos), _LOG_BATCH):
            if start:
                await trio.lowlevel.checkpoint()
            self._create_hosted(infos[start : start + _LOG_BATCH])
        log.info(
            "mirrored %d new topic(s) in %.0f ms (reads and watches %.0f, store %.0f, state "
            "watches %.0f, logs %.0f)",
            len(added),
            (time.perf_counter() - t0) * 1000,
            (t1 - t0) * 1000,
            (t2 - t1) * 1000,
            (t3 - t2) * 1000,
            (time.perf_counter() - t3) * 1000,
        )
        if failure is not None:
            raise failure

    async def _mirror_topic(self, name: str) -> None:
        """Watch the topic's assignment and config together; their first values make the
        topic's mirror (nothing when the topic is gone or unreadable: the watches go)."""
        first: dict[str, tuple[bytes | None, Stat | None]] = {}

        def watching(
            key: str, handler: Callable[..., Awaitable[None]]
        ) -> Callable[[bytes | None, Stat | None], None]:
            later = self._queue(handler)

            def callback(data: bytes | None, stat: Stat | None) -> None:
                if key in first:
                    later(data, stat)
                else:
                    first[key] = (data, stat)

            return callback

        watches: list[Watch] = []

        async def watch(path: str, key: str, handler: Callable[..., Awaitable[None]]) -> None:
            watches.append(await self.coord.watch_data(path, watching(key, handler)))

        try:
            await _together(
                functools.partial(watch, zl.topic_path(name), "topic", self._on_assignment(name)),
                functools.partial(
                    watch, zl.topic_config_path(name), "config", self._on_config(name)
                ),
            )
            data = first["topic"][0]
            if data is None:
                raise _Gone
            assignment = zl.decode_topic(name, data)
        except (_Gone, zl.LayoutError, CoordinationError) as exc:
            for w in watches:
                w.cancel()
            if isinstance(exc, zl.LayoutError):
                log.warning("ignoring topic %s: %s", name, exc)
            elif isinstance(exc, CoordinationError):
                raise
            return
        try:
            configs = zl.decode_topic_config(name, first["config"][0])
        except zl.LayoutError as exc:
            log.warning("topic %s: %s", name, exc)
            configs = {}
        stat = first["topic"][1]
        mirror = _TopicMirror(assignment, configs, assignment_zxid=stat.mzxid if stat else 0)
        mirror.watches.extend(watches)
        self.cache.topics[name] = mirror

    async def _watch_states(self, name: str) -> None:
        """The state watches of a topic just mirrored (a failure is logged: one topic's
        failure does not stop the others of the batch)."""
        mirror = self.cache.topics.get(name)
        if mirror is None:
            return
        try:
            await _together(
                *(
                    functools.partial(self._watch_state, name, mirror, index)
                    for index in sorted(mirror.assignment.partitions)
                )
            )
        except CoordinationError as exc:
            log.warning("topic %s: setting its state watches failed: %s", name, exc)

    def _create_hosted(self, infos: list[TopicInfo]) -> None:
        """Build this broker's replicas of new topics, their logs created in one batch (one
        round of fsyncs); a storage error is logged and left to `_apply_role`, which tries
        again partition by partition."""
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
            self._hosted.update((info.name, i) for i in indexes)

    async def _watch_state(self, name: str, mirror: _TopicMirror, index: int) -> None:
        if index in mirror.state_watches:
            return
        # (a partial, not closures: one watch per hosted partition stays for its lifetime)
        mirror.state_watches[index] = await self.coord.watch_data(
            zl.state_path(name, index), functools.partial(self._queue_state, name, index)
        )

    def _queue_state(self, name: str, index: int, data: bytes | None, stat: Stat | None) -> None:
        self._send.send_nowait(functools.partial(self._on_state, name, index, data, stat))

    def _on_assignment(self, name: str) -> Callable[[bytes | None, Stat | None], Awaitable[None]]:
        return functools.partial(self._take_assignment, name)

    async def _take_assignment(self, name: str, data: bytes | None, stat: Stat | None) -> None:
        """The topic's assignment as read (its watch, `_fresher_assignment`), unless older
        than the mirror's; every partition's role is applied again with it. The partitions
        whose reassignment it ends get their states read first, and both are mirrored at
        once (`_fresher_assignment` says why)."""
        mirror = self.cache.topics.get(name)
        if mirror is None or data is None or stat is None or stat.mzxid < mirror.assignment_zxid:
            return
        try:
            assignment = zl.decode_topic(name, data)
        except zl.LayoutError as exc:
            log.warning("topic %s: %s", name, exc)
            return
        old = mirror.assignment
        ended = [
            i
            for i in sorted(set(old.adding) | set(old.removing))
            if i not in assignment.adding
            and i not in assignment.removing
            and mirror.state_zxids.get(i, 0) < stat.mzxid
        ]
        states = await self._read_states(name, ended)
        if self.cache.topics.get(name) is not mirror or stat.mzxid < mirror.assignment_zxid:
            return
        mirror.assignment_zxid = stat.mzxid
        for index, (state, state_stat) in states.items():
            mirror.set_state(index, state, state_stat)
        if assignment == old and not states:
            return
        mirror.assignment = assignment
        self._sync_store(name)
        for index in sorted(assignment.partitions):
            await self._watch_state(name, mirror, index)
            self._apply_role(name, index)

    async def _read_states(
        self, name: str, indexes: list[int]
    ) -> dict[int, tuple[zl.PartitionState, Stat]]:
        """The states of these partitions as read now (those that could be read)."""
        out: dict[int, tuple[zl.PartitionState, Stat]] = {}
        for index in indexes:
            try:
                data, stat = await self.coord.get(zl.state_path(name, index))
                out[index] = (zl.decode_partition_state(name, index, data), stat)
            except (CoordinationError, zl.LayoutError) as exc:
                log.warning("%s-%d: reading the state failed (%s)", name, index, exc)
        return out

    async def _fresher_assignment(
        self, name: str, mirror: _TopicMirror, index: int, state_zxid: int
    ) -> tuple[bytes, Stat] | None:
        """The assignment read now, when a state last changed at `state_zxid` belongs to a
        partition the mirror shows under reassignment and is newer than the mirror's
        assignment; else None (also when the read fails: its watch brings it later).

        The controller completes a reassignment with one multi: the shrunk assignment and
        the new state (the leaving replicas out of the ISR, a target replica leading, leader
        epoch + 1). Their watches' re-reads may come back in either order, so a broker
        mirrors and applies them together, each with the other read after it, at that zxid
        or later: applied with the old replica set, the new leader would take a leaving
        replica back into its ISR, and Metadata showing the new replicas with the old ISR
        would list a leaving replica in sync (wirebroker.cluster.controller_reassignments).
        Other assignment changes only add replicas or partitions: taken as they come."""
        assignment = mirror.assignment
        if state_zxid <= mirror.assignment_zxid or (
            index not in assignment.adding and index not in assignment.removing
        ):
            return None
        try:
            return await self.coord.get(zl.topic_path(name))
        except NoNodeError:
            return None  # deleted: the topics watch drops it
        except CoordinationError as exc:
            log.warning("%s-%d: reading the assignment failed (%s)", name, index, exc)
            return None

    def _on_config(self, name: str) -> Callable[[bytes | None, Stat | None], Awaitable[None]]:
        async def handler(data: bytes | None, _stat: Stat | None) -> None:
            mirror = self.cache.topics.get(name)
            if mirror is None:
                return
            try:
                configs = zl.decode_topic_config(name, data)
            except zl.LayoutError as exc:
                log.warning("topic %s: %s", name, exc)
                return
            if configs == mirror.configs:
                return
            mirror.configs = configs
            info = self._sync_store(name)
            if info is not None:
                self.replicas.on_topic_configs_changed(info)

        return handler

    async def _on_state(
        self,
        name: str,
        index: int,
        data: bytes | None,
        stat: Stat | None,
        *,
        apply: bool = True,
    ) -> None:
        """A partition's state as read: mirrored unless older than the mirrored one (with a
        fresher assignment first, `_fresher_assignment`), then its role applied (`apply`)."""
        mirror = self.cache.topics.get(name)
        if mirror is None:
            return
        if data is None or stat is None:
            mirror.drop_state(index)
            return
        try:
            state = zl.decode_partition_state(name, index, data)
        except zl.LayoutError as exc:
            log.warning("%s-%d: %s", name, index, exc)
            return
        fresh = await self._fresher_assignment(name, mirror, index, stat.mzxid)
        if self.cache.topics.get(name) is not mirror:
            return
        newer = mirror.set_state(index, state, stat)
        if fresh is not None:
            await self._take_assignment(name, *fresh)
        if apply and newer:
            self._apply_role(name, index)

    def _sync_store(self, name: str) -> TopicInfo | None:
        """Mirror the topic into the local TopicStore (assignment, configs)."""
        infos = self._sync_store_many([name])
        return infos[0] if infos else None

    def _sync_store_many(self, names: list[str]) -> list[TopicInfo]:
        """Mirror these topics into the local TopicStore: one write for all that changed."""
        out: list[TopicInfo] = []
        changed: list[TopicInfo] = []
        for name in names:
            mirror = self.cache.topics.get(name)
            if mirror is None:
                continue
            current = self.topics.get(name)
            topic_id = mirror.assignment.topic_id
            if current is not None and topic_id is not None and current.topic_id != topic_id:
                # Deleted and re-created while we were away: the old replicas go.
                self._drop_topic(name, keep_mirror=True)
                current = None
            info = mirrored_info(
                name, mirror.assignment, mirror.configs, current, keep=self.store_assignments
            )
            if current != info or (
                current is not None and dict(current.configs) != dict(info.configs)
            ):
                changed.append(info)
            out.append(info)
        if len(changed) == 1:
            self.topics.put(changed[0])
        elif changed:
            self.topics.put_many(changed)
        return out

    def _drop_topic(self, name: str, *, keep_mirror: bool = False) -> None:
        # The store forgets the topic first (its commit point), then the logs go: a crash in
        # between leaves logs of an unknown topic, which the next start deletes as strays.
        info = self.topics.remove(name)
        if info is not None:
            for index in range(info.partitions):
                if info.hosted_by(self.node_id, index):
                    self._hosted.discard((name, index))
                    self.replicas.stop_replica(name, index, delete=True)
        if not keep_mirror:
            mirror = self.cache.topics.pop(name, None)
            if mirror is not None:
                for watch in [*mirror.watches, *mirror.state_watches.values()]:
                    watch.cancel()

    # -- roles -------------------------------------------------------------------------------
    def _apply_role(self, name: str, index: int) -> None:
        mirror = self.cache.topics.get(name)
        info = self.topics.get(name)
        if mirror is None or info is None:
            return
        replicas = list(mirror.assignment.replicas(index))
        if self.node_id not in replicas:
            if (name, index) in self._hosted:
                self._hosted.discard((name, index))
                self.replicas.stop_replica(name, index, delete=True)
            return
        self.replicas.ensure_partition(info, index, now_ms=self.clock())
        self._hosted.add((name, index))
        entry = mirror.states.get(index)
        if entry is None or not self._registered:
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
        elif self._shutting_down and self.node_id not in state.isr:
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

    # -- IsrChangeListener --------------------------------------------------------------------
    def propose_isr(
        self, topic: str, index: int, *, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._write_isr, topic, index, leader_epoch, partition_epoch, isr)

    async def _write_isr(
        self, topic: str, index: int, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None:
        entry = self.cache.state(topic, index)
        controller_epoch = entry[0].controller_epoch if entry is not None else 0
        state = zl.PartitionState(self.node_id, leader_epoch, tuple(isr), controller_epoch)
        stat = await self._set_state(topic, index, state, partition_epoch)
        if stat is None:
            return
        log.info("%s-%d: ISR now %s (leader epoch %d)", topic, index, isr, leader_epoch)
        mirror = self.cache.topics.get(topic)
        if mirror is not None:
            mirror.set_state(index, state, stat)
        self.replicas.isr_committed(topic, index, isr=isr, partition_epoch=stat.version)

    async def _set_state(
        self, topic: str, index: int, state: zl.PartitionState, partition_epoch: int
    ) -> Stat | None:
        """The ISR write: setData of the state znode at version `partition_epoch`. Returns its
        Stat, or None after telling the ReplicaManager (or when nobody needs telling).

        A refused write (BADVERSION, NONODE: the state moved on) is `isr_rejected`, unless the
        znode already holds exactly this state: an earlier attempt landed and only its answer
        was lost with the connection (Kafka's ZooKeeper-mode ISR update checks the same),
        which is success at the znode's version. Any other error (connection loss, timeout)
        leaves the outcome unknown: the write is retried, with the proposal still pending (so
        the high watermark keeps counting the larger of the two ISRs, the safe side), as
        Kafka's ZooKeeper client retries a request across a reconnection; it stops quietly
        when the session is lost (every leadership is dropped then) or the mirror shows the
        partition moved on (the new state's make_leader/make_follower replaces the proposal).
        """
        path = zl.state_path(topic, index)
        data = zl.encode_partition_state(state)
        delay = ISR_RETRY_MIN_S
        while True:
            try:
                return await self.coord.set(path, data, partition_epoch)
            except (BadVersionError, NoNodeError):
                pass
            except CoordinationError as exc:
                entry = self.cache.state(topic, index)
                if not self._registered or (entry is not None and entry[1] != partition_epoch):
                    log.info("%s-%d: ISR change to %s abandoned: %s", topic, index, state.isr, exc)
                    return None
                log.warning(
                    "%s-%d: ISR change to %s failed (%s); retrying in %.1f s",
                    topic,
                    index,
                    list(state.isr),
                    exc,
                    delay,
                )
                await trio.sleep(delay)
                delay = min(delay * 2, ISR_RETRY_MAX_S)
                continue
            try:
                now, stat = await self.coord.get(path)
            except NoNodeError:
                now = None
            except CoordinationError:
                continue  # unknown again: the next set attempt decides
            if now is not None and zl.decode_partition_state(topic, index, now) == state:
                log.info("%s-%d: ISR change to %s had landed", topic, index, list(state.isr))
                return stat
            log.info(
                "%s-%d: ISR change to %s refused (the partition state moved on)",
                topic,
                index,
                list(state.isr),
            )
            self.replicas.isr_rejected(
                topic, index, leader_epoch=state.leader_epoch, partition_epoch=partition_epoch
            )
            return None

    # -- controlled shutdown --------------------------------------------------------------------
    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask the controller to move leaderships away; True when nothing movable is left."""
        self._shutting_down = True
        self._send.send_nowait(self._reapply_roles)  # stop following outside the ISRs
        self._stop_controller()
        if self.cache.controller == self.node_id:
            with contextlib.suppress(CoordinationError):
                await self.coord.delete(zl.CONTROLLER)
        path = f"{zl.CONTROLLED_SHUTDOWN}/{self.node_id}"
        try:
            await self.coord.create(path, b'{"version":1}')
        except NodeExistsError:
            pass
        except CoordinationError as exc:  # no session: nobody to ask; stop without it
            log.warning("controlled shutdown: cannot ask the controller (%s)", exc)
            return False
        with trio.move_on_after(timeout_s):
            while self._movable_leaderships():
                await self.changed.wait()
            return True
        log.warning("controlled shutdown: leaderships still here after %.1f s", timeout_s)
        return False

    async def _reapply_roles(self) -> None:
        for name, index in sorted(self._hosted):
            self._apply_role(name, index)

    def _movable_leaderships(self) -> list[tuple[str, int]]:
        out = []
        for name, mirror in self.cache.topics.items():
            for index, (state, _v) in mirror.states.items():
                if state.leader != self.node_id:
                    continue
                others = [r for r in state.isr if r != self.node_id and r in self.cache.brokers]
                if others:
                    out.append((name, index))
        return out


#: ZooKeeper requests a batch of new topics keeps in flight (`_each`).
_PARALLEL_READS = 64
#: New topics whose logs are created in one go (one round of fsyncs; other tasks run between
#: two such chunks).
_LOG_BATCH = 32


async def _each(items: list[str], job: Callable[[str], Awaitable[None]]) -> None:
    """`job(item)` for every item, _PARALLEL_READS at a time (`workers.each`); the first
    exception a job raised is raised once every job has run."""
    failures = await workers.each(items, job, limit=_PARALLEL_READS)
    if failures:
        raise failures[0]


async def _together(*jobs: Callable[[], Awaitable[None]]) -> None:
    """Run the jobs side by side (ZooKeeper requests in flight together); the first
    exception one raised is raised once all have run."""
    failures = await workers.together(*jobs)
    if failures:
        raise failures[0]


def mirrored_info(
    name: str,
    assignment: zl.TopicAssignment,
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


class _Gone(Exception):
    """(a topic deleted before it could be mirrored)"""


class ControllerMovedError(Exception):
    """A controller write found a newer controller epoch: this broker is not the controller."""


class Controller(Protocol):
    async def run(self) -> None: ...


def _default_controller(member: ClusterMember, epoch: int, epoch_version: int) -> Controller:
    from wirebroker.cluster.controller import ZkController

    return ZkController(member, epoch, epoch_version)
