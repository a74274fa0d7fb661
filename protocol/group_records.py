"""Key/value codecs of the internal `__consumer_offsets` records (classic groups and offsets).

Kafka stores the group coordinator's state as records of the compacted topic
`__consumer_offsets`. Every record key and value starts with an int16 *version*; the key's
version also tells the record type. Kafka generates these codecs from its JSON message
definitions (`OffsetCommitKey.json`, `OffsetCommitValue.json`, `GroupMetadataKey.json`,
`GroupMetadataValue.json`); here each record type is a small hand-written field table
(`_Schema`: name, type, first/last version, nullable) read and written by ONE generic codec
(`_read_struct` / `_write_struct`). The tables below are the byte layout: the fields of a
version, in table order, after the int16 version. All integers are big-endian.

Field encodings (non-flexible versions / flexible versions, i.e. value version 4):
    int16/int32/int64  fixed width
    string             int16 length (-1 = null) / unsigned varint length+1 (0 = null),
                       then UTF-8 (invalid UTF-8 is an error, not replaced)
    bytes              int32 length / unsigned varint length+1, then the bytes
    array              int32 count / unsigned varint count+1, then the elements
    tagged fields      flexible only, at the end of every struct (nested ones too):
                       unsigned varint count, then per field uvarint tag, uvarint size, data;
                       written empty, skipped when read
Key versions 0-1 are an OffsetCommitKey, 2 a GroupMetadataKey; 3 and above belong to the new
consumer / share / streams protocols: `decode_key` returns `UnknownKey(version)` so a loader
can skip them. A field absent from a version takes its dataclass default (-1 or None).
Kafka writes OffsetCommitValue version 3, or version 1 when the commit carried an explicit
retention time (OffsetCommit v2-4 `RetentionTimeMs`, kept as the expire timestamp), and
GroupMetadataValue version 3 (the highest non-flexible one); so do we.

A tombstone is a record with a key and a null value (offset deleted / group deleted).

Decoding never trusts a length: every length and count is checked against the bytes left
before anything is allocated (`protocol.primitives` readers); any malformed input raises
`GroupRecordError`. Trailing bytes after a known layout are ignored, as Kafka's readers do
(a newer writer may append fields).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from protocol.exceptions import MalformedRequest, ProtocolError
from protocol.primitives import (
    read_exact,
    read_uvarint,
    rt_bytes,
    rt_cbytes,
    rt_ccount,
    rt_count,
    rt_read_tag,
    rt_tag_count,
    rt_w_bytes,
    rt_w_cbytes,
    rt_w_ccount,
    rt_w_count,
    rt_w_tags,
    uvarint_bytes,
)

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


class GroupRecordError(ProtocolError):
    """Bytes that are not a valid `__consumer_offsets` key or value (or an unknown version)."""


OFFSET_COMMIT_KEY_VERSION = 1
"""The key version Kafka writes for offset commits (0 and 1 share one layout)."""
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3
"""The GroupMetadataValue version Kafka writes (highest non-flexible)."""
_OFFSET_COMMIT_VALUE_DEFAULT_VERSION = 3


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


# -- field tables --------------------------------------------------------------------------

_NO_LAST = 0x7FFF


@dataclass(frozen=True)
class _Field:
    """One field: present in versions `first`..`last`; `element` for an array of structs."""

    name: str
    type: str  # "int16" | "int32" | "int64" | "string" | "bytes" | "array"
    first: int = 0
    last: int = _NO_LAST
    nullable: bool = False
    element: _Schema | None = None


@dataclass(frozen=True)
class _Schema:
    """A record type (or nested struct): its dataclass, versions and field table."""

    cls: type
    fields: tuple[_Field, ...]
    versions: tuple[int, int] = (0, _NO_LAST)
    flexible_from: int = _NO_LAST  # keys are never flexible
    keeps_version: bool = True  # the dataclass has a `version` field to fill
    plans: dict[tuple[int, bool], Any] = field(default_factory=dict, compare=False, repr=False)


_OFFSET_COMMIT_KEY = _Schema(
    OffsetCommitKey,
    (_Field("group", "string"), _Field("topic", "string"), _Field("partition", "int32")),
    versions=(0, 1),
)
_GROUP_METADATA_KEY = _Schema(GroupMetadataKey, (_Field("group", "string"),), versions=(2, 2))
_KEYS = {0: _OFFSET_COMMIT_KEY, 1: _OFFSET_COMMIT_KEY, 2: _GROUP_METADATA_KEY}

_OFFSET_COMMIT_VALUE = _Schema(
    OffsetCommitValue,
    (
        _Field("offset", "int64"),
        _Field("leader_epoch", "int32", first=3),
        _Field("metadata", "string"),
        _Field("commit_timestamp", "int64"),
        _Field("expire_timestamp", "int64", first=1, last=1),
    ),
    versions=(0, 4),
    flexible_from=4,
)

_MEMBER_METADATA = _Schema(
    MemberMetadata,
    (
        _Field("member_id", "string"),
        _Field("group_instance_id", "string", first=3, nullable=True),
        _Field("client_id", "string"),
        _Field("client_host", "string"),
        # absent before v1: -1, and the reader then uses the session timeout
        _Field("rebalance_timeout", "int32", first=1),
        _Field("session_timeout", "int32"),
        _Field("subscription", "bytes"),
        _Field("assignment", "bytes"),
    ),
    keeps_version=False,
)

_GROUP_METADATA_VALUE = _Schema(
    GroupMetadataValue,
    (
        _Field("protocol_type", "string"),
        _Field("generation", "int32"),
        _Field("protocol", "string", nullable=True),
        _Field("leader", "string", nullable=True),
        _Field("current_state_timestamp", "int64", first=2),
        _Field("members", "array", element=_MEMBER_METADATA),
    ),
    versions=(0, 4),
    flexible_from=4,
)


# -- the generic codec ---------------------------------------------------------------------


class _Out(list[bytes]):
    """The encoded pieces, joined at the end; a stream to the `rt_w_*` writers."""

    write = list.append


_I16 = struct.Struct(">h")
_INTS = {"int16": _I16, "int32": struct.Struct(">i"), "int64": struct.Struct(">q")}


def _check_version(schema: _Schema, version: int) -> None:
    lo, hi = schema.versions
    if not lo <= version <= hi:
        name = schema.cls.__name__
        raise GroupRecordError(f"unsupported {name} version {version} (versions {lo}-{hi})")


def _read_string(nullable: bool, flexible: bool, stream: io.BytesIO) -> str | None:
    n = read_uvarint(stream) - 1 if flexible else _I16.unpack(read_exact(stream, 2))[0]
    if n < 0:
        if n != -1:
            raise GroupRecordError(f"negative string length {n}")
        if not nullable:
            raise GroupRecordError("null in a non-nullable string")
        return None
    try:
        return read_exact(stream, n).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GroupRecordError(f"invalid UTF-8 in string: {exc}") from None


def _write_string(flexible: bool, stream: _Out, value: str | None) -> None:
    if value is None:
        stream.write(b"\x00" if flexible else b"\xff\xff")
        return
    raw = value.encode("utf-8")
    if flexible:
        stream.write(uvarint_bytes(len(raw) + 1))
    elif len(raw) > 0x7FFF:
        raise GroupRecordError(f"string of {len(raw)} bytes exceeds int16 length")
    else:
        stream.write(_I16.pack(len(raw)))
    stream.write(raw)


_Reader = Callable[[io.BytesIO], Any]
_Writer = Callable[[_Out, Any], None]


def _codec(f: _Field, version: int, flexible: bool) -> tuple[_Reader, _Writer]:
    """The reader and the writer of field `f` in `version`."""
    if f.type in _INTS:
        fixed = _INTS[f.type]
        return partial(_read_int, fixed), partial(_write_int, fixed)
    if f.type == "string":
        return partial(_read_string, f.nullable, flexible), partial(_write_string, flexible)
    if f.type == "bytes":
        return (rt_cbytes, rt_w_cbytes) if flexible else (rt_bytes, rt_w_bytes)
    assert f.element is not None  # an array of structs
    return partial(_read_array, f.element, version, flexible), partial(
        _write_array, f.element, version, flexible
    )


def _plan(
    schema: _Schema, version: int, flexible: bool
) -> tuple[tuple[str, _Reader, _Writer], ...]:
    """(name, reader, writer) of the fields present in `version`, built once per version."""
    plan = schema.plans.get((version, flexible))
    if plan is None:
        _check_version(schema, version)
        plan = tuple(
            (f.name, *_codec(f, version, flexible))
            for f in schema.fields
            if f.first <= version <= f.last
        )
        schema.plans[version, flexible] = plan
    return plan


def _read_int(fixed: struct.Struct, stream: io.BytesIO) -> int:
    value: int = fixed.unpack(read_exact(stream, fixed.size))[0]
    return value


def _write_int(fixed: struct.Struct, stream: _Out, value: int) -> None:
    stream.write(fixed.pack(value))


def _read_array(element: _Schema, version: int, flexible: bool, stream: io.BytesIO) -> Any:
    count = rt_ccount(stream) if flexible else rt_count(stream)  # every element >= 1 byte
    return tuple(_read_struct(stream, element, version, flexible) for _ in range(count))


def _write_array(element: _Schema, version: int, flexible: bool, stream: _Out, value: Any) -> None:
    (rt_w_ccount if flexible else rt_w_count)(stream, value)
    for item in value:
        _write_struct(stream, element, item, version, flexible)


def _read_struct(stream: io.BytesIO, schema: _Schema, version: int, flexible: bool) -> Any:
    values = {name: read(stream) for name, read, _ in _plan(schema, version, flexible)}
    if flexible:
        for _ in range(rt_tag_count(stream)):
            rt_read_tag(stream)  # unknown tagged fields are skipped
    if schema.keeps_version:
        values["version"] = version
    return schema.cls(**values)


def _write_struct(stream: _Out, schema: _Schema, value: Any, version: int, flexible: bool) -> None:
    for name, _, write in _plan(schema, version, flexible):
        write(stream, getattr(value, name))
    if flexible:
        rt_w_tags(stream, [])


def _encode(schema: _Schema, value: Any, version: int) -> bytes:
    out = _Out([b""])
    _write_struct(out, schema, value, version, version >= schema.flexible_from)
    out[0] = _I16.pack(version)  # after `_plan` refused an unknown version
    return b"".join(out)


def _decode(schemas: dict[int, _Schema] | _Schema, data: bytes) -> Any:
    """The record in `data` (its int16 version first); `UnknownKey` for a key version >= 3."""
    stream = io.BytesIO(data)
    try:
        version = _I16.unpack(read_exact(stream, 2))[0]
        if isinstance(schemas, _Schema):
            schema = schemas
        elif version in schemas:
            schema = schemas[version]
        elif version < 0:
            raise GroupRecordError(f"negative record key version {version}")
        else:
            return UnknownKey(version)
        return _read_struct(stream, schema, version, version >= schema.flexible_from)
    except MalformedRequest as exc:  # from the primitives readers: short input, bad counts
        raise GroupRecordError(str(exc)) from None


# -- public codecs -------------------------------------------------------------------------


def encode_offset_commit_key(
    group: str, topic: str, partition: int, version: int = OFFSET_COMMIT_KEY_VERSION
) -> bytes:
    return _encode(_OFFSET_COMMIT_KEY, OffsetCommitKey(group, topic, partition), version)


def encode_group_metadata_key(group: str) -> bytes:
    return _encode(_GROUP_METADATA_KEY, GroupMetadataKey(group), GROUP_METADATA_KEY_VERSION)


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | UnknownKey:
    """Decode a `__consumer_offsets` record key (raises `GroupRecordError` on bad bytes)."""
    key: OffsetCommitKey | GroupMetadataKey | UnknownKey = _decode(_KEYS, data)
    return key


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """Encode; without `version`, pick Kafka's: 1 when an expire timestamp is set, else 3."""
    if version is None:
        version = 1 if value.expire_timestamp != -1 else _OFFSET_COMMIT_VALUE_DEFAULT_VERSION
    return _encode(_OFFSET_COMMIT_VALUE, value, version)


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    value: OffsetCommitValue = _decode(_OFFSET_COMMIT_VALUE, data)
    return value


def encode_group_metadata_value(
    value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION
) -> bytes:
    return _encode(_GROUP_METADATA_VALUE, value, version)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    value: GroupMetadataValue = _decode(_GROUP_METADATA_VALUE, data)
    return value
