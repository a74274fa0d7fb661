"""A broker's membership of a ZooKeeper-coordinated cluster (Kafka's ZooKeeper mode).

`ClusterMember` runs on every broker of a cluster, over one `Coordination` session. It owns
no rule of its own: it wires the parts, each the one owner of its concern, and runs them:

    registration  zk_registration.py: /brokers/ids/<id> (ephemeral; its czxid is the broker
                  epoch), a previous session's registration waited out, BrokerIdTakenError
    mirror        zk_mirror.py (`MetadataMirror`) writes zk_metadata_cache.py
                  (`ZkMetadataCache`, a `ClusterView`): live brokers, the controller, every
                  topic's assignment, configs and partition states (never an older read over
                  a newer one; reassignment's zxid rules), mirrored into the local TopicStore
    roles         zk_roles.py (`PartitionRoles`): the mirrored states applied to the
                  ReplicaManager (make_leader / make_follower / stop_replica)
    ISR           zk_isr.py (`IsrWriter`, Kafka's AlterPartitionManager): the leader's ISR
                  changes as conditional writes of the state znode; this member is the
                  ReplicaManager's `IsrChangeListener` and hands them over
    controller    zk_election.py (`ControllerElection`): the election multi when /controller
                  is empty; the winner runs the controller that `controller_factory` (given by
                  the composition root) makes, so this module never imports the controller
    session       LOST: every leadership is dropped at once (`stop_replica` without deleting:
                  clients get NOT_LEADER_OR_FOLLOWER) and the controller stops; CONNECTED again
                  (new session): register again (a new broker epoch), read the state of every
                  hosted partition afresh and re-apply it
    shutdown      `controlled_shutdown()`: stop following outside the ISRs, stop the
                  controller, then ask the controller to move this broker's leaderships away
                  (zk_shutdown.py), bounded

Every callback (watch or session) only queues an event on the one `EventQueue` (zk_events.py);
one task (`run`) applies them in order, so broker state changes in one place, one event at a
time (Kafka's controller event queue idea).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_election import Controller, ControllerElection
from wirebroker.cluster.zk_events import EventQueue
from wirebroker.cluster.zk_isr import IsrWriter
from wirebroker.cluster.zk_layout import Endpoints
from wirebroker.cluster.zk_metadata_cache import ZkMetadataCache, mirrored_info
from wirebroker.cluster.zk_mirror import MetadataMirror
from wirebroker.cluster.zk_registration import (
    DEFAULT_SESSION_TIMEOUT_MS,
    REGISTRATION_MARGIN_S,
    Registration,
    resolve_cluster_id,
)
from wirebroker.cluster.zk_roles import PartitionRoles, ReplicaRoles
from wirebroker.cluster.zk_shutdown import request_controlled_shutdown
from wirebroker.coordination.api import Coordination, NodeExistsError, NoNodeError, SessionState
from wirebroker.metadata.errors import BrokerIdTakenError
from wirebroker.metadata.topic_store import TopicStore

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig

__all__ = [
    "REGISTRATION_MARGIN_S",
    "BrokerIdTakenError",
    "ClusterMember",
    "Controller",
    "ControllerFactory",
    "ReplicaRoles",
    "ZkMetadataCache",
    "mirrored_info",
    "resolve_cluster_id",
]

log = logging.getLogger("wirebroker.cluster")

#: Makes the controller an elected member runs: (member, controller epoch, the version of
#: /controller_epoch that epoch was written at) -> the controller (`ZkController`).
ControllerFactory = Callable[["ClusterMember", int, int], Controller]


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
        controller_factory: ControllerFactory,
        config: BrokerConfig | None = None,
        store_assignments: bool = True,
        registration_wait_s: float | None = None,
        endpoints: Callable[[], Endpoints] | None = None,
    ) -> None:
        self.coord = coord
        self.node_id = node_id
        self.topics = topics
        self.replicas = replicas
        self.clock = clock
        self.config = config
        self.cache = ZkMetadataCache(topics)
        self.events = EventQueue()
        self._nursery: trio.Nursery | None = None
        #: False on a single broker, which holds every partition: its store keeps no
        #: assignment (TopicInfo.assignment () = every partition here), as it always had.
        self.store_assignments = store_assignments
        if registration_wait_s is None:
            registration_wait_s = _registration_wait_s(config)
        self.registration = Registration(
            coord,
            node_id=node_id,
            rack=rack,
            address=address,
            clock=clock,
            wait_s=registration_wait_s,
            endpoints=endpoints,
        )
        self.roles = PartitionRoles(
            node_id=node_id,
            cache=self.cache,
            topics=topics,
            replicas=replicas,
            clock=clock,
            registration=self.registration,
            store_assignments=store_assignments,
        )
        self.mirror = MetadataMirror(
            coord,
            cache=self.cache,
            topics=topics,
            replicas=replicas,
            roles=self.roles,
            queue=self.events,
            store_assignments=store_assignments,
        )
        self.isr = IsrWriter(
            coord,
            node_id=node_id,
            cache=self.cache,
            replicas=replicas,
            registration=self.registration,
            start_soon=self.start_soon,
        )
        self.election = ControllerElection(
            coord,
            node_id=node_id,
            cache=self.cache,
            clock=clock,
            make_controller=functools.partial(controller_factory, self),
            eligible=lambda: self.registration.registered and not self.roles.shutting_down,
            start_soon=self.start_soon,
        )

    # -- what the rest of the broker reads -------------------------------------------------------
    @property
    def broker_epoch(self) -> int:
        return self.registration.broker_epoch

    @property
    def registration_wait_s(self) -> float:
        """How long a registration held by another session is waited out."""
        return self.registration.wait_s

    @property
    def is_controller(self) -> bool:
        return self.election.is_controller

    @property
    def changed(self) -> trio.Event:
        """Set (and replaced) after every applied change."""
        return self.events.changed

    def start_soon(self, fn: Callable[..., Awaitable[object]], *args: object) -> None:
        """Run `fn(*args)` as a task of the running member (ZooKeeper writes that outlive
        the call that started them: ISR writes, the controller, the topic admin's writes)."""
        assert self._nursery is not None, "the cluster member is not running"
        self._nursery.start_soon(fn, *args)

    # -- lifetime ------------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for path in zl.PERSISTENT_PATHS:
                await self.coord.ensure_path(path)
            if await self.coord.exists(zl.CONTROLLER_EPOCH) is None:
                with contextlib.suppress(NodeExistsError):
                    await self.coord.create(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(0))
            with contextlib.suppress(NoNodeError):
                await self.coord.delete(f"{zl.CONTROLLED_SHUTDOWN}/{self.node_id}")
            await self.registration.register()
            self.coord.add_session_listener(self._on_session)
            queue = self.events.callback
            await self.coord.watch_children(zl.BROKER_IDS, queue(self.mirror.on_brokers))
            await self.coord.watch_data(zl.CONTROLLER, queue(self.election.on_controller))
            await self.coord.watch_children(zl.BROKER_TOPICS, queue(self.mirror.on_topics))
            # Apply what the watches reported before saying we are up.
            await self.events.apply_ready()
            task_status.started()
            await self.events.apply_forever()

    # -- session -------------------------------------------------------------------------------
    def _on_session(self, state: SessionState) -> None:
        if state is SessionState.LOST:
            self.registration.registered = False
            self.events.put(self._session_lost)
        elif state is SessionState.CONNECTED and not self.registration.registered:
            self.events.put(self._session_back)

    async def _session_lost(self) -> None:
        log.warning("ZooKeeper session lost: dropping every leadership until registered again")
        self.registration.registered = False
        self.election.stop()
        self.roles.drop_leaderships()

    async def _session_back(self) -> None:
        if self.registration.registered:
            return
        await self.registration.register()
        await self.mirror.reread_hosted()
        if await self.coord.exists(zl.CONTROLLER) is None:
            await self.election.try_elect()

    # -- IsrChangeListener ---------------------------------------------------------------------
    def propose_isr(
        self, topic: str, index: int, *, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None:
        self.isr.propose_isr(
            topic, index, leader_epoch=leader_epoch, partition_epoch=partition_epoch, isr=isr
        )

    # -- controlled shutdown -------------------------------------------------------------------
    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask the controller to move leaderships away; True when nothing movable is left."""
        self.roles.shutting_down = True
        self.events.put(self.roles.reapply_all)  # stop following outside the ISRs
        self.election.stop()
        return await request_controlled_shutdown(
            self.coord,
            node_id=self.node_id,
            cache=self.cache,
            queue=self.events,
            timeout_s=timeout_s,
        )


def _registration_wait_s(config: BrokerConfig | None) -> float:
    """The session timeout + REGISTRATION_MARGIN_S (see zk_registration)."""
    timeout_ms = (
        config.get_int("zookeeper.session.timeout.ms")
        if config is not None
        else DEFAULT_SESSION_TIMEOUT_MS
    )
    return timeout_ms / 1000 + REGISTRATION_MARGIN_S
