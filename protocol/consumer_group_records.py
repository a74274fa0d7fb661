"""Key/value codecs of the KIP-848 consumer group records of `__consumer_offsets`.

Kafka 4.4's group coordinator (group-coordinator/src/main/resources/common/message/*.json)
writes, besides offset commits and classic group metadata, these record types. The layout (an
int16 record type then non-flexible key strings; an int16 version (0) then flexible value
fields) is written and read by `protocol.coordinator_records`, shared with
`protocol.share_group_records`.

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
import uuid
from dataclasses import dataclass, field

from protocol import coordinator_records as rec
from protocol.coordinator_records import (
    I8,
    I32,
    I64,
    GroupEpochValue,
    Partitions,
    Writer,
    decode_assignment,
    decode_value,
    encode_assignment,
    read_int,
    read_partitions,
    read_tags,
    value_writer,
)
from protocol.primitives import rt_cbytes, rt_ccount, rt_cnstring, rt_cstring

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
_KIND = "consumer group"

__all__ = [
    "CONSUMER_RECORD_TYPES",
    "CURRENT_ASSIGNMENT",
    "GROUP_METADATA",
    "MEMBER_METADATA",
    "REGULAR_EXPRESSION",
    "TARGET_MEMBER",
    "TARGET_METADATA",
    "ClassicMemberMetadata",
    "ConsumerKey",
    "CurrentAssignmentValue",
    "GroupEpochValue",
    "MemberMetadataValue",
    "Partitions",
    "RegularExpressionValue",
    "decode_consumer_key",
    "decode_current_assignment",
    "decode_group_epoch",
    "decode_member_metadata",
    "decode_regular_expression",
    "decode_target_epoch",
    "decode_target_member",
    "encode_current_assignment",
    "encode_group_epoch",
    "encode_key",
    "encode_member_metadata",
    "encode_regular_expression",
    "encode_target_epoch",
    "encode_target_member",
]


@dataclass(frozen=True)
class ConsumerKey:
    record_type: int
    group: str
    member: str | None = None


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


def encode_key(key: ConsumerKey) -> bytes:
    if key.record_type not in _TWO_STRING_KEYS:
        return rec.encode_key(key.record_type, key.group)
    assert key.member is not None
    return rec.encode_key(key.record_type, key.group, key.member)


def encode_group_epoch(value: GroupEpochValue) -> bytes:
    out = value_writer()
    out.raw(I32, value.epoch)
    if value.metadata_hash == 0:
        out.no_tags()
    else:
        out.one_tag(0, I64.pack(value.metadata_hash))
    return out.done()


def encode_member_metadata(value: MemberMetadataValue) -> bytes:
    out = value_writer()
    out.cstring(value.instance_id)
    out.cstring(value.rack_id)
    out.cstring(value.client_id)
    out.cstring(value.client_host)
    out.count(len(value.subscribed_topic_names))
    for name in value.subscribed_topic_names:
        out.cstring(name)
    out.cstring(value.subscribed_topic_regex)
    out.raw(I32, value.rebalance_timeout_ms)
    out.cstring(value.server_assignor)
    if value.classic is None:
        out.no_tags()
    else:
        out.one_tag(0, _classic_metadata(value.classic))
    return out.done()


def _classic_metadata(value: ClassicMemberMetadata) -> bytes:
    out = Writer()
    out.raw(I8, 1)  # a nullable struct: present
    out.raw(I32, value.session_timeout_ms)
    out.count(len(value.supported_protocols))
    for name, metadata in value.supported_protocols:
        out.cstring(name)
        out.cbytes(metadata)
        out.no_tags()
    out.no_tags()
    return out.done()


def encode_regular_expression(value: RegularExpressionValue) -> bytes:
    out = value_writer()
    out.count(len(value.topics))
    for name in value.topics:
        out.cstring(name)
    out.raw(I64, value.version)
    out.raw(I64, value.timestamp)
    out.no_tags()
    return out.done()


def encode_target_epoch(assignment_epoch: int) -> bytes:
    out = value_writer()
    out.raw(I32, assignment_epoch)
    out.no_tags()
    return out.done()


def encode_target_member(assignment: Partitions) -> bytes:
    return encode_assignment(assignment)


def encode_current_assignment(value: CurrentAssignmentValue) -> bytes:
    out = value_writer()
    out.raw(I32, value.member_epoch)
    out.raw(I32, value.previous_member_epoch)
    out.raw(I8, value.state)
    out.partitions(value.assigned)
    out.partitions(value.pending_revocation)
    out.no_tags()
    return out.done()


# -- reading -------------------------------------------------------------------------------


def decode_consumer_key(data: bytes) -> ConsumerKey | None:
    """The key of a KIP-848 consumer group record, or None for another record type."""
    return rec.decode_key(data, CONSUMER_RECORD_TYPES, _TWO_STRING_KEYS, ConsumerKey)


def decode_group_epoch(data: bytes) -> GroupEpochValue:
    def read(s: io.BytesIO) -> GroupEpochValue:
        epoch = read_int(I32, s)
        raw = read_tags(s).get(0)
        return GroupEpochValue(epoch, I64.unpack(raw)[0] if raw and len(raw) == 8 else 0)

    return decode_value(data, read, _KIND)


def decode_member_metadata(data: bytes) -> MemberMetadataValue:
    def read(s: io.BytesIO) -> MemberMetadataValue:
        instance_id, rack_id = rt_cnstring(s), rt_cnstring(s)
        client_id, client_host = rt_cstring(s), rt_cstring(s)
        names = tuple(rt_cstring(s) for _ in range(rt_ccount(s)))
        regex = rt_cnstring(s)
        rebalance_timeout = read_int(I32, s)
        assignor = rt_cnstring(s)
        raw = read_tags(s).get(0)
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

    return decode_value(data, read, _KIND)


def _decode_classic_metadata(raw: bytes) -> ClassicMemberMetadata | None:
    stream = io.BytesIO(raw)
    marker = read_int(I8, stream)
    if marker < 0:
        return None
    if marker != 1:  # written without the presence byte
        stream.seek(0)
    session_timeout = read_int(I32, stream)
    protocols = []
    for _ in range(rt_ccount(stream, 2)):
        name = rt_cstring(stream)
        metadata = rt_cbytes(stream)
        read_tags(stream)
        protocols.append((name, metadata))
    read_tags(stream)
    return ClassicMemberMetadata(session_timeout, tuple(protocols))


def decode_regular_expression(data: bytes) -> RegularExpressionValue:
    def read(s: io.BytesIO) -> RegularExpressionValue:
        topics = tuple(rt_cstring(s) for _ in range(rt_ccount(s)))
        version, timestamp = read_int(I64, s), read_int(I64, s)
        read_tags(s)
        return RegularExpressionValue(topics, version, timestamp)

    return decode_value(data, read, _KIND)


def decode_target_epoch(data: bytes) -> int:
    def read(s: io.BytesIO) -> int:
        epoch = read_int(I32, s)
        read_tags(s)
        return epoch

    return decode_value(data, read, _KIND)


def decode_target_member(data: bytes) -> dict[uuid.UUID, frozenset[int]]:
    return decode_assignment(data, _KIND)


def decode_current_assignment(data: bytes) -> CurrentAssignmentValue:
    def read(s: io.BytesIO) -> CurrentAssignmentValue:
        epoch, previous, state = read_int(I32, s), read_int(I32, s), read_int(I8, s)
        assigned, pending = read_partitions(s), read_partitions(s)
        read_tags(s)
        return CurrentAssignmentValue(epoch, previous, state, assigned, pending)

    return decode_value(data, read, _KIND)
