"""What Kafka's LZ4 reader accepts of a produced batch's frame, checked without decompressing.

Kafka reads a record batch's LZ4 data with its own frame reader (Lz4BlockInputStream, KIP-57),
which supports less than the LZ4 frame format allows. A Produce batch whose frame it cannot
read fails its validation with an exception Kafka does not expect there: the partition is
answered UNKNOWN_SERVER_ERROR and nothing is stored (checked against Apache Kafka 4.4 by
tests/oracle/test_produce_batches.py). `check_lz4_frame(data)` raises `UnreadableFrame` for
the same frames:

- header: fewer than 6 bytes; magic other than 0x184D2204; FLG with a reserved bit or the
  dictionary-id bit set (Kafka takes bits 0-1 as reserved), blocks not independent ("dependent
  block stream": kafkajs's lz4js wrote such frames), a version other than 1; BD with a reserved
  bit set or a block maximum size other than 64 KiB, 256 KiB, 1 MiB or 4 MiB; a content size
  flag without its 8 bytes; a header checksum that is missing or wrong (xxHash-32 of the
  descriptor, second byte);
- blocks, walked by their sizes up to the end mark: a block larger than the frame's maximum,
  a block (or its checksum, or the end mark, or the content checksum after it) cut short.

- block checksums, when the frame has them (no Kafka client writes them): the blocks are
  decompressed (by lz4.frame, from a copy of the frame without the content checksum and size
  flags, which Kafka does not check), so a wrong checksum or corrupt data in such a frame is
  found; `max_size` bounds what that decompresses to.

What Kafka does not check is not checked either: the content checksum and the content size
(read past, never verified), bytes after the end mark (never read). The compressed data of a
frame without block checksums is found wrong only by decompressing it, which a Produce append
does only where records are read (docs/log.md).
"""

from __future__ import annotations

import struct

from protocol.compression import LZ4, DecompressionError, iter_decompressed

__all__ = ["UnreadableFrame", "check_lz4_frame", "xxh32"]

_MAGIC = 0x184D2204
_LE_INT32 = struct.Struct("<I")
_PRIME1, _PRIME2, _PRIME3, _PRIME4, _PRIME5 = (
    2654435761,
    2246822519,
    3266489917,
    668265263,
    374761393,
)
_MASK = 0xFFFFFFFF


class UnreadableFrame(DecompressionError):
    """Compressed data Kafka's reader refuses with an unexpected exception (Kafka answers
    UNKNOWN_SERVER_ERROR); the message is Kafka's."""


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """xxHash-32 of `data` (for the few bytes of a frame descriptor: pure Python)."""
    n = len(data)
    p = 0
    if n >= 16:
        acc = [
            (seed + _PRIME1 + _PRIME2) & _MASK,
            (seed + _PRIME2) & _MASK,
            seed & _MASK,
            (seed - _PRIME1) & _MASK,
        ]
        while p + 16 <= n:
            for i in range(4):
                lane = _LE_INT32.unpack_from(data, p)[0]
                acc[i] = (_rotl((acc[i] + lane * _PRIME2) & _MASK, 13) * _PRIME1) & _MASK
                p += 4
        h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _MASK
    else:
        h = (seed + _PRIME5) & _MASK
    h = (h + n) & _MASK
    while p + 4 <= n:
        lane = _LE_INT32.unpack_from(data, p)[0]
        h = (_rotl((h + lane * _PRIME3) & _MASK, 17) * _PRIME4) & _MASK
        p += 4
    while p < n:
        h = (_rotl((h + data[p] * _PRIME5) & _MASK, 11) * _PRIME1) & _MASK
        p += 1
    h ^= h >> 15
    h = (h * _PRIME2) & _MASK
    h ^= h >> 13
    h = (h * _PRIME3) & _MASK
    return h ^ (h >> 16)


_PREMATURE = "Stream ended prematurely"


def _descriptor(flg: int, bd: int) -> tuple[int, bool, bool]:
    """Kafka's FLG and BD checks -> (block maximum size, block checksums, content checksum)."""
    if flg & 0x03:
        raise UnreadableFrame("Reserved bits must be 0")
    if not flg & 0x20:
        raise UnreadableFrame("Dependent block stream is unsupported")
    if flg >> 6 != 1:
        raise UnreadableFrame(f"Version {flg >> 6} is unsupported")
    size_value = (bd >> 4) & 0x07
    if bd & 0x0F:
        raise UnreadableFrame("Reserved2 field must be 0")
    if not 4 <= size_value <= 7:
        raise UnreadableFrame("Block size value must be between 4 and 7")
    if bd & 0x80:
        raise UnreadableFrame("Reserved3 field must be 0")
    return 1 << (2 * size_value + 8), bool(flg & 0x10), bool(flg & 0x04)


def check_lz4_frame(data: bytes | bytearray | memoryview, max_size: int) -> None:
    """Raise `UnreadableFrame` for an LZ4 frame Kafka's reader refuses (module docstring)."""
    end = len(data)
    if end < 6:
        raise UnreadableFrame(_PREMATURE)
    if _LE_INT32.unpack_from(data, 0)[0] != _MAGIC:
        raise UnreadableFrame("Stream unsupported (invalid magic bytes)")
    flg, bd = data[4], data[5]
    max_block, block_checksums, content_checksum = _descriptor(flg, bd)
    p = 6
    if flg & 0x08:  # the content size: skipped
        if end - p < 8:
            raise UnreadableFrame(_PREMATURE)
        p += 8
    if p >= end:
        raise UnreadableFrame(_PREMATURE)
    if data[p] != (xxh32(memoryview(data)[4:p]) >> 8) & 0xFF:
        raise UnreadableFrame("Stream frame descriptor corrupted")
    p += 1
    header_end = p
    checksum_bytes = 4 if block_checksums else 0
    while True:
        if end - p < 4:
            raise UnreadableFrame(_PREMATURE)
        size = _LE_INT32.unpack_from(data, p)[0] & 0x7FFFFFFF
        p += 4
        if size == 0:  # the end mark
            if content_checksum and end - p < 4:
                raise UnreadableFrame(_PREMATURE)
            if block_checksums:
                _check_blocks(data, flg, bd, blocks=(header_end, p), max_size=max_size)
            return
        if size > max_block:
            raise UnreadableFrame(f"Block size {size} exceeded max: {max_block}")
        if end - p < size + checksum_bytes:
            raise UnreadableFrame(_PREMATURE)
        p += size + checksum_bytes


def _check_blocks(
    data: bytes | bytearray | memoryview,
    flg: int,
    bd: int,
    *,
    blocks: tuple[int, int],
    max_size: int,
) -> None:
    """Decompress the blocks data[blocks[0]:blocks[1]] (end mark included) of a frame with
    block checksums, in a frame without the content flags Kafka ignores."""
    flg &= ~0x0C  # no content size, no content checksum
    descriptor = bytes((flg, bd))
    frame = bytearray(b"\x04\x22\x4d\x18")
    frame += descriptor
    frame.append((xxh32(descriptor) >> 8) & 0xFF)
    frame += memoryview(data)[blocks[0] : blocks[1]]
    try:
        for _piece in iter_decompressed(LZ4, frame, max_size):
            pass
    except DecompressionError as exc:
        raise UnreadableFrame(f"Block checksum mismatch or corrupt block ({exc})") from None
