"""Key/value codecs of the internal `__transaction_state` records (the transaction coordinator).

Kafka stores each transactional id's `TransactionMetadata` as one record of the compacted
topic `__transaction_state` (key = the transactional id, value = the latest state; a null
value, a tombstone, removes an expired id). Kafka generates these codecs from
`TransactionLogKey.json` and `TransactionLogValue.json`; the layouts below are those schemas
(Kafka 3.9 / 4.0), written out by hand. Every key and value starts with an int16 version.
All integers are big-endian.

TransactionLogKey (version 0 only, never flexible; the version doubles as the record type):
    int16   version = 0
    string  transactional_id           int16 length, UTF-8

TransactionLogValue version 0 (non-flexible) and 1 (flexible, tagged fields):
    int16   version
    int64   producer_id
    int16   producer_epoch
    int32   transaction_timeout_ms
    int8    transaction_status         TransactionState id (Empty 0, Ongoing 1, PrepareCommit 2,
                                       PrepareAbort 3, CompleteCommit 4, CompleteAbort 5,
                                       Dead 6, PrepareEpochFence 7)
    array   transaction_partitions     nullable; v0: int32 count (-1 = null),
                                       v1: uvarint count+1 (0 = null); each element:
              string  topic            v0: int16 length / v1: uvarint length+1
              array   partition_ids    int32 each; v0: int32 count / v1: uvarint count+1
              (v1: tagged fields of the element, written empty)
    int64   transaction_last_update_timestamp_ms
    int64   transaction_start_timestamp_ms
    (v1 only) tagged fields: uvarint count, then per field uvarint tag, uvarint size, data:
              tag 0  previous_producer_id       int64, default -1
              tag 1  next_producer_id           int64, default -1
              tag 2  client_transaction_version int16, default 0
              written only when they differ from their default (in tag order), unknown tags
              skipped on read.

Kafka writes value version 0 unless the cluster's transaction.version feature is 2
(KIP-890 part 2), then version 1; `encode_value` takes the version. Kafka writes
`transaction_partitions` null when the state is Empty, and readers ignore the partitions of
an Empty value; so do we.

Decoding checks every length and count against the bytes left before allocating; any
malformed input raises `TxnRecordError`. Trailing bytes after a known layout are ignored, as
Kafka's readers do.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from protocol.exceptions import ProtocolError
from protocol.varint import read_uvarint, write_uvarint

__all__ = [
    "TXN_LOG_KEY_VERSION",
    "TxnLogValue",
    "TxnRecordError",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
]

TXN_LOG_KEY_VERSION = 0


class TxnRecordError(ProtocolError):
    """Bytes that are not a valid `__transaction_state` key or value."""


@dataclass(frozen=True)
class TxnLogValue:
    """One TransactionLogValue. `partitions`: topic -> partition ids, in written order."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0
    version: int = field(default=0, compare=False)


# -- writing -------------------------------------------------------------------------------


def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise TxnRecordError("transactional id longer than 32767 bytes")
    return struct.pack(">hh", TXN_LOG_KEY_VERSION, len(raw)) + raw


def _w_string(out: bytearray, s: str, flexible: bool) -> None:
    raw = s.encode("utf-8")
    if flexible:
        write_uvarint(out, len(raw) + 1)
    else:
        if len(raw) > 0x7FFF:
            raise TxnRecordError("topic name longer than 32767 bytes")
        out += struct.pack(">h", len(raw))
    out += raw


def _w_count(out: bytearray, n: int | None, flexible: bool) -> None:
    if flexible:
        write_uvarint(out, 0 if n is None else n + 1)
    else:
        out += struct.pack(">i", -1 if n is None else n)


