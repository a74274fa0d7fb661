"""Exceptions raised by the sans-I/O protocol layer.

Every failure to decode bytes from the wire surfaces as a `ProtocolError` subclass; nothing
else (no `struct.error`, `IndexError`, `UnicodeDecodeError`, construct errors) escapes
`protocol.codec` / `protocol.headers` / `protocol.framing` on bad input.

- `MalformedRequest` (alias `MalformedFrame`): the bytes do not follow the schema (short
  read, bad length, over-long varint, count larger than the bytes left). Invalid UTF-8 is
  not an error: like Kafka (Java's decoder), it is replaced with U+FFFD.
- `RequestTooComplex` (a `MalformedRequest`): decoding the body would create more Python
  objects than the decode budget allows (`protocol.primitives.DecodeBudget`); raised at the
  array count, before the objects exist. Kafka answers an undecodable request by closing the
  connection, and so does the broker.
- `UnknownApiKey`: the request header names an API key we have no schema for.
- `UnsupportedVersion`: the API is known but the version is outside `VALID_VERSIONS`;
  carries the parsed `header` so the caller can answer ApiVersions with a v0
  UNSUPPORTED_VERSION response (or log the client id before closing).
- `FrameTooLarge`: a frame's declared size is negative or above the configured cap.
- `EncodeError`: a value handed to a builder does not fit the schema (a programming error
  in the caller, never caused by client bytes); the message names the field path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from protocol.headers import RequestHeader


class ProtocolError(Exception):
    """Base class of every error raised by `protocol`."""


class MalformedRequest(ProtocolError):
    """Bytes from the wire that cannot be decoded with the expected schema."""


MalformedFrame = MalformedRequest


class RequestTooComplex(MalformedRequest):
    """Decoding would cost more memory (estimated Python objects) than the decode budget."""

    def __init__(self, charged: int, limit: int) -> None:
        super().__init__(
            f"decoding needs more than the budget of {limit} bytes of objects "
            f"(estimate {charged} bytes so far)"
        )
        self.charged = charged
        self.limit = limit


class UnknownApiKey(ProtocolError):
    """The request header carries an API key without a schema."""

    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown api key {api_key}")
        self.api_key = api_key


class UnsupportedVersion(ProtocolError):
    """The API version in the request header is outside the schema's valid versions."""

    def __init__(self, header: RequestHeader) -> None:
        super().__init__(f"unsupported version {header.api_version} of api key {header.api_key}")
        self.header = header


class FrameTooLarge(ProtocolError):
    """A frame declares a size that is negative or above the receiver's cap."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame size {size} outside 0..{limit}")
        self.size = size
        self.limit = limit


class EncodeError(ProtocolError, ValueError):
    """A value given to a builder does not fit its field (names the field path)."""
