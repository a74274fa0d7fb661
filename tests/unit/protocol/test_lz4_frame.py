"""protocol.lz4_frame: the LZ4 frames Kafka's reader refuses, found without decompressing
(the same frames were put to Apache Kafka 4.4: tests/oracle/test_produce_batches.py)."""

from __future__ import annotations

import struct

import lz4.block
import lz4.frame
import pytest

from protocol.lz4_frame import UnreadableFrame, check_lz4_frame, xxh32

CAP = 1 << 20
RAW = b"hello records " * 100
BLOCK = bytes(lz4.block.compress(RAW, store_size=False))
LE = struct.Struct("<I")


def frame(flg: int = 0x60, bd: int = 0x40, *, hc: int | None = None, tail: bytes = b"") -> bytes:
    descriptor = bytes((flg, bd))
    checksum = (xxh32(descriptor) >> 8) & 0xFF if hc is None else hc
    body = LE.pack(len(BLOCK)) + BLOCK
    if flg & 0x10:
        body += LE.pack(xxh32(BLOCK))
    return b"\x04\x22\x4d\x18" + descriptor + bytes((checksum,)) + body + LE.pack(0) + tail


def test_xxh32_vectors() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


@pytest.mark.parametrize(
    "kwargs",
    [
        {"block_linked": False, "store_size": False},
        {"block_linked": False, "content_checksum": True},
        {"block_linked": False, "block_checksum": True},
        {"block_linked": False, "block_size": lz4.frame.BLOCKSIZE_MAX256KB},
    ],
    ids=["plain", "content-checksum", "block-checksums", "256k"],
)
def test_frames_of_independent_blocks_pass(kwargs: dict[str, object]) -> None:
    check_lz4_frame(lz4.frame.compress(RAW * 200, **kwargs), CAP)


def test_what_kafka_never_verifies_passes() -> None:
    check_lz4_frame(frame(tail=b"after the end mark"), CAP)
    wrong_size = b"\x04\x22\x4d\x18" + bytes((0x68, 0x40)) + (5).to_bytes(8, "little")
    wrong_size += bytes(((xxh32(wrong_size[4:]) >> 8) & 0xFF,)) + frame()[7:]
    check_lz4_frame(wrong_size, CAP)
    wrong_checksum = frame(flg=0x64) + LE.pack(xxh32(RAW) ^ 1)
    check_lz4_frame(wrong_checksum, CAP)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "Stream ended prematurely"),
        (frame()[:5], "Stream ended prematurely"),
        (b"\x05" + frame()[1:], "Stream unsupported (invalid magic bytes)"),
        (frame(flg=0x40), "Dependent block stream is unsupported"),
        (lz4.frame.compress(RAW * 200), "Dependent block stream is unsupported"),
        (frame(flg=0x61), "Reserved bits must be 0"),
        (frame(flg=0x62), "Reserved bits must be 0"),
        (frame(flg=0xA0), "Version 2 is unsupported"),
        (frame(bd=0x41), "Reserved2 field must be 0"),
        (frame(bd=0x30), "Block size value must be between 4 and 7"),
        (frame(bd=0xC0), "Reserved3 field must be 0"),
        (frame(hc=0), "Stream frame descriptor corrupted"),
        (frame()[:6], "Stream ended prematurely"),
        (frame()[:-4], "Stream ended prematurely"),  # no end mark
        (frame()[:12], "Stream ended prematurely"),  # a block cut short
        (frame(flg=0x64), "Stream ended prematurely"),  # no content checksum after the end
        (frame()[:7] + LE.pack(70000), "Block size 70000 exceeded max: 65536"),
    ],
)
def test_what_kafka_refuses(data: bytes, message: str) -> None:
    with pytest.raises(UnreadableFrame) as caught:
        check_lz4_frame(data, CAP)
    assert str(caught.value) == message


def test_block_checksums_are_verified_by_decompressing() -> None:
    good = frame(flg=0x70)
    check_lz4_frame(good, CAP)
    bad = bytearray(good)
    bad[-5] ^= 1  # the block checksum's last byte
    with pytest.raises(UnreadableFrame, match="Block checksum mismatch"):
        check_lz4_frame(bytes(bad), CAP)
    with pytest.raises(UnreadableFrame):
        check_lz4_frame(good, 10)  # decompresses to more than allowed