def encode_value(value: TxnLogValue, version: int = 0) -> bytes:
    """The value bytes of `value` at `version` (0 or 1)."""
    if version not in (0, 1):
        raise TxnRecordError(f"unknown TransactionLogValue version {version}")
    flexible = version >= 1
    out = bytearray(
        struct.pack(
            ">hqhib",
            version,
            value.producer_id,
            value.producer_epoch,
            value.timeout_ms,
            value.status,
        )
    )
    parts = value.partitions
    _w_count(out, None if parts is None else len(parts), flexible)
    for topic, ids in parts or ():
        _w_string(out, topic, flexible)
        _w_count(out, len(ids), flexible)
        out += struct.pack(f">{len(ids)}i", *ids)
        if flexible:
            out.append(0)  # the element's tagged fields
    out += struct.pack(">qq", value.last_update_ms, value.start_ms)
    if flexible:
        tags: list[tuple[int, bytes]] = []
        if value.previous_producer_id != -1:
            tags.append((0, struct.pack(">q", value.previous_producer_id)))
        if value.next_producer_id != -1:
            tags.append((1, struct.pack(">q", value.next_producer_id)))
        if value.client_transaction_version != 0:
            tags.append((2, struct.pack(">h", value.client_transaction_version)))
        write_uvarint(out, len(tags))
        for tag, data in tags:
            write_uvarint(out, tag)
            write_uvarint(out, len(data))
            out += data
    return bytes(out)


# -- reading -------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes | memoryview) -> None:
        self.buf = memoryview(buf)
        self.pos = 0
        self.end = len(buf)

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > self.end:
            raise TxnRecordError(f"needed {n} bytes, {self.end - self.pos} left")
        view = self.buf[self.pos : self.pos + n]
        self.pos += n
        return view

    def unpack(self, fmt: str) -> tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def uvarint(self) -> int:
        value, self.pos = read_uvarint(self.buf, self.pos, self.end, TxnRecordError)
        return value

    def count(self, flexible: bool, min_element: int) -> int | None:
        """An array count (None = null), checked against the bytes left."""
        n = self.uvarint() - 1 if flexible else self.unpack(">i")[0]
        if n < 0:
            if n == -1:
                return None
            raise TxnRecordError(f"negative array count {n}")
        if n * min_element > self.end - self.pos:
            raise TxnRecordError(f"array of {n} elements longer than the bytes left")
        return n

    def string(self, flexible: bool) -> str:
        n = self.uvarint() - 1 if flexible else self.unpack(">h")[0]
        if n < 0:
            raise TxnRecordError("null string")
        try:
            return str(self.take(n), "utf-8")
        except UnicodeDecodeError as e:
            raise TxnRecordError(f"invalid UTF-8: {e}") from None

    def skip_tags(self) -> dict[int, memoryview]:
        found: dict[int, memoryview] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            found[tag] = self.take(self.uvarint())
        return found


def decode_key(data: bytes | memoryview) -> str | int:
    """The transactional id of a key, or the key's version (an int) when it is not version 0
    (a record type this broker does not know: a loader skips it, as Kafka's does)."""
    r = _Reader(data)
    (version,) = r.unpack(">h")
    if version != TXN_LOG_KEY_VERSION:
        return version
    return r.string(False)


def decode_value(data: bytes | memoryview) -> TxnLogValue:
    r = _Reader(data)
    (version,) = r.unpack(">h")
    if version not in (0, 1):
        raise TxnRecordError(f"unknown TransactionLogValue version {version}")
    flexible = version >= 1
    pid, epoch, timeout, status = r.unpack(">qhib")
    n = r.count(flexible, 3 if flexible else 6)
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    if n is not None:
        items = []
        for _ in range(n):
            topic = r.string(flexible)
            k = r.count(flexible, 4) or 0
            ids = r.unpack(f">{k}i")
            if flexible:
                r.skip_tags()
            items.append((topic, tuple(ids)))
        partitions = tuple(items)
    last_update, start = r.unpack(">qq")
    prev_pid = next_pid = -1
    client_tv = 0
    if flexible:
        tags = r.skip_tags()
        try:
            if 0 in tags:
                (prev_pid,) = struct.unpack(">q", tags[0])
            if 1 in tags:
                (next_pid,) = struct.unpack(">q", tags[1])
            if 2 in tags:
                (client_tv,) = struct.unpack(">h", tags[2])
        except struct.error as e:
            raise TxnRecordError(f"bad tagged field: {e}") from None
    return TxnLogValue(
        producer_id=pid,
        producer_epoch=epoch,
        timeout_ms=timeout,
        status=status,
        partitions=partitions,
        last_update_ms=last_update,
        start_ms=start,
        previous_producer_id=prev_pid,
        next_producer_id=next_pid,
        client_transaction_version=client_tv,
        version=version,
    )
