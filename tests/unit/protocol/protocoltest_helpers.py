"""Helpers shared by the protocol unit tests (written independently of the code under test)."""

from __future__ import annotations

from typing import Any


def zigzag_varint(value: int) -> bytes:
    """A signed varint (zigzag, 64-bit), as record fields are encoded."""
    raw = ((value << 1) ^ (value >> 63)) & ((1 << 64) - 1)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def plain(value: Any) -> Any:
    """Containers/lists/memoryviews -> dicts/lists/bytes, for comparison."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value
