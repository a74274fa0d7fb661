"""CRC-32C: known vectors (RFC 3720 B.4), continuation, buffer types, crcmod agreement."""

from __future__ import annotations

import random

import crcmod.predefined
import pytest

from protocol.crc32c import BACKEND, crc32c


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0),
        (b"123456789", 0xE3069283),
        (bytes(32), 0x8A9136AA),
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
)
def test_known_vectors(data: bytes, expected: int) -> None:
    assert crc32c(data) == expected


def test_backend_is_the_fast_package() -> None:
    assert BACKEND == "crc32c"


def test_continuation_equals_whole() -> None:
    rng = random.Random(1)
    data = rng.randbytes(10_000)
    for cut in (0, 1, 17, 4096, 9_999, 10_000):
        assert crc32c(data[cut:], crc32c(data[:cut])) == crc32c(data)


def test_accepts_bytearray_and_memoryviews_without_copy_semantics_change() -> None:
    data = random.Random(2).randbytes(5000)
    expected = crc32c(data)
    ba = bytearray(b"xx" + data + b"yy")
    assert crc32c(bytearray(data)) == expected
    assert crc32c(memoryview(ba)[2:-2]) == expected  # writable view, offset slice
    assert crc32c(memoryview(bytes(ba))[2:-2]) == expected  # read-only view


def test_agrees_with_crcmod_on_random_data() -> None:
    reference = crcmod.predefined.mkCrcFun("crc-32c")
    rng = random.Random(3)
    for size in (1, 7, 64, 1000, 65_537):
        data = rng.randbytes(size)
        assert crc32c(data) == reference(data)
        assert crc32c(data[size // 2 :], crc32c(data[: size // 2])) == reference(data)


def test_single_bit_flip_changes_crc() -> None:
    data = bytearray(random.Random(4).randbytes(256))
    base = crc32c(data)
    for bit in range(len(data) * 8):
        data[bit // 8] ^= 1 << (bit % 8)
        assert crc32c(data) != base
        data[bit // 8] ^= 1 << (bit % 8)
