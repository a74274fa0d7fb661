"""The share group records written to `__consumer_offsets` (codecs in
`protocol.share_group_records`) and their replay at load.

Written, as Kafka 4.4 writes them:
    a member's metadata changes (join, subscription, ...)   ShareGroupMemberMetadata
    the group epoch moves                                   ShareGroupMetadata (epoch, hash)
    a new target assignment                                 ShareGroupTargetAssignmentMember
                                                            of each member whose target
                                                            changed, then ShareGroupTarget-
                                                            AssignmentMetadata (epoch, time)
    a member's epoch or assignment changes                  ShareGroupCurrentMemberAssignment
    a member leaves or is fenced                            tombstones: current assignment,
                                                            target member, member metadata
    share state initializing / initialized / deleting       ShareGroupStatePartitionMetadata
    the group is deleted                                    tombstones of all of the above
The metadata hash is wirebroker's own (`wirebroker.group.consumer.records.metadata_hash`),
not Kafka's.

`ShareGroupsFold` rebuilds groups from the latest record of each key, in any order: a group
exists once its ShareGroupMetadata does; members are those with member metadata.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from protocol import share_group_records as sr
from wirebroker.group.effects import Effects, Record
from wirebroker.group.share.model import (
    MEMBER_STATE_STABLE,
    InitValue,
    ShareGroup,
    ShareMember,
    StatePartitions,
)


def _key(record_type: int, group: str, member: str | None = None) -> bytes:
    return sr.encode_key(sr.ShareKey(record_type, group, member))


def _infos(values: dict[uuid.UUID, InitValue]) -> tuple[sr.TopicPartitionsInfo, ...]:
    return tuple(sr.TopicPartitionsInfo(t, v.name, v.partitions) for t, v in values.items())


class ShareRecords:
    def __init__(self, partition_for: Callable[[str], int]) -> None:
        self.partition_for = partition_for

    def _put(self, fx: Effects, group: str, key: bytes, value: bytes | None) -> None:
        fx.records.append(Record(self.partition_for(group), key, value))

    def member(self, fx: Effects, group_id: str, member: ShareMember) -> None:
        value = sr.MemberMetadataValue(
            member.rack_id, member.client_id, member.client_host, member.subscribed_topic_names
        )
        key = _key(sr.MEMBER_METADATA, group_id, member.member_id)
        self._put(fx, group_id, key, sr.encode_member_metadata(value))

    def current(self, fx: Effects, group_id: str, member: ShareMember) -> None:
        value = sr.CurrentAssignmentValue(
            member.member_epoch, member.previous_member_epoch, MEMBER_STATE_STABLE, member.assigned
        )
        key = _key(sr.CURRENT_ASSIGNMENT, group_id, member.member_id)
        self._put(fx, group_id, key, sr.encode_current_assignment(value))

    def group_epoch(self, fx: Effects, group: ShareGroup) -> None:
        value = sr.GroupEpochValue(group.group_epoch, group.metadata_hash)
        key = _key(sr.GROUP_METADATA, group.group_id)
        self._put(fx, group.group_id, key, sr.encode_group_epoch(value))

    def target(self, fx: Effects, group: ShareGroup, changed: Iterable[str]) -> None:
        """The target of each member in `changed`, then the assignment epoch."""
        gid = group.group_id
        for mid in changed:
            value = sr.encode_target_member(group.target.get(mid, {}))
            self._put(fx, gid, _key(sr.TARGET_MEMBER, gid, mid), value)
        meta = sr.TargetMetadataValue(group.assignment_epoch, group.assignment_timestamp_ms)
        self._put(fx, gid, _key(sr.TARGET_METADATA, gid), sr.encode_target_metadata(meta))

    def member_removed(self, fx: Effects, group_id: str, member_id: str) -> None:
        for record_type in (sr.CURRENT_ASSIGNMENT, sr.TARGET_MEMBER, sr.MEMBER_METADATA):
            self._put(fx, group_id, _key(record_type, group_id, member_id), None)

    def state_partitions(self, fx: Effects, group_id: str, state: StatePartitions) -> None:
        value = sr.StatePartitionMetadataValue(
            _infos(state.initializing),
            _infos(state.initialized),
            tuple(state.deleting.items()),
        )
        key = _key(sr.STATE_PARTITION_METADATA, group_id)
        self._put(fx, group_id, key, sr.encode_state_partition_metadata(value))

    def group_removed(self, fx: Effects, group: ShareGroup) -> None:
        """Tombstones of an empty group's records (DeleteGroups)."""
        gid = group.group_id
        for mid in group.target:
            self._put(fx, gid, _key(sr.TARGET_MEMBER, gid, mid), None)
        for record_type in (sr.TARGET_METADATA, sr.STATE_PARTITION_METADATA, sr.GROUP_METADATA):
            self._put(fx, gid, _key(record_type, gid), None)


