"""What every broker needs to know of the cluster's metadata, and the rules over it.

`TopicStore` (`topic_store`) is the durable image of the topics (what KRaft's metadata log holds
in Kafka). `TopicAdmin` (`topic_admin`) is the one way to create, delete, grow and reconfigure
topics, with the one validation path (`names`, `topic_configs`, `reassignment`), implemented
by `wirebroker.cluster.zk_topic_admin.ZkTopicAdmin`; it tells a `PartitionListener` (the
`ReplicaManager`) of each change. `view` is what handlers read of the cluster (brokers,
leaders, replicas); `partition_state` the assignment and state records; `placement` Kafka's
replica placement; `elections` the controller's per-partition decisions. Errors are
`ClusterError`s (`errors`).

Below `replication` (imports `log`, `coordination` and the standalone modules, never
`replication` or the ZooKeeper runtime in `wirebroker.cluster`); everything here but
`topic_store`'s file is pure.
"""

from __future__ import annotations

from wirebroker.metadata.errors import ClusterError, InvalidTopicError
from wirebroker.metadata.names import INTERNAL_TOPICS, validate_topic_name
from wirebroker.metadata.topic_admin import (
    NewPartitions,
    NewTopic,
    PartitionListener,
    TopicAdmin,
)
from wirebroker.metadata.topic_store import MetaPropertiesError, TopicInfo, TopicStore

__all__ = [
    "INTERNAL_TOPICS",
    "ClusterError",
    "InvalidTopicError",
    "MetaPropertiesError",
    "NewPartitions",
    "NewTopic",
    "PartitionListener",
    "TopicAdmin",
    "TopicInfo",
    "TopicStore",
    "validate_topic_name",
]
