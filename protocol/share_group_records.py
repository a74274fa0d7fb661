"""Key/value codecs of the KIP-932 share group records of `__consumer_offsets`.

Hand-written from Kafka 4.4's group-coordinator JSON (common/message/ShareGroup*.json, in the
kafka-group-coordinator jar), in the style of `protocol.consumer_group_records`: a key is an
int16 record type (the JSON's apiKey) then the key fields, non-flexible (int16-length
strings); a value is an int16 version (0) then the fields, flexible (compact strings and
arrays, a tagged-field section after every struct).

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
import struct
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from protocol.exceptions import MalformedRequest
from protocol.group_records import GroupRecordError
from protocol.primitives import (
    read_exact,
    rt_ccount,
    rt_cnstring,
    rt_cstring,
    rt_read_tag,
    rt_string,
    rt_tag_count,
    rt_uuid,
    uvarint_bytes,
)

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_METADATA = 12
TARGET_MEMBER = 13
CURRENT_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15
SHARE_RECORD_TYPES = frozenset(range(MEMBER_METADATA, STATE_PARTITION_METADATA + 1))
_WITH_MEMBER = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})

Partitions = Mapping[uuid.UUID, frozenset[int]]
T = TypeVar("T")

_I8, _I16, _I32, _I64 = (struct.Struct(f) for f in (">b", ">h", ">i", ">q"))


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
class GroupEpochValue:
    epoch: int
    metadata_hash: int = 0


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


class _Out:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def raw(self, fmt: struct.Struct, value: int) -> None:
        self.parts.append(fmt.pack(value))

    def cstring(self, value: str | None) -> None:
        if value is None:
            self.parts.append(b"\x00")
            return
        data = value.encode()
        self.parts.append(uvarint_bytes(len(data) + 1) + data)

    def count(self, n: int) -> None:
        self.parts.append(uvarint_bytes(n + 1))

    def no_tags(self) -> None:
        self.parts.append(b"\x00")

    def int_array(self, values: frozenset[int]) -> None:
        self.count(len(values))
        for p in sorted(values):
            self.raw(_I32, p)

    def partitions(self, value: Partitions) -> None:
        self.count(len(value))
        for topic_id, parts in sorted(value.items(), key=lambda kv: str(kv[0])):
            self.parts.append(topic_id.bytes)
            self.int_array(parts)
            self.no_tags()

    def done(self) -> bytes:
        return b"".join(self.parts)


def _value_start() -> _Out:
    out = _Out()
    out.raw(_I16, 0)
    return out


def encode_key(key: ShareKey) -> bytes:
    out = _Out()
    out.raw(_I16, key.record_type)
    for text in (key.group, key.member) if key.record_type in _WITH_MEMBER else (key.group,):
        assert text is not None
        data = text.encode()
        out.parts.append(_I16.pack(len(data)) + data)
    return out.done()


def encode_member_metadata(value: MemberMetadataValue) -> bytes:
    out = _value_start()
    out.cstring(value.rack_id)
    out.cstring(value.client_id)
    out.cstring(value.client_host)
    out.count(len(value.subscribed_topic_names))
    for name in value.subscribed_topic_names:
        out.cstring(name)
    out.no_tags()
    return out.done()


def encode_group_epoch(value: GroupEpochValue) -> bytes:
    out = _value_start()
    out.raw(_I32, value.epoch)
    out.raw(_I64, value.metadata_hash)
    out.no_tags()
    return out.done()


def encode_target_metadata(value: TargetMetadataValue) -> bytes:
    out = _value_start()
    out.raw(_I32, value.assignment_epoch)
    if value.assignment_timestamp == 0:
        out.no_tags()
    else:  # one tagged field: tag 0, 8 bytes
        out.parts.append(b"\x01\x00\x08" + _I64.pack(value.assignment_timestamp))
    return out.done()


def encode_target_member(assignment: Partitions) -> bytes:
    out = _value_start()
    out.partitions(assignment)
    out.no_tags()
    return out.done()


def encode_current_assignment(value: CurrentAssignmentValue) -> bytes:
    out = _value_start()
    out.raw(_I32, value.member_epoch)
    out.raw(_I32, value.previous_member_epoch)
    out.raw(_I8, value.state)
    out.partitions(value.assigned)
    out.no_tags()
    return out.done()


def encode_state_partition_metadata(value: StatePartitionMetadataValue) -> bytes:
    out = _value_start()
    for infos in (value.initializing, value.initialized):
        out.count(len(infos))
        for info in sorted(infos, key=lambda i: str(i.topic_id)):
            out.parts.append(info.topic_id.bytes)
            out.cstring(info.topic_name)
            out.int_array(info.partitions)
            out.no_tags()
    out.count(len(value.deleting))
    for topic_id, name in sorted(value.deleting, key=lambda d: str(d[0])):
        out.parts.append(topic_id.bytes)
        out.cstring(name)
        out.no_tags()
    out.no_tags()
    return out.done()


# -- reading -------------------------------------------------------------------------------


def _int(fmt: struct.Struct, stream: io.BytesIO) -> int:
    value: int = fmt.unpack(read_exact(stream, fmt.size))[0]
    return value


def _tags(stream: io.BytesIO) -> dict[int, bytes]:
    return dict(rt_read_tag(stream) for _ in range(rt_tag_count(stream)))


def _ints(stream: io.BytesIO) -> frozenset[int]:
    return frozenset(_int(_I32, stream) for _ in range(rt_ccount(stream, 4)))


def _partitions(stream: io.BytesIO) -> dict[uuid.UUID, frozenset[int]]:
    out = {}
    for _ in range(rt_ccount(stream, 17)):
        topic_id = rt_uuid(stream)
        out[topic_id] = _ints(stream)
        _tags(stream)
    return out


def _decoded(data: bytes, read: Callable[[io.BytesIO], T]) -> T:
    """`read` over a version-0 value (the trailing tagged fields read by `read`)."""
    try:
        stream = io.BytesIO(data)
        version = _int(_I16, stream)
        if version != 0:
            raise GroupRecordError(f"unsupported share group record value version {version}")
        return read(stream)
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def decode_share_key(data: bytes) -> ShareKey | None:
    """The key of a share group record, or None for another record type."""
    stream = io.BytesIO(data)
    try:
        record_type = _int(_I16, stream)
        if record_type not in SHARE_RECORD_TYPES:
            return None
        group = rt_string(stream)
        member = rt_string(stream) if record_type in _WITH_MEMBER else None
        return ShareKey(record_type, group, member)
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def decode_member_metadata(data: bytes) -> MemberMetadataValue:
    def read(s: io.BytesIO) -> MemberMetadataValue:
        rack, client_id, host = rt_cnstring(s), rt_cstring(s), rt_cstring(s)
        names = tuple(rt_cstring(s) for _ in range(rt_ccount(s)))
        _tags(s)
        return MemberMetadataValue(rack, client_id, host, names)

    return _decoded(data, read)


def decode_group_epoch(data: bytes) -> GroupEpochValue:
    def read(s: io.BytesIO) -> GroupEpochValue:
        epoch, digest = _int(_I32, s), _int(_I64, s)
        _tags(s)
        return GroupEpochValue(epoch, digest)

    return _decoded(data, read)


def decode_target_metadata(data: bytes) -> TargetMetadataValue:
    def read(s: io.BytesIO) -> TargetMetadataValue:
        epoch = _int(_I32, s)
        raw = _tags(s).get(0)
        stamp = _I64.unpack(raw)[0] if raw is not None and len(raw) == 8 else 0
        return TargetMetadataValue(epoch, stamp)

    return _decoded(data, read)


def decode_target_member(data: bytes) -> dict[uuid.UUID, frozenset[int]]:
    def read(s: io.BytesIO) -> dict[uuid.UUID, frozenset[int]]:
        out = _partitions(s)
        _tags(s)
        return out

    return _decoded(data, read)


def decode_current_assignment(data: bytes) -> CurrentAssignmentValue:
    def read(s: io.BytesIO) -> CurrentAssignmentValue:
        epoch, previous, state = _int(_I32, s), _int(_I32, s), _int(_I8, s)
        assigned = _partitions(s)
        _tags(s)
        return CurrentAssignmentValue(epoch, previous, state, assigned)

    return _decoded(data, read)


def decode_state_partition_metadata(data: bytes) -> StatePartitionMetadataValue:
    def infos(s: io.BytesIO) -> tuple[TopicPartitionsInfo, ...]:
        out = []
        for _ in range(rt_ccount(s, 18)):
            topic_id, name = rt_uuid(s), rt_cstring(s)
            out.append(TopicPartitionsInfo(topic_id, name, _ints(s)))
            _tags(s)
        return tuple(out)

    def read(s: io.BytesIO) -> StatePartitionMetadataValue:
        initializing, initialized = infos(s), infos(s)
        deleting = []
        for _ in range(rt_ccount(s, 17)):
            deleting.append((rt_uuid(s), rt_cstring(s)))
            _tags(s)
        _tags(s)
        return StatePartitionMetadataValue(initializing, initialized, tuple(deleting))

    return _decoded(data, read)
