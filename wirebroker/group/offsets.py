"""Committed offsets per (group, topic, partition) and their expiry rule.

An offset commit stores the offset, the leader epoch of the last consumed record (-1 when
the client sent none), the client's metadata string, the commit time and -- only for
OffsetCommit v2-4 requests that carried an explicit `RetentionTimeMs` -- an absolute
expire time (Kafka writes those as OffsetCommitValue v1).

Expiry (`offsets.retention.minutes`, Kafka >= 2.1 semantics, checked every
`offsets.retention.check.interval.ms`), decided per group by `_expiration_base` in
`wirebroker.group.offsets_manager`:
- an explicit expire timestamp wins: expired when now >= expire_timestamp;
- group with a protocol type, Empty: retention counts from the time the group became
  Empty (its current state timestamp; from the commit time if unknown);
- `consumer` group, Stable, subscriptions known: offsets of topics no member subscribes to
  expire by commit time; subscribed topics never expire;
- other non-empty groups: nothing expires;
- "simple" groups (no protocol type: offsets committed without group membership): by
  commit time.

Which of two commits of one partition counts, when a transaction's commit meets a plain one
(Kafka's rule, KIP-98 / `OffsetMetadataManager.replayEndTransactionMarker`): the one whose
record comes later in `__consumer_offsets`. A COMMIT marker materializes its transaction's
offsets only over older records. `OffsetAndMetadata.record_seq` is that position: the
record's log offset for what a load replayed, and for what this coordinator writes a counter
(`CoordinatorState.take_record_seq`) kept above every log offset loaded so far, so it orders
after all of them and in append order among its own records. Not part of equality.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from protocol.group_records import OffsetCommitValue


@dataclass(frozen=True)
class OffsetAndMetadata:
    committed_offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1
    expire_timestamp_ms: int | None = None
    #: where its record is in `__consumer_offsets` (see the module doc; -1: unknown, oldest)
    record_seq: int = field(default=-1, compare=False, repr=False)

    @classmethod
    def from_value(cls, v: OffsetCommitValue, record_seq: int = -1) -> OffsetAndMetadata:
        """From an `__consumer_offsets` offset commit value (expire timestamp -1: none)."""
        return cls(
            committed_offset=v.offset,
            leader_epoch=v.leader_epoch,
            metadata=v.metadata,
            commit_timestamp_ms=v.commit_timestamp,
            expire_timestamp_ms=None if v.expire_timestamp == -1 else v.expire_timestamp,
            record_seq=record_seq,
        )

    def newer_than(self, other: OffsetAndMetadata | None) -> bool:
        """Whether this commit's record comes after `other`'s (None: no commit)."""
        return other is None or self.record_seq > other.record_seq

    def is_expired(self, now_ms: int, retention_ms: int, base_timestamp_ms: int) -> bool:
        if self.expire_timestamp_ms is not None:
            return now_ms >= self.expire_timestamp_ms
        return now_ms - base_timestamp_ms >= retention_ms


def java_string_length(s: str) -> int:
    """`String.length()` in Java: UTF-16 code units (Kafka checks metadata size with it)."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


class OffsetStore:
    """group -> topic -> partition -> OffsetAndMetadata (insertion ordered)."""

    def __init__(self) -> None:
        self._by_group: dict[str, dict[str, dict[int, OffsetAndMetadata]]] = {}

    def put(
        self, group: str, topic: str, partition: int, value: OffsetAndMetadata
    ) -> OffsetAndMetadata | None:
        parts = self._by_group.setdefault(group, {}).setdefault(topic, {})
        previous = parts.get(partition)
        parts[partition] = value
        return previous

    def get(self, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self._by_group.get(group, {}).get(topic, {}).get(partition)

    def remove(self, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        topics = self._by_group.get(group)
        if topics is None:
            return None
        parts = topics.get(topic)
        if parts is None:
            return None
        removed = parts.pop(partition, None)
        if not parts:
            del topics[topic]
        if not topics:
            del self._by_group[group]
        return removed

    def remove_group(self, group: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        """Drop one group's offsets; they are returned (empty when none)."""
        return self._by_group.pop(group, {})

    def set_group(self, group: str, topics: dict[str, dict[int, OffsetAndMetadata]]) -> None:
        """Install one group's offsets as `remove_group` returned them (replacing any)."""
        if topics:
            self._by_group[group] = topics

    def has_offsets(self, group: str) -> bool:
        return group in self._by_group

    def topics(self, group: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        """A read-only view of one group's offsets (empty when none)."""
        return self._by_group.get(group, {})

    def entries(self, group: str) -> Iterator[tuple[str, int, OffsetAndMetadata]]:
        for topic, parts in list(self._by_group.get(group, {}).items()):
            for partition, value in list(parts.items()):
                yield topic, partition, value

    def groups(self) -> list[str]:
        return list(self._by_group)

    def count(self) -> int:
        return sum(len(p) for t in self._by_group.values() for p in t.values())
