"""A share partition's key and its `__share_group_state` partition (pure).

Kafka's `SharePartitionKey`: (group id, topic id, partition); its coordinator key is the text
"groupId:topicId:partition" (the topic id in Kafka's base64 form) -- the FindCoordinator key
of key type 2 (SHARE). Its `__share_group_state` partition is
`Utils.abs(coordinatorKey.hashCode()) % share.coordinator.state.topic.num.partitions` (Java's
String.hashCode), so a key lands on the same partition as on a real Kafka cluster.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import NamedTuple

from wirebroker.group.partitioning import partition_for

__all__ = ["SharePartitionKey", "parse_coordinator_key"]


def _b64(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


class SharePartitionKey(NamedTuple):
    group_id: str
    topic_id: uuid.UUID
    partition: int

    @property
    def coordinator_key(self) -> str:
        return f"{self.group_id}:{_b64(self.topic_id)}:{self.partition}"

    def state_partition(self, num_partitions: int) -> int:
        """Its `__share_group_state` partition."""
        return partition_for(self.coordinator_key, num_partitions)


def parse_coordinator_key(key: str) -> SharePartitionKey | None:
    """ "groupId:topicId:partition" (the group id may hold ':'); None when malformed."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0].strip():
        return None
    group, topic, partition = parts
    try:
        raw = base64.urlsafe_b64decode(topic + "=" * (-len(topic) % 4))
        if len(raw) != 16:
            return None
        return SharePartitionKey(group, uuid.UUID(bytes=raw), int(partition))
    except (binascii.Error, ValueError):
        return None
