"""Kafka record batches, magic v2 (the only format Kafka 4.x accepts from clients).

Batch header (61 bytes, big-endian, parsed with one precompiled `struct.Struct`)::

    offset  size  field
    0       8     baseOffset            int64
    8       4     batchLength           int32  bytes after this field (= size - 12)
    12      4     partitionLeaderEpoch  int32
    16      1     magic                 int8   must be 2
    17      4     crc                   uint32 CRC-32C of bytes [21, size)
    21      2     attributes            int16
    23      4     lastOffsetDelta       int32
    27      8     baseTimestamp         int64
    35      8     maxTimestamp          int64
    43      8     producerId            int64
    51      2     producerEpoch         int16
    53      4     baseSequence          int32
    57      4     recordsCount          int32
    61      ...   records (compressed as a whole when attributes & 7 != 0)

Attributes: bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), bit 3 timestamp
type (0 CreateTime, 1 LogAppendTime), bit 4 transactional, bit 5 control, bit 6 delete
horizon (set by the log cleaner).

baseOffset and partitionLeaderEpoch lie before the CRC'd range, so a broker assigns them
without recomputing the CRC; LogAppendTime changes attributes and maxTimestamp, so
`stamp_batch` recomputes the CRC in that case only.

Record (varint/varlong = zigzag LEB128, at most 5/10 bytes, `protocol.varint`)::

    length          varint   bytes of the record after this field
    attributes      int8     unused
    timestampDelta  varlong  from baseTimestamp
    offsetDelta     varint   from baseOffset
    keyLength       varint   -1 = null key
    key             bytes
    valueLength     varint   -1 = null value
    value           bytes
    headerCount     varint
    headers         [keyLength varint (>= 0), key utf-8,
                     valueLength varint (-1 = null), value bytes]*

With LogAppendTime every record's timestamp is the batch's maxTimestamp.

Safety: every length read from the buffer is checked against the bytes left before it is
used; `iter_batches` walks the headers only, never allocating from a length; decompression
is capped (`max_decompressed_bytes`). All errors are `InvalidBatch` (`CorruptBatch` for a
CRC mismatch, `DecompressionError` for bad compressed data or over the cap).

Two readers of a batch's records: `decode_records` builds a `Record` per record (for reads:
timestamp lookups, the cleaner); `check_records` gives the same verdict without building
anything, walking uncompressed records in place and compressed ones through a bounded
decompression window (about 1 MiB, plus one record larger than that), and can require
non-null keys (`NullKeyError`): the Produce check of compacted topics.
`iter_record_summaries` reads each record's index, offset, timestamp and key/value sizes
(nothing copied): the per-record checks of a Produce append and Kafka's record_errors.

Not done here: CRC checks in `decode_records` (call `verify_crc` first), legacy magic 0/1
message sets (rejected as `InvalidBatch`), producer-state/sequence validation (storage).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass

from protocol.compression import (
    DecompressionError,
    InvalidBatch,
    compress,
    decompress,
    iter_decompressed,
)
from protocol.crc32c import crc32c
from protocol.varint import read_varint, write_varint

BATCH_HEADER_SIZE = 61
BATCH_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted in batchLength
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - BATCH_OVERHEAD  # 49
CRC_START = 21  # first byte covered by the CRC (attributes)

MAGIC = 2
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == BATCH_HEADER_SIZE
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

_OFF_BASE_OFFSET = 0
_OFF_LEADER_EPOCH = 12
_OFF_CRC = 17
_OFF_ATTRIBUTES = 21
_OFF_MAX_TIMESTAMP = 35

# A record is at least 7 bytes: length, attributes, timestampDelta, offsetDelta, keyLength,
# valueLength, headerCount, each one byte at the least.
_MIN_RECORD_SIZE = 7
_INT32_MAX = 2**31 - 1

Buffer = bytes | bytearray | memoryview


class CorruptBatch(InvalidBatch):
    """The batch's CRC-32C does not match its contents."""


