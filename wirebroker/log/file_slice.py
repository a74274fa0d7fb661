"""A slice of a segment's `.log`, sent later with sendfile (Kafka's FileRecords slice).

A leader serves a follower's and a read_uncommitted consumer's Fetch with `FileSlice`s instead
of bytes read into the process (`Segment.slice`, `PartitionLog.read_to_send(zero_copy=True)`):
the Fetch response becomes a `protocol.framing.GatherFrame` whose records are the slice, and
the connection sends it with `os.sendfile` from the segment's file descriptor straight to the
socket (`wirebroker.transport.send_frame`). On Linux over loopback the kernel then hands the page
cache pages to the socket without copying them; the pread + join + send of the bytes path
copies every byte three times. Measured (docs/replication.md, "Follower reads by sendfile").

A slice names bytes that may change before they are sent: the segment may be truncated (a
leader that becomes a follower), deleted (retention, a topic deletion, a log cleaner swap)
or closed, and a truncated range may be written again with other batches. So a slice keeps
its segment, not a file descriptor, and the segment's `generation` (bumped by every
truncation) as of the slice. Right before each sendfile call -- with no await between the
check and the call -- the slice checks that the segment is still open, of the same generation
and at least as long as the slice; if not it raises `RegionGone`, the connection closes and
the follower (or consumer) fetches again. Appends only add bytes past the slice, so they never
matter.

Bytes served this way are not CRC-checked by the leader (Kafka checks none on reads), so only
batches appended since the log was opened are sliced (their CRCs were checked on the way in;
`PartitionLog.read_to_send`); older ones are read and checked (`Segment.read`). The follower
checks every batch's CRC before appending, as always (`LogValidator.validate_replicated`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from wirebroker.log.fs import pread_exact
from wirebroker.transport import RegionGone

if TYPE_CHECKING:
    from wirebroker.log.segment import Segment

__all__ = ["FileSlice"]


class FileSlice:
    """`length` bytes at `position` of `segment`'s `.log` (see the module docstring)."""

    __slots__ = ("_generation", "_segment", "length", "position")

    def __init__(self, segment: Segment, position: int, length: int) -> None:
        self._segment = segment
        self._generation = segment.generation
        self.position = position
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"FileSlice({self._segment.log_path.name}, {self.position}, {self.length})"

    def _check(self) -> int:
        """The segment's file descriptor; RegionGone when the bytes may have changed."""
        seg = self._segment
        if seg.fd < 0 or seg.generation != self._generation:
            raise RegionGone(f"{seg.log_path.name} was truncated or closed before it was sent")
        if seg.size < self.position + self.length:
            raise RegionGone(f"{seg.log_path.name} is shorter than a slice not yet sent")
        return seg.fd

    def __bytes__(self) -> bytes:
        """The bytes, read now (for a peer that is not a socket)."""
        fd = self._check()
        data = pread_exact(self._segment.fs, fd, self.length, self.position)
        if len(data) != self.length:
            raise RegionGone(f"{self._segment.log_path.name} ended inside a slice")
        return data

    def sendfile(self, out_fd: int, done: int, count: int) -> int:
        """One sendfile of at most `count` bytes from `done` on to `out_fd`
        (`transport.FileRegion`)."""
        fd = self._check()
        return os.sendfile(out_fd, fd, self.position + done, min(count, self.length - done))
