"""Key/value codecs of the KIP-848 consumer group records of `__consumer_offsets`.

Kafka 4.4's group coordinator (group-coordinator/src/main/resources/common/message/*.json)
writes, besides offset commits and classic group metadata, these record types. A key is an
int16 record type (the JSON's apiKey) then the key fields, non-flexible (int16-length
strings); a value is an int16 version (0) then the fields, flexible (compact strings and
arrays, a tagged-field section after every struct).

type  key fields            value (version 0)
3     group                 ConsumerGroupMetadataValue: epoch int32; tag 0: metadata_hash int64
5     group, member         ConsumerGroupMemberMetadataValue: instance_id?, rack_id?,
                            client_id, client_host, subscribed_topic_names [string],
                            subscribed_topic_regex?, rebalance_timeout_ms int32,
                            server_assignor?; tag 0: classic member metadata (a nullable
                            struct: int8 1, session_timeout_ms int32, supported_protocols
                            [name string, metadata bytes]), written for the members of a
                            consumer group that use the classic protocol
6     group                 ConsumerGroupTargetAssignmentMetadataValue: assignment_epoch
                            int32; tag 0: assignment_timestamp int64 (not written)
7     group, member         ConsumerGroupTargetAssignmentMemberValue: [topic_id uuid,
                            partitions [int32]]
8     group, member         ConsumerGroupCurrentMemberAssignmentValue: member_epoch int32,
                            previous_member_epoch int32, state int8, assigned_partitions
                            [topic_id, partitions], partitions_pending_revocation (same)
16    group, regex          ConsumerGroupRegularExpressionValue: topics [string], version
                            int64, timestamp int64 (the key's second string is carried in
                            `ConsumerKey.member`)
(4, ConsumerGroupPartitionMetadata, is no longer written by Kafka 4.4; decoding skips it.)
A tombstone (null value) deletes what its key names. Tagged fields other than the epoch's
metadata hash and the classic member metadata are skipped when read and not written.
Malformed bytes raise `GroupRecordError`.
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from protocol.exceptions import MalformedRequest
from protocol.group_records import GroupRecordError
from protocol.primitives import (
    read_exact,
    rt_cbytes,
    rt_ccount,
    rt_cnstring,
    rt_cstring,
    rt_read_tag,
    rt_string,
    rt_tag_count,
    rt_uuid,
    uvarint_bytes,
)

GROUP_METADATA = 3
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16
CONSUMER_RECORD_TYPES = frozenset(
    {
        GROUP_METADATA,
        MEMBER_METADATA,
        TARGET_METADATA,
        TARGET_MEMBER,
        CURRENT_ASSIGNMENT,
        REGULAR_EXPRESSION,
    }
)
#: the record types whose key has a second string (a member id; type 16: the regex)
_TWO_STRING_KEYS = (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION)

Partitions = Mapping[uuid.UUID, frozenset[int]]

_I8, _I16, _I32, _I64 = (struct.Struct(f) for f in (">b", ">h", ">i", ">q"))


@dataclass(frozen=True)
class ConsumerKey:
    record_type: int
    group: str
    member: str | None = None


@dataclass(frozen=True)
class GroupEpochValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """What a member using the classic protocol inside a consumer group joined with."""

    session_timeout_ms: int
    #: (protocol name, its metadata) as the member's JoinGroup listed them
    supported_protocols: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class RegularExpressionValue:
    topics: tuple[str, ...]
    version: int = 0
    timestamp: int = 0


@dataclass(frozen=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMemberMetadata | None = None


@dataclass(frozen=True)
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)


# -- writing -------------------------------------------------------------------------------


class _Out:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def raw(self, fmt: struct.Struct, value: int) -> None:
        self.parts.append(fmt.pack(value))

    def string(self, value: str) -> None:  # non-flexible (keys)
        data = value.encode()
        self.parts.append(_I16.pack(len(data)) + data)

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

    def partitions(self, value: Partitions) -> None:
        self.count(len(value))
        for topic_id, parts in sorted(value.items(), key=lambda kv: str(kv[0])):
            self.parts.append(topic_id.bytes)
            self.count(len(parts))
            for p in sorted(parts):
                self.raw(_I32, p)
            self.no_tags()

    def done(self) -> bytes:
        return b"".join(self.parts)


def encode_key(key: ConsumerKey) -> bytes:
    out = _Out()
    out.raw(_I16, key.record_type)
    out.string(key.group)
    if key.record_type in _TWO_STRING_KEYS:
        assert key.member is not None
        out.string(key.member)
    return out.done()


def _value_start() -> _Out:
    out = _Out()
    out.raw(_I16, 0)
    return out


def encode_group_epoch(value: GroupEpochValue) -> bytes:
    out = _value_start()
    out.raw(_I32, value.epoch)
    if value.metadata_hash == 0:
        out.no_tags()
    else:  # tag 0, 8 bytes
        out.parts.append(b"\x01\x00\x08" + _I64.pack(value.metadata_hash))
    return out.done()


def encode_member_metadata(value: MemberMetadataValue) -> bytes:
    out = _value_start()
    out.cstring(value.instance_id)
    out.cstring(value.rack_id)
    out.cstring(value.client_id)
    out.cstring(value.client_host)
    out.count(len(value.subscribed_topic_names))
    for name in value.subscribed_topic_names:
        out.cstring(name)
    out.cstring(value.subscribed_topic_regex)
    out.raw(_I32, value.rebalance_timeout_ms)
    out.cstring(value.server_assignor)
    if value.classic is None:
        out.no_tags()
    else:
        payload = _classic_metadata(value.classic)
        out.parts.append(b"\x01\x00" + uvarint_bytes(len(payload)) + payload)
    return out.done()


def _classic_metadata(value: ClassicMemberMetadata) -> bytes:
    out = _Out()
    out.raw(_I8, 1)  # a nullable struct: present
    out.raw(_I32, value.session_timeout_ms)
    out.count(len(value.supported_protocols))
    for name, metadata in value.supported_protocols:
        out.cstring(name)
        out.parts.append(uvarint_bytes(len(metadata) + 1) + metadata)
        out.no_tags()
    out.no_tags()
    return out.done()


def encode_regular_expression(value: RegularExpressionValue) -> bytes:
    out = _value_start()
    out.count(len(value.topics))
    for name in value.topics:
        out.cstring(name)
    out.raw(_I64, value.version)
    out.raw(_I64, value.timestamp)
    out.no_tags()
    return out.done()


def encode_target_epoch(assignment_epoch: int) -> bytes:
    out = _value_start()
    out.raw(_I32, assignment_epoch)
    out.no_tags()
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
    out.partitions(value.pending_revocation)
    out.no_tags()
    return out.done()


# -- reading -------------------------------------------------------------------------------


def _int(fmt: struct.Struct, stream: io.BytesIO) -> int:
    value: int = fmt.unpack(read_exact(stream, fmt.size))[0]
    return value


def _skip_tags(stream: io.BytesIO) -> dict[int, bytes]:
    return dict(rt_read_tag(stream) for _ in range(rt_tag_count(stream)))


def _partitions(stream: io.BytesIO) -> dict[uuid.UUID, frozenset[int]]:
    out = {}
    for _ in range(rt_ccount(stream, 17)):
        topic_id = rt_uuid(stream)
        parts = frozenset(_int(_I32, stream) for _ in range(rt_ccount(stream, 4)))
        _skip_tags(stream)
        out[topic_id] = parts
    return out


def _value(data: bytes) -> io.BytesIO:
    stream = io.BytesIO(data)
    version = _int(_I16, stream)
    if version != 0:
        raise GroupRecordError(f"unsupported consumer group record value version {version}")
    return stream


def decode_consumer_key(data: bytes) -> ConsumerKey | None:
    """The key of a KIP-848 consumer group record, or None for another record type."""
    stream = io.BytesIO(data)
    try:
        record_type = _int(_I16, stream)
        if record_type not in CONSUMER_RECORD_TYPES:
            return None
        group = rt_string(stream)
        member = None
        if record_type in _TWO_STRING_KEYS:
            member = rt_string(stream)
        return ConsumerKey(record_type, group, member)
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def decode_group_epoch(data: bytes) -> GroupEpochValue:
    try:
        stream = _value(data)
        epoch = _int(_I32, stream)
        tags = _skip_tags(stream)
        raw = tags.get(0)
        return GroupEpochValue(epoch, _I64.unpack(raw)[0] if raw and len(raw) == 8 else 0)
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def decode_member_metadata(data: bytes) -> MemberMetadataValue:
    try:
        stream = _value(data)
        instance_id = rt_cnstring(stream)
        rack_id = rt_cnstring(stream)
        client_id = rt_cstring(stream)
        client_host = rt_cstring(stream)
        names = tuple(rt_cstring(stream) for _ in range(rt_ccount(stream)))
        regex = rt_cnstring(stream)
        rebalance_timeout = _int(_I32, stream)
        assignor = rt_cnstring(stream)
        raw = _skip_tags(stream).get(0)
        return MemberMetadataValue(
            instance_id,
            rack_id,
            client_id,
            client_host,
            names,
            regex,
            rebalance_timeout,
            assignor,
            None if raw is None else _decode_classic_metadata(raw),
        )
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def _decode_classic_metadata(raw: bytes) -> ClassicMemberMetadata | None:
    stream = io.BytesIO(raw)
    marker = _int(_I8, stream)
    if marker < 0:
        return None
    if marker != 1:  # written without the presence byte
        stream.seek(0)
    session_timeout = _int(_I32, stream)
    protocols = []
    for _ in range(rt_ccount(stream, 2)):
        name = rt_cstring(stream)
        metadata = rt_cbytes(stream)
        _skip_tags(stream)
        protocols.append((name, metadata))
    _skip_tags(stream)
    return ClassicMemberMetadata(session_timeout, tuple(protocols))


def decode_regular_expression(data: bytes) -> RegularExpressionValue:
    try:
        stream = _value(data)
        topics = tuple(rt_cstring(stream) for _ in range(rt_ccount(stream)))
        version = _int(_I64, stream)
        timestamp = _int(_I64, stream)
        _skip_tags(stream)
        return RegularExpressionValue(topics, version, timestamp)
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def decode_target_epoch(data: bytes) -> int:
    try:
        stream = _value(data)
        epoch = _int(_I32, stream)
        _skip_tags(stream)
        return epoch
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def decode_target_member(data: bytes) -> dict[uuid.UUID, frozenset[int]]:
    try:
        stream = _value(data)
        out = _partitions(stream)
        _skip_tags(stream)
        return out
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def decode_current_assignment(data: bytes) -> CurrentAssignmentValue:
    try:
        stream = _value(data)
        epoch = _int(_I32, stream)
        previous = _int(_I32, stream)
        state = _int(_I8, stream)
        assigned = _partitions(stream)
        pending = _partitions(stream)
        _skip_tags(stream)
        return CurrentAssignmentValue(epoch, previous, state, assigned, pending)
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None
