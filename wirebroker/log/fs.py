"""The file-system seam of the storage layer.

Every byte the log reads or writes goes through a `FileSystem`, so tests can inject torn
writes, ENOSPC, failing fsyncs and so on. `OsFileSystem` is the real one: thin wrappers over
`os` calls on raw file descriptors (no userspace buffering: once `write` returns, the bytes
are in the kernel's page cache and survive a process crash).

Helpers built on the primitives (so injected faults reach them too):

- `write_all(fs, fd, data)`: loop over short writes.
- `pread_exact(fs, fd, size, offset)`: loop over short reads; returns fewer bytes only at EOF.
- `read_file(fs, path)`: whole file, or None when it does not exist.
- `write_file_atomic(fs, path, data)`: `<path>.tmp` + write + fsync + rename + fsync of the
  directory, so a crash leaves either the old or the new content, never a mix (a failed
  write removes its `.tmp` again).
- `fsync_dirs(fs, paths)`: `fs.fsync_dir` of each path; many at once run on a few threads
  (fsync releases the GIL, and the device overlaps the writes), the first error raised
  after all were tried.
- `write_file(fs, path, data)`: create/replace `path` with `data`, no fsync, no rename: for
  files whose loss or truncation after a power failure is repaired at start-up (the
  `partition.metadata` of a new partition, see `LogManager.create_many`). A process crash
  (`kill -9`) cannot tear it (the bytes are in the page cache once `write` returns); it can
  leave the file empty if the process dies between the open and the write.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Protocol

__all__ = [
    "FileSystem",
    "OsFileSystem",
    "fsync_dirs",
    "pread_exact",
    "read_file",
    "write_all",
    "write_file",
    "write_file_atomic",
]

Buffer = bytes | bytearray | memoryview

#: Flags of an append-only data file (the `.log` and the index files).
APPEND_FLAGS = os.O_RDWR | os.O_CREAT | os.O_APPEND


class FileSystem(Protocol):
    """The operations the storage layer needs. Every method may raise OSError."""

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int: ...
    def close(self, fd: int) -> None: ...
    def write(self, fd: int, data: Buffer) -> int: ...
    def pread(self, fd: int, size: int, offset: int) -> bytes: ...
    def fsync(self, fd: int) -> None: ...
    def ftruncate(self, fd: int, length: int) -> None: ...
    def fsize(self, fd: int) -> int: ...
    def mtime_ms(self, path: Path) -> int: ...
    def rename(self, src: Path, dst: Path) -> None: ...
    def unlink(self, path: Path) -> None: ...
    def listdir(self, path: Path) -> list[str]: ...
    def makedirs(self, path: Path) -> None: ...
    def exists(self, path: Path) -> bool: ...
    def is_dir(self, path: Path) -> bool: ...
    def rmtree(self, path: Path) -> None: ...
    def fsync_dir(self, path: Path) -> None: ...


class OsFileSystem:
    """The real file system."""

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        return os.open(path, flags | getattr(os, "O_CLOEXEC", 0), mode)

    def close(self, fd: int) -> None:
        os.close(fd)

    def write(self, fd: int, data: Buffer) -> int:
        return os.write(fd, data)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return os.pread(fd, size, offset)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def ftruncate(self, fd: int, length: int) -> None:
        os.ftruncate(fd, length)

    def fsize(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def mtime_ms(self, path: Path) -> int:
        return os.stat(path).st_mtime_ns // 1_000_000

    def rename(self, src: Path, dst: Path) -> None:
        os.replace(src, dst)

    def unlink(self, path: Path) -> None:
        os.unlink(path)

    def listdir(self, path: Path) -> list[str]:
        return os.listdir(path)

    def makedirs(self, path: Path) -> None:
        os.makedirs(path, exist_ok=True)

    def exists(self, path: Path) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: Path) -> bool:
        return os.path.isdir(path)

    def rmtree(self, path: Path) -> None:
        shutil.rmtree(path)

    def fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_all(fs: FileSystem, fd: int, data: Buffer) -> None:
    """Write every byte of `data` (retrying short writes). Raises OSError."""
    view = memoryview(data)
    while view:
        n = fs.write(fd, view)
        if n <= 0:
            raise OSError("write returned 0 bytes")
        view = view[n:]


def pread_exact(fs: FileSystem, fd: int, size: int, offset: int) -> bytes:
    """Read `size` bytes at `offset`; fewer only when the file ends first."""
    data = fs.pread(fd, size, offset)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = fs.pread(fd, size - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def read_file(fs: FileSystem, path: Path) -> bytes | None:
    """The whole file, or None if it does not exist."""
    try:
        fd = fs.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        size = fs.fsize(fd)
        return pread_exact(fs, fd, size, 0)
    finally:
        fs.close(fd)


#: `fsync_dirs` uses threads from this many paths on, at most FSYNC_THREADS of them.
FSYNC_PARALLEL_FROM = 16
FSYNC_THREADS = 8


def fsync_dirs(fs: FileSystem, paths: Sequence[Path]) -> None:
    """fsync every directory in `paths` (see the module docstring). Raises the first error
    (OSError, or whatever the file system raised) once every fsync has finished."""
    if len(paths) < FSYNC_PARALLEL_FROM:
        for path in paths:
            fs.fsync_dir(path)
        return
    with ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="fsync-dir") as pool:
        futures = [pool.submit(fs.fsync_dir, path) for path in paths]
    for future in futures:
        future.result()


def write_file(fs: FileSystem, path: Path, data: Buffer) -> None:
    """Create or truncate `path` and write `data` (no fsync: see the module docstring)."""
    fd = fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        write_all(fs, fd, data)
    finally:
        fs.close(fd)


def write_file_replace(fs: FileSystem, path: Path, data: Buffer) -> None:
    """Replace `path` with `data` atomically but not durably (tmp + rename, no fsync): a
    reader sees the old content or the new, never a mix; after a crash the old content, the
    new or an empty or partial file may be found. A failed write removes the temporary file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        write_file(fs, tmp, data)
    except OSError:
        with suppress(OSError):
            fs.unlink(tmp)
        raise
    fs.rename(tmp, path)


def write_file_atomic(fs: FileSystem, path: Path, data: Buffer) -> None:
    """Replace `path` with `data` atomically and durably (tmp + fsync + rename + dir fsync).

    When writing the temporary file fails (ENOSPC, EIO), it is removed again (best effort),
    so a full disk does not also fill up with half-written `.tmp` files; `path` is untouched.
    """
    tmp = path.with_name(path.name + ".tmp")
    fd = fs.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        try:
            write_all(fs, fd, data)
            fs.fsync(fd)
        finally:
            fs.close(fd)
    except OSError:
        with suppress(OSError):
            fs.unlink(tmp)
        raise
    fs.rename(tmp, path)
    fs.fsync_dir(path.parent)
