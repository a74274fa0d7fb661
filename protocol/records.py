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
    header: BatchHeader | None = None,
) -> BatchHeader:
    """Patch the batch at `pos` in place with broker-assigned fields; -> its new header.

    baseOffset and partitionLeaderEpoch are outside the CRC. `log_append_time` (ms) sets the
    LogAppendTime bit and maxTimestamp and recomputes the CRC. `header`: the batch's header
    as already parsed by the caller (not parsed again).
    """
    h = parse_header(buf, pos) if header is None else header
    if len(buf) - pos < h.size:
        raise InvalidBatch(f"truncated batch at {pos}: {h.size} bytes needed")
    _INT64.pack_into(buf, pos + _OFF_BASE_OFFSET, base_offset)
    _INT32.pack_into(buf, pos + _OFF_LEADER_EPOCH, partition_leader_epoch)
    attributes, max_timestamp, crc = h.attributes, h.max_timestamp, h.crc
    if log_append_time is not None:
        attributes |= TIMESTAMP_TYPE_BIT
        max_timestamp = log_append_time
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


def decode_records(
    buf: Buffer, pos: int = 0, *, max_decompressed_bytes: int = 64 * 1024 * 1024
) -> list[Record]:
    """Decode every record of the batch at `pos`, decompressing if needed.

    Checks: the batch fits in `buf`, known codec, decompressed size within the cap, each
    record's fields within its declared length, exactly `recordsCount` records and no
    trailing bytes, offset deltas strictly increasing in [0, lastOffsetDelta]. The CRC is not
    checked. Raises `InvalidBatch` (or a subclass) on any error.
    """
    h = parse_header(buf, pos)
    if len(buf) - pos < h.size:
        raise InvalidBatch(f"truncated batch at {pos}: {h.size} bytes needed")
    payload = memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + h.size]
    codec = h.compression
    if codec == 0:
        data = bytes(payload)
    elif codec <= 4:
        data = decompress(codec, payload, max_decompressed_bytes)
    else:
        raise InvalidBatch(f"unknown compression codec {codec}")
    count = h.records_count
    n = len(data)
    if count < 0 or count > n // _MIN_RECORD_SIZE:
        raise InvalidBatch(f"records count {count} impossible in {n} bytes")
    log_append = h.timestamp_type == LOG_APPEND_TIME
    records: list[Record] = []
    p = 0
    prev_delta = -1
    for _ in range(count):
        length, p = read_varint(data, p, n, 32, InvalidBatch)
        if length < _MIN_RECORD_SIZE - 1 or length > n - p:
            raise InvalidBatch(f"bad record length {length}")
        rend = p + length
        p += 1  # attributes: unused
        ts_delta, p = read_varint(data, p, rend, 64, InvalidBatch)
        off_delta, p = read_varint(data, p, rend, 32, InvalidBatch)
        if off_delta <= prev_delta or off_delta > h.last_offset_delta:
            raise InvalidBatch(f"bad offset delta {off_delta} after {prev_delta}")
        prev_delta = off_delta
        klen, p = read_varint(data, p, rend, 32, InvalidBatch)
        if klen == -1:
            key = None
        elif 0 <= klen <= rend - p:
            key = data[p : p + klen]
            p += klen
        else:
            raise InvalidBatch(f"bad key length {klen}")
        vlen, p = read_varint(data, p, rend, 32, InvalidBatch)
        if vlen == -1:
            value = None
        elif 0 <= vlen <= rend - p:
            value = data[p : p + vlen]
            p += vlen
        else:
            raise InvalidBatch(f"bad value length {vlen}")
        hcount, p = read_varint(data, p, rend, 32, InvalidBatch)
        if hcount < 0 or hcount * 2 > rend - p:
            raise InvalidBatch(f"bad header count {hcount}")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(hcount):
            hklen, p = read_varint(data, p, rend, 32, InvalidBatch)
            if not 0 <= hklen <= rend - p:
                raise InvalidBatch(f"bad header key length {hklen}")
            try:
                hkey = data[p : p + hklen].decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidBatch("header key is not utf-8") from None
            p += hklen
            hvlen, p = read_varint(data, p, rend, 32, InvalidBatch)
            if hvlen == -1:
                hval = None
            elif 0 <= hvlen <= rend - p:
                hval = data[p : p + hvlen]
                p += hvlen
            else:
                raise InvalidBatch(f"bad header value length {hvlen}")
            headers.append((hkey, hval))
        if p != rend:
            raise InvalidBatch(f"record has {rend - p} bytes past its fields")
        timestamp = h.max_timestamp if log_append else h.base_timestamp + ts_delta
        records.append(Record(h.base_offset + off_delta, timestamp, key, value, tuple(headers)))
    if p != n:
        raise InvalidBatch(f"{n - p} bytes after the last record")
    return records


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
    h = parse_header(buf, pos)
    if len(buf) - pos < h.size:
        raise InvalidBatch(f"truncated batch at {pos}: {h.size} bytes needed")
    count = h.records_count
    codec = h.compression
    if codec > 4:
        raise InvalidBatch(f"unknown compression codec {codec}")
    if count < 0:
        if codec:  # a corrupt stream takes precedence, as in decode_records
            payload = memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + h.size]
            for _ in iter_decompressed(codec, payload, max_decompressed_bytes, max(1, window // 2)):
                pass
        raise InvalidBatch(f"records count {count} impossible")
    last_delta = h.last_offset_delta
    if codec == 0:
        start = pos + BATCH_HEADER_SIZE
        end = pos + h.size
        p, _, _, nulls, _ = _check_run(buf, start, end, end, True, count, -1, last_delta, 0)
        if p != end:
            raise InvalidBatch(f"{end - p} bytes after the last record")
    else:
        payload = memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + h.size]
        pieces = iter_decompressed(codec, payload, max_decompressed_bytes, max(1, window // 2))
        try:
            nulls = _check_stream(pieces, max_decompressed_bytes, count, last_delta)
        except DecompressionError:
            raise
        except InvalidBatch:
            for _ in pieces:  # a corrupt stream takes precedence, as in decode_records
                pass
            raise
        finally:
            pieces.close()
    if require_keys and nulls:
        raise NullKeyError(f"{nulls} of {count} records have a null key")
    return count


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
    (at least its length varint's 5). The one-byte varint case is inlined (the common one).
    """
    while todo:
        start = p
        if p < n and data[p] < 0x80:
            b = data[p]
            length = (b >> 1) ^ -(b & 1)
            p += 1
        elif not final and n - p < 5:
            return start, todo, prev, nulls, 5
        else:
            length, p = read_varint(data, p, n, 32, InvalidBatch)
        if length < _MIN_RECORD_SIZE - 1 or length > n - p:
            if not final and _MIN_RECORD_SIZE - 1 <= length <= room - p:
                return start, todo, prev, nulls, p - start + length
            raise InvalidBatch(f"bad record length {length}")
        rend = p + length
        p += 1  # attributes: unused
        if data[p] < 0x80:  # timestampDelta (p < rend: the record is at least 6 bytes)
            p += 1
        else:
            _, p = read_varint(data, p, rend, 64, InvalidBatch)
        if p < rend and data[p] < 0x80:
            b = data[p]
            off_delta = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            off_delta, p = read_varint(data, p, rend, 32, InvalidBatch)
        if off_delta <= prev or off_delta > last_delta:
            raise InvalidBatch(f"bad offset delta {off_delta} after {prev}")
        prev = off_delta
        if p < rend and data[p] < 0x80:
            b = data[p]
            klen = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            klen, p = read_varint(data, p, rend, 32, InvalidBatch)
        if klen == -1:
            nulls += 1
        elif 0 <= klen <= rend - p:
            p += klen
        else:
            raise InvalidBatch(f"bad key length {klen}")
        if p < rend and data[p] < 0x80:
            b = data[p]
            vlen = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            vlen, p = read_varint(data, p, rend, 32, InvalidBatch)
        if vlen == -1:
            pass
        elif 0 <= vlen <= rend - p:
            p += vlen
        else:
            raise InvalidBatch(f"bad value length {vlen}")
        if p < rend and data[p] == 0:  # no headers
            p += 1
        else:
            hcount, p = read_varint(data, p, rend, 32, InvalidBatch)
            if hcount < 0 or hcount * 2 > rend - p:
                raise InvalidBatch(f"bad header count {hcount}")
            for _ in range(hcount):
                hklen, p = read_varint(data, p, rend, 32, InvalidBatch)
                if not 0 <= hklen <= rend - p:
                    raise InvalidBatch(f"bad header key length {hklen}")
                try:
                    str(data[p : p + hklen], "utf-8")
                except UnicodeDecodeError:
                    raise InvalidBatch("header key is not utf-8") from None
                p += hklen
                hvlen, p = read_varint(data, p, rend, 32, InvalidBatch)
                if hvlen == -1:
                    pass
                elif 0 <= hvlen <= rend - p:
                    p += hvlen
                else:
                    raise InvalidBatch(f"bad header value length {hvlen}")
        if p != rend:
            raise InvalidBatch(f"record has {rend - p} bytes past its fields")
        todo -= 1
    return p, todo, prev, nulls, 0


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
    for field in (key, value):
        if field is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(field))
            body += field
    write_varint(body, len(headers))
    for hkey, hval in headers:
        kb = hkey.encode("utf-8")
        write_varint(body, len(kb))
        body += kb
        if hval is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(hval))
            body += hval
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
    "build_batch",
    "check_records",
    "compute_crc",
    "decode_records",
    "iter_batches",
    "parse_header",
    "rebuild_batch",
    "stamp_batch",
    "verify_crc",
]