class NullKeyError(InvalidBatch):
    """`check_records(require_keys=True)`: a well-formed batch holds a record with a null key."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The 61-byte header of a v2 record batch (field names are Kafka's, in snake_case)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes of the whole batch, header included."""
        return self.batch_length + BATCH_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return (self.attributes >> 3) & 1

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; wraps past 2**31-1 to 0 (Kafka's incrementSequence)."""
        if self.base_sequence < 0:
            return self.base_sequence  # -1: no sequence (non-idempotent producer)
        if self.base_sequence > _INT32_MAX - self.last_offset_delta:
            return self.base_sequence + self.last_offset_delta - _INT32_MAX - 1
        return self.base_sequence + self.last_offset_delta


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record: absolute offset and timestamp, key, value, headers."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class RecordSummary:
    """What a broker's per-record checks read of one record (`iter_record_summaries`)."""

    index: int  # position in the batch (Kafka's batch_index)
    offset: int  # the batch's base offset + offsetDelta
    timestamp: int  # baseTimestamp + timestampDelta; the batch's maxTimestamp under LogAppendTime
    key_size: int  # -1: null key
    value_size: int  # -1: null value


@dataclass(frozen=True)
class RecordSpec:
    """A record to build; `timestamp` None means the batch's base timestamp."""

    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


# -- header -------------------------------------------------------------------------------


def parse_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """Parse the batch header at `pos` (no copy); the batch body may be absent.

    Raises `InvalidBatch` if fewer than 61 bytes remain, magic != 2 or batchLength < 49.
    """
    if pos < 0 or len(buf) - pos < BATCH_HEADER_SIZE:
        raise InvalidBatch(f"batch header needs {BATCH_HEADER_SIZE} bytes at {pos}")
    h = BatchHeader(*_HEADER.unpack_from(buf, pos))
    if h.magic != MAGIC:
        raise InvalidBatch(f"unsupported record batch magic {h.magic}")
    if h.batch_length < MIN_BATCH_LENGTH:
        raise InvalidBatch(f"batch length {h.batch_length} below {MIN_BATCH_LENGTH}")
    return h


def iter_batches(
    buf: Buffer, pos: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each batch in `buf[pos:end]`.

    Raises `InvalidBatch` when a header is malformed or a batch runs past `end`. CRCs are not
    checked (see `verify_crc`).
    """
    if end is None:
        end = len(buf)
    if pos < 0 or end > len(buf) or pos > end:
        raise InvalidBatch(f"bad range [{pos}, {end}) of a {len(buf)}-byte buffer")
    while pos < end:
        if end - pos < BATCH_HEADER_SIZE:
            raise InvalidBatch(f"truncated batch header at {pos}: {end - pos} bytes left")
        h = parse_header(buf, pos)
        if h.size > end - pos:
            raise InvalidBatch(f"truncated batch at {pos}: {h.size} bytes, {end - pos} left")
        yield pos, h
        pos += h.size


def _crc_view(buf: Buffer, pos: int, header: BatchHeader) -> memoryview:
    if pos < 0 or len(buf) - pos < header.size:
        raise InvalidBatch(f"truncated batch at {pos}: {header.size} bytes needed")
    return memoryview(buf)[pos + CRC_START : pos + header.size]


def compute_crc(buf: Buffer, pos: int, header: BatchHeader) -> int:
    """CRC-32C of the batch at `pos` over bytes [pos+21, pos+size)."""
    return crc32c(_crc_view(buf, pos, header))


def verify_crc(buf: Buffer, pos: int, header: BatchHeader) -> bool:
    """True when the stored CRC matches the batch's bytes."""
    return compute_crc(buf, pos, header) == header.crc


def stamp_batch(
    buf: bytearray | memoryview,
    pos: int,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    log_append_time: int | None = None,
    create_time: bool = False,
    header: BatchHeader | None = None,
) -> BatchHeader:
    """Patch the batch at `pos` in place with broker-assigned fields; -> its new header.

    baseOffset and partitionLeaderEpoch are outside the CRC. `log_append_time` (ms) sets the
    LogAppendTime bit and maxTimestamp and recomputes the CRC. `create_time` clears the
    LogAppendTime bit (maxTimestamp kept; CRC recomputed): a CreateTime topic stores a
    client's LogAppendTime batch as CreateTime, as Kafka's LogValidator does. `header`: the
    batch's header as already parsed by the caller (not parsed again).
    """
    h = parse_header(buf, pos) if header is None else header
    if len(buf) - pos < h.size:
        raise InvalidBatch(f"truncated batch at {pos}: {h.size} bytes needed")
    _INT64.pack_into(buf, pos + _OFF_BASE_OFFSET, base_offset)
    _INT32.pack_into(buf, pos + _OFF_LEADER_EPOCH, partition_leader_epoch)
    attributes, max_timestamp, crc = h.attributes, h.max_timestamp, h.crc
    if log_append_time is not None or (create_time and attributes & TIMESTAMP_TYPE_BIT):
        if log_append_time is not None:
            attributes |= TIMESTAMP_TYPE_BIT
            max_timestamp = log_append_time
        else:
            attributes &= ~TIMESTAMP_TYPE_BIT
        _INT16.pack_into(buf, pos + _OFF_ATTRIBUTES, attributes)
        _INT64.pack_into(buf, pos + _OFF_MAX_TIMESTAMP, max_timestamp)
        crc = crc32c(memoryview(buf)[pos + CRC_START : pos + h.size])
        _UINT32.pack_into(buf, pos + _OFF_CRC, crc)
    return BatchHeader(
        base_offset,
        h.batch_length,
        partition_leader_epoch,
        h.magic,
        crc,
        attributes,
        h.last_offset_delta,
        h.base_timestamp,
        max_timestamp,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        h.records_count,
    )


# -- records --------------------------------------------------------------------------------


def _whole_batch(buf: Buffer, pos: int) -> BatchHeader:
    """The header of the batch at `pos`, checking that the whole batch is in `buf`."""
    h = parse_header(buf, pos)
    if len(buf) - pos < h.size:
        raise InvalidBatch(f"truncated batch at {pos}: {h.size} bytes needed")
    return h


def _payload(buf: Buffer, pos: int, h: BatchHeader) -> memoryview:
    """The records section of the batch at `pos` as stored (compressed or not), no copy."""
    return memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + h.size]


def _varint(data: Buffer, p: int, end: int, bits: int = 32) -> tuple[int, int]:
    """`read_varint` (zigzag, `InvalidBatch`) with its one- and two-byte cases first: most
    record fields (deltas, lengths below 8 KiB) take one or two bytes."""
    if p < end:
        b = data[p]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), p + 1
        if p + 1 < end:
            c = data[p + 1]
            if c < 0x80:
                raw = (b & 0x7F) | (c << 7)
                return (raw >> 1) ^ -(raw & 1), p + 2
    return read_varint(data, p, end, bits, InvalidBatch)


