"""Kafka framing: every request and response is an int32 big-endian size, then that many bytes.

`FrameDecoder` is a sans-I/O incremental splitter: feed it whatever the socket returned
with `receive_data`, take complete frames with `next_frame` (None while incomplete).
`bytes_wanted` tells the reader how much of the head frame is still missing, so a 1 MB request
can be read in a few large receives instead of many 64 KiB ones.

Buffering: one `bytearray` plus a read position. Appends are amortized O(1); a complete
frame is copied out once (through a memoryview); consumed bytes are dropped when the whole
buffer has been consumed or when they make up more than half of it, so many small frames and
one huge frame arriving in small pieces both cost linear time.

Large frames in place: once the size of the head frame is known, it is at least
`in_place_min` bytes (64 KiB by default) and at least 1/IN_PLACE_RATIO (1/16) of it has
arrived, `receive_buffer()` gives the part of that frame still missing as a writable
memoryview of the frame's own `bytearray` (what was already buffered is moved there once).
The caller receives straight into it (`socket.recv_into`) and reports the count with
`received_into(n)`; `next_frame` then returns that `bytearray` itself. A 1 MB Produce request
or Fetch response is so copied by nobody but the kernel, instead of twice (into the buffer,
out of it) -- two 1 MB memmoves per frame (docs/replication.md, "Frames received in place").
The buffer is allocated whole, as Kafka's
NetworkReceive does; the ratio bounds it to 16 times what the peer has sent (and the frame
cap): a peer announcing 100 MB and sending 10 bytes makes the broker hold 10 bytes.
`receive_data` still works in that state (bytes go into the frame first, the rest is
buffered behind it), so a caller may mix both. A receive into the view never reads past the
frame, so no byte of the next frame is ever in the frame's buffer. `next_frame` returns a
frame received in place as that `bytearray`, any other as `bytes`.

Reuse: a `bytearray(size)` is zeroed by CPython before the kernel overwrites it, a memset of
the whole frame (docs/replication.md, "Frames received in place"). So the decoder
keeps the last in-place frame it returned (up to SPARE_MAX bytes) and makes the next one in
it, resized within its allocation, but only once the caller holds no reference to it any more
(`sys.getrefcount`: the decoder's own; a memoryview of it counts too) -- until then a new
buffer is allocated, so a frame the caller still uses is never written. Cost: a connection
keeps up to SPARE_MAX bytes after its last large frame, until it closes, and all decoders of
the process together at most SPARE_TOTAL_MAX (beyond it a frame's buffer is not kept), so many
connections that each once sent a large frame do not pin a buffer each.

Limits: a declared size that is negative or above `max_frame_bytes` raises `FrameTooLarge`
as soon as its 4 bytes are known (in `receive_data` for the frame at the head of the buffer,
in `next_frame` for the following ones), before its body is buffered. After that error the
decoder must not be used further (the connection is to be closed).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from protocol.exceptions import FrameTooLarge

_SIZE = struct.Struct(">i")
_COMPACT_MIN = 1 << 16
#: Frames at least this big can be received in place (`FrameDecoder.receive_buffer`)...
IN_PLACE_MIN = 1 << 16
#: ... once at least 1/IN_PLACE_RATIO of them has arrived (the bound on the allocation).
IN_PLACE_RATIO = 16
#: An in-place frame up to this size is kept for reuse (see "Reuse" above)...
SPARE_MAX = 2 << 20
#: ... while all decoders together keep at most this many bytes so.
SPARE_TOTAL_MAX = 64 << 20
_spare_total = 0  # bytes kept by all decoders (their spares' allocations)


def _unshared_refcount() -> int:
    """What `sys.getrefcount` says of a buffer only a local name refers to, passed the same
    way `_new_frame` passes its spare: 2 on CPython 3.11-3.13, but 3.14 may borrow the
    argument's reference (its docs: "may return smaller values"), so it is measured."""
    probe = bytearray(1)
    return sys.getrefcount(probe)


_UNSHARED = _unshared_refcount()


def frame(payload: bytes) -> bytes:
    """`payload` with its 4-byte big-endian length prefix."""
    return _SIZE.pack(len(payload)) + payload


def is_bytes_like(obj: object) -> bool:
    return isinstance(obj, bytes | bytearray | memoryview)


def is_region(obj: object) -> bool:
    """Not bytes-like, not a str, and has len() and bytes(): a `GatherFrame` region."""
    cls = type(obj)
    return (
        hasattr(cls, "__bytes__")
        and hasattr(cls, "__len__")
        and not isinstance(obj, str | bytes | bytearray | memoryview)
    )


class Region(Protocol):
    """Bytes kept outside the process until sent (see `GatherFrame`)."""

    def __len__(self) -> int: ...
    def __bytes__(self) -> bytes: ...


class GatherFrame:
    """A frame in pieces, for a gather send: `parts` are bytes and *regions*.

    A region is any object that is not bytes-like, with `len()` and `bytes()`: bytes that stay
    outside the process until they are sent (a slice of a log file, which the broker's
    transport sends with `sendfile`: `wirebroker.log.file_slice`). Adjacent bytes-like
    pieces are joined when the frame is made, so the parts alternate between one `bytes` and
    one region. `len()` is the frame's whole size (length prefix included); `bytes()` the
    whole frame with every region read (for a peer that is not a socket, and for tests)."""

    __slots__ = ("parts", "size")

    def __init__(self, pieces: Sequence[Any]) -> None:
        parts: list[bytes | Region] = []
        run: list[Any] = []
        size = 0
        for piece in pieces:
            n = len(piece)
            size += n
            if is_bytes_like(piece):
                if n:
                    run.append(piece)
                continue
            if run:
                parts.append(b"".join(run))
                run = []
            parts.append(piece)
        if run:
            parts.append(b"".join(run))
        self.parts = parts
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(bytes(p) for p in self.parts)


