"""Cluster metadata: topic names, ids, partition counts and configs, persisted on disk.

`TopicStore` is the single broker's metadata image (what KRaft's metadata log holds in Kafka).
It knows nothing about logs; `wirebroker.replication.ReplicaManager` keeps it and the logs in
step.
"""

from __future__ import annotations

from wirebroker.cluster.errors import ClusterError, InvalidTopicError
from wirebroker.cluster.names import INTERNAL_TOPICS, validate_topic_name
from wirebroker.cluster.topic_store import MetaPropertiesError, TopicInfo, TopicStore

__all__ = [
    "INTERNAL_TOPICS",
    "ClusterError",
    "InvalidTopicError",
    "MetaPropertiesError",
    "TopicInfo",
    "TopicStore",
    "validate_topic_name",
]
