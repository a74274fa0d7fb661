"""The layout Kafka 4.4's group coordinator gives its typed records of `__consumer_offsets`
(KIP-848 consumer groups: `protocol.consumer_group_records`; KIP-932 share groups:
`protocol.share_group_records`), written and read once here.

A key is an int16 record type (the JSON's apiKey) then one or two strings, non-flexible
(int16 length). A value is an int16 version (0) then its fields, flexible: compact strings,
bytes and arrays (unsigned varint length + 1, 0 = null), a tagged-field section after every
struct (written empty unless a module writes a tag; unknown tags skipped when read). Topic
assignments are [topic_id uuid, partitions [int32], tags], topics sorted by their id's text,
partitions ascending.

Writing: `Writer` (one value or key, joined by `done`), `value_writer()` (the version
written). Reading: the `read_*` functions over a stream, `decode_value(data, read, kind)`
(the version checked, malformed input raised as `GroupRecordError`), `decode_key`.
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TypeVar

from protocol.exceptions import MalformedRequest
from protocol.group_records import GroupRecordError
from protocol.primitives import (
    read_exact,
    rt_ccount,
    rt_read_tag,
    rt_string,
    rt_tag_count,
    rt_uuid,
    uvarint_bytes,
)

__all__ = [
    "I8",
    "I16",
    "I32",
    "I64",
    "GroupEpochValue",
    "Partitions",
    "Writer",
    "decode_assignment",
    "decode_key",
    "decode_value",
    "encode_assignment",
    "encode_key",
    "read_int",
    "read_ints",
    "read_partitions",
    "read_tags",
    "value_writer",
]

I8, I16, I32, I64 = (struct.Struct(f) for f in (">b", ">h", ">i", ">q"))

#: topic id -> partitions (an assignment)
Partitions = Mapping[uuid.UUID, frozenset[int]]
T = TypeVar("T")
K = TypeVar("K")


@dataclass(frozen=True)
class GroupEpochValue:
    """A group's epoch and its subscription metadata hash (consumer groups write the hash as
    tag 0, share groups as a field)."""

    epoch: int
    metadata_hash: int = 0


# -- writing -------------------------------------------------------------------------------


class Writer:
    """The bytes of one key or value, in pieces joined by `done`."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def raw(self, fmt: struct.Struct, value: int) -> None:
        self.parts.append(fmt.pack(value))

    def string(self, value: str) -> None:
        """A non-flexible string (keys)."""
        data = value.encode()
        self.parts.append(I16.pack(len(data)) + data)

    def cstring(self, value: str | None) -> None:
        if value is None:
            self.parts.append(b"\x00")
            return
        data = value.encode()
        self.parts.append(uvarint_bytes(len(data) + 1) + data)

    def cbytes(self, value: bytes) -> None:
        self.parts.append(uvarint_bytes(len(value) + 1) + value)

    def count(self, n: int) -> None:
        """A compact array's count."""
        self.parts.append(uvarint_bytes(n + 1))

    def no_tags(self) -> None:
        self.parts.append(b"\x00")

    def one_tag(self, tag: int, payload: bytes) -> None:
        """A tagged-field section holding `tag` alone."""
        self.parts.append(b"\x01" + uvarint_bytes(tag) + uvarint_bytes(len(payload)) + payload)

    def uuid(self, value: uuid.UUID) -> None:
        self.parts.append(value.bytes)

    def int_array(self, values: Collection[int]) -> None:
        """Compact int32 array, ascending."""
        self.count(len(values))
        for p in sorted(values):
            self.raw(I32, p)

    def partitions(self, value: Partitions) -> None:
        self.count(len(value))
        for topic_id, parts in sorted(value.items(), key=lambda kv: str(kv[0])):
            self.uuid(topic_id)
            self.int_array(parts)
            self.no_tags()

    def done(self) -> bytes:
        return b"".join(self.parts)


def value_writer() -> Writer:
    """A writer with the value's version (0) written."""
    out = Writer()
    out.raw(I16, 0)
    return out


def encode_assignment(assignment: Partitions) -> bytes:
    """A value that is one assignment (both group types' target assignment of a member)."""
    out = value_writer()
    out.partitions(assignment)
    out.no_tags()
    return out.done()


def encode_key(record_type: int, *strings: str) -> bytes:
    out = Writer()
    out.raw(I16, record_type)
    for text in strings:
        out.string(text)
    return out.done()


# -- reading -------------------------------------------------------------------------------


def read_int(fmt: struct.Struct, stream: io.BytesIO) -> int:
    value: int = fmt.unpack(read_exact(stream, fmt.size))[0]
    return value


def read_tags(stream: io.BytesIO) -> dict[int, bytes]:
    """A tagged-field section: tag -> its bytes."""
    return dict(rt_read_tag(stream) for _ in range(rt_tag_count(stream)))


def read_ints(stream: io.BytesIO) -> frozenset[int]:
    return frozenset(read_int(I32, stream) for _ in range(rt_ccount(stream, 4)))


def read_partitions(stream: io.BytesIO) -> dict[uuid.UUID, frozenset[int]]:
    out = {}
    for _ in range(rt_ccount(stream, 17)):
        topic_id = rt_uuid(stream)
        out[topic_id] = read_ints(stream)
        read_tags(stream)
    return out


def decode_value(data: bytes, read: Callable[[io.BytesIO], T], kind: str) -> T:
    """`read` over a version-0 value (its trailing tagged fields read by `read`); `kind`
    names the records in the error of another version."""
    try:
        stream = io.BytesIO(data)
        version = read_int(I16, stream)
        if version != 0:
            raise GroupRecordError(f"unsupported {kind} record value version {version}")
        return read(stream)
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None


def decode_assignment(data: bytes, kind: str) -> dict[uuid.UUID, frozenset[int]]:
    """The value `encode_assignment` writes."""

    def read(s: io.BytesIO) -> dict[uuid.UUID, frozenset[int]]:
        out = read_partitions(s)
        read_tags(s)
        return out

    return decode_value(data, read, kind)


def decode_key(
    data: bytes,
    record_types: Collection[int],
    two_strings: Collection[int],
    make: Callable[[int, str, str | None], K],
) -> K | None:
    """`make(record_type, group, second string)` of a key whose type is one of
    `record_types` (the types in `two_strings` have a second string), None for another."""
    stream = io.BytesIO(data)
    try:
        record_type = read_int(I16, stream)
        if record_type not in record_types:
            return None
        group = rt_string(stream)
        second = rt_string(stream) if record_type in two_strings else None
        return make(record_type, group, second)
    except MalformedRequest as exc:
        raise GroupRecordError(str(exc)) from None
