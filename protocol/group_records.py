"""Key/value codecs of the internal `__consumer_offsets` records (classic groups and offsets).

Kafka stores the group coordinator's state as records of the compacted topic
`__consumer_offsets`. Every record key and value starts with an int16 *version*; the key's
version also tells the record type. Layouts below follow apache/kafka's group-coordinator
message definitions (`OffsetCommitKey.json`, `OffsetCommitValue.json`, `GroupMetadataKey.json`,
`GroupMetadataValue.json`); all integers are big-endian.

Primitive encodings (non-flexible versions):
    string           int16 length N >= 0, then N bytes of UTF-8
    nullable string  int16 length, -1 = null
    bytes            int32 length N >= 0, then N bytes
    array            int32 count, then the elements
Flexible versions (value version 4 of both values) use instead:
    compact string   unsigned varint N+1 (0 = null), then N bytes
    compact bytes    unsigned varint N+1, then N bytes
    compact array    unsigned varint count+1
    tagged fields    unsigned varint count, then per field: uvarint tag, uvarint size, data
                     (at the end of every struct, nested ones included; unknown tags skipped)

Keys (never flexible):
    version 0, 1  OffsetCommitKey    group: string, topic: string, partition: int32
    version 2     GroupMetadataKey   group: string
    3 and above   records of the new consumer / share / streams protocols: `decode_key`
                  returns `UnknownKey(version)` so a loader can skip them.

OffsetCommitValue (versions 0-4):
    offset int64
    leader_epoch int32                (v3+, default -1)
    metadata string
    commit_timestamp int64
    expire_timestamp int64            (v1 only, default -1)
  Kafka (>= 2.1) writes version 3, or version 1 when the commit carried an explicit
  retention time (OffsetCommit v2-4 `RetentionTimeMs`), so the expire timestamp is kept;
  `encode_offset_commit_value(v)` makes the same choice when no version is given.

GroupMetadataValue (versions 0-4):
    protocol_type string
    generation int32
    protocol nullable string
    leader nullable string
    current_state_timestamp int64     (v2+, default -1)
    members [MemberMetadata]
  MemberMetadata:
    member_id string
    group_instance_id nullable string (v3+, default null)
    client_id string
    client_host string
    rebalance_timeout int32           (v1+, default -1: the reader then uses session_timeout)
    session_timeout int32
    subscription bytes
    assignment bytes
  Kafka writes version 3 (the highest non-flexible one); we do too.

A tombstone is a record with a key and a null value (offset deleted / group deleted).

Decoding never trusts a length: every length and count is checked against the bytes left
before anything is allocated; any malformed input raises `GroupRecordError`. Trailing bytes
after a known layout are ignored, as Kafka's readers do (a newer writer may append fields).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from protocol.exceptions import ProtocolError
from protocol.varint import read_uvarint, write_uvarint

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "GROUP_METADATA_VALUE_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "GroupRecordError",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "UnknownKey",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_commit_value",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
]

OFFSET_COMMIT_KEY_VERSION = 1
"""The key version Kafka writes for offset commits (0 and 1 share one layout)."""
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3
"""The GroupMetadataValue version Kafka writes (highest non-flexible)."""
_OFFSET_COMMIT_VALUE_DEFAULT_VERSION = 3
_VALUE_MAX_VERSION = 4
_FLEXIBLE_MIN = 4


class GroupRecordError(ProtocolError):
    """Bytes that are not a valid `__consumer_offsets` key or value (or an unknown version)."""


# -- record types --------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int
    version: int = OFFSET_COMMIT_KEY_VERSION


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str
    version: int = GROUP_METADATA_KEY_VERSION


@dataclass(frozen=True)
class UnknownKey:
    """A key of another record type (new consumer protocol, share groups, ...)."""

    version: int


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int = -1
    version: int = field(default=-1, compare=False)  # the version it was decoded from


@dataclass(frozen=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    rebalance_timeout: int = -1
    group_instance_id: str | None = None


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...] = ()
    current_state_timestamp: int = -1
    version: int = field(default=-1, compare=False)


# -- low-level reader / writer -------------------------------------------------------------

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class _Reader:
    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._pos = 0

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _take(self, n: int) -> memoryview:
        if n < 0 or n > self.remaining():
            raise GroupRecordError(f"need {n} bytes at offset {self._pos}, {self.remaining()} left")
        out = self._data[self._pos : self._pos + n]
        self._pos += n
        return out

    def int16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def uvarint(self) -> int:
        value, self._pos = read_uvarint(self._data, self._pos, len(self._data), GroupRecordError)
        return value

    def _utf8(self, n: int) -> str:
        raw = self._take(n)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GroupRecordError(f"invalid UTF-8 in string: {exc}") from None

    def string(self, flexible: bool) -> str:
        s = self.nullable_string(flexible)
        if s is None:
            raise GroupRecordError("null in a non-nullable string")
        return s

    def nullable_string(self, flexible: bool) -> str | None:
        n = self.uvarint() - 1 if flexible else self.int16()
        if n < 0:
            if n == -1:
                return None
            raise GroupRecordError(f"negative string length {n}")
        return self._utf8(n)

    def bytes_(self, flexible: bool) -> bytes:
        n = self.uvarint() - 1 if flexible else self.int32()
        if n < 0:
            raise GroupRecordError(f"negative or null bytes length {n}")
        return bytes(self._take(n))

    def array_len(self, flexible: bool) -> int:
        n = self.uvarint() - 1 if flexible else self.int32()
        if n < 0:
            raise GroupRecordError(f"negative or null array length {n}")
        if n > self.remaining():  # every element takes at least one byte
            raise GroupRecordError(f"array of {n} elements but {self.remaining()} bytes left")
        return n

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


class _Writer:
    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def uvarint(self, v: int) -> None:
        write_uvarint(self.buf, v)

    def nullable_string(self, s: str | None, flexible: bool) -> None:
        if s is None:
            if flexible:
                self.uvarint(0)
            else:
                self.int16(-1)
            return
        raw = s.encode("utf-8")
        if flexible:
            self.uvarint(len(raw) + 1)
        else:
            if len(raw) > 0x7FFF:
                raise GroupRecordError(f"string of {len(raw)} bytes exceeds int16 length")
            self.int16(len(raw))
        self.buf += raw

    def string(self, s: str, flexible: bool) -> None:
        self.nullable_string(s, flexible)

    def bytes_(self, b: bytes, flexible: bool) -> None:
        if flexible:
            self.uvarint(len(b) + 1)
        else:
            self.int32(len(b))
        self.buf += b

    def array_len(self, n: int, flexible: bool) -> None:
        if flexible:
            self.uvarint(n + 1)
        else:
            self.int32(n)

    def no_tagged_fields(self) -> None:
        self.uvarint(0)


def _check_value_version(version: int, what: str) -> None:
    if not 0 <= version <= _VALUE_MAX_VERSION:
        raise GroupRecordError(f"unsupported {what} version {version}")


# -- keys ----------------------------------------------------------------------------------


def encode_offset_commit_key(
    group: str, topic: str, partition: int, version: int = OFFSET_COMMIT_KEY_VERSION
) -> bytes:
    if version not in (0, 1):
        raise GroupRecordError(f"OffsetCommitKey has versions 0-1, not {version}")
    w = _Writer()
    w.int16(version)
    w.string(group, False)
    w.string(topic, False)
    w.int32(partition)
    return bytes(w.buf)


def encode_group_metadata_key(group: str) -> bytes:
    w = _Writer()
    w.int16(GROUP_METADATA_KEY_VERSION)
    w.string(group, False)
    return bytes(w.buf)


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | UnknownKey:
    """Decode a `__consumer_offsets` record key (raises `GroupRecordError` on bad bytes)."""
    r = _Reader(data)
    version = r.int16()
    if version in (0, 1):
        group = r.string(False)
        topic = r.string(False)
        partition = r.int32()
        return OffsetCommitKey(group, topic, partition, version)
    if version == GROUP_METADATA_KEY_VERSION:
        group = r.string(False)
        return GroupMetadataKey(group)
    if version < 0:
        raise GroupRecordError(f"negative record key version {version}")
    return UnknownKey(version)


# -- OffsetCommitValue ---------------------------------------------------------------------


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """Encode; without `version`, pick Kafka's: 1 when an expire timestamp is set, else 3."""
    if version is None:
        version = 1 if value.expire_timestamp != -1 else _OFFSET_COMMIT_VALUE_DEFAULT_VERSION
    _check_value_version(version, "OffsetCommitValue")
    flexible = version >= _FLEXIBLE_MIN
    w = _Writer()
    w.int16(version)
    w.int64(value.offset)
    if version >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata, flexible)
    w.int64(value.commit_timestamp)
    if version == 1:
        w.int64(value.expire_timestamp)
    if flexible:
        w.no_tagged_fields()
    return bytes(w.buf)


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    r = _Reader(data)
    version = r.int16()
    _check_value_version(version, "OffsetCommitValue")
    flexible = version >= _FLEXIBLE_MIN
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string(flexible)
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    if flexible:
        r.skip_tagged_fields()
    return OffsetCommitValue(
        offset=offset,
        metadata=metadata,
        commit_timestamp=commit_timestamp,
        leader_epoch=leader_epoch,
        expire_timestamp=expire_timestamp,
        version=version,
    )