def _nullable_bytes(data: Buffer, p: int, end: int, what: str) -> tuple[int, int]:
    """The nullable bytes field (varint length, -1 = null) at `p` -> (start of its bytes,
    -1 when null; position after it). Checks the length against `end`."""
    b = data[p] if p < end else 0x80
    if b < 0x80:  # one byte: the common case, inlined
        size = (b >> 1) ^ -(b & 1)
        p += 1
    else:
        size, p = _varint(data, p, end)
    if size == -1:
        return -1, p
    if 0 <= size <= end - p:
        return p, p + size
    raise InvalidBatch(f"bad {what} length {size}")


def _record_header(data: Buffer, p: int, rend: int) -> tuple[str, int, int]:
    """The record header (Kafka's RecordHeader) at `p` -> (key, value start or -1 when the
    value is null, position after it). The key must be utf-8."""
    klen, p = _varint(data, p, rend)
    if not 0 <= klen <= rend - p:
        raise InvalidBatch(f"bad header key length {klen}")
    try:
        key = str(data[p : p + klen], "utf-8")
    except UnicodeDecodeError:
        raise InvalidBatch("header key is not utf-8") from None
    vstart, p = _nullable_bytes(data, p + klen, rend, "header value")
    return key, vstart, p


def _header_count(data: Buffer, p: int, rend: int) -> tuple[int, int]:
    """The headers count at `p` -> (count, position after it); each header takes >= 2 bytes."""
    hcount, p = _varint(data, p, rend)
    if hcount < 0 or hcount * 2 > rend - p:
        raise InvalidBatch(f"bad header count {hcount}")
    return hcount, p


