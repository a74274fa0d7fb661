"""The group coordinator's share groups as the share group offsets APIs see them (trio).

`CoordinatorShareGroups` is the `offsets_admin.ShareGroups` the broker injects
(`Services.share_groups`): `lookup` reads the group coordinator's state (its coordinator
errors first: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS; then GROUP_ID_NOT_FOUND for an id
that is not a share group), the view's state epoch is the group epoch (the state epoch the
group initializes share states with) and its partitions the initialized ones of the group's
state-partition metadata. `offsets_altered` records the partitions AlterShareGroupOffsets
initialized as initialized (a background write through the group coordinator, as Kafka
records them in ShareGroupStatePartitionMetadata), so the next assignment takes them without
initializing them again at -1. `offsets_deleted` records the deleted topics as no longer
initialized (the same record), so DescribeShareGroupOffsets no longer lists them and a
subscription initializes them anew.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.group.share.messages import InitializeRequest
from wirebroker.group.share.model import InitValue
from wirebroker.share_coordinator.offsets_admin import ShareGroupView

if TYPE_CHECKING:
    from wirebroker.group.runtime import GroupCoordinatorRuntime

__all__ = ["CoordinatorShareGroups"]


class CoordinatorShareGroups:
    """See the module docstring."""

    def __init__(
        self, groups: GroupCoordinatorRuntime, topic_name: Callable[[uuid.UUID], str | None]
    ) -> None:
        self.groups = groups
        self.topic_name = topic_name

    def lookup(self, group_id: str) -> ShareGroupView | ErrorCode:
        state = self.groups.core.state
        error = state.coordinator_error(group_id)
        if error is not ErrorCode.NONE:
            return error
        group = state.share_groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        info = state.share_states.get(group_id)
        return ShareGroupView(
            group_id,
            empty=not group.members,
            state_epoch=group.group_epoch,
            partitions={} if info is None else info.initialized_partitions(),
        )

    def offsets_altered(self, group_id: str, partitions: Mapping[uuid.UUID, set[int]]) -> None:
        group = self.groups.core.state.share_groups.get(group_id)
        if group is None:
            return
        topics = {
            t: InitValue(self.topic_name(t) or "", frozenset(ps)) for t, ps in partitions.items()
        }
        init = InitializeRequest(group_id, group.group_epoch, topics)
        self.groups.runtime.spawn(self.groups.share.record_initialized, init)

    def offsets_deleted(self, group_id: str, topic_ids: set[uuid.UUID]) -> None:
        if group_id in self.groups.core.state.share_groups:
            self.groups.runtime.spawn(self.groups.share.record_deleted, group_id, topic_ids)
