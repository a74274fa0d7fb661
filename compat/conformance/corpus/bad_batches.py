"""Produce batches whose CRC is right but whose records Kafka cannot read.

Two topics. `rec-lz4` takes one LZ4 frame after the other on its one partition: frames Kafka's
LZ4 reader refuses (dependent blocks, a bad header checksum, reserved bits, a version other
than 1, an unsupported block size, no end mark, a bad block checksum...) and frames it takes
(block checksums, a content size or content checksum it never verifies, bytes after the end
mark), then a fetch of what was stored. `rec-garbage` takes each batch of garbage records on a
partition of its own, so that one batch stored by one side and refused by the other does not
move the offsets of the next: bytes that are no records, trailing bytes, a record cut short,
record counts that do not match, a corrupt compressed stream, a good stream of garbage. It is
deleted at the end, so that what one side stored and the other refused does not show in the
last phase's listings (DescribeLogDirs of every partition).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

import lz4.block
import zstandard

from compat.conformance.corpus.base import (
    API,
    DATA,
    NIL,
    T0,
    create,
    fetch_body,
    produce_body,
    step,
    wait_gone,
)
from compat.conformance.script import Ctx, Do, HarnessError, Item, Scenario
from protocol.crc32c import crc32c
from protocol.lz4_frame import xxh32
from protocol.records import BATCH_HEADER_SIZE, RecordSpec, build_batch
from protocol.varint import write_varint

LZ4_TOPIC, GARBAGE = "rec-lz4", "rec-garbage"
_NONE, _GZIP, _SNAPPY, _LZ4, _ZSTD = 0, 1, 2, 3, 4
_INDEPENDENT, _BLOCK_CHECKSUMS, _CONTENT_SIZE, _CONTENT_CHECKSUM = 0x60, 0x10, 0x08, 0x04
_BD_64K = 0x40
_LE = struct.Struct("<I")


def _records(count: int = 3, first: int = 0) -> bytes:
    """The uncompressed records section of `count` keyed records (deltas 0..count-1)."""
    whole = build_batch(
        [RecordSpec(f"k{i}".encode(), f"v{i}".encode(), timestamp=T0 + i) for i in range(count)]
    )
    return whole[BATCH_HEADER_SIZE:]


def batch_of_payload(payload: bytes, codec: int, count: int = 3) -> bytes:
    """A batch of `count` records whose records section is `payload` as given (CRC right)."""
    shell = build_batch(
        [RecordSpec(b"k", b"v", timestamp=T0 + i) for i in range(count)], base_timestamp=T0
    )
    head = bytearray(shell[:BATCH_HEADER_SIZE])
    struct.pack_into(">i", head, 8, BATCH_HEADER_SIZE - 12 + len(payload))
    struct.pack_into(">h", head, 21, codec)
    out = bytes(head) + payload
    return out[:17] + struct.pack(">I", crc32c(out[21:])) + out[21:]


def _frame(
    blocks: list[bytes],
    *,
    flg: int = _INDEPENDENT,
    bd: int = _BD_64K,
    content_size: int | None = None,
    header_checksum: int | None = None,
    block_checksum: Callable[[bytes], int] | None = None,
    end_mark: bool = True,
    content_checksum: int | None = None,
) -> bytes:
    """An LZ4 frame of compressed `blocks`, its header as given (checksum right unless
    `header_checksum`)."""
    descriptor = bytes((flg, bd))
    if content_size is not None:
        descriptor += content_size.to_bytes(8, "little")
    hc = (xxh32(descriptor) >> 8) & 0xFF if header_checksum is None else header_checksum
    out = bytearray(b"\x04\x22\x4d\x18") + descriptor + bytes((hc,))
    for block in blocks:
        out += _LE.pack(len(block)) + block
        if block_checksum is not None:
            out += _LE.pack(block_checksum(block))
    if end_mark:
        out += _LE.pack(0)
    if content_checksum is not None:
        out += _LE.pack(content_checksum)
    return bytes(out)


def _lz4(data: bytes) -> bytes:
    return bytes(lz4.block.compress(data, store_size=False))


def lz4_cases() -> list[tuple[str, bytes, str]]:
    raw = _records()
    block = _lz4(raw)
    right_hc = (xxh32(bytes((_INDEPENDENT, _BD_64K))) >> 8) & 0xFF
    cases = [
        ("independent", _frame([block]), "independent blocks, no checksums (Kafka's own frame)"),
        ("dependent", _frame([block], flg=0x40), "FLG without block independence (40 40 C0)"),
        ("header_checksum", _frame([block], header_checksum=right_hc ^ 1), "a wrong HC byte"),
        ("dict_id", _frame([block], flg=0x61), "FLG with the dictionary-id bit"),
        ("reserved_bit", _frame([block], flg=0x62), "FLG with its reserved bit"),
        ("version_0", _frame([block], flg=0x20), "FLG version 0"),
        ("block_size_3", _frame([block], bd=0x30), "BD block size value 3"),
        ("bd_reserved", _frame([block], bd=0x41), "BD with a reserved bit"),
        ("block_size_4m", _frame([block], bd=0x70), "BD 4 MiB blocks"),
        ("bad_magic", b"\x05" + _frame([block])[1:], "not the LZ4 magic"),
        ("no_end_mark", _frame([block], end_mark=False), "the end mark missing"),
        ("empty", b"", "no frame at all"),
        ("short_header", _frame([block])[:5], "5 bytes of header"),
        (
            "block_too_large",
            _frame([block], bd=_BD_64K)[:7] + _LE.pack(70000),
            "a block over 64 KiB",
        ),
        (
            "uncompressed_block",
            _frame([raw])[:7] + _LE.pack(len(raw) | 1 << 31) + raw + _LE.pack(0),
            "a block stored uncompressed",
        ),
        (
            "block_checksums",
            _frame([block], flg=_INDEPENDENT | _BLOCK_CHECKSUMS, block_checksum=xxh32),
            "block checksums, right",
        ),
        (
            "bad_block_checksum",
            _frame(
                [block], flg=_INDEPENDENT | _BLOCK_CHECKSUMS, block_checksum=lambda b: xxh32(b) ^ 1
            ),
            "a wrong block checksum",
        ),
        (
            "content_size",
            _frame([block], flg=_INDEPENDENT | _CONTENT_SIZE, content_size=len(raw)),
            "a content size",
        ),
        (
            "wrong_content_size",
            _frame([block], flg=_INDEPENDENT | _CONTENT_SIZE, content_size=len(raw) + 5),
            "a content size 5 bytes off (never checked)",
        ),
        (
            "content_checksum",
            _frame([block], flg=_INDEPENDENT | _CONTENT_CHECKSUM, content_checksum=xxh32(raw)),
            "a content checksum",
        ),
        (
            "wrong_content_checksum",
            _frame([block], flg=_INDEPENDENT | _CONTENT_CHECKSUM, content_checksum=xxh32(raw) ^ 1),
            "a wrong content checksum (never checked)",
        ),
        ("after_end_mark", _frame([block]) + b"garbage", "bytes after the end mark"),
    ]
    return cases


def _unordered() -> bytes:
    """Three records whose offset deltas are 5, 2, 7."""
    out = bytearray()
    for delta in (5, 2, 7):
        body = bytearray(b"\x00\x00")
        write_varint(body, delta)
        body += b"\x02k\x02v\x00"
        write_varint(out, len(body))
        out += body
    return bytes(out)


def _gzip(data: bytes) -> bytes:
    gzip = zlib.compressobj(6, zlib.DEFLATED, 31)
    return gzip.compress(data) + gzip.flush()


def garbage_cases() -> list[tuple[str, bytes, str]]:
    raw = _records()
    bad_key = bytearray(raw)
    bad_key[4] = 0x7E  # the first record's key length: 63, inside a record of 13 bytes
    unordered = _unordered()
    gzip_garbage, gzip_trailing = _gzip(b"\xff" * 40), _gzip(raw + b"\x00\x00")
    gzip_unordered = _gzip(unordered)
    one = _lz4(_records(1))
    rest = _lz4(_records(3)[len(_records(1)) :])
    return [
        ("none_ff", batch_of_payload(b"\xff" * len(raw), _NONE), "0xff bytes for records"),
        ("none_zeros", batch_of_payload(b"\x00" * len(raw), _NONE), "zero bytes for records"),
        (
            "none_trailing",
            batch_of_payload(raw + b"\x00\x01", _NONE),
            "two bytes after the last record",
        ),
        ("none_cut", batch_of_payload(raw[:-4], _NONE), "the last record cut short"),
        (
            "none_count_high",
            batch_of_payload(raw, _NONE, count=4),
            "a record count of 4 for 3 records",
        ),
        (
            "none_count_low",
            batch_of_payload(raw, _NONE, count=2),
            "a record count of 2 for 3 records",
        ),
        (
            "none_key_length",
            batch_of_payload(bytes(bad_key), _NONE),
            "a key length past its record",
        ),
        ("none_unordered", batch_of_payload(unordered, _NONE), "offset deltas 5, 2, 7"),
        (
            "gzip_corrupt",
            batch_of_payload(b"\x1f\x8b" + b"\xff" * 40, _GZIP),
            "a corrupt gzip stream",
        ),
        ("gzip_garbage", batch_of_payload(gzip_garbage, _GZIP), "a good gzip stream of 0xff bytes"),
        (
            "gzip_trailing",
            batch_of_payload(gzip_trailing, _GZIP),
            "two bytes after the last record",
        ),
        (
            "gzip_unordered",
            batch_of_payload(gzip_unordered, _GZIP),
            "offset deltas 5, 2, 7, compressed",
        ),
        (
            "zstd_corrupt",
            batch_of_payload(b"\x28\xb5\x2f\xfd" + b"\xff" * 40, _ZSTD),
            "a corrupt zstd frame",
        ),
        (
            "zstd_garbage",
            batch_of_payload(zstandard.ZstdCompressor(level=3).compress(b"\xff" * 40), _ZSTD),
            "a good zstd frame of 0xff bytes",
        ),
        ("snappy_corrupt", batch_of_payload(b"\xff" * 40, _SNAPPY), "a corrupt snappy block"),
        (
            "lz4_corrupt_block",
            batch_of_payload(_frame([b"\xff" * 20]), _LZ4),
            "a corrupt LZ4 block",
        ),
        (
            "lz4_two_frames",
            batch_of_payload(_frame([one]) + _frame([rest]), _LZ4),
            "the records in two LZ4 frames (Kafka reads the first)",
        ),
    ]


def _to(logical: str, partition: int, data: bytes) -> Callable[[Ctx], dict[str, Any]]:
    return lambda ctx: produce_body(ctx, 9, logical, partition, data)


def _delete(logical: str) -> Do:
    def run(ctx: Ctx) -> None:
        body = {"topics": [{"name": ctx.name(logical), "topic_id": NIL}], "timeout_ms": 30000}
        [result] = ctx.call(API.DELETE_TOPICS, 6, body).responses
        if result.error_code:
            raise HarnessError(f"DeleteTopics {logical}: error {result.error_code}")

    return Do(f"delete topic {logical}", run)


def bad_batches() -> Scenario:
    items: list[Item] = [create(LZ4_TOPIC, 1, DATA)]
    for name, frame, note in lz4_cases():
        data = batch_of_payload(frame, _LZ4)
        items.append(step(f"produce.lz4.{name}", API.PRODUCE, 9, _to(LZ4_TOPIC, 0, data), note))
    items.append(
        step(
            "produce.lz4.fetch_stored",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, LZ4_TOPIC, 0, 0),
            "the LZ4 batches stored",
        )
    )
    garbage = garbage_cases()
    items.append(create(GARBAGE, len(garbage), DATA))
    for partition, (name, data, note) in enumerate(garbage):
        items.append(
            step(f"produce.garbage.{name}", API.PRODUCE, 9, _to(GARBAGE, partition, data), note)
        )
    items += [_delete(GARBAGE), wait_gone([GARBAGE])]
    return Scenario("produce batches whose records are unreadable", tuple(items))