def _record_body(data: Buffer, p: int, n: int) -> tuple[int, int]:
    """The length varint of the record at `p` -> (start of its body, end of the record)."""
    length, p = _varint(data, p, n)
    if length < _MIN_RECORD_SIZE - 1 or length > n - p:
        raise InvalidBatch(f"bad record length {length}")
    return p, p + length


def _record_prefix(data: Buffer, p: int, rend: int, prev: int, last: int) -> tuple[int, int, int]:
    """attributes (unused), timestampDelta, offsetDelta of the record body at `p` ->
    (offsetDelta, timestampDelta, position after them). Offset deltas increase strictly, up
    to the batch's lastOffsetDelta (`last`); `prev` is the previous record's."""
    ts_delta, p = _varint(data, p + 1, rend, 64)
    off_delta, p = _varint(data, p, rend)
    if off_delta <= prev or off_delta > last:
        raise InvalidBatch(f"bad offset delta {off_delta} after {prev}")
    return off_delta, ts_delta, p


def _read_record(
    data: bytes, p: int, n: int, prev: int, last: int
) -> tuple[int, int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]:
    """The record at `p` (Kafka's DefaultRecord.readFrom) -> (position after it, offsetDelta,
    timestampDelta, key, value, headers)."""
    p, rend = _record_body(data, p, n)
    off_delta, ts_delta, p = _record_prefix(data, p, rend, prev, last)
    kstart, p = _nullable_bytes(data, p, rend, "key")
    key = None if kstart < 0 else data[kstart:p]
    vstart, p = _nullable_bytes(data, p, rend, "value")
    value = None if vstart < 0 else data[vstart:p]
    hcount, p = _header_count(data, p, rend)
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(hcount):
        hkey, hstart, p = _record_header(data, p, rend)
        headers.append((hkey, None if hstart < 0 else data[hstart:p]))
    if p != rend:
        raise InvalidBatch(f"record has {rend - p} bytes past its fields")
    return p, off_delta, ts_delta, key, value, tuple(headers)


def _skip_headers(data: Buffer, p: int, rend: int) -> int:
    """Check the headers count and headers at `p` as `_read_record` does -> position after."""
    hcount, p = _header_count(data, p, rend)
    for _ in range(hcount):
        _, _, p = _record_header(data, p, rend)
    return p


def _records_section(buf: Buffer, pos: int, h: BatchHeader, cap: int) -> bytes:
    """The records of the batch at `pos`, decompressed (at most `cap` bytes)."""
    codec = h.compression
    if codec == 0:
        return bytes(_payload(buf, pos, h))
    if codec <= 4:
        return decompress(codec, _payload(buf, pos, h), cap)
    raise InvalidBatch(f"unknown compression codec {codec}")


def decode_records(
    buf: Buffer, pos: int = 0, *, max_decompressed_bytes: int = 64 * 1024 * 1024
) -> list[Record]:
    """Decode every record of the batch at `pos`, decompressing if needed.

    Checks: the batch fits in `buf`, known codec, decompressed size within the cap, each
    record's fields within its declared length, exactly `recordsCount` records and no
    trailing bytes, offset deltas strictly increasing in [0, lastOffsetDelta]. The CRC is not
    checked. Raises `InvalidBatch` (or a subclass) on any error.
    """
    h = _whole_batch(buf, pos)
    data = _records_section(buf, pos, h, max_decompressed_bytes)
    count = h.records_count
    n = len(data)
    if count < 0 or count > n // _MIN_RECORD_SIZE:
        raise InvalidBatch(f"records count {count} impossible in {n} bytes")
    base_offset, base_timestamp, last = h.base_offset, h.base_timestamp, h.last_offset_delta
    log_append = h.timestamp_type == LOG_APPEND_TIME
    records: list[Record] = []
    append = records.append
    read_record = _read_record
    p = 0
    off_delta = -1
    for _ in range(count):
        p, off_delta, ts_delta, key, value, headers = read_record(data, p, n, off_delta, last)
        timestamp = h.max_timestamp if log_append else base_timestamp + ts_delta
        append(Record(base_offset + off_delta, timestamp, key, value, headers))
    if p != n:
        raise InvalidBatch(f"{n - p} bytes after the last record")
    return records


