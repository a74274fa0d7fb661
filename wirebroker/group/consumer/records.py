"""The KIP-848 records a consumer group writes to `__consumer_offsets` (stub: nothing yet)."""

from __future__ import annotations

from collections.abc import Callable

from wirebroker.group.consumer.model import ConsumerGroup, ConsumerMember
from wirebroker.group.effects import Effects, Record


class ConsumerRecords:
    def __init__(self, partition_for: Callable[[str], int]) -> None:
        self.partition_for = partition_for

    def member(self, fx: Effects, group: ConsumerGroup, member: ConsumerMember) -> None:
        pass

    def current(self, fx: Effects, group: ConsumerGroup, member: ConsumerMember) -> None:
        pass

    def member_removed(self, fx: Effects, group: ConsumerGroup, member_id: str) -> None:
        pass

    def group_epoch(self, fx: Effects, group: ConsumerGroup) -> None:
        pass

    def target(self, fx: Effects, group: ConsumerGroup) -> None:
        pass

    def target_member(self, fx: Effects, group: ConsumerGroup, member_id: str) -> None:
        pass

    def classic_group_removed(self, fx: Effects, group_id: str) -> None:
        pass


def consumer_group_tombstones(partition: int, group: ConsumerGroup) -> list[Record]:
    """Tombstones of an empty consumer group's records (it is deleted or becomes classic)."""
    del partition, group
    return []
