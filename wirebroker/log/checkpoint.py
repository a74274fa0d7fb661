"""Checkpoint files in Kafka's text formats, written atomically (tmp + fsync + rename).

Per log directory (`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`)::

    0                      version
    <count>                number of lines that follow
    <topic> <partition> <offset>
    ...

Per partition directory (`leader-epoch-checkpoint`)::

    0
    <count>
    <epoch> <start offset>
    ...

Reading is strict: a wrong version, a count that does not match the lines, or a malformed
line raises `CheckpointError`; callers decide what a bad file means (the log loader treats a
bad recovery-point file as "recover everything" and a bad epoch file as "rebuild from the
log").

`partition.metadata` (Kafka's `PartitionMetadataFile`)::

    version: 0
    topic_id: <topic id, 22-char url-safe base64 without padding>
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from wirebroker.log.fs import (
    FileSystem,
    read_file,
    write_file,
    write_file_atomic,
    write_file_replace,
)

__all__ = [
    "CheckpointError",
    "format_topic_id",
    "parse_topic_id",
    "read_epoch_checkpoint",
    "read_offset_checkpoint",
    "read_partition_metadata",
    "write_epoch_checkpoint",
    "write_offset_checkpoint",
    "write_partition_metadata",
]

_VERSION = 0


class CheckpointError(ValueError):
    """A checkpoint file that does not parse."""


def _parse_lines(text: str, fields: int) -> list[list[str]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise CheckpointError("checkpoint shorter than its header")
    if lines[0].strip() != str(_VERSION):
        raise CheckpointError(f"unsupported checkpoint version {lines[0]!r}")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CheckpointError(f"bad entry count {lines[1]!r}") from None
    body = lines[2:]
    if count != len(body):
        raise CheckpointError(f"checkpoint claims {count} entries, has {len(body)}")
    out = []
    for line in body:
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"malformed checkpoint line {line!r}")
        out.append(parts)
    return out


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError("checkpoint is not utf-8") from None


def read_offset_checkpoint(fs: FileSystem, path: Path) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset}; {} when the file does not exist. Raises CheckpointError."""
    data = read_file(fs, path)
    if data is None:
        return {}
    out: dict[tuple[str, int], int] = {}
    for topic, partition, offset in _parse_lines(_decode(data), 3):
        try:
            out[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CheckpointError(f"bad number in {topic} {partition} {offset}") from None
    return out


def write_offset_checkpoint(
    fs: FileSystem, path: Path, offsets: dict[tuple[str, int], int]
) -> None:
    lines = [str(_VERSION), str(len(offsets))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    write_file_atomic(fs, path, ("\n".join(lines) + "\n").encode())


def read_epoch_checkpoint(fs: FileSystem, path: Path) -> list[tuple[int, int]] | None:
    """[(epoch, start offset)] in file order; None when the file does not exist.

    Raises CheckpointError when malformed, or when epochs or offsets are not increasing.
    """
    data = read_file(fs, path)
    if data is None:
        return None
    out: list[tuple[int, int]] = []
    for epoch_s, offset_s in _parse_lines(_decode(data), 2):
        try:
            epoch, offset = int(epoch_s), int(offset_s)
        except ValueError:
            raise CheckpointError(f"bad number in {epoch_s} {offset_s}") from None
        if epoch < 0 or offset < 0:
            raise CheckpointError(f"negative epoch entry {epoch} {offset}")
        if out and (epoch <= out[-1][0] or offset < out[-1][1]):
            raise CheckpointError("epoch entries are not increasing")
        out.append((epoch, offset))
    return out


def write_epoch_checkpoint(
    fs: FileSystem, path: Path, entries: list[tuple[int, int]], *, durable: bool = True
) -> None:
    """Replace the checkpoint atomically; `durable`: fsynced too (`write_file_atomic`),
    else renamed into place without an fsync (`write_file_replace`): after a crash the old
    checkpoint, the new one or a malformed one may be found, and the loader copes with each
    (see `PartitionLog.sync_epoch_checkpoint`)."""
    lines = [str(_VERSION), str(len(entries))] + [f"{e} {o}" for e, o in entries]
    data = ("\n".join(lines) + "\n").encode()
    if durable:
        write_file_atomic(fs, path, data)
    else:
        write_file_replace(fs, path, data)


def format_topic_id(topic_id: uuid.UUID) -> str:
    """Kafka's `Uuid.toString()`: url-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def parse_topic_id(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise CheckpointError(f"bad topic id {text!r}")
    return uuid.UUID(bytes=raw)


def write_partition_metadata(
    fs: FileSystem, path: Path, topic_id: uuid.UUID, *, durable: bool = True
) -> None:
    """`durable`: atomically and fsynced (`write_file_atomic`); otherwise a plain write with
    no fsync (`write_file`), for a new partition whose file is checked at start-up."""
    data = f"version: 0\ntopic_id: {format_topic_id(topic_id)}".encode()
    if durable:
        write_file_atomic(fs, path, data)
    else:
        write_file(fs, path, data)


def read_partition_metadata(fs: FileSystem, path: Path) -> uuid.UUID | None:
    """The topic id, or None when the file does not exist. Raises CheckpointError."""
    data = read_file(fs, path)
    if data is None:
        return None
    fields: dict[str, str] = {}
    for line in _decode(data).splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise CheckpointError("malformed partition.metadata")
    try:
        return parse_topic_id(fields["topic_id"])
    except (ValueError, TypeError):
        raise CheckpointError("malformed topic id in partition.metadata") from None