def iter_record_summaries(
    buf: Buffer, pos: int = 0, *, max_decompressed_bytes: int
) -> Iterator[RecordSummary]:
    """A `RecordSummary` per record of the batch at `pos`, decompressing if needed (at most
    `max_decompressed_bytes`), with the checks of `decode_records` (raising `InvalidBatch` as
    it does, possibly after some summaries were yielded). Keys, values and headers are
    skipped, not copied: for the per-record checks of a Produce append (Kafka's
    LogValidator.validateRecord), which look at a batch's records one by one."""
    h = _whole_batch(buf, pos)
    data = _records_section(buf, pos, h, max_decompressed_bytes)
    count = h.records_count
    n = len(data)
    if count < 0 or count > n // _MIN_RECORD_SIZE:
        raise InvalidBatch(f"records count {count} impossible in {n} bytes")
    log_append = h.timestamp_type == LOG_APPEND_TIME
    p = 0
    off_delta = -1
    for index in range(count):
        p, rend = _record_body(data, p, n)
        off_delta, ts_delta, p = _record_prefix(data, p, rend, off_delta, h.last_offset_delta)
        kstart, p = _nullable_bytes(data, p, rend, "key")
        key_size = -1 if kstart < 0 else p - kstart
        vstart, p = _nullable_bytes(data, p, rend, "value")
        value_size = -1 if vstart < 0 else p - vstart
        p = _skip_headers(data, p, rend)
        if p != rend:
            raise InvalidBatch(f"record has {rend - p} bytes past its fields")
        timestamp = h.max_timestamp if log_append else h.base_timestamp + ts_delta
        yield RecordSummary(index, h.base_offset + off_delta, timestamp, key_size, value_size)
    if p != n:
        raise InvalidBatch(f"{n - p} bytes after the last record")


