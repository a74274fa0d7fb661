"""Produce v0-2, which our generated codecs do not know (their schemas start at v3): both
brokers still advertise Produce from v0 (KAFKA-18659), so the corpus sends them with this
small hand-written codec (request header v1; response header v0; layouts in
protocol/legacy_produce.py's docstring)."""

from __future__ import annotations

import struct
from typing import Any

from compat.conformance.script import Ctx
from compat.conformance.transport import CLIENT_ID, Connection, Request

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def _string(text: str) -> bytes:
    data = text.encode()
    return _I16.pack(len(data)) + data


def request(
    conn: Connection, version: int, topic: str, partition: int, message_set: bytes, acks: int = -1
) -> Request:
    correlation = conn.next_correlation()
    header = struct.pack(">hhi", 0, version, correlation) + _string(CLIENT_ID)
    body = (
        struct.pack(">hi", acks, 10000)
        + _I32.pack(1)
        + _string(topic)
        + _I32.pack(1)
        + _I32.pack(partition)
        + _I32.pack(len(message_set))
        + message_set
    )
    frame = header + body
    return Request(0, version, _I32.pack(len(frame)) + frame, correlation, decoder(version))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: struct.Struct) -> int:
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return int(value)

    def string(self) -> str:
        n = self.take(_I16)
        text = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return text


def decoder(version: int) -> Any:
    def decode(frame: bytes) -> tuple[int, dict[str, Any]]:
        r = _Reader(frame)
        correlation = r.take(_I32)
        responses = []
        for _ in range(r.take(_I32)):
            name = r.string()
            parts = []
            for _ in range(r.take(_I32)):
                part = {
                    "index": r.take(_I32),
                    "error_code": r.take(_I16),
                    "base_offset": r.take(_I64),
                }
                if version >= 2:
                    part["log_append_time_ms"] = r.take(_I64)
                parts.append(part)
            responses.append({"name": name, "partition_responses": parts})
        body: dict[str, Any] = {"responses": responses}
        if version >= 1:
            body["throttle_time_ms"] = r.take(_I32)
        if r.pos != len(frame):
            raise ValueError(f"{len(frame) - r.pos} bytes after the Produce v{version} body")
        return correlation, body

    return decode


def raw_step_request(version: int, logical: str, message_set: bytes) -> Any:
    """A `Step.raw` for Produce v`version` of `message_set` to partition 0 of `logical`."""

    def make(ctx: Ctx, conn: Connection) -> Request:
        return request(conn, version, ctx.name(logical), 0, message_set)

    return make
