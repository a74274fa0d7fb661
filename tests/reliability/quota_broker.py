"""Run the real broker with a byte quota on its storage writes: the disk-full fallback.

    python tests/reliability/quota_broker.py QUOTA_FILE [wirebroker serve arguments...]

Used by the disk-full test only where a small tmpfs cannot be mounted (no root or no
CAP_SYS_ADMIN). Before `wirebroker.cli.main` runs, the methods of
`wirebroker.log.fs.OsFileSystem` (the storage layer's FileSystem seam: every byte of segments,
indexes, snapshots and checkpoints goes through it) are wrapped so that the bytes held by
files written through the seam never exceed the number in QUOTA_FILE (re-read on every
write, so the test "frees space" by raising it, without a restart):

- usage starts at the total size of the files under the data directory;
- `write` adds what it wrote; a write that does not fit writes what fits (a short write,
  as the kernel does) and the next one raises OSError(ENOSPC);
- `ftruncate` and `open(..., O_TRUNC)` adjust usage by the size change, `unlink` and a
  `rename` over an existing file subtract the file removed.

Writers outside the seam (the topic store, meta.properties) are not limited: this is a
simulation of a full disk for the log layer, not a file system.
"""

from __future__ import annotations

import errno
import os
import sys
from contextlib import suppress
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirebroker.log import fs as fsmod

_state: dict[str, object] = {"usage": None}


def _usage(root: Path) -> int:
    cached = _state["usage"]
    if isinstance(cached, int):
        return cached
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            with suppress(OSError):
                total += os.stat(os.path.join(dirpath, name)).st_size
    _state["usage"] = total
    return total


def _add(delta: int) -> None:
    _state["usage"] = int(_state["usage"] or 0) + delta  # type: ignore[call-overload]


def install(quota_file: Path, root: Path) -> None:
    """Wrap OsFileSystem so that writes under `root` obey the quota in `quota_file`."""
    cls = fsmod.OsFileSystem
    orig_write, orig_truncate = cls.write, cls.ftruncate
    orig_unlink, orig_rename, orig_open = cls.unlink, cls.rename, cls.open

    def quota() -> int:
        try:
            return int(quota_file.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    def write(self: fsmod.OsFileSystem, fd: int, data: fsmod.Buffer) -> int:
        room = quota() - _usage(root)
        if room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device (quota)")
        view = memoryview(data)
        n = orig_write(self, fd, view[:room] if len(view) > room else view)
        _add(n)
        return n

    def ftruncate(self: fsmod.OsFileSystem, fd: int, length: int) -> None:
        before = os.fstat(fd).st_size
        orig_truncate(self, fd, length)
        _usage(root)
        _add(length - before)

    def _size(path: Path) -> int:
        try:
            return os.stat(path).st_size
        except OSError:
            return 0

    def unlink(self: fsmod.OsFileSystem, path: Path) -> None:
        size = _size(path)
        orig_unlink(self, path)
        _usage(root)
        _add(-size)

    def rename(self: fsmod.OsFileSystem, src: Path, dst: Path) -> None:
        replaced = _size(dst)
        orig_rename(self, src, dst)
        _usage(root)
        _add(-replaced)

    def open_(self: fsmod.OsFileSystem, path: Path, flags: int, mode: int = 0o644) -> int:
        dropped = _size(path) if flags & os.O_TRUNC else 0
        fd = orig_open(self, path, flags, mode)
        _usage(root)
        _add(-dropped)
        return fd

    def rmtree(self: fsmod.OsFileSystem, path: Path) -> None:
        fsmod.shutil.rmtree(path)
        _state["usage"] = None  # recount on the next write

    cls.write = write  # type: ignore[method-assign]
    cls.ftruncate = ftruncate  # type: ignore[method-assign]
    cls.unlink = unlink  # type: ignore[method-assign]
    cls.rename = rename  # type: ignore[method-assign]
    cls.open = open_  # type: ignore[method-assign]
    cls.rmtree = rmtree  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    quota_file = Path(argv[0])
    args = argv[1:]
    data_dir = Path(args[args.index("--data-dir") + 1])
    install(quota_file, data_dir)
    from wirebroker.cli import main as broker_main

    return broker_main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
