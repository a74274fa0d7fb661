"""The state the parts of the group coordinator core share (Kafka's `GroupCoordinatorShard`
holds the same for its `GroupMetadataManager` and `OffsetMetadataManager`).

`CoordinatorState` is plain data plus the checks every request starts with: the classic
groups by id, the committed offsets, the timers, which `__consumer_offsets` partitions are
loading or active, and whether the coordinator has become active at all. Invariant: groups,
offsets and timers exist only for partitions that are active (loading partitions are being
rebuilt by `wirebroker.group.loader`, unowned ones hold nothing).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

from protocol.errors import ErrorCode
from wirebroker.group.classic import ClassicGroup
from wirebroker.group.config import GroupConfig
from wirebroker.group.consumer.messages import TopicResolver
from wirebroker.group.consumer.model import ConsumerGroup
from wirebroker.group.effects import Effects
from wirebroker.group.offsets import OffsetStore
from wirebroker.group.partitioning import partition_for
from wirebroker.group.share.model import ShareGroup, StatePartitions
from wirebroker.group.timers import Timers
from wirebroker.group.txn_offsets import PendingTxnOffsets

TimerAction = Callable[[int, Effects], None]


class PartitionStatus(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"


@dataclasses.dataclass(frozen=True)
class GroupOverrides:
    """What a group's config overrides change for its coordinator (None: the broker's)."""

    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None
    share_session_timeout_ms: int | None = None
    share_heartbeat_interval_ms: int | None = None
    share_assignment_interval_ms: int | None = None


class CoordinatorState:
    def __init__(self, config: GroupConfig) -> None:
        self.config = config
        self.groups: dict[str, ClassicGroup] = {}
        #: KIP-848 consumer groups by id (a group id is in one of the two dicts at most)
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        #: KIP-932 share groups by id, and their share-state bookkeeping (ShareGroupState-
        #: PartitionMetadata); a group id is in one of the three group dicts at most
        self.share_groups: dict[str, ShareGroup] = {}
        self.share_states: dict[str, StatePartitions] = {}
        self.offsets = OffsetStore()
        #: transactional offset commits waiting for their marker (txn_offsets.py)
        self.txn_offsets = PendingTxnOffsets()
        self.timers: Timers[TimerAction] = Timers()
        self.partitions: dict[int, PartitionStatus] = {}
        self.active = False
        #: the next `OffsetAndMetadata.record_seq` of a commit written here (offsets.py)
        self._next_record_seq = 0
        #: per-group overrides of the GROUP config resource that the coordinator applies
        #: (`GroupCoordinatorCore.set_group_configs`: the session timeout and heartbeat
        #: interval of a KIP-848 group's members)
        self.group_configs: dict[str, GroupOverrides] = {}
        #: the cluster's topics (names <-> ids), for the classic members of consumer groups
        #: and the conversions between group types (`GroupCoordinatorCore.set_topics`)
        self.topics = TopicResolver()

    def consumer_session_timeout_ms(self, group_id: str) -> int:
        """consumer.session.timeout.ms of the group, else group.consumer.session.timeout.ms."""
        found = self.group_configs.get(group_id)
        if found is not None and found.session_timeout_ms is not None:
            return found.session_timeout_ms
        return self.config.consumer_session_timeout_ms

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        """consumer.heartbeat.interval.ms of the group, else the broker's default."""
        found = self.group_configs.get(group_id)
        if found is not None and found.heartbeat_interval_ms is not None:
            return found.heartbeat_interval_ms
        return self.config.consumer_heartbeat_interval_ms

    def _override(self, group_id: str, name: str, default: int) -> int:
        found = self.group_configs.get(group_id)
        value = getattr(found, name) if found is not None else None
        return default if value is None else int(value)

    def share_session_timeout_ms(self, group_id: str) -> int:
        """share.session.timeout.ms of the group, else group.share.session.timeout.ms."""
        return self._override(
            group_id, "share_session_timeout_ms", self.config.share_session_timeout_ms
        )

    def share_heartbeat_interval_ms(self, group_id: str) -> int:
        return self._override(
            group_id, "share_heartbeat_interval_ms", self.config.share_heartbeat_interval_ms
        )

    def share_assignment_interval_ms(self, group_id: str) -> int:
        return self._override(
            group_id, "share_assignment_interval_ms", self.config.share_assignment_interval_ms
        )

    def take_record_seq(self) -> int:
        """The position of an offset commit record this coordinator is about to write."""
        seq = self._next_record_seq
        self._next_record_seq += 1
        return seq

    def saw_record(self, log_offset: int) -> None:
        """A load replayed a record at `log_offset`: what is written from now on orders
        after it."""
        self._next_record_seq = max(self._next_record_seq, log_offset + 1)

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    def status(self, group_id: str) -> PartitionStatus | None:
        return self.partitions.get(self.partition_for(group_id))

    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE when this core serves `group_id` now, else the error to answer with."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        status = self.status(group_id)
        if status is None:
            return ErrorCode.NOT_COORDINATOR
        if status is PartitionStatus.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def request_error(self, group_id: str) -> ErrorCode:
        """The checks every group request starts with, in Kafka's order: an inactive
        coordinator, an empty group id, then `coordinator_error`."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group_id == "":
            return ErrorCode.INVALID_GROUP_ID
        return self.coordinator_error(group_id)

    def cancel_group_timers(self, group_id: str) -> None:
        self.timers.cancel_where(
            lambda k: isinstance(k, tuple) and len(k) >= 2 and k[1] == group_id
        )
