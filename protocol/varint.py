"""Kafka's varints: the one codec every protocol module uses.

- unsigned varint (LEB128, 7 bits per byte, low group first, at most 5 bytes): lengths,
  counts and tags of flexible messages and of `__consumer_offsets` records;
- zigzag varint / varlong (at most 5 / 10 bytes, the unsigned value within 32 / 64 bits):
  record fields inside a record batch.

Readers take a buffer (bytes, bytearray, memoryview), a position and an end, never read at
or past `end`, and return (value, next position); a malformed varint raises `error` (the
caller's exception class: `MalformedRequest` by default, `InvalidBatch` for records,
`GroupRecordError` for group records). Writers append to a bytearray. Plain functions (no
classes): they sit on the hot paths (record decoding, the Produce fast codec).
"""

from __future__ import annotations

from typing import Any

from protocol.exceptions import MalformedRequest

__all__ = ["read_uvarint", "read_varint", "write_uvarint", "write_varint"]

_MASK64 = 0xFFFFFFFFFFFFFFFF


def read_uvarint(
    buf: Any, pos: int, end: int, error: type[Exception] = MalformedRequest
) -> tuple[int, int]:
    """Unsigned varint (at most 5 bytes) at `pos` -> (value, next position)."""
    if pos >= end:
        raise error("truncated varint")
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    value = byte & 0x7F
    shift = 7
    for i in range(1, 5):
        if pos + i >= end:
            raise error("truncated varint")
        byte = buf[pos + i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + i + 1
        shift += 7
    raise error("varint longer than 5 bytes")


def read_varint(
    buf: Any, pos: int, end: int, bits: int = 64, error: type[Exception] = MalformedRequest
) -> tuple[int, int]:
    """Zigzag varint (bits=32, at most 5 bytes) or varlong (bits=64, at most 10 bytes) at
    `pos` -> (value, next position); the unsigned value must fit in `bits` bits."""
    raw = 0
    shift = 0
    limit = pos + (bits + 6) // 7
    while True:
        if pos >= end:
            raise error("truncated varint")
        if pos >= limit:
            raise error("varint too long")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if raw >> bits:
        raise error("varint overflows")
    return (raw >> 1) ^ -(raw & 1), pos


def write_uvarint(out: bytearray, value: int) -> None:
    """Append the unsigned varint of `value` (>= 0; callers check their own upper bound)."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    """Append the zigzag varlong of the signed 64-bit `value`."""
    raw = ((value << 1) ^ (value >> 63)) & _MASK64
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
