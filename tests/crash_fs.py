"""A file system that dies mid-operation: the crash-at-every-step tests of the storage layer
and of the topic store share it (tests/unit/log/test_create_fast.py,
tests/unit/cluster/test_topic_batch.py)."""

from __future__ import annotations

import os
from pathlib import Path

from wirebroker.log.fs import OsFileSystem

__all__ = ["Crash", "CrashingFileSystem"]


class Crash(BaseException):
    """The process died here (BaseException: no `except Exception` cleanup runs)."""


class CrashingFileSystem(OsFileSystem):
    """Raises Crash at the `crash_at`-th state-changing operation and at every one after it
    (a dead process does nothing more). Counts the operations when `crash_at` is None.
    fsyncs count as operations and do nothing (tests do not survive power loss)."""

    MUTATING_FLAGS = os.O_CREAT | os.O_TRUNC

    def __init__(self, crash_at: int | None = None) -> None:
        self.crash_at = crash_at
        self.ops = 0
        self.fds: set[int] = set()

    def _step(self) -> None:
        if self.crash_at is not None and self.ops >= self.crash_at:
            raise Crash(self.ops)
        self.ops += 1

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        if flags & self.MUTATING_FLAGS:
            self._step()
        fd = super().open(path, flags, mode)
        self.fds.add(fd)
        return fd

    def close(self, fd: int) -> None:
        self.fds.discard(fd)
        super().close(fd)

    def write(self, fd: int, data: bytes | bytearray | memoryview) -> int:
        self._step()
        return super().write(fd, data)

    def ftruncate(self, fd: int, length: int) -> None:
        self._step()
        super().ftruncate(fd, length)

    def rename(self, src: Path, dst: Path) -> None:
        self._step()
        super().rename(src, dst)

    def unlink(self, path: Path) -> None:
        self._step()
        super().unlink(path)

    def makedirs(self, path: Path) -> None:
        self._step()
        super().makedirs(path)

    def rmtree(self, path: Path) -> None:
        self._step()
        super().rmtree(path)

    def fsync(self, fd: int) -> None:
        self._step()

    def fsync_dir(self, path: Path) -> None:
        self._step()

    def release(self) -> None:
        """Close what the dead process left open (the kernel would)."""
        for fd in list(self.fds):
            os.close(fd)
        self.fds.clear()
