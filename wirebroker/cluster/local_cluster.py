"""A single broker is a cluster of one: the cluster code over an in-process ZooKeeper.

Without `zookeeper.connect` the broker runs exactly the code a cluster broker runs (the
`ClusterMember`, the `ZkController` it elects, `ZkTopicAdmin`, the `ReplicaManager` in
replicated mode driven by make_leader) against a `MemoryZooKeeper` that lives in the broker's
process and only as long as it. Nothing of that tree is written anywhere: the `TopicStore`
(`wirebroker-topics.json`) stays the durable record of the topics, as before. The member keeps
mirroring every topic change into it (one fsynced rewrite per change, before the change is
answered to the client), and every start rebuilds the tree from it.

Start (`LocalCluster.seed`, after the logs are loaded and before the member runs), a few
`multi`s, parents first (no watcher exists yet, so nobody sees a partial tree; a failure
fails the start)::

    /cluster/id                                   the store's cluster id
    /controller_epoch                             0
    /brokers/topics/<T>                           {"partitions": {"<p>": [node]}, topic id}
    /brokers/topics/<T>/partitions/<p>/state      leader node, ISR [node],
                                                  leader_epoch = the log's latest epoch (0 for
                                                  an empty or missing log), controller_epoch 0
    /config/topics/<T>                            the topic's config overrides
    /config/brokers/<default>, /config/brokers/<id>
                                                  the store's dynamic broker configs
                                                  (wirebroker.dynamic_configs), when set
    /config/users/<user>                          the store's user configs (SCRAM credentials,
                                                  wirebroker.cluster.zk_scram_users, and
                                                  user quotas), when set
    /kafka-acl/..., /kafka-acl-extended/prefixed/...
                                                  the store's ACL nodes
                                                  (wirebroker.cluster.zk_acls), when set
    /config/clients/<id>, /config/users/<user>/clients/<id>, /config/ips/<ip>
                                                  the store's other client quota nodes
                                                  (wirebroker.cluster.zk_client_quotas)
    /config/groups/<group>                        the store's group config overrides
                                                  (wirebroker.cluster.zk_group_configs)

So the member finds every topic with a leader and the controller finds nothing to elect:
nothing is created, nothing is re-elected, and the leader epoch of every partition is the one
its data already carries (make_leader never goes back; the epochs clients saw before a restart
stay valid, and a single broker keeps leading at epoch 0 as it always did). Every assignment
is [node]: a single broker holds every partition, as it always has, and its store keeps no
assignment (the member runs with `store_assignments=False`), so the file keeps its format and
every store rewrite stays as small as before. A store in another form (e.g. written by a
former cluster member, with assignments) is rewritten once, in one write, before seeding, so
the member's mirror never rewrites the store topic by topic at start.

After start every change goes the cluster's way: CreateTopics / DeleteTopics /
CreatePartitions / AlterConfigs write znodes through `ZkTopicAdmin`, the controller elects the
new partitions' leader (this broker, epoch 0), the member mirrors the result into the store and
makes this broker leader; the handlers answer once `ZkTopicAdmin.wait_settled` saw it (a few
trio checkpoints with the in-memory store). With one replica per partition there is never a
follower, an ISR change or a leader election after the first one; leader epochs stay where they
are for the broker's whole life.

Crash safety is the store's, as before: a new topic's (or partition's) logs are created first
(`ZkTopicAdmin(local_logs=True)`: one batch, a storage error is answered at once), then the
znodes, then the member records it in the store (the commit point; the answer waits for it); a
crash before that leaves logs of an unknown topic, deleted as strays at the next start. A
deletion removes the topic from the store first, then its logs.

Cost: the tree and the member's mirror hold about a dozen small objects per partition, and a
start reads every partition's state once (member and controller): the start-up cost per
partition is in docs/replication.md (its introduction).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_acls import acl_node_parents
from wirebroker.cluster.zk_group_configs import seed_group_ops
from wirebroker.cluster.zk_metadata_cache import mirrored_info
from wirebroker.coordination.api import Create, Op
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.partition_state import PartitionState, TopicAssignment
from wirebroker.security.credentials import user_node

if TYPE_CHECKING:
    from wirebroker.metadata.topic_store import TopicInfo, TopicStore

__all__ = ["LocalCluster", "seed_ops", "single_broker_topics"]

#: Znodes created per transaction when seeding.
_SEED_CHUNK = 512

#: Parents of the seeded znodes, created first (the member creates the other persistent paths).
_PARENTS = ("/cluster", "/brokers", zl.BROKER_TOPICS, "/config", zl.CONFIG_TOPICS)


def single_broker_topics(store: TopicStore, node_id: int) -> list[TopicInfo]:
    """The store's topics as the member mirrors them: every partition on `node_id`, kept in
    the store without an assignment (`ClusterMember(store_assignments=False)`), as a single
    broker always stored them."""
    out = []
    replicas = (node_id,)  # one tuple for every partition (a start makes few objects)
    for info in store.all():
        assignment = TopicAssignment(dict.fromkeys(range(info.partitions), replicas), info.topic_id)
        out.append(mirrored_info(info.name, assignment, info.configs, info, keep=False))
    return out


def seed_ops(
    cluster_id: str,
    topics: list[TopicInfo],
    node_id: int,
    epoch_of: Callable[[str, int], int],
    broker_configs: Mapping[str, Mapping[str, str]] | None = None,
    user_configs: Mapping[str, Mapping[str, str]] | None = None,
    acl_nodes: Mapping[str, str] | None = None,
    quota_configs: Mapping[str, Mapping[str, str]] | None = None,
    group_configs: Mapping[str, Mapping[str, str]] | None = None,
) -> Iterator[Op]:
    """The creates of the tree described in the module docstring, parents first (made as
    they are consumed). `epoch_of(topic, partition)`: the latest leader epoch of the
    partition's log (-1: none)."""
    for path in _PARENTS:
        yield Create(path)
    yield Create(zl.CLUSTER_ID, zl.encode_cluster_id(cluster_id))
    if broker_configs:
        yield Create(zl.CONFIG_BROKERS)
        for entity, configs in sorted(broker_configs.items()):
            yield Create(zl.broker_config_path(entity), zl.encode_broker_config(configs))
    if user_configs:
        yield Create(zl.CONFIG_USERS)
        for user, configs in sorted(user_configs.items()):
            yield Create(zl.user_config_path(user), user_node(configs))
    if acl_nodes:
        for parent in acl_node_parents(acl_nodes):
            yield Create(parent)
        for path, data in sorted(acl_nodes.items()):
            yield Create(path, data.encode())
    if quota_configs:
        yield from _quota_seed_ops(quota_configs, set(user_configs or ()))
    yield from seed_group_ops(group_configs or {})
    yield Create(zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(0))
    states: dict[int, bytes] = {}  # leader epoch -> state document (they only differ by it)
    for info in topics:
        name = info.name
        assignment = TopicAssignment(
            dict.fromkeys(range(info.partitions), (node_id,)), info.topic_id
        )
        yield Create(zl.topic_config_path(name), zl.encode_topic_config(info.configs))
        yield Create(zl.topic_path(name), zl.encode_topic(assignment))
        yield Create(zl.partitions_path(name))
        for index in range(info.partitions):
            epoch = max(epoch_of(name, index), 0)
            state = states.get(epoch)
            if state is None:
                state = states[epoch] = zl.encode_partition_state(
                    PartitionState(node_id, epoch, (node_id,), controller_epoch=0)
                )
            yield Create(zl.partition_path(name, index))
            yield Create(zl.state_path(name, index), state)


