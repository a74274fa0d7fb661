"""Request and response headers (hand-written with `struct`; the body follows them).

Request header layouts (all big-endian):

    v0: int16 api_key, int16 api_version, int32 correlation_id
    v1: v0 + client_id: nullable string (int16 length, -1 = null)
    v2: v1 + tagged-field section (unsigned varint count, then tag/size/data each)

The client id is never compact, even in v2 (Kafka's RequestHeader declares it
`flexibleVersions: none`). Tagged fields of the header are skipped (none are known). As in
Kafka, an invalid UTF-8 client id is decoded with replacement characters.

Which version a frame uses follows from its API key and version (see
`protocol.api.request_header_version`): 2 when the API version is flexible, else 1. The
version is applied even when it is outside the API's valid versions, so an ApiVersions
request of a newer version than ours (v2 header) is still fully parsed and
`UnsupportedVersion(header)` lets the server answer with a v0 UNSUPPORTED_VERSION response.

Response header layouts: v0 = int32 correlation_id; v1 = v0 + empty tagged-field section.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from protocol.api import SCHEMAS
from protocol.exceptions import MalformedRequest, UnknownApiKey, UnsupportedVersion
from protocol.varint import read_uvarint

_PREFIX = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A parsed request header."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def parse_header(frame: bytes | bytearray, header_version: int) -> tuple[RequestHeader, int]:
    """Parse a request header of an explicit version -> (header, body offset)."""
    end = len(frame)
    if end < 8:
        raise MalformedRequest(f"request header needs 8 bytes, frame has {end}")
    api_key, api_version, correlation_id = _PREFIX.unpack_from(frame, 0)
    pos = 8
    client_id: str | None = None
    if header_version >= 1:
        if end < pos + 2:
            raise MalformedRequest("truncated client id length")
        n = _INT16.unpack_from(frame, pos)[0]
        pos += 2
        if n >= 0:
            if pos + n > end:
                raise MalformedRequest(f"client id of {n} bytes, {end - pos} left")
            client_id = bytes(frame[pos : pos + n]).decode("utf-8", "replace")
            pos += n
        elif n != -1:
            raise MalformedRequest(f"negative client id length {n}")
    if header_version >= 2:
        count, pos = read_uvarint(frame, pos, len(frame))
        if count > end - pos:
            raise MalformedRequest(f"{count} header tagged fields, {end - pos} bytes left")
        for _ in range(count):
            _tag, pos = read_uvarint(frame, pos, len(frame))
            size, pos = read_uvarint(frame, pos, len(frame))
            if pos + size > end:
                raise MalformedRequest(f"header tagged field of {size} bytes, {end - pos} left")
            pos += size
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def parse_request_header(frame: bytes | bytearray) -> tuple[RequestHeader, int]:
    """Parse the header of a request frame (without its length prefix).

    Returns (header, offset of the body). Raises `MalformedRequest` on truncated or invalid
    bytes, `UnknownApiKey` when no schema exists for the key, `UnsupportedVersion` (with
    the parsed header) when the version is outside the API's valid versions.
    """
    if len(frame) < 4:
        raise MalformedRequest(f"request header needs 8 bytes, frame has {len(frame)}")
    api_key, api_version = struct.unpack_from(">hh", frame, 0)
    module = SCHEMAS.get(api_key)
    if module is None:
        raise UnknownApiKey(api_key)
    fmin = module.FLEXIBLE_MIN
    header_version = 2 if fmin is not None and api_version >= fmin else 1
    header, offset = parse_header(frame, header_version)
    lo, hi = module.VALID_VERSIONS
    if not lo <= api_version <= hi:
        raise UnsupportedVersion(header)
    return header, offset


def encode_request_header(header: RequestHeader, header_version: int) -> bytes:
    """Bytes of a request header (for clients and tests)."""
    out = _PREFIX.pack(header.api_key, header.api_version, header.correlation_id)
    if header_version >= 1:
        if header.client_id is None:
            out += b"\xff\xff"
        else:
            raw = header.client_id.encode("utf-8")
            out += _INT16.pack(len(raw)) + raw
    if header_version >= 2:
        out += b"\x00"
    return out


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    """Bytes of a response header: v0 correlation id, v1 adds an empty tag section."""
    if header_version == 0:
        return _INT32.pack(correlation_id)
    return _INT32.pack(correlation_id) + b"\x00"


def parse_response_header(frame: bytes | bytearray, header_version: int) -> tuple[int, int]:
    """(correlation id, body offset) of a response frame (for clients and tests)."""
    if len(frame) < 4:
        raise MalformedRequest("response header needs 4 bytes")
    correlation_id = _INT32.unpack_from(frame, 0)[0]
    pos = 4
    if header_version >= 1:
        count, pos = read_uvarint(frame, pos, len(frame))
        for _ in range(count):
            _tag, pos = read_uvarint(frame, pos, len(frame))
            size, pos = read_uvarint(frame, pos, len(frame))
            if pos + size > len(frame):
                raise MalformedRequest("truncated response header tagged field")
            pos += size
    return correlation_id, pos
