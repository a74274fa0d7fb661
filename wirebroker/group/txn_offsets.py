"""Transactional offset commits waiting for their transaction's marker (KIP-98, KIP-447).

TxnOffsetCommit writes ordinary offset commit records, in a transactional batch of the
producer, to the group's `__consumer_offsets` partition. Until the transaction coordinator's
COMMIT marker reaches that partition they are *pending*: OffsetFetch does not see them (with
require_stable it answers UNSTABLE_OFFSET_COMMIT for the partition), a COMMIT marker makes them
the group's committed offsets, an ABORT drops them (Kafka's `pendingTransactionalOffsetCommits`).

    PendingTxnOffsets   producer id -> group -> (topic, partition) -> OffsetAndMetadata, in
                        commit order; a later commit of the same partition in the same
                        transaction replaces the earlier one.

The same structure holds what a load replays (`wirebroker.group.loader`): transactional
records without their marker yet are pending again after a restart. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from wirebroker.group.offsets import OffsetAndMetadata

__all__ = ["PendingTxnOffsets"]

GroupPending = dict[tuple[str, int], OffsetAndMetadata]


class PendingTxnOffsets:
    def __init__(self) -> None:
        self._by_producer: dict[int, dict[str, GroupPending]] = {}

    def add(
        self, producer_id: int, group: str, topic: str, partition: int, value: OffsetAndMetadata
    ) -> None:
        groups = self._by_producer.setdefault(producer_id, {})
        pending = groups.setdefault(group, {})
        pending.pop((topic, partition), None)
        pending[(topic, partition)] = value

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        """True while some open transaction holds an offset of (group, topic, partition)."""
        return any((topic, partition) in g.get(group, {}) for g in self._by_producer.values())

    def producers(self) -> list[int]:
        return list(self._by_producer)

    def take(
        self, producer_id: int, groups: Callable[[str], bool]
    ) -> Iterator[tuple[str, str, int, OffsetAndMetadata]]:
        """Remove and yield (group, topic, partition, offset) of `producer_id`'s pending
        offsets for the groups `groups` accepts (those of one `__consumer_offsets`
        partition: a marker ends the transaction there only)."""
        by_group = self._by_producer.get(producer_id)
        if by_group is None:
            return
        for group in [g for g in by_group if groups(g)]:
            for (topic, partition), value in by_group.pop(group).items():
                yield group, topic, partition, value
        if not by_group:
            del self._by_producer[producer_id]

    def drop_groups(self, groups: Callable[[str], bool]) -> None:
        """Forget every pending offset of the groups `groups` accepts (partition unloaded)."""
        for pid in list(self._by_producer):
            by_group = self._by_producer[pid]
            for group in [g for g in by_group if groups(g)]:
                del by_group[group]
            if not by_group:
                del self._by_producer[pid]

    def merge(self, other: PendingTxnOffsets) -> None:
        """Add everything `other` holds (a load's result)."""
        for pid, by_group in other._by_producer.items():
            for group, pending in by_group.items():
                for (topic, partition), value in pending.items():
                    self.add(pid, group, topic, partition, value)

    def count(self) -> int:
        return sum(len(p) for g in self._by_producer.values() for p in g.values())
