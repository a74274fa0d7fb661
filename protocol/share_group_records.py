"""Key/value codecs of the KIP-932 share group records of `__consumer_offsets`.

Hand-written from Kafka 4.4's group-coordinator JSON (common/message/ShareGroup*.json, in the
kafka-group-coordinator jar). The layout (an int16 record type then non-flexible key strings;
an int16 version (0) then flexible value fields) is written and read by
`protocol.coordinator_records`, shared with `protocol.consumer_group_records`.

type  key fields       value (version 0)
10    group, member    ShareGroupMemberMetadataValue: rack_id?, client_id, client_host,
                       subscribed_topic_names [string]
11    group            ShareGroupMetadataValue: epoch int32, metadata_hash int64
12    group            ShareGroupTargetAssignmentMetadataValue: assignment_epoch int32;
                       tag 0: assignment_timestamp int64 (written when not 0)
13    group, member    ShareGroupTargetAssignmentMemberValue: [topic_id uuid, partitions [int32]]
14    group, member    ShareGroupCurrentMemberAssignmentValue: member_epoch int32,
                       previous_member_epoch int32, state int8, assigned [topic_id, partitions]
15    group            ShareGroupStatePartitionMetadataValue: initializing_topics
                       [topic_id, topic_name, partitions], initialized_topics (same),
                       deleting_topics [topic_id, topic_name]
A tombstone (null value) deletes what its key names. Unknown tagged fields are skipped.
Malformed bytes raise `GroupRecordError`.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass, field

from protocol.coordinator_records import (
    I8,
    I32,
    I64,
    GroupEpochValue,
    Partitions,
    decode_assignment,
    decode_key,
    decode_value,
    encode_assignment,
    read_int,
    read_ints,
    read_partitions,
    read_tags,
    value_writer,
)
from protocol.coordinator_records import (
    encode_key as _encode_key,
)
from protocol.primitives import rt_ccount, rt_cnstring, rt_cstring, rt_uuid

__all__ = [
    "CURRENT_ASSIGNMENT",
    "GROUP_METADATA",
    "MEMBER_METADATA",
    "SHARE_RECORD_TYPES",
    "STATE_PARTITION_METADATA",
    "TARGET_MEMBER",
    "TARGET_METADATA",
    "CurrentAssignmentValue",
    "GroupEpochValue",
    "MemberMetadataValue",
    "Partitions",
    "ShareKey",
    "StatePartitionMetadataValue",
    "TargetMetadataValue",
    "TopicPartitionsInfo",
    "decode_current_assignment",
    "decode_group_epoch",
    "decode_member_metadata",
    "decode_share_key",
    "decode_state_partition_metadata",
    "decode_target_member",
    "decode_target_metadata",
    "encode_current_assignment",
    "encode_group_epoch",
    "encode_key",
    "encode_member_metadata",
    "encode_state_partition_metadata",
    "encode_target_member",
    "encode_target_metadata",
]

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_METADATA = 12
TARGET_MEMBER = 13
CURRENT_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15
SHARE_RECORD_TYPES = frozenset(range(MEMBER_METADATA, STATE_PARTITION_METADATA + 1))
_WITH_MEMBER = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
_KIND = "share group"


@dataclass(frozen=True)
class ShareKey:
    record_type: int
    group: str
    member: str | None = None


@dataclass(frozen=True)
class MemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True)
class TargetMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0


@dataclass(frozen=True)
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Partitions = field(default_factory=dict)


@dataclass(frozen=True)
class TopicPartitionsInfo:
    topic_id: uuid.UUID
    topic_name: str
    partitions: frozenset[int]


@dataclass(frozen=True)
class StatePartitionMetadataValue:
    initializing: tuple[TopicPartitionsInfo, ...] = ()
    initialized: tuple[TopicPartitionsInfo, ...] = ()
    #: (topic id, topic name)
    deleting: tuple[tuple[uuid.UUID, str], ...] = ()


# -- writing -------------------------------------------------------------------------------


def encode_key(key: ShareKey) -> bytes:
    if key.record_type not in _WITH_MEMBER:
        return _encode_key(key.record_type, key.group)
    assert key.member is not None
    return _encode_key(key.record_type, key.group, key.member)


def encode_member_metadata(value: MemberMetadataValue) -> bytes:
    out = value_writer()
    out.cstring(value.rack_id)
    out.cstring(value.client_id)
    out.cstring(value.client_host)
    out.count(len(value.subscribed_topic_names))
    for name in value.subscribed_topic_names:
        out.cstring(name)
    out.no_tags()
    return out.done()


def encode_group_epoch(value: GroupEpochValue) -> bytes:
    out = value_writer()
    out.raw(I32, value.epoch)
    out.raw(I64, value.metadata_hash)
    out.no_tags()
    return out.done()


def encode_target_metadata(value: TargetMetadataValue) -> bytes:
    out = value_writer()
    out.raw(I32, value.assignment_epoch)
    if value.assignment_timestamp == 0:
        out.no_tags()
    else:
        out.one_tag(0, I64.pack(value.assignment_timestamp))
    return out.done()


def encode_target_member(assignment: Partitions) -> bytes:
    return encode_assignment(assignment)


def encode_current_assignment(value: CurrentAssignmentValue) -> bytes:
    out = value_writer()
    out.raw(I32, value.member_epoch)
    out.raw(I32, value.previous_member_epoch)
    out.raw(I8, value.state)
    out.partitions(value.assigned)
    out.no_tags()
    return out.done()


def encode_state_partition_metadata(value: StatePartitionMetadataValue) -> bytes:
    out = value_writer()
    for infos in (value.initializing, value.initialized):
        out.count(len(infos))
        for info in sorted(infos, key=lambda i: str(i.topic_id)):
            out.uuid(info.topic_id)
            out.cstring(info.topic_name)
            out.int_array(info.partitions)
            out.no_tags()
    out.count(len(value.deleting))
    for topic_id, name in sorted(value.deleting, key=lambda d: str(d[0])):
        out.uuid(topic_id)
        out.cstring(name)
        out.no_tags()
    out.no_tags()
    return out.done()


# -- reading -------------------------------------------------------------------------------


def decode_share_key(data: bytes) -> ShareKey | None:
    """The key of a share group record, or None for another record type."""
    return decode_key(data, SHARE_RECORD_TYPES, _WITH_MEMBER, ShareKey)


def decode_member_metadata(data: bytes) -> MemberMetadataValue:
    def read(s: io.BytesIO) -> MemberMetadataValue:
        rack, client_id, host = rt_cnstring(s), rt_cstring(s), rt_cstring(s)
        names = tuple(rt_cstring(s) for _ in range(rt_ccount(s)))
        read_tags(s)
        return MemberMetadataValue(rack, client_id, host, names)

    return decode_value(data, read, _KIND)


def decode_group_epoch(data: bytes) -> GroupEpochValue:
    def read(s: io.BytesIO) -> GroupEpochValue:
        epoch, digest = read_int(I32, s), read_int(I64, s)
        read_tags(s)
        return GroupEpochValue(epoch, digest)

    return decode_value(data, read, _KIND)


def decode_target_metadata(data: bytes) -> TargetMetadataValue:
    def read(s: io.BytesIO) -> TargetMetadataValue:
        epoch = read_int(I32, s)
        raw = read_tags(s).get(0)
        stamp = I64.unpack(raw)[0] if raw is not None and len(raw) == 8 else 0
        return TargetMetadataValue(epoch, stamp)

    return decode_value(data, read, _KIND)


def decode_target_member(data: bytes) -> dict[uuid.UUID, frozenset[int]]:
    return decode_assignment(data, _KIND)


def decode_current_assignment(data: bytes) -> CurrentAssignmentValue:
    def read(s: io.BytesIO) -> CurrentAssignmentValue:
        epoch, previous, state = read_int(I32, s), read_int(I32, s), read_int(I8, s)
        assigned = read_partitions(s)
        read_tags(s)
        return CurrentAssignmentValue(epoch, previous, state, assigned)

    return decode_value(data, read, _KIND)


def decode_state_partition_metadata(data: bytes) -> StatePartitionMetadataValue:
    def infos(s: io.BytesIO) -> tuple[TopicPartitionsInfo, ...]:
        out = []
        for _ in range(rt_ccount(s, 18)):
            topic_id, name = rt_uuid(s), rt_cstring(s)
            out.append(TopicPartitionsInfo(topic_id, name, read_ints(s)))
            read_tags(s)
        return tuple(out)

    def read(s: io.BytesIO) -> StatePartitionMetadataValue:
        initializing, initialized = infos(s), infos(s)
        deleting = []
        for _ in range(rt_ccount(s, 17)):
            deleting.append((rt_uuid(s), rt_cstring(s)))
            read_tags(s)
        read_tags(s)
        return StatePartitionMetadataValue(initializing, initialized, tuple(deleting))

    return decode_value(data, read, _KIND)
