"""Replays `__consumer_offsets` into loaded groups and offsets (Kafka's coordinator loader).

While the core loads some partitions (`begin_loading` .. `complete_loading`), each record of
them goes to `GroupLoader.replay` in log order; the loader rebuilds their classic groups and
committed offsets on its own, and `take(partitions)` hands the result over as a
`LoadedState` for the core to install. Rules: an offset commit of a group with no group
record makes a "simple" group (no protocol type) to hold it; a tombstone removes the offset
or the group (a group tombstone keeps the group's offsets, as Kafka). Transactional offset
commits whose marker is not in the log yet come through `replay_pending` and are handed over
as pending again (`wirebroker.group.txn_offsets`); those of committed transactions come
through `replay` (the runtime's fold applies a COMMIT marker's records at the marker, drops
an ABORT's: `wirebroker.group.offsets_log`). KIP-848 consumer group records are
replayed by `wirebroker.group.consumer.records.ConsumerGroupsFold`, KIP-932 share group
records by `wirebroker.group.share.records.ShareGroupsFold`. Loaded groups start
without timers;
the core starts their session timers when it takes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from protocol.consumer_group_records import decode_consumer_key
from protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupRecordError,
    OffsetCommitKey,
    UnknownKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from protocol.share_group_records import decode_share_key
from wirebroker.group.classic import ClassicGroup, ClassicGroupMember, GroupState
from wirebroker.group.consumer.model import ConsumerGroup
from wirebroker.group.consumer.records import ConsumerGroupsFold
from wirebroker.group.offsets import OffsetAndMetadata, OffsetStore
from wirebroker.group.share.model import ShareGroup, StatePartitions
from wirebroker.group.share.records import ShareGroupsFold
from wirebroker.group.state import CoordinatorState, PartitionStatus
from wirebroker.group.txn_offsets import PendingTxnOffsets

GroupOffsets = dict[str, dict[int, OffsetAndMetadata]]


@dataclass
class LoadedState:
    """Groups and offsets rebuilt from the log, in replay order."""

    groups: dict[str, ClassicGroup] = field(default_factory=dict)
    offsets: dict[str, GroupOffsets] = field(default_factory=dict)
    pending: PendingTxnOffsets = field(default_factory=PendingTxnOffsets)
    consumer_groups: dict[str, ConsumerGroup] = field(default_factory=dict)
    share_groups: dict[str, ShareGroup] = field(default_factory=dict)
    share_states: dict[str, StatePartitions] = field(default_factory=dict)


class GroupLoader:
    def __init__(self, state: CoordinatorState) -> None:
        self._state = state
        self._groups: dict[str, ClassicGroup] = {}
        self._offsets = OffsetStore()
        self._pending = PendingTxnOffsets()
        self._consumer = ConsumerGroupsFold()
        self._share = ShareGroupsFold()

    def replay(self, key: bytes, value: bytes | None, offset: int = -1) -> bool:
        """Apply one record (False: a record type the coordinator ignores); `offset`: its
        log offset (-1: unknown), the position that decides between a plain and a
        transactional commit (`wirebroker.group.offsets`). Raises `GroupRecordError` on
        bytes that do not decode, RuntimeError for a group whose partition is not loading."""
        k = decode_key(key)
        self._state.saw_record(offset)
        if isinstance(k, OffsetCommitKey | GroupMetadataKey) and (
            self._state.status(k.group) is not PartitionStatus.LOADING
        ):
            raise RuntimeError(f"replay for group {k.group!r} outside begin_loading")
        if isinstance(k, OffsetCommitKey):
            if value is None:
                self._offsets.remove(k.group, k.topic, k.partition)
            else:
                if k.group not in self._groups:
                    # Offsets committed without membership: a "simple" group holds them.
                    self._groups[k.group] = ClassicGroup(k.group)
                commit = OffsetAndMetadata.from_value(decode_offset_commit_value(value), offset)
                self._offsets.put(k.group, k.topic, k.partition, commit)
            return True
        if isinstance(k, GroupMetadataKey):
            if value is None:
                self._groups.pop(k.group, None)
            else:
                self._groups[k.group] = load_group(k.group, decode_group_metadata_value(value))
            return True
        if isinstance(k, UnknownKey):
            ck = decode_consumer_key(key)
            sk = decode_share_key(key) if ck is None else None
            group = ck.group if ck is not None else sk.group if sk is not None else None
            if group is None:
                return False
            if self._state.status(group) is not PartitionStatus.LOADING:
                raise RuntimeError(f"replay for group {group!r} outside begin_loading")
            if ck is not None:
                self._consumer.replay(ck, value)
            elif sk is not None:
                self._share.replay(sk, value)
            return True
        return False

    def replay_pending(
        self, producer_id: int, key: bytes, value: bytes | None, offset: int = -1
    ) -> bool:
        """One offset commit of `producer_id`'s open transaction (no marker yet in the log),
        at log offset `offset`: pending again once loaded. False for records that are not
        offset commits."""
        k = decode_key(key)
        self._state.saw_record(offset)
        if not isinstance(k, OffsetCommitKey) or value is None:
            return False
        if self._state.status(k.group) is not PartitionStatus.LOADING:
            raise RuntimeError(f"replay for group {k.group!r} outside begin_loading")
        commit = OffsetAndMetadata.from_value(decode_offset_commit_value(value), offset)
        self._pending.add(producer_id, k.group, k.topic, k.partition, commit)
        return True

    def complete_txn(self, producer_id: int, partition: int, *, commit: bool) -> None:
        """A marker written while `partition` loads (after the load read past its place):
        the replayed pending offsets of the producer there are committed or dropped."""
        for group, topic, p, value in self._pending.take(
            producer_id, lambda g: self._state.partition_for(g) == partition
        ):
            if commit:
                self._groups.setdefault(group, ClassicGroup(group))
                if value.newer_than(self._offsets.get(group, topic, p)):
                    self._offsets.put(group, topic, p, value)

    def take(self, partitions: Iterable[int]) -> LoadedState:
        """Hand over (and forget) what was loaded for `partitions`."""
        parts = set(partitions)
        out = LoadedState()
        out.consumer_groups = self._consumer.take(lambda g: self._state.partition_for(g) in parts)
        out.share_groups, out.share_states = self._share.take(
            lambda g: self._state.partition_for(g) in parts
        )
        for gid in [g for g in self._groups if self._state.partition_for(g) in parts]:
            classic = self._groups.pop(gid)
            if gid in out.consumer_groups and not classic.members:
                continue  # the offsets of a consumer group, not a simple classic group
            out.groups[gid] = classic
        for gid in self._offsets.groups():
            if self._state.partition_for(gid) in parts:
                out.offsets[gid] = self._offsets.remove_group(gid)
        for pid in self._pending.producers():
            for group, topic, p, value in self._pending.take(
                pid, lambda g: self._state.partition_for(g) in parts
            ):
                out.pending.add(pid, group, topic, p, value)
        return out


def load_group(group_id: str, v: GroupMetadataValue) -> ClassicGroup:
    """A classic group from its metadata record: Stable with its members, or Empty."""
    group = ClassicGroup(
        group_id,
        state=GroupState.STABLE if v.members else GroupState.EMPTY,
        previous_state=GroupState.DEAD,
        current_state_timestamp=(
            None if v.current_state_timestamp == -1 else v.current_state_timestamp
        ),
        protocol_type=v.protocol_type or None,
        protocol_name=v.protocol,
        generation_id=v.generation,
        leader_id=v.leader,
    )
    try:
        for m in v.members:
            group.add(
                ClassicGroupMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=(
                        m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout
                    ),
                    session_timeout_ms=m.session_timeout,
                    protocol_type=v.protocol_type,
                    protocols=((v.protocol or "", m.subscription),),
                    assignment=m.assignment,
                )
            )
    except ValueError as exc:
        raise GroupRecordError(f"inconsistent group metadata for {group_id}: {exc}") from None
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