class ShareGroupsFold:
    """Share groups rebuilt from replayed records (see the module docstring)."""

    def __init__(self) -> None:
        self.epochs: dict[str, sr.GroupEpochValue] = {}
        self.target_meta: dict[str, sr.TargetMetadataValue] = {}
        self.members: dict[tuple[str, str], sr.MemberMetadataValue] = {}
        self.targets: dict[tuple[str, str], dict[uuid.UUID, frozenset[int]]] = {}
        self.current: dict[tuple[str, str], sr.CurrentAssignmentValue] = {}
        self.states: dict[str, sr.StatePartitionMetadataValue] = {}

    def replay(self, key: sr.ShareKey, value: bytes | None) -> None:
        gid, mid = key.group, key.member or ""
        tables: dict[int, tuple[dict[Any, Any], object, Callable[[bytes], object]]] = {
            sr.GROUP_METADATA: (self.epochs, gid, sr.decode_group_epoch),
            sr.TARGET_METADATA: (self.target_meta, gid, sr.decode_target_metadata),
            sr.MEMBER_METADATA: (self.members, (gid, mid), sr.decode_member_metadata),
            sr.TARGET_MEMBER: (self.targets, (gid, mid), sr.decode_target_member),
            sr.CURRENT_ASSIGNMENT: (self.current, (gid, mid), sr.decode_current_assignment),
            sr.STATE_PARTITION_METADATA: (
                self.states,
                gid,
                sr.decode_state_partition_metadata,
            ),
        }
        table, k, decode = tables[key.record_type]
        if value is None:
            table.pop(k, None)
        else:
            table[k] = decode(value)

    def take(
        self, wanted: Callable[[str], bool]
    ) -> tuple[dict[str, ShareGroup], dict[str, StatePartitions]]:
        """Hand over (and forget) the groups and share-state bookkeeping `wanted` selects."""
        groups: dict[str, ShareGroup] = {}
        for gid in [g for g in self.epochs if wanted(g)]:
            epoch = self.epochs.pop(gid)
            meta = self.target_meta.pop(gid, sr.TargetMetadataValue(0))
            groups[gid] = ShareGroup(
                gid,
                group_epoch=epoch.epoch,
                assignment_epoch=meta.assignment_epoch,
                assignment_timestamp_ms=meta.assignment_timestamp,
                metadata_hash=epoch.metadata_hash,
            )
        for (gid, mid), v in _take(self.members, wanted):
            if gid in groups:
                groups[gid].members[mid] = ShareMember(
                    mid,
                    rack_id=v.rack_id,
                    client_id=v.client_id,
                    client_host=v.client_host,
                    subscribed_topic_names=v.subscribed_topic_names,
                )
        for (gid, mid), target in _take(self.targets, wanted):
            if gid in groups and mid in groups[gid].members:
                groups[gid].target[mid] = target
        for (gid, mid), cur in _take(self.current, wanted):
            group = groups.get(gid)
            if group is not None and mid in group.members:
                group.members[mid] = group.members[mid].with_(
                    member_epoch=cur.member_epoch,
                    previous_member_epoch=cur.previous_member_epoch,
                    assigned=dict(cur.assigned),
                )
        for gid in [g for g in self.target_meta if wanted(g)]:
            del self.target_meta[gid]
        states = {
            gid: _state(self.states.pop(gid)) for gid in [g for g in self.states if wanted(g)]
        }
        return groups, states


def _take(table: dict[tuple[str, str], Any], wanted: Callable[[str], bool]) -> list[Any]:
    return [(k, table.pop(k)) for k in [k for k in table if wanted(k[0])]]


def _state(v: sr.StatePartitionMetadataValue) -> StatePartitions:
    return StatePartitions(
        initializing={i.topic_id: InitValue(i.topic_name, i.partitions) for i in v.initializing},
        initialized={i.topic_id: InitValue(i.topic_name, i.partitions) for i in v.initialized},
        deleting=dict(v.deleting),
    )
