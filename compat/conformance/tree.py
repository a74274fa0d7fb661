"""Decoded answers as plain trees (dict / list / str / int / bool / None) to compare and print.

`plain(container)` turns the codec's construct Containers into dicts in field order; UUIDs
become their text; bytes become `0x...` hex, except the `records` of a Fetch answer, which
become the decoded batches (`batches`): what a client reads from them, batch by batch, so that
a difference shows as "the second batch's producer epoch" rather than as two hex blobs. A
batch's CRC is not kept (it covers fields normalised away, such as the producer id); whether
it is valid is (`crc_ok`).
"""

from __future__ import annotations

import re
import struct
import uuid
from typing import Any

from protocol.records import (
    InvalidBatch,
    decode_records,
    iter_batches,
    verify_crc,
)

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
_HEX_LIMIT = 96  # bytes of a blob shown before it is cut (with its length)


def plain(value: Any, field: str = "") -> Any:
    """A plain tree of `value` (a decoded answer or any part of it)."""
    if isinstance(value, dict):
        return {
            k: plain(v, k) for k, v in value.items() if not (isinstance(k, str) and k[:1] == "_")
        }
    if isinstance(value, list | tuple):
        return [plain(v, field) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        if field == "records":
            return batches(bytes(value))
        return blob(bytes(value))
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e]{4,}")


def blob(data: bytes) -> str:
    """Bytes as `0x` hex with runs of 4+ printable ASCII characters shown as quoted text (so
    that the names inside a group's subscription are normalised like any other string), cut
    after `_HEX_LIMIT` bytes with the full length."""
    shown = data[:_HEX_LIMIT]
    parts, pos = [], 0
    for m in _PRINTABLE_RUN.finditer(shown):
        parts.append(shown[pos : m.start()].hex())
        parts.append('"' + m.group().decode("ascii") + '"')
        pos = m.end()
    parts.append(shown[pos:].hex())
    text = "0x" + "".join(parts)
    return text if len(data) <= _HEX_LIMIT else f"{text}... ({len(data)} bytes)"


def text_or_blob(data: bytes | None) -> str | None:
    """A record key or value: its text when it is printable UTF-8, else `blob`."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return blob(data)
    return text if text.isprintable() else blob(data)


def batches(data: bytes) -> list[dict[str, Any]]:
    """The record batches in `data` as dicts (a trailing partial batch is shown as such)."""
    out: list[dict[str, Any]] = []
    done = 0
    try:
        for pos, header in iter_batches(data):
            out.append(_batch(data, pos, header))
            done = pos + header.size
    except InvalidBatch as exc:
        out.append({"unreadable_bytes": len(data) - done, "why": str(exc)})
    return out


def _batch(data: bytes, pos: int, h: Any) -> dict[str, Any]:
    view: dict[str, Any] = {
        "base_offset": h.base_offset,
        "size": h.size,
        "partition_leader_epoch": h.partition_leader_epoch,
        "magic": h.magic,
        "crc_ok": verify_crc(data, pos, h),
        "compression": CODECS.get(h.compression, str(h.compression)),
        "timestamp_type": "LogAppendTime" if h.timestamp_type else "CreateTime",
        "transactional": h.is_transactional,
        "control": h.is_control,
        "last_offset_delta": h.last_offset_delta,
        "base_timestamp": h.base_timestamp,
        "max_timestamp": h.max_timestamp,
        "producer_id": h.producer_id,
        "producer_epoch": h.producer_epoch,
        "base_sequence": h.base_sequence,
        "records_count": h.records_count,
    }
    try:
        records = decode_records(data, pos)
    except InvalidBatch as exc:
        view["records"] = f"undecodable: {exc}"
        return view
    view["records"] = [
        {
            "offset": r.offset,
            "timestamp": r.timestamp,
            "key": _control_key(r.key) if h.is_control else text_or_blob(r.key),
            "value": text_or_blob(r.value),
            "headers": [[k, text_or_blob(v)] for k, v in r.headers],
        }
        for r in records
    ]
    return view


def _control_key(key: bytes | None) -> str:
    if key is None or len(key) < 4:
        return f"control key {text_or_blob(key)}"
    version, kind = struct.unpack_from(">hh", key)
    return f"control v{version} {_CONTROL_TYPES.get(kind, kind)}"
