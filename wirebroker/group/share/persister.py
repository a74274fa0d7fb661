"""The part of KIP-932's share-state `Persister` the group coordinator calls.

The full interface (read/write state, summaries) is `wirebroker.share.persister`'s, owned by
the share partition side; the coordinator only initializes a partition's share state when a
share group first subscribes to it (start offset -1: `share.auto.offset.reset` decides at
the first fetch) and deletes it with the group. `Persister` here is that subset, so any full
persister fits: a broker's is the share coordinator's, the stand-in in memory (a runtime
built without one, the unit tests) `wirebroker.share.persister.InMemoryPersister`.
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