def check_records(
    buf: Buffer,
    pos: int = 0,
    *,
    require_keys: bool,
    max_decompressed_bytes: int,
    window: int = 1 << 20,
) -> int:
    """Check the records of the batch at `pos` as `decode_records` does; return their count.

    Same checks, same outcome: raises `InvalidBatch` exactly when `decode_records` would, with
    the same class (`DecompressionError` for bad compressed data or data over the cap, else
    plain `InvalidBatch`). Then, when `require_keys`, raises `NullKeyError` if a record's key
    is null (so a malformed batch is always reported as malformed). The CRC is not checked.

    Memory: no per-record objects and no key or value copies (a header key is decoded once to
    check its utf-8). Uncompressed records are walked in place in `buf`. Compressed records
    are decompressed incrementally (`iter_decompressed`, pieces of `window // 2` bytes) into a
    window holding the unchecked tail (less than one record) plus one piece, so about
    `window` decompressed bytes are resident; a record larger than that grows the window to
    hold it whole (bounded by `max_decompressed_bytes`). On a record error in compressed data
    the rest of the stream is still decompressed (and dropped) so that a corrupt stream is
    reported as `DecompressionError`, as `decode_records` does.
    """
    h = _whole_batch(buf, pos)
    count = h.records_count
    codec = h.compression
    if codec > 4:
        raise InvalidBatch(f"unknown compression codec {codec}")
    if codec == 0:
        nulls = _check_in_place(buf, pos, h)
    else:
        payload = _payload(buf, pos, h)
        pieces = iter_decompressed(codec, payload, max_decompressed_bytes, max(1, window // 2))
        nulls = _check_compressed(pieces, max_decompressed_bytes, count, h.last_offset_delta)
    if require_keys and nulls:
        raise NullKeyError(f"{nulls} of {count} records have a null key")
    return count


def _check_in_place(buf: Buffer, pos: int, h: BatchHeader) -> int:
    """Check the uncompressed records of the batch at `pos` where they are; -> null keys."""
    if h.records_count < 0:
        raise InvalidBatch(f"records count {h.records_count} impossible")
    start = pos + BATCH_HEADER_SIZE
    end = pos + h.size
    p, _, _, nulls, _ = _check_run(
        buf, start, end, end, True, h.records_count, -1, h.last_offset_delta, 0
    )
    if p != end:
        raise InvalidBatch(f"{end - p} bytes after the last record")
    return nulls


def _check_compressed(
    pieces: Generator[bytes, None, None], cap: int, count: int, last_delta: int
) -> int:
    """`_check_stream`, reporting a corrupt stream before any record error: on a record
    error the rest of the stream is decompressed (and dropped), as `decode_records` would."""
    try:
        if count < 0:
            raise InvalidBatch(f"records count {count} impossible")
        return _check_stream(pieces, cap, count, last_delta)
    except DecompressionError:
        raise
    except InvalidBatch:
        for _ in pieces:
            pass
        raise
    finally:
        pieces.close()


def _check_stream(
    pieces: Generator[bytes, None, None], cap: int, count: int, last_delta: int
) -> int:
    """Check `count` records from decompressed `pieces` (then no more bytes); -> null keys.

    At most `cap` bytes come: a record declaring more than what is left of it is an error
    at once (it would be one at the end of the stream), so a lying length does not make
    the window swallow the whole stream.
    """
    data: bytes | bytearray = b""
    base = 0  # stream offset of data[0]
    p = n = 0
    final = False
    todo = count
    prev = -1
    nulls = 0
    while True:
        p, todo, prev, nulls, need = _check_run(
            data, p, n, cap - base, final, todo, prev, last_delta, nulls
        )
        if not todo:
            break
        # data[p:] is an incomplete record (or length varint): refill with at least `need`
        # bytes from p (all of them at once, so a large record is not copied repeatedly)
        window = bytearray(memoryview(data)[p:])
        del data
        while len(window) < need:
            piece = next(pieces, None)
            if piece is None:
                final = True
                break
            window += piece
        data = window
        base += p
        p = 0
        n = len(data)
    if p != n:
        raise InvalidBatch(f"{n - p} bytes after the last record")
    for piece in pieces:
        raise InvalidBatch(f"{len(piece)} or more bytes after the last record")
    return nulls


def _check_run(
    data: Buffer,
    p: int,
    n: int,
    room: int,
    final: bool,
    todo: int,
    prev: int,
    last_delta: int,
    nulls: int,
) -> tuple[int, int, int, int, int]:
    """Check whole records in data[p:n]; -> (p, todo, prev offset delta, null keys, need).

    Stops at the first record not wholly in the window unless `final` (no more bytes come:
    then that record is an error) or the record is longer than the `room` (bytes that can
    still come, counted from data[0]) allows; `need` is the bytes from p that record takes
    (at least its length varint's 5).
    """
    while todo:
        start = p
        b = data[p] if p < n else 0x80
        if b < 0x80:  # one-byte length: inlined, as the other one-byte fields below
            length = (b >> 1) ^ -(b & 1)
            p += 1
        elif not final and n - p < 5:
            return start, todo, prev, nulls, 5  # the length varint may be cut
        else:
            length, p = _varint(data, p, n)
        if length < _MIN_RECORD_SIZE - 1 or length > n - p:
            if not final and _MIN_RECORD_SIZE - 1 <= length <= room - p:
                return start, todo, prev, nulls, p - start + length
            raise InvalidBatch(f"bad record length {length}")
        rend = p + length
        p += 1  # attributes: unused
        if data[p] < 0x80:  # timestampDelta, skipped (p < rend: a record has >= 6 bytes)
            p += 1
        else:
            _, p = _varint(data, p, rend, 64)
        off_delta, p = _varint(data, p, rend)
        if off_delta <= prev or off_delta > last_delta:
            raise InvalidBatch(f"bad offset delta {off_delta} after {prev}")
        prev = off_delta
        kstart, p = _nullable_bytes(data, p, rend, "key")
        if kstart < 0:
            nulls += 1
        _, p = _nullable_bytes(data, p, rend, "value")
        if p < rend and data[p] == 0:  # no headers
            p += 1
        else:
            p = _skip_headers(data, p, rend)
        if p != rend:
            raise InvalidBatch(f"record has {rend - p} bytes past its fields")
        todo -= 1
    return p, todo, prev, nulls, 0


def _write_nullable_bytes(out: bytearray, field: bytes | None) -> None:
    if field is None:
        write_varint(out, -1)
    else:
        write_varint(out, len(field))
        out += field


def _encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
) -> None:
    body = bytearray(b"\x00")  # attributes
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_nullable_bytes(body, key)
    _write_nullable_bytes(body, value)
    write_varint(body, len(headers))
    for hkey, hval in headers:
        _write_nullable_bytes(body, hkey.encode("utf-8"))
        _write_nullable_bytes(body, hval)
    write_varint(out, len(body))
    out += body


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None]] | Sequence[RecordSpec],
    *,
    base_offset: int = 0,
    compression: int = 0,
    timestamp_type: int = 0,
    base_timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytes:
    """Build a v2 batch with a correct CRC; records get offset deltas 0..n-1.

    `records` are (key, value) pairs or `RecordSpec`s. The base timestamp is
    `base_timestamp`, else the first record's timestamp, else now (ms); a record without a
    timestamp gets the base timestamp. maxTimestamp is the largest record timestamp (the
    base timestamp for an empty batch). An empty batch gets lastOffsetDelta 0 and is
    not valid for Produce (the storage layer rejects it).
    """
    if not 0 <= compression <= 4:
        raise ValueError(f"unknown compression codec {compression}")
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"bad timestamp type {timestamp_type}")
    specs = [r if isinstance(r, RecordSpec) else RecordSpec(r[0], r[1]) for r in records]
    if base_timestamp is None:
        first = specs[0].timestamp if specs else None
        base_timestamp = first if first is not None else time.time_ns() // 1_000_000
    body = bytearray()
    max_timestamp = base_timestamp
    for i, spec in enumerate(specs):
        ts = base_timestamp if spec.timestamp is None else spec.timestamp
        max_timestamp = max(max_timestamp, ts) if i else ts
        _encode_record(body, i, ts - base_timestamp, spec.key, spec.value, spec.headers)
    payload = compress(compression, body) if compression else bytes(body)
    attributes = compression | (timestamp_type << 3)
    if is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if is_control:
        attributes |= CONTROL_BIT
    return _pack_batch(
        base_offset,
        partition_leader_epoch,
        attributes,
        max(len(specs) - 1, 0),
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(specs),
        payload,
    )


