"""Sans-I/O Kafka protocol: framing, headers, generated message schemas, records.

Public entry points (see ARCHITECTURE.md, "protocol/"):

- `protocol.framing.FrameDecoder`, `protocol.framing.frame`
- `protocol.codec.decode_request`, `protocol.codec.encode_response` (and the client-side
  `encode_request` / `decode_response` used by tests and tools)
- `protocol.api.ApiKey`, `SCHEMAS`, `request_header_version`, `response_header_version`
- `protocol.headers.RequestHeader`, `parse_request_header`, `encode_response_header`
- `protocol.exceptions`: `ProtocolError` and its subclasses
- `protocol.messages.<api>`: generated schemas (`request_schema(v)`, `response_schema(v)`)

Never imports trio, sockets, `wirebroker` or kafka-python.
"""

from __future__ import annotations

from protocol.api import SCHEMAS, ApiKey, request_header_version, response_header_version
from protocol.codec import decode_request, decode_response, encode_request, encode_response
from protocol.exceptions import (
    EncodeError,
    FrameTooLarge,
    MalformedFrame,
    MalformedRequest,
    ProtocolError,
    UnknownApiKey,
    UnsupportedVersion,
)
from protocol.framing import FrameDecoder, frame
from protocol.headers import RequestHeader, encode_response_header, parse_request_header

__all__ = [
    "SCHEMAS",
    "ApiKey",
    "EncodeError",
    "FrameDecoder",
    "FrameTooLarge",
    "MalformedFrame",
    "MalformedRequest",
    "ProtocolError",
    "RequestHeader",
    "UnknownApiKey",
    "UnsupportedVersion",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_header",
    "frame",
    "parse_request_header",
    "request_header_version",
    "response_header_version",
]
