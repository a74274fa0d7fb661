"""Produce v0-2: just enough to refuse them with an answer instead of a closed connection.

Kafka 4.0 removed Produce v0-2 (message formats v0/v1) but still advertises Produce from
version 0 (KAFKA-18659), so a client that believes the advertisement, or one that skips
ApiVersions (librdkafka `api.version.request=false` with `broker.version.fallback=0.9.0`,
kafka-python with `api_version=(0, 10)`), sends them. Kafka closes the connection; the client
then reconnects and retries until its message timeout, with no hint of the cause. wirebroker
answers instead, with UNSUPPORTED_VERSION for every partition of the request, in the
response layout of the request's version, so the client fails fast and says why.

Request v0-2 (request header v1, identical body for the three versions)::

    acks int16, timeout_ms int32,
    [topic_data: name string, [partition_data: index int32, records bytes (int32 length)]]

Response v0-2 (response header v0: correlation id)::

    [responses: name string, [index int32, error_code int16, base_offset int64,
                              log_append_time_ms int64 (v2 only)]],
    throttle_time_ms int32 (v1+)

Only the partition indexes are kept from the request; the message sets are skipped unread.
Every length is checked against the bytes left before it is used; bad input raises
`MalformedRequest`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from protocol.exceptions import MalformedRequest
from protocol.headers import RequestHeader, parse_header

LEGACY_VERSIONS = (0, 1, 2)
PRODUCE = 0

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class LegacyProduce:
    header: RequestHeader
    acks: int
    topics: list[tuple[str, list[int]]]  # (topic name, partition indexes) in request order


class _Reader:
    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or n > len(self.data) - self.pos:
            raise MalformedRequest(
                f"Produce v0-2: {n} bytes wanted, {len(self.data) - self.pos} left"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def count(self) -> int:
        n = self.i32()
        if n < 0:
            raise MalformedRequest(f"Produce v0-2: negative array length {n}")
        if n > len(self.data) - self.pos:  # every element takes at least one byte
            raise MalformedRequest(f"Produce v0-2: {n} elements cannot fit")
        return n

    def string(self) -> str:
        n = self.i16()
        if n < 0:
            raise MalformedRequest("Produce v0-2: null topic name")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedRequest("Produce v0-2: topic name is not UTF-8") from exc


def parse_legacy_produce(frame: bytes) -> LegacyProduce:
    """Parse a Produce v0-2 request frame (without its length prefix)."""
    header, offset = parse_header(frame, 1)
    if header.api_key != PRODUCE or header.api_version not in LEGACY_VERSIONS:
        raise MalformedRequest(f"not a Produce v0-2 request: {header}")
    r = _Reader(frame, offset)
    acks = r.i16()
    r.i32()  # timeout_ms
    topics: list[tuple[str, list[int]]] = []
    for _ in range(r.count()):
        name = r.string()
        partitions = []
        for _ in range(r.count()):
            partitions.append(r.i32())
            size = r.i32()
            if size > 0:
                r.take(size)
        topics.append((name, partitions))
    return LegacyProduce(header, acks, topics)


def _string(value: str) -> bytes:
    data = value.encode("utf-8")
    return _I16.pack(len(data)) + data


def encode_legacy_produce_error(request: LegacyProduce, error_code: int) -> bytes:
    """The complete response frame (length prefix included): `error_code` for every partition."""
    version = request.header.api_version
    body = bytearray(_I32.pack(request.header.correlation_id))
    body += _I32.pack(len(request.topics))
    for name, partitions in request.topics:
        body += _string(name) + _I32.pack(len(partitions))
        for index in partitions:
            body += struct.pack(">ihq", index, error_code, -1)
            if version >= 2:
                body += struct.pack(">q", -1)  # log_append_time_ms
    if version >= 1:
        body += _I32.pack(0)  # throttle_time_ms
    return _I32.pack(len(body)) + bytes(body)
