"""protocol/varint.py: the one varint codec (unsigned and zigzag, read at a position)."""

from __future__ import annotations

import pytest
from protocoltest_helpers import zigzag_varint

from protocol.compression import InvalidBatch
from protocol.exceptions import MalformedRequest
from protocol.varint import read_uvarint, read_varint, write_uvarint, write_varint


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, 2**28, 2**32 - 1])
def test_unsigned_round_trip_at_a_position(value: int) -> None:
    out = bytearray(b"xx")
    write_uvarint(out, value)
    out += b"yy"
    got, pos = read_uvarint(out, 2, len(out))
    assert got == value
    assert out[pos:] == b"yy"


def test_unsigned_errors_use_the_callers_class() -> None:
    with pytest.raises(MalformedRequest, match="truncated"):
        read_uvarint(b"\x80\x80", 0, 2)
    with pytest.raises(MalformedRequest, match="truncated"):
        read_uvarint(b"\x80\x00", 0, 1)  # never reads at or past `end`
    with pytest.raises(InvalidBatch, match="longer than 5"):
        read_uvarint(b"\x80" * 5 + b"\x01", 0, 6, InvalidBatch)


@pytest.mark.parametrize("value", [0, -1, 1, -64, 64, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)])
def test_zigzag_matches_an_independent_encoder(value: int) -> None:
    out = bytearray()
    write_varint(out, value)
    assert bytes(out) == zigzag_varint(value)
    assert read_varint(out, 0, len(out)) == (value, len(out))


def test_zigzag_bounds() -> None:
    assert read_varint(zigzag_varint(2**31 - 1), 0, 5, 32) == (2**31 - 1, 5)
    with pytest.raises(InvalidBatch, match="overflow"):
        read_varint(zigzag_varint(2**31), 0, 5, 32, InvalidBatch)
    with pytest.raises(InvalidBatch, match="too long"):
        read_varint(b"\x80" * 5 + b"\x00", 0, 6, 32, InvalidBatch)
    with pytest.raises(MalformedRequest, match="truncated"):
        read_varint(b"\x80", 0, 1)