def _quota_seed_ops(
    quota_configs: Mapping[str, Mapping[str, str]], users: set[str]
) -> Iterator[Op]:
    """The client quota nodes other than users', their missing parents first."""
    made = {zl.CONFIG_USERS} if users else set()
    made |= {zl.user_config_path(user) for user in users}
    for rel, configs in sorted(quota_configs.items()):
        path = f"/config/{rel}"
        parts = path.split("/")
        for depth in range(3, len(parts)):
            parent = "/".join(parts[:depth])
            if parent not in made:
                made.add(parent)
                yield Create(parent, user_node({}) if depth == 4 else b"")
        made.add(path)
        yield Create(path, user_node(configs))


class LocalCluster:
    """The in-process ZooKeeper of a single broker (see the module docstring)."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.server = MemoryZooKeeper()
        #: The broker's session (run it before `seed`).
        self.coordination = MemoryCoordination(self.server)

    async def seed(self, store: TopicStore, epoch_of: Callable[[str, int], int]) -> None:
        """Rewrite the store once when its topics are not in the form the member mirrors,
        then create the tree from it."""
        topics = single_broker_topics(store, self.node_id)
        changed = [
            info
            for info in topics
            if (current := store.get(info.name)) != info
            or current is None
            or dict(current.configs) != dict(info.configs)
        ]
        if changed:
            store.put_many(changed)
        ops = seed_ops(
            store.cluster_id,
            topics,
            self.node_id,
            epoch_of,
            store.broker_configs(),
            store.user_configs(),
            store.acl_nodes(),
            store.quota_configs(),
            store.group_configs(),
        )
        # In bounded transactions, made as they go: all at once would keep every op and undo
        # record alive together, long enough for the garbage collector to walk them again
        # and again (it walks the broker's whole heap then).
        while chunk := list(itertools.islice(ops, _SEED_CHUNK)):
            await self.coordination.multi(chunk)
