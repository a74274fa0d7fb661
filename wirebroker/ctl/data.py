"""`wirebroker data path|reset`: the local broker's data directory.

The directory is the one `wirebroker serve` would use with the same `--data-dir`/`--config`
(config.py: `log.dirs`, else `log.dir`, default a per-user directory). `path` prints it (and
whether a broker holds it); `reset` deletes everything in it (topics, committed offsets, the
cluster id in meta.properties) but the `.lock` file, holding that lock (wirebroker/log/
dir_lock.py, Kafka's `<dir>/.lock` flock) while it does, so it refuses while a broker runs on
the directory and no broker can start on it half-deleted. It asks before deleting unless
`--yes`; without a terminal to ask on, it refuses without `--yes`.

JSON: path {"path", "exists", "in_use", "bytes"}; reset {"path", "removed"}.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from wirebroker.ctl import CliError
from wirebroker.ctl._output import emit_json, note


def data_dirs(args: argparse.Namespace) -> list[Path]:
    from wirebroker.config import BrokerConfig, ConfigError, parse_properties

    values: dict[str, str] = {}
    try:
        if args.config:
            values.update(parse_properties(Path(args.config).read_text(encoding="utf-8")))
        if args.data_dir:
            values["log.dirs"] = str(Path(args.data_dir).expanduser())
        config = BrokerConfig(values)
    except (ConfigError, OSError) as exc:
        raise CliError(f"configuration error: {exc}", code=2) from None
    return [Path(d).expanduser() for d in config.log_dirs]


def _in_use(directory: Path) -> bool:
    from wirebroker.log.dir_lock import LogDirLockedError, LogDirLocks

    if not (directory / ".lock").exists():
        return False
    try:
        LogDirLocks.acquire([directory]).release()
    except LogDirLockedError:
        return True
    return False


def _size(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())


def path(args: argparse.Namespace) -> int:
    documents = []
    for directory in data_dirs(args):
        exists = directory.is_dir()
        documents.append(
            {
                "path": str(directory),
                "exists": exists,
                "in_use": exists and _in_use(directory),
                "bytes": _size(directory) if exists else 0,
            }
        )
    if args.format == "json":
        emit_json(documents[0] if len(documents) == 1 else documents)
        return 0
    for doc in documents:
        print(doc["path"])
        state = "in use by a broker" if doc["in_use"] else "not in use"
        note(f"  {'exists' if doc['exists'] else 'does not exist'}, {state}, {doc['bytes']} bytes")
    return 0


def reset(args: argparse.Namespace) -> int:
    from wirebroker.log.dir_lock import LOCK_FILE, LogDirLockedError, LogDirLocks

    removed = []
    for directory in data_dirs(args):
        if not directory.is_dir():
            note(f"{directory}: does not exist, nothing to reset")
            continue
        try:
            locks = LogDirLocks.acquire([directory])
        except LogDirLockedError:
            raise CliError(f"{directory} is in use by a running broker: stop it first") from None
        try:
            entries = sorted(p for p in directory.iterdir() if p.name != LOCK_FILE)
            if entries and not args.yes:
                if not sys.stdin.isatty():
                    raise CliError(f"refusing to delete {directory} without --yes")
                answer = input(f"delete everything in {directory} ({len(entries)} entries)? [y/N] ")
                if answer.strip().lower() not in ("y", "yes"):
                    raise CliError("not confirmed; nothing deleted")
            for entry in entries:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        finally:
            locks.release()
        removed.append({"path": str(directory), "removed": len(entries)})
        if args.format != "json":
            note(f"{directory}: removed {len(entries)} entries")
    if args.format == "json":
        emit_json(removed[0] if len(removed) == 1 else removed)
    return 0
