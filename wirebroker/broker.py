"""The composition root: one `Broker` builds every service from a `BrokerConfig` and runs them.

Two modes, one code path (the cluster code, as in production):

    cluster         `zookeeper.connect` set (or a `coordination` given): the broker joins the
                    cluster of that ZooKeeper (`ClusterMember`, the `ZkController` when elected,
                    `ZkTopicAdmin`, the `ReplicaManager` in replicated mode); built in serve(),
                    once the cluster id is read from ZooKeeper
    single broker   the default: the same code over an in-process `MemoryZooKeeper`
                    (`wirebroker.cluster.local_cluster`), seeded from the `TopicStore` at every
                    start, after the logs are loaded; the store stays the durable record of the
                    topics. Built in the constructor (the cluster id is the store's)

There is no mode without a cluster layer: tests that need several brokers run them over one
in-memory ZooKeeper (tests/integration/_memory_cluster.py), the controller electing leaders.

Construction (`Broker(config)`, synchronous): creates the log directories, locks each one
(`<dir>/.lock`, `wirebroker.log.dir_lock`: a second broker on a directory fails here, before
touching any other file; the lock is held until the logs are closed), opens the
`TopicStore` (topic metadata + cluster id, a JSON file in the first log dir), checks or writes
each log dir's `meta.properties` (another cluster's or node's dir refuses to start), builds the
`LogManager`, `ReplicaManager`, the topic admin, the `FetchWaiters` (a data listener of the
`ReplicaManager`), `ProducerIdManager` and the `Services` every handler sees, and imports the
handlers (`load_handlers`) behind the one `Dispatcher` the server calls.

Lifetime (`await Broker.serve(task_status=...)`, normally via `nursery.start`)::

    coordination  the ZooKeeper session starts (cluster: the cluster id is read or written
                  and the services are built)
    load          ReplicaManager.load -> LogManager.load: open every partition log, recovering
                  the ones not closed cleanly; a single broker then seeds its ZooKeeper
    bind          every listener (port 0 allowed), then fill Services.advertised_host/port;
                  nothing is accepted yet (clients wait in the listen backlog, as in Kafka)
    member        registers this broker, mirrors the topics and takes the roles ZooKeeper
                  gives (a single broker: leader of every partition, at the epoch its log holds)
    serve         the listeners start accepting: no client ever sees a Metadata answer from
                  a broker that does not know the cluster yet (no brokers listed: librdkafka
                  drops every broker handle it knows, see net/server.py)
    started       task_status.started([(host, port), ...]): the bound addresses
    run           the server, plus background tasks: retention every
                  log.retention.check.interval.ms, the flush scheduler, recovery-point
                  checkpoints every log.flush.offset.checkpoint.interval.ms (60 s), log
                  compaction (every log.cleaner.backoff.ms while idle), and the
                  group coordinator (`GroupCoordinatorRuntime.run`: replays __consumer_offsets,
                  then runs the group timers; group requests answer COORDINATOR_NOT_AVAILABLE /
                  COORDINATOR_LOAD_IN_PROGRESS until their partition is loaded)
    cancelled     the group coordinator shuts down (parked JoinGroup/SyncGroup requests are
                  answered NOT_COORDINATOR); stop accepting; in-flight requests get `grace_s`
                  seconds to finish and send their responses; then LogManager.close() (flush,
                  checkpoints, clean-shutdown marker). Cancellation is the only way to stop a
                  broker; serve() returns (or raises Cancelled) only after the logs are closed.

Replication (both modes; the cluster layer drives roles through `replicas.make_leader` /
`make_follower` / `stop_replica`): the `ReplicaManager` builds partitions without a role; a
`ReplicaFetcherManager` task fetches the partitions this broker follows from their leaders
(addresses from the member's view); a task drops out-of-sync ISR members every
replica.lag.time.max.ms / 2 (`maybe_shrink_isr`); `replication-offset-checkpoint` is written
every replica.high.watermark.checkpoint.interval.ms and before the logs close. A single broker
runs the fetcher and the ISR task too (with one replica per partition they never have anything
to do) but keeps no HW checkpoint (the HW of a single replica is its log end once it leads).
`ProduceWaiters` (acks=-1 purgatory) is built in both modes; on a single broker nothing ever
waits in it. The group coordinator follows the
leadership of `__consumer_offsets` partitions (role listener); a single broker creates that
topic with one replica, a cluster with offsets.topic.replication.factor.

Listeners (`wirebroker/listeners.py`, made ready by `wirebroker/net/endpoints.py`): every entry
of `listeners` is bound with its own security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT,
SASL_SSL through `listener.security.protocol.map`), except those named in
`controller.listener.names`. A client is answered (Metadata, FindCoordinator, DescribeCluster,
leader hints) with the advertised addresses of the listener it connected on; ZooKeeper's
registration lists every listener, and its host/port are the inter-broker listener's
(`inter.broker.listener.name`), where other brokers connect. A wildcard bind (`0.0.0.0`, `::`,
empty host) is advertised as the loopback address of its family (127.0.0.1 / ::1), because a
wildcard is not connectable; Kafka would advertise the canonical host name instead (empty host)
or refuse to start (0.0.0.0). Set `advertised.listeners` to reach the broker from other hosts.

Flush scheduler: Kafka checks `flush.ms` every log.flush.scheduler.interval.ms (default: never);
wirebroker checks every min(that, 1000) ms so a topic-level `flush.ms` takes effect.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from wirebroker import __version__
from wirebroker.admin.listen import parse_admin_listeners
from wirebroker.admin.routes import Routes
from wirebroker.cluster.controller import ZkController
from wirebroker.cluster.local_cluster import LocalCluster
from wirebroker.cluster.zk_acls import ZkAcls
from wirebroker.cluster.zk_broker_configs import ZkBrokerConfigs
from wirebroker.cluster.zk_client_quotas import ZkClientQuotas
from wirebroker.cluster.zk_group_configs import ZkGroupConfigs
from wirebroker.cluster.zk_member import ClusterMember, resolve_cluster_id
from wirebroker.cluster.zk_producer_ids import ZkProducerIdBlocks
from wirebroker.cluster.zk_scram_users import ZkScramUsers
from wirebroker.cluster.zk_topic_admin import ZkTopicAdmin
from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.coordination.api import Coordination, SessionState
from wirebroker.dynamic_configs import BrokerConfigUpdates
from wirebroker.faults.control import FaultControl
from wirebroker.faults.core import FaultRules
from wirebroker.faults.http import mount as mount_fault_routes
from wirebroker.group.runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime
from wirebroker.handlers.context import Services, wall_clock_ms
from wirebroker.handlers.dispatcher import Dispatcher
from wirebroker.handlers.registry import load_handlers
from wirebroker.log.dir_lock import LogDirLocks
from wirebroker.log.fs import FileSystem, OsFileSystem
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.group_config_store import GroupConfigs, LocalGroupConfigs
from wirebroker.metadata.topic_admin import TopicAdmin
from wirebroker.metadata.topic_store import (
    TopicInfo,
    TopicStore,
    ensure_meta_properties,
    new_random_uuid,
    read_meta_properties,
    uuid_to_base64,
)
from wirebroker.metadata.view import ClusterView
from wirebroker.net.endpoints import BrokerEndpoints
from wirebroker.net.server import KafkaServer
from wirebroker.replication.broker_client import SECURITY as PEER_SECURITY
from wirebroker.replication.delayed_produce import ProduceWaiters
from wirebroker.replication.fetch_sessions import FetchSessions
from wirebroker.replication.fetch_waiters import FetchWaiters
from wirebroker.replication.fetcher import ReplicaFetcherManager
from wirebroker.replication.partition import Partition, Role
from wirebroker.replication.producer_ids import ProducerIdManager
from wirebroker.replication.replica_manager import ReplicaManager
from wirebroker.replication.txn_verify import TxnVerifier
from wirebroker.security.acls import Authorizer, NoAuthorizer
from wirebroker.security.authorizer import authorizer_from_config
from wirebroker.security.client_quotas import LocalQuotaConfigs, QuotaConfigs
from wirebroker.security.connection_rates import ConnectionRates
from wirebroker.security.quota_manager import ClientQuotas
from wirebroker.security.scram_users import LocalScramUsers, ScramUsers
from wirebroker.share.manager import SharePartitionManager
from wirebroker.share_coordinator.config import SHARE_STATE_TOPIC
from wirebroker.share_coordinator.persister import CoordinatorPersister
from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime
from wirebroker.share_coordinator.share_groups import CoordinatorShareGroups
from wirebroker.txn.markers import MarkerSender
from wirebroker.txn.partitioning import partition_for as txn_partition_for
from wirebroker.txn.runtime import TXN_TOPIC, TxnCoordinatorRuntime

if TYPE_CHECKING:
    from wirebroker.admin.server import AdminServer

log = logging.getLogger("wirebroker.broker")

_FLUSH_CHECK_MAX_MS = 1000


class Broker:
    """A single wirebroker node: storage, topic metadata, handlers and the network server."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        grace_s: float = 5.0,
        coordination: Coordination | None = None,
        fs: FileSystem | None = None,
    ) -> None:
        self.config = config
        #: every file of the log dirs goes through it (tests inject faults, power loss)
        self.fs: FileSystem = fs or OsFileSystem()
        self.clock = clock
        self.grace_s = grace_s
        if coordination is None and config.values.get("zookeeper.connect"):
            coordination = zookeeper_coordination(config)
        #: A single broker: the cluster code over an in-process ZooKeeper seeded from the store.
        self.local_cluster: LocalCluster | None = None
        if coordination is None:
            self.local_cluster = LocalCluster(config.node_id)
            coordination = self.local_cluster.coordination
        self.endpoints = BrokerEndpoints(config)  # the listeners, advertised once bound
        try:
            #: where the admin HTTP listener binds (`admin.listeners`; empty: no listener)
            self.admin_listen = parse_admin_listeners(
                [s for s in config.get_str("admin.listeners").split(",") if s.strip()]
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        #: The admin listener's route table: other packages add their routes here
        #: (`broker.admin_routes.add(method, path, handler)`, wirebroker/admin/routes.py).
        self.admin_routes = Routes()
        self.admin_http: AdminServer | None = None
        if self.admin_listen:  # imported only then: h11 + prometheus_client cost ~40 ms
            from wirebroker.admin.server import AdminServer

            self.admin_http = AdminServer(self.admin_routes)
        #: the ZooKeeper session as last reported (a single broker's is in-process: connected)
        self.zookeeper_state = "connected"
        coordination.add_session_listener(self._on_session)
        #: the admin listener's bound (host, port) pairs, once serving
        self.admin_bound: list[tuple[str, int]] = []
        self.log_dirs = [Path(d).expanduser() for d in config.log_dirs]
        #: The cluster's coordination session (a single broker's is its in-process ZooKeeper).
        self.coordination = coordination
        self.member: ClusterMember | None = None
        #: the dynamic broker configs' ZooKeeper watcher (None: no coordination)
        self.zk_broker_configs: ZkBrokerConfigs | None = None
        self._coordination_scope: trio.CancelScope | None = None
        for directory in self.log_dirs:
            directory.mkdir(parents=True, exist_ok=True)
        # Before any file of a log dir is read or written; held until the logs are closed.
        self.dir_locks = LogDirLocks.acquire(self.log_dirs)
        self.bound: list[tuple[str, int]] = []
        if self.local_cluster is None:
            return  # built in serve(), once the cluster id is known
        try:
            self._build(config, clock, grace_s)
        except BaseException:
            self.dir_locks.release()
            raise

    def _build(self, config: BrokerConfig, clock: Callable[[], int], grace_s: float) -> None:
        """Build every service, bottom up (the steps below, in this order)."""
        self._build_storage(config)
        cluster = self._build_cluster(config, clock)
        self._build_waiters(config, clock)
        self.share_coordinator, self.share_persister = _share_coordinator(
            self, config, clock, cluster
        )
        self._build_group_coordinator(config, clock)
        self._build_txn_coordinator(config, clock, cluster)
        self._build_services(config, clock, cluster)
        _sasl_asks_scram_users(self.endpoints, self.services.scram_users)
        self._build_server(config, clock, grace_s)
        if self.admin_http is not None:
            self._add_admin_routes()

    def _build_storage(self, config: BrokerConfig) -> None:
        """The topic store, each log dir's meta.properties, the logs and the ReplicaManager."""
        node_id = config.node_id
        self.topics = TopicStore.open(
            self.log_dirs[0], cluster_id=config.values.get("cluster.id"), fs=self.fs
        )
        ensure_meta_properties(
            self.log_dirs, node_id=node_id, cluster_id=self.topics.cluster_id, fs=self.fs
        )
        self.logs = LogManager(self.log_dirs, fs=self.fs)
        self.replicas = ReplicaManager(config, self.logs, self.topics, node_id=node_id)

    def _build_cluster(self, config: BrokerConfig, clock: Callable[[], int]) -> ClusterView:
        """The cluster member and topic admin; returns the view."""
        node_id = config.node_id
        self.admin: TopicAdmin
        self.member = ClusterMember(
            self.coordination,
            node_id=node_id,
            rack=config.values.get("broker.rack"),
            topics=self.topics,
            replicas=self.replicas,
            address=self._advertised,
            clock=clock,
            controller_factory=ZkController,
            config=config,
            store_assignments=self.local_cluster is None,
            endpoints=self.endpoints.registration,
        )
        self.replicas.isr_listener = self.member
        self.admin = ZkTopicAdmin(
            config, self.member, self.logs, local_logs=self.local_cluster is not None
        )
        return self.member.cache

    def _build_waiters(self, config: BrokerConfig, clock: Callable[[], int]) -> None:
        """Fetch and produce waiters, the replica fetchers, the producer id manager."""
        node_id = config.node_id
        self.fetch_waiters = FetchWaiters()
        self.replicas.add_data_listener(self.fetch_waiters.notify)
        self.replicas.add_hw_listener(self.fetch_waiters.notify_hw)
        self.produce_waiters = ProduceWaiters()
        self.replicas.add_hw_listener(self.produce_waiters.notify)
        self.fetchers = ReplicaFetcherManager(
            self.replicas,
            node_id=node_id,
            endpoint=self._peer_endpoint,
            broker_epoch=self._broker_epoch,
            config=config,
            clock=clock,
        )
        # A cluster: ids from one sequence in ZooKeeper, shared by every broker. A single
        # broker keeps reserving them in its store: its ZooKeeper forgets them at every start.
        reserve = None
        if self.local_cluster is None:
            reserve = ZkProducerIdBlocks(self.coordination, node_id).reserve
        self.producer_ids = ProducerIdManager(self.topics, reserve=reserve)

    def _build_group_coordinator(self, config: BrokerConfig, clock: Callable[[], int]) -> None:
        """The group coordinator; it follows the leadership of `__consumer_offsets`. It
        initializes and deletes share states through the share coordinator's persister."""
        self.group_coordinator = GroupCoordinatorRuntime(
            config,
            self.replicas,
            admin=self.admin,
            clock=clock,
            offsets_replication_factor=(
                1
                if self.local_cluster is not None
                else config.get_int("offsets.topic.replication.factor")
            ),
            replication_waiter=self.produce_waiters.wait,
            share_persister=self.share_persister,
        )
        self.replicas.add_role_listener(self._offsets_leadership)

    def _build_services(
        self, config: BrokerConfig, clock: Callable[[], int], cluster: ClusterView
    ) -> None:
        """The `Services` every handler sees."""
        node_id = config.node_id
        self.services = Services(
            config=config,
            logs=self.logs,
            replicas=self.replicas,
            admin=self.admin,
            fetch_waiters=self.fetch_waiters,
            producer_ids=self.producer_ids,
            node_id=node_id,
            cluster_id=self.topics.cluster_id,
            cluster=cluster,
            clock=clock,
            group_coordinator=self.group_coordinator,
            produce_waiters=self.produce_waiters,
            txn_verifier=TxnVerifier(
                cluster,
                txn_partition_for,
                node_id=node_id,
                enabled=config.get_bool("transaction.partition.verification.enable"),
            ),
            txn_coordinator=self.txn_coordinator,
            share_coordinator=self.share_coordinator,
            share_persister=self.share_persister,
            broker_configs=_broker_configs(self, config, node_id),
            scram_users=_scram_users(self),
            authorizer=_authorizer(self, config),
            fetch_sessions=FetchSessions.from_config(config),
            quota_configs=(quota_configs := _quota_configs(self)),
            group_configs=_group_configs(self),
            client_quotas=ClientQuotas(
                quota_configs.quotas,
                samples=config.get_int("quota.window.num"),
                window_s=config.get_int("quota.window.size.seconds"),
                controller_samples=config.get_int("controller.quota.window.num"),
                controller_window_s=config.get_int("controller.quota.window.size.seconds"),
            ),
        )
        self.group_coordinator.follow_group_configs(self.services.group_configs)
        self.group_coordinator.follow_topics(cluster)
        _share_services(self, config, clock, cluster)

    def _build_server(self, config: BrokerConfig, clock: Callable[[], int], grace_s: float) -> None:
        """The handlers, the Dispatcher, the KafkaServer and the fault control."""
        self.handlers = load_handlers()
        max_frame_bytes = config.socket_request_max_bytes
        #: injected faults (wirebroker.faults): the dispatcher checks them per request
        self.faults = FaultRules()
        self.dispatcher = Dispatcher(
            self.services, self.handlers, max_frame_bytes=max_frame_bytes, faults=self.faults
        )
        self.server = KafkaServer(
            self.dispatcher,
            max_frame_bytes=max_frame_bytes,
            idle_timeout_ms=config.get_int("connections.max.idle.ms"),
            grace_s=grace_s,
            max_connections=config.get_int("max.connections"),
            max_connections_per_ip=config.get_int("max.connections.per.ip"),
            hold_requests=True,
            failed_authentication_delay_ms=self.endpoints.failed_authentication_delay_ms,
            clock_ms=clock,
            connection_rates=_connection_rates(self, config),
        )
        self.fault_control = FaultControl(
            self.faults,
            server=self.server,
            replicas=self.replicas,
            admin=self.admin,
            member=lambda: self.member,
            node_id=config.node_id,
            clock=clock,
        )

    def _add_admin_routes(self) -> None:
        from wirebroker.admin.state import AdminSources
        from wirebroker.admin.views import add_builtin_routes

        mount_fault_routes(self.admin_routes, self.fault_control)
        add_builtin_routes(
            self.admin_routes,
            AdminSources(
                self.services,
                connections=lambda: len(self.server.connections),
                zookeeper_state=lambda: self.zookeeper_state,
                authentications=self.server.authentications.rows,
                throttled_connections=lambda: list(self.server.connection_rates.rows()),
                version=__version__,
            ),
        )

    def _on_session(self, state: SessionState) -> None:
        self.zookeeper_state = state.value

    def _build_txn_coordinator(
        self, config: BrokerConfig, clock: Callable[[], int], cluster: ClusterView
    ) -> None:
        """The transaction coordinator and its WriteTxnMarkers sender (which reaches every
        partition leader over the wire, this broker included); it follows the leadership of
        `__transaction_state` partitions like the group coordinator."""
        self.txn_coordinator = TxnCoordinatorRuntime(
            config,
            self.replicas,
            admin=self.admin,
            producer_ids=self.producer_ids,
            clock=clock,
            live_brokers=lambda: len(cluster.live_brokers()),
            replication_waiter=self.produce_waiters.wait,
        )

        def leader_of(topic: str, partition: int) -> tuple[int, str, int] | None:
            node = cluster.leader(topic, partition)
            return None if node is None else (node.node_id, node.host, node.port)

        self.txn_markers = MarkerSender(
            leader_of,
            on_done=self.txn_coordinator.marker_done,
            wanted=self.txn_coordinator.marker_wanted,
            client_id=f"wirebroker-{config.node_id}-txn-markers",
            max_frame_bytes=config.socket_request_max_bytes,
        )
        self.txn_coordinator.markers = self.txn_markers
        self.replicas.add_role_listener(self._txn_leadership)

    def _txn_leadership(self, part: Partition) -> None:
        """The transaction coordinator follows the leadership of `__transaction_state`."""
        if part.topic != TXN_TOPIC:
            return
        if part.role is Role.LEADER:
            self.txn_coordinator.on_became_leader(part.index, part.leader_epoch)
        else:
            self.txn_coordinator.on_resigned(part.index, part.leader_epoch)

    def _offsets_leadership(self, part: Partition) -> None:
        """The group coordinator follows the leadership of `__consumer_offsets` partitions."""
        if part.topic != OFFSETS_TOPIC:
            return
        if part.role is Role.LEADER:
            self.group_coordinator.on_became_leader(part.index, part.leader_epoch)
        else:
            self.group_coordinator.on_resigned(part.index, part.leader_epoch)

    def _peer_endpoint(self, node_id: int) -> tuple[str, int] | None:
        node = None if self.member is None else self.member.cache.broker(node_id)
        return None if node is None else (node.host, node.port)

    def _broker_epoch(self) -> int:
        return -1 if self.member is None else self.member.broker_epoch

    def _advertised(self) -> tuple[str, int]:
        return self.services.advertised_host, self.services.advertised_port

    # -- lifetime -----------------------------------------------------------------------------
    async def serve(
        self, *, task_status: trio.TaskStatus[list[tuple[str, int]]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run until cancelled, then shut down gracefully (see the module docstring)."""
        stop = trio.Event()
        PEER_SECURITY.set(self.endpoints.peer_security)  # for every task started from here
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_set_when_cancelled, stop)
            coordination = self.coordination
            try:
                if self.local_cluster is None:
                    await self._join_cluster(nursery, coordination)
                else:
                    await nursery.start(self._run_coordination, coordination)
            except BaseException:
                self.dir_locks.release()
                if self._coordination_scope is not None:
                    self._coordination_scope.cancel()
                raise
            try:
                async with trio.open_nursery() as inner:
                    bound = await inner.start(self._run, stop)
                    task_status.started(bound)
            finally:
                # The coordination session ends last: controlled shutdown needed it.
                if self._coordination_scope is not None:
                    self._coordination_scope.cancel()

    async def _run_coordination(
        self, coordination: Coordination, *, task_status: trio.TaskStatus[None]
    ) -> None:
        # Shielded: only serve() ends the session, after the broker stopped.
        with trio.CancelScope(shield=True) as scope:
            self._coordination_scope = scope
            await coordination.run(task_status=task_status)

    async def _join_cluster(self, nursery: trio.Nursery, coordination: Coordination) -> None:
        """Connect to the cluster, adopt its id (or give it ours), then build the services."""
        await nursery.start(self._run_coordination, coordination)
        meta = read_meta_properties(self.log_dirs[0], self.fs)
        proposed = (
            self.config.values.get("cluster.id")
            or (meta or {}).get("cluster.id")
            or uuid_to_base64(new_random_uuid())
        )
        cluster_id = await resolve_cluster_id(coordination, proposed)
        self.config.values["cluster.id"] = cluster_id
        self._build(self.config, self.clock, self.grace_s)

    async def _run(
        self, stop: trio.Event, *, task_status: trio.TaskStatus[list[tuple[str, int]]]
    ) -> None:
        # Shielded: the caller's cancellation reaches us only as `stop`, so in-flight requests
        # can finish and the logs are closed cleanly. Every wait in here is bounded once `stop`
        # is set (the server's drain has a deadline).
        with trio.CancelScope(shield=True):
            loaded = False
            try:
                self.replicas.load(self.clock())
                loaded = True
                if self.local_cluster is not None:
                    await self.local_cluster.seed(self.topics, self._log_epoch)
                if self.zk_broker_configs is not None:
                    await self.zk_broker_configs.start()  # applied before anything is served
                async with trio.open_nursery() as nursery:
                    self.bound = await nursery.start(self.server.run, self.endpoints.endpoints)
                    self.endpoints.bound(self.server.bound_by_listener)
                    host, port = self.endpoints.inter_broker_address()
                    self.services.advertised_host = host
                    self.services.advertised_port = port
                    log.info(
                        "broker %d (cluster %s) serving on %s, advertised as %s",
                        *(self.services.node_id, self.services.cluster_id),
                        *(", ".join(f"{h}:{p}" for h, p in self.bound), self.endpoints),
                    )
                    if self.admin_http is not None:
                        self.admin_bound = await nursery.start(
                            self.admin_http.run, self.admin_listen
                        )
                    member_scope = trio.CancelScope()
                    if self.member is not None:
                        await nursery.start(_run_in, member_scope, self.member.run)
                    await nursery.start(self.services.scram_users.run)  # before any login
                    if isinstance(self.services.authorizer, ZkAcls):
                        await nursery.start(self.services.authorizer.run)  # before any request
                    await nursery.start(self.services.quota_configs.run)
                    await nursery.start(self.services.group_configs.run)
                    self.server.start_serving()  # registered, the cluster mirrored
                    task_status.started(self.bound)
                    with trio.CancelScope() as background:
                        async with trio.open_nursery() as tasks:
                            self._start_background(tasks)
                            await stop.wait()
                            if self.member is not None and self.config.get_bool(
                                "controlled.shutdown.enable"
                            ):
                                timeout_ms = self.config.get_int("controlled.shutdown.timeout.ms")
                                await self.member.controlled_shutdown(timeout_ms / 1000)
                            background.cancel()
                    log.info("shutting down")
                    member_scope.cancel()
                    self.services.scram_users.close()
                    if isinstance(self.services.authorizer, ZkAcls):
                        self.services.authorizer.close()
                    self.services.quota_configs.close()
                    self.services.group_configs.close()
                    self.group_coordinator.shutdown()
                    self.txn_coordinator.shutdown()
                    self.share_coordinator.shutdown()
                    self.server.shutdown()
                    if self.admin_http is not None:
                        self.admin_http.shutdown()
            finally:
                if loaded:
                    if self._checkpoints_hw:
                        self._checkpoint_high_watermarks()
                    self.logs.close()
                    log.info("logs closed cleanly")
                self.dir_locks.release()

    def _start_background(self, nursery: trio.Nursery) -> None:
        retention_ms = self.config.get_int("log.retention.check.interval.ms")
        flush_ms = min(self.config.get_int("log.flush.scheduler.interval.ms"), _FLUSH_CHECK_MAX_MS)
        checkpoint_ms = self.config.get_int("log.flush.offset.checkpoint.interval.ms")
        nursery.start_soon(
            _every, retention_ms, "retention", lambda: self.logs.run_retention(self.clock())
        )
        nursery.start_soon(_every, flush_ms, "flush", lambda: self.logs.flush_due(self.clock()))
        nursery.start_soon(_every, checkpoint_ms, "checkpoint", self.logs.checkpoint)
        if self.config.get_bool("log.cleaner.enable"):
            nursery.start_soon(self._clean_logs)
        nursery.start_soon(self.group_coordinator.run)
        if self.services.share_partitions is not None:
            nursery.start_soon(self.services.share_partitions.run)
        nursery.start_soon(self.txn_coordinator.run)
        nursery.start_soon(self.txn_markers.run)
        nursery.start_soon(self.share_coordinator.run)
        nursery.start_soon(self.share_persister.run)
        self._start_replication(nursery)

    # -- replication ------------------------------------------------------------------------
    def _start_replication(self, nursery: trio.Nursery) -> None:
        nursery.start_soon(self.fetchers.run)
        lag_ms = self.config.get_int("replica.lag.time.max.ms")
        nursery.start_soon(
            _every,
            max(lag_ms // 2, 1),
            "ISR shrink",
            lambda: self.replicas.maybe_shrink_isr(self.clock()),
        )
        if self._checkpoints_hw:
            hw_ms = self.config.get_int("replica.high.watermark.checkpoint.interval.ms")
            nursery.start_soon(_every, hw_ms, "HW checkpoint", self._checkpoint_high_watermarks)

    @property
    def _checkpoints_hw(self) -> bool:
        """A single broker's partitions have one replica: the HW is the log end at make_leader,
        so there is no `replication-offset-checkpoint` to keep."""
        return self.local_cluster is None

    def _log_epoch(self, topic: str, index: int) -> int:
        part = self.replicas.partition(topic, index)
        return -1 if part is None else part.latest_epoch

    def _checkpoint_high_watermarks(self) -> None:
        try:
            self.replicas.checkpoint_high_watermarks()
        except Exception:
            log.exception("cannot write the replication-offset-checkpoint")

    async def _clean_logs(self) -> None:
        """Compact `cleanup.policy=compact` logs: bounded chunks, yielding between them, and
        log.cleaner.backoff.ms (read each time: a dynamic config) when there is nothing to do."""
        while True:
            backoff_ms = self.config.get_int("log.cleaner.backoff.ms")
            try:
                self.logs.run_cleaner(self.clock())
                busy = self.logs.cleaner_busy
            except Exception:
                log.exception("log cleaner failed")
                busy = False
            await trio.sleep(0 if busy else max(backoff_ms, 1) / 1000)


async def _every(interval_ms: int, what: str, job: Callable[[], object]) -> None:
    """Run `job` every `interval_ms`; a failure is logged and the next run still happens."""
    interval_s = max(interval_ms, 1) / 1000
    while True:
        await trio.sleep(interval_s)
        try:
            job()
        except Exception:
            log.exception("background task %r failed", what)


def zookeeper_coordination(config: BrokerConfig) -> Coordination:
    """A ZooKeeper session from `zookeeper.connect` and its timeouts."""
    from wirebroker.coordination.zk import ZkCoordination

    return ZkCoordination(
        config.values["zookeeper.connect"],
        session_timeout_s=config.get_int("zookeeper.session.timeout.ms") / 1000,
        connect_timeout_s=config.get_int("zookeeper.connection.timeout.ms") / 1000,
    )


async def _run_in(
    scope: trio.CancelScope,
    run: Callable[..., Awaitable[None]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """`run(task_status=...)` inside `scope`, so that it can be stopped on its own."""
    with scope:
        await run(task_status=task_status)


async def _set_when_cancelled(event: trio.Event) -> None:
    try:
        await trio.sleep_forever()
    finally:
        event.set()


def _share_services(
    broker: Broker, config: BrokerConfig, clock: Callable[[], int], cluster: ClusterView
) -> None:
    """KIP-932 in `Services`: the group coordinator's share groups for the share group
    offsets APIs, and the share partitions ShareFetch / ShareAcknowledge use."""
    services = broker.services
    services.share_groups = CoordinatorShareGroups(
        broker.group_coordinator, lambda t: getattr(cluster.topic_by_id(t), "name", None)
    )
    manager = services.share_partitions = SharePartitionManager(
        config,
        services.share_persister,
        services.group_configs,
        clock=clock,
        wake=broker.fetch_waiters.notify,
    )
    broker.group_coordinator.share.deleted_listeners.append(manager.forget_group)

    def topic_deleted(info: TopicInfo) -> None:  # Kafka's metadata publishers, share part
        manager.forget_topic(info.topic_id)
        broker.group_coordinator.on_topics_deleted({info.topic_id})
        broker.share_coordinator.on_topics_deleted({info.topic_id})

    def leadership(part: Partition) -> None:
        if part.topic_id is not None and not part.is_leader:
            manager.forget_partition(part.topic_id, part.index)

    broker.topics.add_removal_listener(topic_deleted)
    broker.replicas.add_role_listener(leadership)


def _share_coordinator(
    broker: Broker, config: BrokerConfig, clock: Callable[[], int], cluster: ClusterView
) -> tuple[ShareCoordinatorRuntime, CoordinatorPersister]:
    """The KIP-932 share coordinator, which follows the leadership of `__share_group_state`
    partitions, and the persister over it (it reaches other brokers' coordinators over the
    wire)."""

    def partition_count(topic_id: uuid.UUID) -> int | None:
        info = cluster.topic_by_id(topic_id)
        return None if info is None else info.partitions

    coordinator = ShareCoordinatorRuntime(
        config,
        broker.replicas,
        admin=broker.admin,
        clock=clock,
        partition_count=partition_count,
        live_brokers=lambda: len(cluster.live_brokers()),
        replication_waiter=broker.produce_waiters.wait,
    )

    def leader_of(partition: int) -> tuple[int, str, int] | None:
        node = cluster.leader(SHARE_STATE_TOPIC, partition)
        return None if node is None else (node.node_id, node.host, node.port)

    def leadership(part: Partition) -> None:
        if part.topic != SHARE_STATE_TOPIC:
            return
        if part.role is Role.LEADER:
            coordinator.on_became_leader(part.index, part.leader_epoch)
        else:
            coordinator.on_resigned(part.index, part.leader_epoch)

    broker.replicas.add_role_listener(leadership)
    persister = CoordinatorPersister(
        coordinator,
        leader_of,
        node_id=config.node_id,
        client_id=f"wirebroker-{config.node_id}-share-persister",
        max_frame_bytes=config.socket_request_max_bytes,
    )
    return coordinator, persister


def _broker_configs(broker: Broker, config: BrokerConfig, node_id: int) -> BrokerConfigUpdates:
    """The broker's dynamic configs (wirebroker.dynamic_configs): in ZooKeeper (a single
    broker's in-process one, mirrored into its topic store)."""

    def changed(keys: set[str]) -> None:
        _apply_dynamic_change(broker, keys)

    broker.zk_broker_configs = ZkBrokerConfigs(
        broker.coordination,
        config,
        node_id,
        changed,
        store=broker.topics if broker.local_cluster is not None else None,
    )
    return broker.zk_broker_configs


def _scram_users(broker: Broker) -> ScramUsers:
    """SCRAM users (wirebroker.cluster.zk_scram_users): in ZooKeeper (a single broker's
    in-process one, kept in its topic store), else in memory."""
    if broker.coordination is None:
        return LocalScramUsers()
    store = broker.topics if broker.local_cluster is not None else None
    return ZkScramUsers(broker.coordination, store=store)


def _authorizer(broker: Broker, config: BrokerConfig) -> Authorizer:
    """`authorizer.class.name` (Kafka's names, docs/security.md): none (every check passes,
    the ACL APIs SECURITY_DISABLED), else an `AclAuthorizer` kept in ZooKeeper
    (wirebroker.cluster.zk_acls: a single broker's in-process one, kept in its topic store)."""
    try:
        acls = authorizer_from_config(config)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if acls is None:
        return NoAuthorizer()
    if broker.coordination is None:
        return acls
    store = broker.topics if broker.local_cluster is not None else None
    return ZkAcls(broker.coordination, acls, store=store)


def _connection_rates(broker: Broker, config: BrokerConfig) -> ConnectionRates:
    """KIP-612's limits: max.connection.creation.rate (broker-wide and per listener, the
    inter-broker listener exempt from the former) and the ip client quotas' rates."""
    listener_rates: dict[str, float] = {}
    for spec in broker.endpoints.listeners:
        raw = config.values.get(f"listener.name.{spec.name.lower()}.max.connection.creation.rate")
        if raw is not None:
            try:
                listener_rates[spec.name] = float(int(str(raw).strip()))
            except ValueError as exc:
                raise ConfigError(
                    f"listener.name.{spec.name.lower()}.max.connection.creation.rate={raw!r}: "
                    "not an integer"
                ) from exc
    return ConnectionRates(
        broker.services.quota_configs.quotas,
        samples=config.get_int("quota.window.num"),
        window_ms=config.get_int("quota.window.size.seconds") * 1000,
        broker_rate=config.get_int("max.connection.creation.rate"),
        listener_rates=listener_rates,
        protected=broker.endpoints.inter_broker.name,
    )


def _group_configs(broker: Broker) -> GroupConfigs:
    """The GROUP config resource's overrides (wirebroker.cluster.zk_group_configs): in
    ZooKeeper (a single broker's in-process one, kept in its topic store), else in memory."""
    if broker.coordination is None:
        return LocalGroupConfigs()
    store = broker.topics if broker.local_cluster is not None else None
    return ZkGroupConfigs(broker.coordination, store=store)


def _quota_configs(broker: Broker) -> QuotaConfigs:
    """Client quota configs (wirebroker.cluster.zk_client_quotas): in ZooKeeper (a single
    broker's in-process one, kept in its topic store), else in memory."""
    if broker.coordination is None:
        return LocalQuotaConfigs()
    store = broker.topics if broker.local_cluster is not None else None
    return ZkClientQuotas(broker.coordination, store=store)


def _sasl_asks_scram_users(endpoints: BrokerEndpoints, users: ScramUsers) -> None:
    """Every SASL listener's SCRAM authentication asks the SCRAM users (ZooKeeper's
    /config/users, AlterUserScramCredentials) first, then its JAAS `user_<name>` entries."""
    for endpoint in endpoints.endpoints:
        if endpoint.sasl is not None:
            endpoint.sasl.scram_lookup = users.sasl_lookup(endpoint.sasl.scram_lookup)


def _apply_dynamic_change(broker: Broker, keys: set[str]) -> None:
    """Apply a dynamic broker config change to what runs: every hosted partition takes its
    topic's new effective configs, the replication quotas their rates, the listener its
    connection quotas, transactional produce its verification switch (the cleaner reads its
    backoff each time)."""
    log.info("dynamic broker configs changed: %s", ", ".join(sorted(keys)))
    for info in broker.topics.all():
        broker.replicas.on_topic_configs_changed(info)
    config = broker.config
    broker.replicas.quotas.update_rates(config)
    broker.server.set_connection_limits(
        config.get_int("max.connections"), config.get_int("max.connections.per.ip")
    )
    broker.server.connection_rates.broker_rate = config.get_int("max.connection.creation.rate")
    verifier = broker.services.txn_verifier
    if verifier is not None:
        verifier.enabled = config.get_bool("transaction.partition.verification.enable")
