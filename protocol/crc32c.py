"""CRC-32C (Castagnoli), the checksum of Kafka record batches v2.

`crc32c(data, crc=0)` returns the CRC-32C of `data`; passing a previous result as `crc`
continues the checksum, so `crc32c(b, crc32c(a)) == crc32c(a + b)`. `data` may be `bytes`,
`bytearray` or a contiguous `memoryview` (read-only or writable): nothing is copied.

Implementation: the `crc32c` PyPI package (C, SSE4.2/ARMv8 instructions when present, a
software table otherwise; LGPL-2.1-or-later, used unmodified as a dependency), falling back
to crcmod's predefined "crc-32c" (C extension) when `crc32c` is not installed.
`BACKEND` names the one in use.

crc32c is far faster than crcmod on large batches and, unlike google-crc32c (as fast), takes
writable memoryviews, hence its choice (figures: docs/benchmarks.md, "What the data path's
design buys").
"""

from __future__ import annotations

from collections.abc import Callable

_impl: Callable[[bytes | bytearray | memoryview, int], int]

try:
    import crc32c as _crc32c_pkg

    _impl = _crc32c_pkg.crc32c
    BACKEND = "crc32c"
except ImportError:  # pragma: no cover - exercised only without the crc32c package
    import crcmod.predefined

    _impl = crcmod.predefined.mkCrcFun("crc-32c")
    BACKEND = "crcmod"


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of `data`, continuing from `crc` (the CRC of the bytes before it)."""
    return _impl(data, crc)


__all__ = ["BACKEND", "crc32c"]
