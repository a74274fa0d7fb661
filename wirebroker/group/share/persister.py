"""The part of KIP-932's share-state `Persister` the group coordinator calls.

The full interface (read/write state, summaries) is `wirebroker.share.persister`'s, owned by
the share partition side; the coordinator only initializes a partition's share state when a
share group first subscribes to it (start offset -1: `share.auto.offset.reset` decides at
the first fetch) and deletes it with the group. `Persister` here is that subset, so any full
persister fits. `LocalShareStates` is a stand-in in memory (a broker without a share
coordinator): it remembers which states exist and answers as Kafka's state RPCs do.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from protocol.errors import ErrorCode


class Persister(Protocol):
    async def initialize_state(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        state_epoch: int,
        start_offset: int,
    ) -> ErrorCode: ...

    async def delete_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int
    ) -> ErrorCode: ...


class LocalShareStates:
    """Share states in memory: (group, topic id, partition) -> (state epoch, start offset)."""

    def __init__(self) -> None:
        self.states: dict[tuple[str, uuid.UUID, int], tuple[int, int]] = {}

    async def initialize_state(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        state_epoch: int,
        start_offset: int,
    ) -> ErrorCode:
        key = (group_id, topic_id, partition)
        known = self.states.get(key)
        if known is not None and known[0] > state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        self.states[key] = (state_epoch, start_offset)
        return ErrorCode.NONE

    async def delete_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ErrorCode:
        self.states.pop((group_id, topic_id, partition), None)
        return ErrorCode.NONE
