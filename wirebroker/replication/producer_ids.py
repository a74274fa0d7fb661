"""Producer ids for idempotent producers (InitProducerId), never reused across restarts.

Ids are handed out from blocks reserved in the `TopicStore` (Kafka reserves blocks of 1000
through its controller in the same way). The reservation is durable before the first id of a
block is returned, so after a restart or a crash the next block starts past every id that may
have been issued: at most one partial block of ids is skipped, none is issued twice.

In a cluster every broker hands out ids, so the blocks come from one cluster-wide sequence
instead: `reserve` (an async callable, `cluster.zk_producer_ids.ZkProducerIdBlocks.reserve`)
takes the next block from ZooKeeper, and `allocate()` (what InitProducerId awaits) uses it.
Without `reserve`, `allocate()` is `next_id()` on the local store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from wirebroker.metadata.topic_store import TopicStore

__all__ = ["DEFAULT_BLOCK_SIZE", "MAX_PRODUCER_ID", "ProducerIdManager", "ProducerIdsExhausted"]

DEFAULT_BLOCK_SIZE = 1000
MAX_PRODUCER_ID = (1 << 63) - 1


class ProducerIdsExhausted(Exception):
    """Every producer id up to 2**63-1 was issued (Kafka: UnknownServerException)."""


class ProducerIdManager:
    def __init__(
        self,
        topics: TopicStore,
        *,
        block_size: int = DEFAULT_BLOCK_SIZE,
        reserve: Callable[[int], Awaitable[int]] | None = None,
    ) -> None:
        if block_size <= 0:
            raise ValueError("block_size must be positive")
        self._topics = topics
        self._reserve = reserve
        self._block_size = block_size
        self._next = 0
        self._end = 0  # exclusive end of the current block; empty until the first call

    def next_id(self) -> int:
        if self._next >= self._end:
            first = self._topics.next_producer_id
            if first > MAX_PRODUCER_ID - self._block_size:
                raise ProducerIdsExhausted("producer ids exhausted")
            first = self._topics.reserve_producer_ids(self._block_size)
            self._next, self._end = first, first + self._block_size
        pid = self._next
        self._next += 1
        return pid

    async def allocate(self) -> int:
        """A new producer id: from the cluster's blocks when `reserve` is set, else `next_id()`.

        Two tasks that find the block used up at once both reserve one; the block that arrives
        second while ids are left is dropped (ids skipped, never issued twice)."""
        if self._reserve is None:
            return self.next_id()
        while self._next >= self._end:
            first = await self._reserve(self._block_size)
            if self._next >= self._end:
                self._next, self._end = first, first + self._block_size
        pid = self._next
        self._next += 1
        return pid
