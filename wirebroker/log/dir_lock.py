"""An exclusive lock on each log directory for the broker's lifetime (Kafka's `<log dir>/.lock`).

Two brokers on one directory would both append to the same segments, and the one that exits
last writes the clean-shutdown marker over the other's torn data: acknowledged records lost
without a word. So, before anything else of a log directory is read or written, the broker
takes an advisory `flock(LOCK_EX | LOCK_NB)` on `<dir>/.lock` and holds it until its logs are
closed. The file itself stays (Kafka never deletes it either): only the lock matters, and the
kernel drops it when the holder exits, also on `kill -9`, so a crash never leaves a stale lock.

`flock` locks belong to an open file description, so a second lock from the same process (two
`Broker`s in one test process) conflicts too, unlike POSIX `fcntl` record locks.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterable
from pathlib import Path

LOCK_FILE = ".lock"


class LogDirLockedError(Exception):
    """Another process (or another broker in this one) holds a log directory's lock."""

    def __init__(self, directory: Path) -> None:
        super().__init__(
            f"log directory {directory} is in use by another broker "
            f"(could not lock {directory / LOCK_FILE})"
        )
        self.directory = directory


class LogDirLocks:
    """The held locks of a broker's log directories; `release()` once the logs are closed."""

    def __init__(self, fds: list[int]) -> None:
        self._fds = fds

    @classmethod
    def acquire(cls, directories: Iterable[Path]) -> LogDirLocks:
        """Lock every directory (creating `.lock` when missing) or raise `LogDirLockedError`,
        holding none of them."""
        fds: list[int] = []
        try:
            for directory in directories:
                fds.append(_lock(Path(directory)))
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return cls(fds)

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def release(self) -> None:
        """Drop every lock (closing the descriptor releases it); idempotent."""
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)

    def __del__(self) -> None:
        self.release()


def _lock(directory: Path) -> int:
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise LogDirLockedError(directory) from None
        raise
    return fd
