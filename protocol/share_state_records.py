"""Key/value codecs of the `__share_group_state` records (the KIP-932 share coordinator).

Written by hand from Kafka 4.4's share-coordinator schemas (kafka-share-coordinator-4.4.0.jar:
common/message/ShareSnapshotKey.json, ShareSnapshotValue.json, ShareUpdateKey.json,
ShareUpdateValue.json). A key is an int16 record type (the JSON's apiKey) then the key fields,
non-flexible; a value is an int16 version (0) then the fields, flexible (compact arrays, a
tagged-field section after every struct). All integers are big-endian.

type  key (both types)                       value (version 0)
0     group_id string (int16 length),        ShareSnapshotValue: snapshot_epoch int32,
      topic_id uuid, partition int32         state_epoch int32, leader_epoch int32,
                                             start_offset int64, create_timestamp int64,
                                             write_timestamp int64, state_batches [batch];
                                             tag 0: delivery_complete_count int32 (default -1)
1     (same)                                 ShareUpdateValue: snapshot_epoch int32,
                                             leader_epoch int32, start_offset int64 (-1: not
                                             updated), state_batches [batch];
                                             tag 0: delivery_complete_count int32 (default -1)
batch: first_offset int64, last_offset int64, delivery_state int8 (0 available, 2
acknowledged, 4 archived), delivery_count int16, then an (empty) tagged-field section.

A tombstone (null value) of a ShareSnapshot key deletes the share partition's state (Kafka's
DeleteShareGroupState). Tag 0 is written only when it is not -1, as Kafka's generated code
does; unknown tags are skipped. Malformed bytes raise `ShareRecordError`.
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from protocol.exceptions import ProtocolError
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
    "SHARE_SNAPSHOT",
    "SHARE_UPDATE",
    "ShareRecordError",
    "ShareSnapshotValue",
    "ShareStateKey",
    "ShareUpdateValue",
    "StateBatchRecord",
    "decode_key",
    "decode_snapshot",
    "decode_update",
    "encode_key",
    "encode_snapshot",
    "encode_update",
]

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1

_I8, _I16, _I32, _I64 = (struct.Struct(f) for f in (">b", ">h", ">i", ">q"))
_BATCH = struct.Struct(">qqbh")
_NO_TAGS = b"\x00"


class ShareRecordError(ProtocolError):
    """A `__share_group_state` record that does not decode."""


@dataclass(frozen=True)
class ShareStateKey:
    record_type: int
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True)
class StateBatchRecord:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatchRecord, ...]
    delivery_complete_count: int = -1


@dataclass(frozen=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatchRecord, ...]
    delivery_complete_count: int = -1


# -- writing -------------------------------------------------------------------------------


def encode_key(key: ShareStateKey) -> bytes:
    group = key.group_id.encode()
    return b"".join(
        (
            _I16.pack(key.record_type),
            _I16.pack(len(group)),
            group,
            key.topic_id.bytes,
            _I32.pack(key.partition),
        )
    )


def _batches(batches: tuple[StateBatchRecord, ...]) -> bytes:
    parts = [uvarint_bytes(len(batches) + 1)]
    for b in batches:
        parts.append(_BATCH.pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count))
        parts.append(_NO_TAGS)
    return b"".join(parts)


def _tags(delivery_complete_count: int) -> bytes:
    if delivery_complete_count == -1:
        return _NO_TAGS
    return b"\x01\x00\x04" + _I32.pack(delivery_complete_count)


def encode_snapshot(value: ShareSnapshotValue) -> bytes:
    return b"".join(
        (
            _I16.pack(0),
            _I32.pack(value.snapshot_epoch),
            _I32.pack(value.state_epoch),
            _I32.pack(value.leader_epoch),
            _I64.pack(value.start_offset),
            _I64.pack(value.create_timestamp),
            _I64.pack(value.write_timestamp),
            _batches(value.state_batches),
            _tags(value.delivery_complete_count),
        )
    )


def encode_update(value: ShareUpdateValue) -> bytes:
    return b"".join(
        (
            _I16.pack(0),
            _I32.pack(value.snapshot_epoch),
            _I32.pack(value.leader_epoch),
            _I64.pack(value.start_offset),
            _batches(value.state_batches),
            _tags(value.delivery_complete_count),
        )
    )


# -- reading -------------------------------------------------------------------------------


def _int(fmt: struct.Struct, stream: io.BytesIO) -> int:
    value: int = fmt.unpack(read_exact(stream, fmt.size))[0]
    return value


def _read_batches(stream: io.BytesIO) -> tuple[StateBatchRecord, ...]:
    out = []
    for _ in range(rt_ccount(stream, _BATCH.size + 1)):
        first, last, state, count = _BATCH.unpack(read_exact(stream, _BATCH.size))
        for _tag in range(rt_tag_count(stream)):
            rt_read_tag(stream)
        out.append(StateBatchRecord(first, last, state, count))
    return tuple(out)


def _read_dcc(stream: io.BytesIO) -> int:
    dcc = -1
    for _ in range(rt_tag_count(stream)):
        tag, data = rt_read_tag(stream)
        if tag == 0:
            if len(data) != 4:
                raise ShareRecordError("bad delivery_complete_count tag")
            dcc = _I32.unpack(data)[0]
    return dcc


_T = TypeVar("_T")


def _safe(fn: Callable[[io.BytesIO], _T], data: bytes) -> _T:
    """`fn` over `data`'s value stream; any decoding failure is a `ShareRecordError`."""
    try:
        return fn(_value_stream(data))
    except ShareRecordError:
        raise
    except (ProtocolError, struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ShareRecordError(f"malformed share state record: {exc}") from exc


def _value_stream(data: bytes) -> io.BytesIO:
    stream = io.BytesIO(data)
    version = _int(_I16, stream)
    if version != 0:
        raise ShareRecordError(f"unsupported share state value version {version}")
    return stream


def decode_key(data: bytes) -> ShareStateKey | None:
    """The key of a share state record; None for an unknown record type (skipped)."""
    try:
        stream = io.BytesIO(data)
        record_type = _int(_I16, stream)
        if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
            return None
        group = rt_string(stream)
        topic_id = rt_uuid(stream)
        partition = _int(_I32, stream)
    except ShareRecordError:
        raise
    except (ProtocolError, struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ShareRecordError(f"malformed share state key: {exc}") from exc
    return ShareStateKey(record_type, group, topic_id, partition)


def decode_snapshot(data: bytes) -> ShareSnapshotValue:
    return _safe(_snapshot, data)


def decode_update(data: bytes) -> ShareUpdateValue:
    return _safe(_update, data)


def _snapshot(stream: io.BytesIO) -> ShareSnapshotValue:
    snapshot_epoch = _int(_I32, stream)
    state_epoch = _int(_I32, stream)
    leader_epoch = _int(_I32, stream)
    start_offset = _int(_I64, stream)
    create_ts = _int(_I64, stream)
    write_ts = _int(_I64, stream)
    batches = _read_batches(stream)
    dcc = _read_dcc(stream)
    return ShareSnapshotValue(
        snapshot_epoch, state_epoch, leader_epoch, start_offset, create_ts, write_ts, batches, dcc
    )


def _update(stream: io.BytesIO) -> ShareUpdateValue:
    snapshot_epoch = _int(_I32, stream)
    leader_epoch = _int(_I32, stream)
    start_offset = _int(_I64, stream)
    batches = _read_batches(stream)
    dcc = _read_dcc(stream)
    return ShareUpdateValue(snapshot_epoch, leader_epoch, start_offset, batches, dcc)
