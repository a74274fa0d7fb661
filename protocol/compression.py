"""Record batch compression codecs, with a hard cap on decompressed size.

The codec is the record batch's attributes bits 0-2:

=====  =======  ================================================================
codec  name     wire format
=====  =======  ================================================================
0      none     the records as they are
1      gzip     RFC 1952 gzip member(s) (stdlib zlib); concatenated members read
2      snappy   either xerial/snappy-java framing (Java clients) or one raw
                snappy block (librdkafka); both are read, xerial is written
3      lz4      LZ4 frame format (KIP-57: a correct header checksum)
4      zstd     zstd frame(s); the content size may be absent
=====  =======  ================================================================

xerial framing (snappy-java `SnappyOutputStream`)::

    0   magic    b"\\x82SNAPPY\\x00"   8 bytes
    8   version  int32 (1)
    12  compat   int32 (1)
    16  blocks   [int32 compressed length, raw snappy block]*

A raw snappy block starts with its uncompressed length as an unsigned LEB128 varint.

Decompression bomb protection: `iter_decompressed(codec, data, max_size, chunk)` yields
the output in pieces of at most `chunk` bytes (default `_CHUNK`, 256 KiB) and never holds more
than one piece: gzip (zlib `max_length`), lz4 (`max_length`) and zstd (`read(n)`) decompress
piece by piece against the remaining budget (+1 byte to detect overflow); gzip and lz4 are fed
their input in 64 KiB slices, so the decompressor's copy of unconsumed input stays small.
Snappy checks every block's declared uncompressed length against the budget before
decompressing it (snappy fails a block whose real length differs from its declared one) and
yields whole blocks: a xerial block (Java writes 32 KiB ones) or a raw block may be larger than
`chunk`, up to the budget. Anything above `max_size`, and any corrupt or truncated input,
raises `DecompressionError` (when the generator reaches it: pieces yielded before are not
proof that the stream is valid). `decompress(codec, data, max_size)` joins the pieces, so it
holds at most `max_size` bytes plus one piece; a successful call briefly holds its output
twice, the pieces and their join: at most 2 * `max_size`.

Written formats are those of Kafka's Java client: gzip (level 6, mtime 0), xerial snappy in
32 KiB blocks, lz4 frames with independent 64 KiB blocks and no content size or checksums
(Kafka's `KafkaLZ4BlockInputStream` decodes blocks independently), zstd level 3.

Libraries: zlib (stdlib), cramjam (snappy), lz4 (`lz4.frame.LZ4FrameDecompressor` takes a
`max_length`), zstandard (`stream_reader().read(n)` is bounded).

`InvalidBatch` and `DecompressionError` live here (re-exported by `protocol.records`) so
this module does not import `protocol.records`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Generator
from typing import ClassVar

import cramjam
import lz4.frame
import zstandard

from protocol.exceptions import ProtocolError

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

_CHUNK = 256 * 1024
_IN_SLICE = 64 * 1024  # compressed bytes fed to gzip / lz4 per call
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")
_GZIP_WBITS = 16 + zlib.MAX_WBITS

Buffer = bytes | bytearray | memoryview


class InvalidBatch(ProtocolError, ValueError):
    """A record batch is short, malformed or otherwise unreadable."""


class DecompressionError(InvalidBatch):
    """Compressed records are corrupt, truncated, or decompress to more than the cap."""


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Compress `data` with `codec` (0-4) in the format Kafka's Java client writes."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, _GZIP_WBITS)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        return lz4.frame.compress(
            bytes(data),
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=3).compress(data)
    raise ValueError(f"unknown compression codec {codec}")


def decompress(codec: int, data: Buffer, max_size: int) -> bytes:
    """Decompress `data`; `DecompressionError` if corrupt or larger than `max_size` bytes."""
    if codec == NONE:
        if max_size < 0:
            raise ValueError("max_size must be >= 0")
        if len(data) > max_size:
            raise DecompressionError(f"records larger than {max_size} bytes")
        return bytes(data)
    return b"".join(iter_decompressed(codec, data, max_size))


def iter_decompressed(
    codec: int, data: Buffer, max_size: int, chunk: int = _CHUNK
) -> Generator[bytes, None, None]:
    """Yield the decompressed bytes of `data` in non-empty pieces of at most `chunk` bytes.

    Snappy yields whole blocks (each checked against the remaining budget first), which may
    be larger than `chunk`. Raises `DecompressionError` (while iterating) when the data is
    corrupt or truncated or decompresses to more than `max_size` bytes, and (at once) for
    an unknown codec; `ValueError` for a negative `max_size` or a `chunk` below 1. The
    pieces joined are exactly what `decompress` returns. Codec 0 yields copies of slices.
    """
    if max_size < 0:
        raise ValueError("max_size must be >= 0")
    if chunk < 1:
        raise ValueError("chunk must be >= 1")
    if codec == NONE:
        return _iter_plain(data, max_size, chunk)
    if codec == GZIP:
        return _iter_gunzip(data, max_size, chunk)
    if codec == SNAPPY:
        return _iter_unsnappy(data, max_size)
    if codec == LZ4:
        return _iter_unlz4(data, max_size, chunk)
    if codec == ZSTD:
        return _iter_unzstd(data, max_size, chunk)
    raise DecompressionError(f"unknown compression codec {codec}")


def _too_big(max_size: int) -> DecompressionError:
    return DecompressionError(f"decompressed records exceed {max_size} bytes")


def _iter_plain(data: Buffer, max_size: int, chunk: int) -> Generator[bytes, None, None]:
    if len(data) > max_size:
        raise DecompressionError(f"records larger than {max_size} bytes")
    mv = memoryview(data)
    for start in range(0, len(mv), chunk):
        yield bytes(mv[start : start + chunk])


# -- the bounded streaming loop of gzip and lz4 ---------------------------------------------


class _Member:
    """A decompressor of one gzip member / lz4 frame, after each `decompress` call: `eof`
    (the member ended; `unused_data` is the input after it), `needs_input` (it cannot go on
    without more input) and `tail` (input given back, to pass again; b"" for none)."""

    name: ClassVar[str]
    truncated: ClassVar[str]  # the error when the input ends inside a member
    errors: ClassVar[type[Exception]]  # what the library raises on corrupt input
    eof: bool
    unused_data: bytes
    needs_input: bool
    tail: bytes | memoryview = b""

    def decompress(self, data: Buffer, limit: int) -> bytes:
        raise NotImplementedError


def _iter_streamed(
    data: Buffer,
    max_size: int,
    chunk: int,
    member: type[_Member],
) -> Generator[bytes, None, None]:
    """Concatenated members decompressed piece by piece against the remaining budget (+1
    byte to detect overflow), their input fed in `_IN_SLICE` slices when asked for."""
    mv = memoryview(data)
    end = len(mv)
    pending: bytes | memoryview = mv[:_IN_SLICE]
    fed = len(pending)
    total = 0
    d = member()
    try:
        while True:
            out = d.decompress(pending, min(chunk, max_size - total + 1))
            total += len(out)
            if total > max_size:
                raise _too_big(max_size)
            if out:
                yield out
            if d.eof:
                pending = d.unused_data
                if not pending:
                    if fed >= end:
                        return
                    pending = mv[fed : fed + _IN_SLICE]
                    fed += len(pending)
                d = member()  # another member follows
            elif d.needs_input:
                if fed >= end:
                    raise DecompressionError(member.truncated)
                pending = mv[fed : fed + _IN_SLICE]
                fed += len(pending)
            else:
                pending = d.tail
    except member.errors as e:
        raise DecompressionError(f"bad {member.name} data: {e}") from None


# -- gzip -----------------------------------------------------------------------------------


class _Gunzip(_Member):
    """One gzip member (zlib); input it could not use yet comes back as `tail`."""

    name, truncated, errors = "gzip", "truncated gzip data", zlib.error

    def __init__(self) -> None:
        self._d = zlib.decompressobj(_GZIP_WBITS)

    def decompress(self, data: Buffer, limit: int) -> bytes:
        d = self._d
        out = d.decompress(data, limit)
        self.eof, self.unused_data, self.tail = d.eof, d.unused_data, d.unconsumed_tail
        # less output than allowed with all input used up: zlib wants more input
        self.needs_input = not self.tail and len(out) < limit
        return out


def _iter_gunzip(data: Buffer, max_size: int, chunk: int) -> Generator[bytes, None, None]:
    """Members one after the other (zlib's `unconsumed_tail` is at most one input slice)."""
    return _iter_streamed(data, max_size, chunk, _Gunzip)


# -- snappy ---------------------------------------------------------------------------------


def _snappy_declared_length(block: bytes | memoryview) -> int:
    """The uncompressed length a raw snappy block declares (LEB128 uint32 prefix)."""
    result = 0
    for i in range(min(5, len(block))):
        b = block[i]
        result |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if result > 0xFFFFFFFF:
                break
            return result
    raise DecompressionError("bad raw snappy length header")


def _snappy_block(block: memoryview, budget: int, max_size: int) -> bytes:
    declared = _snappy_declared_length(block)
    if declared > budget:
        raise _too_big(max_size)
    try:
        out = bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as e:
        raise DecompressionError(f"bad snappy data: {e}") from None
    if len(out) != declared:  # pragma: no cover - snappy itself enforces this
        raise DecompressionError("snappy block length mismatch")
    return out


def _iter_unsnappy(data: Buffer, max_size: int) -> Generator[bytes, None, None]:
    mv = memoryview(data)
    if len(mv) < _XERIAL_HEADER.size or bytes(mv[:8]) != _XERIAL_MAGIC:
        out = _snappy_block(mv, max_size, max_size)  # raw: one block, length checked first
        if out:
            yield out
        return
    total = 0
    pos = _XERIAL_HEADER.size
    end = len(mv)
    while pos < end:
        if end - pos < 4:
            raise DecompressionError("truncated xerial snappy block length")
        (clen,) = _INT32.unpack_from(mv, pos)
        pos += 4
        if clen < 0 or clen > end - pos:
            raise DecompressionError(f"bad xerial snappy block length {clen}")
        out = _snappy_block(mv[pos : pos + clen], max_size - total, max_size)
        total += len(out)
        pos += clen
        if out:
            yield out


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    mv = memoryview(data)
    out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
    for start in range(0, len(mv), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(bytes(mv[start : start + _XERIAL_BLOCK])))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


# -- lz4 ------------------------------------------------------------------------------------


class _Unlz4(_Member):
    """One LZ4 frame; the decompressor keeps its own copy of input it has not used yet."""

    name, truncated, errors = "lz4", "truncated lz4 frame", RuntimeError

    def __init__(self) -> None:
        self._d = lz4.frame.LZ4FrameDecompressor()

    def decompress(self, data: Buffer, limit: int) -> bytes:
        d = self._d
        out: bytes = d.decompress(data, max_length=limit)
        self.eof, self.unused_data, self.needs_input = d.eof, d.unused_data or b"", d.needs_input
        return out


def _iter_unlz4(data: Buffer, max_size: int, chunk: int) -> Generator[bytes, None, None]:
    """Frames one after the other (lz4.frame reports corrupt input as RuntimeError)."""
    return _iter_streamed(data, max_size, chunk, _Unlz4)


# -- zstd -----------------------------------------------------------------------------------


_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50
_UINT32_LE = struct.Struct("<I")


def _check_zstd_frames(mv: memoryview) -> int | None:
    """Walk the zstd frames' headers and block headers: they must cover `mv` exactly.
    Returns the sum of the frames' declared content sizes (None when a frame declares none).

    zstandard's stream reader treats a truncated frame as a clean end of input; this walk
    (no decompression, O(blocks)) catches truncation and trailing garbage. Frame layout:
    magic u32le, descriptor byte (FCS flag bits 7-6, single segment bit 5, checksum bit 2,
    dictionary-id flag bits 1-0), window byte unless single segment, dictionary id 0/1/2/4
    bytes, content size 0(1 if single segment)/2/4/8 bytes, then blocks with a 3-byte LE
    header (bit 0 last, bits 1-2 type: raw/RLE/compressed/reserved, bits 3-23 size; an RLE
    block stores one byte), then a 4-byte checksum if flagged. Skippable frames: magic
    0x184D2A5?, u32le size, payload.
    """
    pos = 0
    end = len(mv)
    declared: int | None = 0
    if end == 0:
        raise DecompressionError("empty zstd data")
    while pos < end:
        if end - pos < 4:
            raise DecompressionError("truncated zstd frame magic")
        (magic,) = _UINT32_LE.unpack_from(mv, pos)
        pos += 4
        if magic & _ZSTD_SKIPPABLE_MASK == _ZSTD_SKIPPABLE_MAGIC:
            if end - pos < 4:
                raise DecompressionError("truncated zstd skippable frame")
            (skip,) = _UINT32_LE.unpack_from(mv, pos)
            pos += 4 + skip
            if pos > end:
                raise DecompressionError("truncated zstd skippable frame")
            continue
        if magic != _ZSTD_MAGIC:
            raise DecompressionError("bad zstd frame magic")
        if pos >= end:
            raise DecompressionError("truncated zstd frame header")
        desc = mv[pos]
        single_segment = (desc >> 5) & 1
        fcs_flag = desc >> 6
        fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
        header = 1 + (0 if single_segment else 1) + (0, 1, 2, 4)[desc & 3] + fcs_size
        if pos + header > end:
            raise DecompressionError("truncated zstd frame header")
        if fcs_size == 0:
            declared = None
        elif declared is not None:
            fcs = int.from_bytes(mv[pos + header - fcs_size : pos + header], "little")
            declared += fcs + 256 if fcs_size == 2 else fcs
        pos += header
        while True:
            if end - pos < 3:
                raise DecompressionError("truncated zstd block")
            bh = mv[pos] | (mv[pos + 1] << 8) | (mv[pos + 2] << 16)
            pos += 3
            btype = (bh >> 1) & 3
            if btype == 3:
                raise DecompressionError("reserved zstd block type")
            pos += 1 if btype == 1 else bh >> 3
            if pos > end:
                raise DecompressionError("truncated zstd block")
            if bh & 1:
                break
        if (desc >> 2) & 1:
            pos += 4
            if pos > end:
                raise DecompressionError("truncated zstd checksum")
    return declared


def _iter_unzstd(data: Buffer, max_size: int, chunk: int) -> Generator[bytes, None, None]:
    declared = _check_zstd_frames(memoryview(data))
    total = 0
    dctx = zstandard.ZstdDecompressor()
    try:
        with dctx.stream_reader(data, read_across_frames=True) as reader:
            while True:
                out = reader.read(min(chunk, max_size - total + 1))
                if not out:
                    # zstandard's reader checks a frame's declared content size only when
                    # a read asks for at least that much: check it here for every chunk size
                    if declared is not None and total != declared:
                        raise DecompressionError(
                            f"bad zstd data: {total} bytes where the frames declare {declared}"
                        )
                    return
                total += len(out)
                if total > max_size:
                    raise _too_big(max_size)
                yield out
    except zstandard.ZstdError as e:
        raise DecompressionError(f"bad zstd data: {e}") from None


__all__ = [
    "CODEC_NAMES",
    "GZIP",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "DecompressionError",
    "InvalidBatch",
    "compress",
    "decompress",
    "iter_decompressed",
]
