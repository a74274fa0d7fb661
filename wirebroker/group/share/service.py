"""The share groups' part of the group coordinator runtime: what follows a core call
through the persister (Kafka's GroupCoordinatorService, its share-group part).

No trio here: it awaits only the persister and the runtime's own `call` (one core call, its
records appended and replicated, its answer). A ShareGroupHeartbeat that recorded
partitions as initializing is answered once the persister initialized them (state epoch =
the group epoch, start offset -1) and that was recorded as initialized; a persister error
takes them out of initializing again and is logged, the heartbeat's answer unchanged, as
Kafka 4.4's `persisterInitialize` (Kafka 4.4 answers the heartbeat first and initializes
from a timer task; here the answer waits for it, so the next heartbeat always finds the
partitions initialized). The next heartbeat assigns them. DeleteGroups of an empty share
group records its share states as deleting, deletes them through the persister (an error
there is that group's answer, the group stays), then deletes the group and tells the
`deleted_listeners` (the broker's share partitions forget the group at once).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from protocol.errors import ErrorCode
from wirebroker.group.messages import DeletedGroup, DeleteGroupsResult
from wirebroker.group.share.messages import (
    InitializeRequest,
    ShareHeartbeatRequest,
    ShareHeartbeatResult,
)

if TYPE_CHECKING:
    from wirebroker.group.consumer.messages import TopicLookup
    from wirebroker.group.coordinator import GroupCoordinatorCore
    from wirebroker.group.effects import Result
    from wirebroker.group.share.persister import Persister

log = logging.getLogger(__name__)

R = TypeVar("R")
#: the runtime's `_call`: one core call -> its answer once its records are replicated
Call = Callable[[Callable[[int], "Result[R]"]], Awaitable[R]]


class ShareGroupService:
    def __init__(self, core: GroupCoordinatorCore, persister: Persister, call: Call) -> None:
        self.core = core
        self.persister = persister
        self._call = call
        #: told the id of each share group DeleteGroups deleted (this broker's share
        #: partitions forget it at once: `SharePartitionManager.forget_group`)
        self.deleted_listeners: list[Callable[[str], None]] = []

    async def heartbeat(
        self, req: ShareHeartbeatRequest, topics: TopicLookup
    ) -> ShareHeartbeatResult:
        result: ShareHeartbeatResult = await self._call(
            lambda now: self.core.share_group_heartbeat(now, req, topics)
        )
        init = result.initialize
        if init is None or result.error is not ErrorCode.NONE:
            return result
        await self._initialize(init)  # a persister error is logged, not answered (Kafka 4.4)
        return result

    async def _initialize(self, init: InitializeRequest) -> ErrorCode:
        error = ErrorCode.NONE
        for topic_id, value in init.topics.items():
            for partition in sorted(value.partitions):
                found = await self.persister.initialize_state(
                    init.group_id, topic_id, partition, init.group_epoch, -1
                )
                if found is not ErrorCode.NONE and error is ErrorCode.NONE:
                    error = found
        if error is ErrorCode.NONE:
            await self._call(lambda now: _answered(self.core.share.initialized(now, init)))
        else:
            log.error(
                "initializing the share state of group %s failed: %s", init.group_id, error.name
            )
            await self._call(lambda now: _answered(self.core.share.uninitialized(init)))
        return error

    async def record_initialized(self, init: InitializeRequest) -> None:
        """Record partitions whose share state was initialized elsewhere (AlterShareGroupOffsets)
        as initialized, so that the group assigns them without initializing them again."""
        await self._call(lambda now: _answered(self.core.share.initialized(now, init)))

    async def record_deleted(self, group_id: str, topic_ids: set[uuid.UUID]) -> None:
        """Record topics whose share states DeleteShareGroupOffsets deleted as uninitialized."""
        await self._call(
            lambda now: _answered(self.core.share.offsets_deleted(group_id, topic_ids))
        )

    async def delete_groups(self, group_ids: Sequence[str]) -> DeleteGroupsResult:
        """DeleteGroups: each empty share group's share states first, then the groups."""
        refused: dict[str, ErrorCode] = {}
        state = self.core.state
        for gid in dict.fromkeys(group_ids):
            group = state.share_groups.get(gid)
            if group is None or group.members or state.coordinator_error(gid) is not ErrorCode.NONE:
                continue
            error = await self._delete_states(gid)
            if error is not ErrorCode.NONE:
                refused[gid] = error
        rest = [g for g in group_ids if g not in refused]
        shares = {g for g in rest if g in state.share_groups}
        result: DeleteGroupsResult = await self._call(
            lambda now: self.core.delete_groups(now, group_ids=rest)
        )
        done = {r.group_id: r for r in result.results}
        for gid in sorted(shares):
            if done[gid].error is ErrorCode.NONE:
                for listener in list(self.deleted_listeners):
                    listener(gid)
        return DeleteGroupsResult(
            tuple(DeletedGroup(g, refused[g]) if g in refused else done[g] for g in group_ids)
        )

    async def _delete_states(self, group_id: str) -> ErrorCode:
        """Record the group's share states as deleting, then delete them (the first error)."""
        partitions_of: dict[uuid.UUID, frozenset[int]] = await self._call(
            lambda _now: self.core.share.begin_deletion(group_id)
        )
        first = ErrorCode.NONE
        for topic_id, partitions in partitions_of.items():
            for partition in sorted(partitions):
                error = await self.persister.delete_state(group_id, topic_id, partition)
                if error is not ErrorCode.NONE and first is ErrorCode.NONE:
                    first = error
        return first


def _answered(result: Result[None]) -> Result[ErrorCode]:
    out: Result[ErrorCode] = result  # type: ignore[assignment]
    out.response = ErrorCode.NONE
    return out
