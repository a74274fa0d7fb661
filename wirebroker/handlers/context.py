"""What a handler gets: the request header, the broker's services, and who is asking.

`Services` is built once by `wirebroker.broker.Broker`; `advertised_host`/`advertised_port` are
filled in once the listener is bound (Metadata and FindCoordinator hand them to clients).
`admin` (`wirebroker.metadata.TopicAdmin`) does every topic change; `cluster` (a
`wirebroker.metadata.view.ClusterView`) is the one source of topic metadata: names, ids,
configs and partitions; `replicas` serves the
partitions; `fetch_waiters` parks long-poll fetches and `produce_waiters` acks=-1 produces
waiting for the in-sync replicas (both attached to `replicas` by the broker; with
`produce_waiters` None a produce whose high watermark is not there at once times out, which
only a replicated partition can need).
`group_coordinator` is the `wirebroker.group.runtime.GroupCoordinatorRuntime` the group handlers
call. `leader_of(topic, partition)` is the (node id, host, port) of a partition's live leader
from `cluster` (FindCoordinator answers the leader of the group's `__consumer_offsets`
partition).
`RequestContext` is built per request by `wirebroker.handlers.dispatcher`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wirebroker.handlers.stats import RequestStats
from wirebroker.metadata.group_config_store import GroupConfigs, LocalGroupConfigs
from wirebroker.replication.fetch_sessions import FetchSessions
from wirebroker.security.acls import Authorizer, NoAuthorizer
from wirebroker.security.client_quotas import LocalQuotaConfigs, QuotaConfigs
from wirebroker.security.quota_manager import ClientQuotas, MutationPermit
from wirebroker.security.scram_users import LocalScramUsers, ScramUsers
from wirebroker.security.session import ConnectionSession

if TYPE_CHECKING:
    from protocol.headers import RequestHeader
    from wirebroker.config import BrokerConfig
    from wirebroker.dynamic_configs import BrokerConfigUpdates
    from wirebroker.group.runtime import GroupCoordinatorRuntime
    from wirebroker.group.share.persister import Persister
    from wirebroker.log.log_manager import LogManager
    from wirebroker.metadata.topic_admin import TopicAdmin
    from wirebroker.metadata.view import BrokerNode, ClusterView
    from wirebroker.replication.delayed_produce import ProduceWaiters
    from wirebroker.replication.fetch_waiters import FetchWaiters
    from wirebroker.replication.producer_ids import ProducerIdManager
    from wirebroker.replication.replica_manager import ReplicaManager
    from wirebroker.replication.txn_verify import TxnVerifier
    from wirebroker.txn.runtime import TxnCoordinatorRuntime


#: See `Services.partition_leader`.


def wall_clock_ms() -> int:
    """Milliseconds since the epoch (the default `Services.clock`)."""
    return time.time_ns() // 1_000_000


@dataclass
class Services:
    """The broker's long-lived services, shared by every handler."""

    config: BrokerConfig
    logs: LogManager
    replicas: ReplicaManager
    admin: TopicAdmin
    fetch_waiters: FetchWaiters
    producer_ids: ProducerIdManager
    node_id: int
    cluster_id: str
    #: Brokers, controller and partition leadership as clients see them (Metadata & co).
    cluster: ClusterView
    advertised_host: str = ""
    advertised_port: int = -1
    clock: Callable[[], int] = field(default=wall_clock_ms)
    #: The group coordinator (None: group APIs answer COORDINATOR_NOT_AVAILABLE).
    group_coordinator: GroupCoordinatorRuntime | None = None
    #: KIP-932 share states (the group coordinator initializes and deletes them; None: none)
    share_persister: Persister | None = None
    #: acks=-1 purgatory (None: see the module doc).
    produce_waiters: ProduceWaiters | None = None
    #: KIP-890 verification of transactional produce (None: not verified).
    txn_verifier: TxnVerifier | None = None
    #: The transaction coordinator (None: transactional APIs answer COORDINATOR_NOT_AVAILABLE).
    txn_coordinator: TxnCoordinatorRuntime | None = None
    #: request, error and byte counters (wirebroker/handlers/stats.py; read by /metrics)
    stats: RequestStats = field(default_factory=RequestStats)
    #: incremental fetch sessions (KIP-227) of consumers and followers, see handlers/fetch.py
    fetch_sessions: FetchSessions = field(default_factory=FetchSessions)
    #: the dynamic broker configs (wirebroker.dynamic_configs; None: every broker config is
    #: read-only and AlterConfigs on a BROKER resource is refused as for a read-only key)
    broker_configs: BrokerConfigUpdates | None = None
    #: what the ACL APIs ask (wirebroker.security.acls): no authorizer, as Kafka's default
    authorizer: Authorizer = field(default_factory=NoAuthorizer)
    #: SCRAM users (wirebroker.security.scram_users): Describe/AlterUserScramCredentials and
    #: SCRAM authentication read them (the broker's are in ZooKeeper; default: in memory)
    scram_users: ScramUsers = field(default_factory=LocalScramUsers)
    #: client quota configs (wirebroker.security.client_quotas): Describe/AlterClientQuotas
    #: (the broker's are in ZooKeeper: cluster/zk_client_quotas.py; default: in memory)
    quota_configs: QuotaConfigs = field(default_factory=LocalQuotaConfigs)
    #: the GROUP config resource's overrides (wirebroker.metadata.group_config_store; the
    #: broker's are in ZooKeeper: cluster/zk_group_configs.py; default: in memory)
    group_configs: GroupConfigs = field(default_factory=LocalGroupConfigs)
    #: client quota enforcement over `quota_configs.quotas` (security/quota_manager.py; the
    #: Dispatcher records and answers throttle times; the broker builds it over the same store)
    client_quotas: ClientQuotas | None = None

    def leader_of(self, topic: str, partition: int) -> tuple[int, str, int] | None:
        """The live leader of `topic`-`partition` (None: none, or no such partition)."""
        node = self.cluster.leader(topic, partition)
        return None if node is None else (node.node_id, node.host, node.port)


@dataclass
class RequestContext:
    """One request as a handler sees it."""

    header: RequestHeader
    services: Services
    client_host: str
    #: the connection's listener and principal
    session: ConnectionSession = field(default_factory=ConnectionSession)
    #: seconds the handler spent parked by design (a long-poll Fetch): not handling time
    #: for the request quota
    parked_s: float = 0.0
    #: the request's controller mutation quota (CreateTopics, CreatePartitions, DeleteTopics:
    #: handlers/throttle.py `mutation_permit`); its throttle time is answered
    mutation: MutationPermit | None = None

    def address(self, node: BrokerNode) -> tuple[str, int] | None:
        """`node`'s address on the listener this request came in on (Kafka answers each
        client with the endpoints of its own listener); None: no such listener there."""
        return node.address(self.session.listener)

    def brokers(self) -> list[tuple[BrokerNode, str, int]]:
        """The live brokers with their address on this request's listener (those without
        that listener left out, as Kafka does)."""
        out = []
        for node in self.services.cluster.live_brokers():
            addr = node.address(self.session.listener)
            if addr is not None:
                out.append((node, addr[0], addr[1]))
        return out

    @property
    def api_version(self) -> int:
        return int(self.header.api_version)

    def now_ms(self) -> int:
        return self.services.clock()
