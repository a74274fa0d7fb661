"""Cluster metadata and topic administration.

`TopicStore` is the single broker's metadata image (what KRaft's metadata log holds in Kafka).
`TopicAdmin` (`topic_admin`) is the one way to create, delete, grow and reconfigure topics, with
the one validation path (`names`, `topic_configs`); `LocalTopicAdmin` implements it over the
store and the logs and tells a `PartitionListener` (the `ReplicaManager`) of each change.
Errors are `ClusterError`s (`errors`). Below `replication`: imports `log`, never `replication`.
"""

from __future__ import annotations

from wirebroker.cluster.errors import ClusterError, InvalidTopicError
from wirebroker.cluster.names import INTERNAL_TOPICS, validate_topic_name
from wirebroker.cluster.topic_admin import (
    LocalTopicAdmin,
    NewPartitions,
    NewTopic,
    PartitionListener,
    TopicAdmin,
)
from wirebroker.cluster.topic_store import MetaPropertiesError, TopicInfo, TopicStore

__all__ = [
    "INTERNAL_TOPICS",
    "ClusterError",
    "InvalidTopicError",
    "LocalTopicAdmin",
    "MetaPropertiesError",
    "NewPartitions",
    "NewTopic",
    "PartitionListener",
    "TopicAdmin",
    "TopicInfo",
    "TopicStore",
    "validate_topic_name",
]
