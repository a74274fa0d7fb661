"""Group coordinator: classic consumer groups and committed offsets.

`GroupCoordinatorCore` (pure, sans-I/O) is the entry point; `wirebroker.group.classic` holds the
state table, `wirebroker.group.effects` the contract with the runtime that drives the core.
"""

from __future__ import annotations

from wirebroker.group.classic import ClassicGroup, ClassicGroupMember, GroupState
from wirebroker.group.config import GroupConfig
from wirebroker.group.coordinator import (
    CommitPartition,
    CommitTopic,
    GroupCoordinatorCore,
    LeaveMember,
    PartitionStatus,
    TopicPartitions,
)
from wirebroker.group.effects import (
    Completion,
    Record,
    Result,
    append_error_to_response_error,
)
from wirebroker.group.offsets import OffsetAndMetadata
from wirebroker.group.partitioning import java_string_hash, partition_for

__all__ = [
    "ClassicGroup",
    "ClassicGroupMember",
    "CommitPartition",
    "CommitTopic",
    "Completion",
    "GroupConfig",
    "GroupCoordinatorCore",
    "GroupState",
    "LeaveMember",
    "OffsetAndMetadata",
    "PartitionStatus",
    "Record",
    "Result",
    "TopicPartitions",
    "append_error_to_response_error",
    "java_string_hash",
    "partition_for",
]