# -- GroupMetadataValue --------------------------------------------------------------------


def encode_group_metadata_value(
    value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION
) -> bytes:
    _check_value_version(version, "GroupMetadataValue")
    flexible = version >= _FLEXIBLE_MIN
    w = _Writer()
    w.int16(version)
    w.string(value.protocol_type, flexible)
    w.int32(value.generation)
    w.nullable_string(value.protocol, flexible)
    w.nullable_string(value.leader, flexible)
    if version >= 2:
        w.int64(value.current_state_timestamp)
    w.array_len(len(value.members), flexible)
    for m in value.members:
        w.string(m.member_id, flexible)
        if version >= 3:
            w.nullable_string(m.group_instance_id, flexible)
        w.string(m.client_id, flexible)
        w.string(m.client_host, flexible)
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription, flexible)
        w.bytes_(m.assignment, flexible)
        if flexible:
            w.no_tagged_fields()
    if flexible:
        w.no_tagged_fields()
    return bytes(w.buf)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = _Reader(data)
    version = r.int16()
    _check_value_version(version, "GroupMetadataValue")
    flexible = version >= _FLEXIBLE_MIN
    protocol_type = r.string(flexible)
    generation = r.int32()
    protocol = r.nullable_string(flexible)
    leader = r.nullable_string(flexible)
    current_state_timestamp = r.int64() if version >= 2 else -1
    members: list[MemberMetadata] = []
    for _ in range(r.array_len(flexible)):
        member_id = r.string(flexible)
        group_instance_id = r.nullable_string(flexible) if version >= 3 else None
        client_id = r.string(flexible)
        client_host = r.string(flexible)
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        subscription = r.bytes_(flexible)
        assignment = r.bytes_(flexible)
        if flexible:
            r.skip_tagged_fields()
        members.append(
            MemberMetadata(
                member_id=member_id,
                client_id=client_id,
                client_host=client_host,
                session_timeout=session_timeout,
                subscription=subscription,
                assignment=assignment,
                rebalance_timeout=rebalance_timeout,
                group_instance_id=group_instance_id,
            )
        )
    if flexible:
        r.skip_tagged_fields()
    return GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        members=tuple(members),
        current_state_timestamp=current_state_timestamp,
        version=version,
    )