def rebuild_batch(
    h: BatchHeader,
    records: Sequence[Record],
    *,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
) -> bytes:
    """A batch holding `records` (offsets within `h`'s range) with `h`'s base offset,
    lastOffsetDelta, leader epoch and producer id / epoch / base sequence, the given
    attributes and timestamps, compressed with the codec in `attributes`; CRC computed.
    Record timestamp deltas are taken against `base_timestamp` (the log cleaner's
    re-encoding of a filtered batch; no records gives an empty batch)."""
    body = bytearray()
    for rec in records:
        _encode_record(
            body,
            rec.offset - h.base_offset,
            rec.timestamp - base_timestamp,
            rec.key,
            rec.value,
            rec.headers,
        )
    codec = attributes & COMPRESSION_MASK
    payload = compress(codec, body) if codec else body
    return _pack_batch(
        h.base_offset,
        h.partition_leader_epoch,
        attributes,
        h.last_offset_delta,
        base_timestamp,
        max_timestamp,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        len(records),
        payload,
    )


def _pack_batch(
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records_count: int,
    payload: bytes | bytearray,
) -> bytes:
    size = BATCH_HEADER_SIZE + len(payload)
    out = bytearray(size)
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        size - BATCH_OVERHEAD,
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    )
    out[BATCH_HEADER_SIZE:] = payload
    _UINT32.pack_into(out, _OFF_CRC, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


__all__ = [
    "BATCH_HEADER_SIZE",
    "BatchHeader",
    "CorruptBatch",
    "DecompressionError",
    "InvalidBatch",
    "NullKeyError",
    "Record",
    "RecordSpec",
    "RecordSummary",
    "build_batch",
    "check_records",
    "compute_crc",
    "decode_records",
    "iter_batches",
    "iter_record_summaries",
    "parse_header",
    "rebuild_batch",
    "stamp_batch",
    "verify_crc",
]
