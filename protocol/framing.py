"""Kafka framing: every request and response is an int32 big-endian size, then that many bytes.

`FrameDecoder` is a sans-I/O incremental splitter: feed it whatever the socket returned
with `receive_data`, take complete frames with `next_frame` (None while incomplete).
`bytes_wanted` tells the reader how much of the head frame is still missing, so a 1 MB request
can be read in a few large receives instead of many 64 KiB ones.

Buffering: one `bytearray` plus a read position. Appends are amortized O(1); a complete
frame is copied out once (through a memoryview); consumed bytes are dropped when the whole
buffer has been consumed or when they make up more than half of it, so many small frames and
one huge frame arriving in small pieces both cost linear time.

Limits: a declared size that is negative or above `max_frame_bytes` raises `FrameTooLarge`
as soon as its 4 bytes are known (in `receive_data` for the frame at the head of the buffer,
in `next_frame` for the following ones), before its body is buffered. After that error the
decoder must not be used further (the connection is to be closed).
"""

from __future__ import annotations

import struct

from protocol.exceptions import FrameTooLarge

_SIZE = struct.Struct(">i")
_COMPACT_MIN = 1 << 16


def frame(payload: bytes) -> bytes:
    """`payload` with its 4-byte big-endian length prefix."""
    return _SIZE.pack(len(payload)) + payload


class FrameDecoder:
    """Splits a byte stream into Kafka frames (see module docstring)."""

    def __init__(self, max_frame_bytes: int) -> None:
        if max_frame_bytes < 0:
            raise ValueError("max_frame_bytes must be >= 0")
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._pos = 0

    @property
    def buffered_bytes(self) -> int:
        """Bytes received and not yet returned as part of a frame."""
        return len(self._buf) - self._pos

    @property
    def bytes_wanted(self) -> int:
        """Bytes still missing from the frame at the head of the buffer: what the next read
        should ask for to complete it (the missing part of the length prefix while that is
        incomplete; 0 when a whole frame is buffered). The caller may ask for more (a minimum
        read size) and should cap it; an oversize prefix counts as its 4 bytes only (it raises
        in `receive_data`/`next_frame`)."""
        have = len(self._buf) - self._pos
        if have < 4:
            return 4 - have
        size: int = _SIZE.unpack_from(self._buf, self._pos)[0]
        if size < 0 or size > self.max_frame_bytes:
            return 0
        return max(0, 4 + size - have)

    def _head_size(self) -> int | None:
        """Declared size of the frame at the read position (checked), or None if unknown."""
        if len(self._buf) - self._pos < 4:
            return None
        size: int = _SIZE.unpack_from(self._buf, self._pos)[0]
        if size < 0 or size > self.max_frame_bytes:
            raise FrameTooLarge(size, self.max_frame_bytes)
        return size

    def receive_data(self, data: bytes) -> None:
        """Append bytes read from the connection; may raise `FrameTooLarge`."""
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data
        self._head_size()

    def next_frame(self) -> bytes | None:
        """The next complete frame without its length prefix, or None if incomplete."""
        size = self._head_size()
        if size is None:
            return None
        start = self._pos + 4
        end = start + size
        if end > len(self._buf):
            return None
        with memoryview(self._buf) as view:
            payload = view[start:end].tobytes()
        self._pos = end
        buffered = len(self._buf)
        if end == buffered:
            self._buf.clear()
            self._pos = 0
        elif end >= _COMPACT_MIN and end * 2 >= buffered:
            del self._buf[:end]
            self._pos = 0
        return payload
