"""Group coordinator: classic consumer groups and committed offsets.

`GroupCoordinatorCore` (pure, sans-I/O) is the entry point; `wirebroker.group.classic` holds the
state table, `wirebroker.group.messages` the typed inputs and results, `wirebroker.group.effects`
the contract with the runtime that drives the core (`wirebroker.group.runtime`, over the shared
`wirebroker.coordinator.runtime.CoordinatorRuntime`).
"""

from __future__ import annotations

from wirebroker.group.classic import ClassicGroup, ClassicGroupMember, GroupState
from wirebroker.group.config import GroupConfig
from wirebroker.group.coordinator import GroupCoordinatorCore
from wirebroker.group.effects import (
    Completion,
    Record,
    Result,
    append_error_to_response_error,
)
from wirebroker.group.messages import (
    CommitPartition,
    CommitRequest,
    CommitTopic,
    HeartbeatRequest,
    JoinRequest,
    JoinResult,
    LeaveMember,
    SyncRequest,
    SyncResult,
    TopicPartitions,
)
from wirebroker.group.offsets import OffsetAndMetadata
from wirebroker.group.partitioning import java_string_hash, partition_for
from wirebroker.group.state import PartitionStatus

__all__ = [
    "ClassicGroup",
    "ClassicGroupMember",
    "CommitPartition",
    "CommitRequest",
    "CommitTopic",
    "Completion",
    "GroupConfig",
    "GroupCoordinatorCore",
    "GroupState",
    "HeartbeatRequest",
    "JoinRequest",
    "JoinResult",
    "LeaveMember",
    "OffsetAndMetadata",
    "PartitionStatus",
    "Record",
    "Result",
    "SyncRequest",
    "SyncResult",
    "TopicPartitions",
    "append_error_to_response_error",
    "java_string_hash",
    "partition_for",
]