class FrameDecoder:
    """Splits a byte stream into Kafka frames (see module docstring)."""

    _spare: bytearray | None = None  # the last in-place frame returned, kept for reuse
    _spare_bytes = 0  # its allocation, counted in _spare_total

    def __init__(self, max_frame_bytes: int, in_place_min: int = IN_PLACE_MIN) -> None:
        if max_frame_bytes < 0:
            raise ValueError("max_frame_bytes must be >= 0")
        self.max_frame_bytes = max_frame_bytes
        self.in_place_min = max(1, in_place_min)
        self._buf = bytearray()
        self._pos = 0
        # the head frame while it is received in place: its payload, and how much is filled
        self._frame: bytearray | None = None
        self._filled = 0
        #: in-place frames made in a reused buffer (see "Reuse" in the module doc)
        self.reused = 0

    @property
    def buffered_bytes(self) -> int:
        """Bytes received and not yet returned as part of a frame."""
        held = len(self._buf) - self._pos
        if self._frame is not None:
            held += 4 + self._filled
        return held

    def receive_buffer(self) -> memoryview | None:
        """The missing part of the head frame, to receive into in place (see the module
        doc), or None: the head frame is not known yet, is below `in_place_min`, too little
        of it has arrived, or it is complete; then receive with `receive_data`. Report what
        was written with `received_into`. May raise `FrameTooLarge`."""
        if self._frame is None:
            size = self._head_size()
            if size is None or size < self.in_place_min:
                return None
            have = len(self._buf) - self._pos - 4
            if have >= size or have * IN_PLACE_RATIO < size:
                return None
            frame = self._new_frame(size)
            with memoryview(self._buf) as view:
                frame[:have] = view[self._pos + 4 :]
            self._buf.clear()
            self._pos = 0
            self._frame, self._filled = frame, have
        elif self._filled == len(self._frame):
            return None  # complete: next_frame hands it over
        return memoryview(self._frame)[self._filled :]

    def _new_frame(self, size: int) -> bytearray:
        """A buffer of `size` bytes for an in-place frame: the spare, resized within its
        allocation (no zeroing, no allocation), when nobody else refers to it and it fits;
        else a new one. Every byte of it is written before it is returned as a frame."""
        spare = self._spare
        self._keep(None)
        # references: `spare` (and getrefcount's argument); any more is the caller's
        if spare is not None and sys.getrefcount(spare) == _UNSHARED:
            alloc = spare.__alloc__()
            if alloc // 2 <= size < alloc:  # CPython resizes in place in this range
                try:
                    if size < len(spare):
                        del spare[size:]
                    elif size > len(spare):
                        spare.extend(bytes(size - len(spare)))
                except BufferError:  # exported after all: not ours to reuse
                    return bytearray(size)
                self.reused += 1
                return spare
        return bytearray(size)

    def _keep(self, spare: bytearray | None) -> None:
        """Make `spare` the buffer kept for reuse (None: keep none), within SPARE_TOTAL_MAX."""
        global _spare_total
        _spare_total -= self._spare_bytes
        self._spare, self._spare_bytes = None, 0
        if spare is not None:
            size = spare.__alloc__()
            if _spare_total + size <= SPARE_TOTAL_MAX:
                self._spare, self._spare_bytes = spare, size
                _spare_total += size

    def __del__(self) -> None:
        if self._spare_bytes:  # give its share of SPARE_TOTAL_MAX back
            self._keep(None)

    def received_into(self, n: int) -> None:
        """`n` bytes were written at the start of the last `receive_buffer()` view."""
        frame = self._frame
        if frame is None or n < 0 or self._filled + n > len(frame):
            raise ValueError(f"received_into({n}) without room for it")
        self._filled += n

    @property
    def bytes_wanted(self) -> int:
        """Bytes still missing from the frame at the head of the buffer: what the next read
        should ask for to complete it (the missing part of the length prefix while that is
        incomplete; 0 when a whole frame is buffered). The caller may ask for more (a minimum
        read size) and should cap it; an oversize prefix counts as its 4 bytes only (it raises
        in `receive_data`/`next_frame`)."""
        if self._frame is not None:
            return len(self._frame) - self._filled
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
        frame = self._frame
        if frame is not None:  # into the frame received in place first
            n = min(len(data), len(frame) - self._filled)
            frame[self._filled : self._filled + n] = memoryview(data)[:n]
            self._filled += n
            data = data[n:]
            if not data:
                return
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data
        self._head_size()

    def next_frame(self) -> bytes | bytearray | None:
        """The next complete frame without its length prefix, or None if incomplete (a
        `bytearray` when it was received in place)."""
        frame = self._frame
        if frame is not None:
            if self._filled < len(frame):
                return None
            self._frame, self._filled = None, 0
            if len(frame) <= SPARE_MAX:
                self._keep(frame)
            return frame
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
