"""The metadata mirror: ZooKeeper's brokers and topics as this broker knows them.

`MetadataMirror` is the one writer of the `ZkMetadataCache` and of this broker's `TopicStore`
in a cluster. From the member's watches (each call queued as an event, see zk_events.py):

    brokers     /brokers/ids: the live brokers and their epochs (each registration re-read:
                a broker that re-registered has a new czxid even when the ids look the same)
    topics      /brokers/topics: the topics gone are dropped (store first, then their local
                replicas); the new ones are mirrored as one batch (`on_topics`), each with
                watches of its assignment, config and partition states
    assignment  a topic's replica assignment, never an older read over a newer one
                (Stat.mzxid); the partitions whose reassignment it ends get their states read
                first and both are mirrored at once (`_take_assignment`)
    states      each partition's state (leader, leader epoch, ISR, version = partition epoch),
                never an older read over a newer one; a partition under reassignment takes a
                state only with an assignment read at the state's zxid or later, and the
                reverse (`_fresher_assignment`)
    configs     a topic's config overrides, mirrored into the store and told to the replicas

After every change of a partition it asks `PartitionRoles` (zk_roles.py) to apply the role.
Topics are mirrored into the local `TopicStore` (with their assignment), so the rest of the
broker sees them as on a single broker.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable

import trio

from wirebroker.cluster import workers
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_events import EventQueue
from wirebroker.cluster.zk_metadata_cache import TopicMirror, ZkMetadataCache, mirrored_info
from wirebroker.cluster.zk_roles import PartitionRoles, ReplicaRoles
from wirebroker.coordination.api import Coordination, CoordinationError, NoNodeError, Stat, Watch
from wirebroker.metadata.partition_state import PartitionState
from wirebroker.metadata.topic_store import TopicInfo, TopicStore
from wirebroker.metadata.view import BrokerNode

__all__ = ["MetadataMirror"]

log = logging.getLogger("wirebroker.cluster")

#: ZooKeeper requests a batch of new topics keeps in flight (`MetadataMirror.on_topics`).
_PARALLEL_READS = 64
#: New topics whose logs are created in one go (one round of fsyncs; other tasks run between
#: two such chunks).
_LOG_BATCH = 32


class _Gone(Exception):
    """(a topic deleted before it could be mirrored)"""


class MetadataMirror:
    """Mirrors ZooKeeper's brokers and topics (see the module docstring)."""

    def __init__(
        self,
        coord: Coordination,
        *,
        cache: ZkMetadataCache,
        topics: TopicStore,
        replicas: ReplicaRoles,
        roles: PartitionRoles,
        queue: EventQueue,
        store_assignments: bool,
    ) -> None:
        self.coord = coord
        self.cache = cache
        self.topics = topics
        self.replicas = replicas
        self.roles = roles
        self.queue = queue
        #: False on a single broker, which holds every partition: its store keeps no
        #: assignment (TopicInfo.assignment () = every partition here), as it always had.
        self.store_assignments = store_assignments

    async def reread_hosted(self) -> None:
        """After a new session: the mirror may be older than ZooKeeper (the watches are
        re-read after this event), so the state of every hosted partition is read first and
        every role applied again, so that a leadership that moved while the session was gone
        is not taken up again at its old epoch. (A watch delivery of an older read may still
        follow; the read it sets delivers the latest.)"""
        for name in list(self.cache.topics):
            mirror = self.cache.topics.get(name)
            if mirror is None:
                continue
            for index in sorted(mirror.assignment.partitions):
                if (name, index) in self.roles.hosted:
                    await self._read_state(name, mirror, index)
                self.roles.apply(name, index)

    async def on_brokers(self, children: list[str] | None) -> None:
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
            self.cache.brokers[broker] = BrokerNode(
                broker, reg.host, reg.port, reg.rack, reg.endpoints
            )
            self.cache.epochs[broker] = stat.czxid

    async def on_topics(self, children: list[str] | None) -> None:
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
            await workers.each_or_raise(new, self._mirror_topic, limit=_PARALLEL_READS)
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
        await workers.each_or_raise(added, self._watch_states, limit=_PARALLEL_READS)
        t3 = time.perf_counter()
        # Last: creating logs blocks this thread (file system calls; a worker thread would
        # wait for the interpreter lock after each of them, several times slower on a busy
        # broker), and this broker's controller (same thread) has sent its writes for these
        # topics meanwhile. In chunks, other tasks running in between.
        for start in range(0, len(infos), _LOG_BATCH):
            if start:
                await trio.lowlevel.checkpoint()
            self.roles.create_hosted(infos[start : start + _LOG_BATCH])
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
            later = self.queue.callback(handler)

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
            await workers.together_or_raise(
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
        mirror = TopicMirror(assignment, configs, assignment_zxid=stat.mzxid if stat else 0)
        mirror.watches.extend(watches)
        self.cache.topics[name] = mirror

    async def _watch_states(self, name: str) -> None:
        """The state watches of a topic just mirrored (a failure is logged: one topic's
        failure does not stop the others of the batch)."""
        mirror = self.cache.topics.get(name)
        if mirror is None:
            return
        try:
            await workers.together_or_raise(
                *(
                    functools.partial(self._watch_state, name, mirror, index)
                    for index in sorted(mirror.assignment.partitions)
                )
            )
        except CoordinationError as exc:
            log.warning("topic %s: setting its state watches failed: %s", name, exc)

    async def _watch_state(self, name: str, mirror: TopicMirror, index: int) -> None:
        if index in mirror.state_watches:
            return
        # (a partial, not closures: one watch per hosted partition stays for its lifetime)
        mirror.state_watches[index] = await self.coord.watch_data(
            zl.state_path(name, index), functools.partial(self._queue_state, name, index)
        )

    def _queue_state(self, name: str, index: int, data: bytes | None, stat: Stat | None) -> None:
        self.queue.put(functools.partial(self._on_state, name, index, data, stat))

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
            self.roles.apply(name, index)

    async def _read_states(
        self, name: str, indexes: list[int]
    ) -> dict[int, tuple[PartitionState, Stat]]:
        """The states of these partitions as read now (those that could be read)."""
        out: dict[int, tuple[PartitionState, Stat]] = {}
        for index in indexes:
            try:
                data, stat = await self.coord.get(zl.state_path(name, index))
                out[index] = (zl.decode_partition_state(name, index, data), stat)
            except (CoordinationError, zl.LayoutError) as exc:
                log.warning("%s-%d: reading the state failed (%s)", name, index, exc)
        return out

    async def _fresher_assignment(
        self, name: str, mirror: TopicMirror, index: int, state_zxid: int
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
            self.roles.apply(name, index)

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
            self.roles.delete_topic(info)
        if not keep_mirror:
            mirror = self.cache.topics.pop(name, None)
            if mirror is not None:
                for watch in [*mirror.watches, *mirror.state_watches.values()]:
                    watch.cancel()

    async def _read_state(self, name: str, mirror: TopicMirror, index: int) -> None:
        """Read the partition's state into the mirror (`_on_state`'s rules)."""
        try:
            data, stat = await self.coord.get(zl.state_path(name, index))
        except NoNodeError:
            await self._on_state(name, index, None, None)
            return
        await self._on_state(name, index, data, stat, apply=False)
