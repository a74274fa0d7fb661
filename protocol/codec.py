"""Request decoding and response encoding (and the reverse, for clients and tests).

    decode_request(frame, *, max_decoded_bytes=None) -> (RequestHeader, Container)
    encode_response(api_key, api_version, correlation_id, body) -> bytes (whole frame)
    encode_request(api_key, api_version, correlation_id, client_id, body) -> bytes (frame)
    decode_response(api_key, api_version, frame) -> (correlation_id, Container)

`frame` is a frame without its 4-byte length prefix (what `FrameDecoder.next_frame`
returns); the encoders return complete frames including the prefix.

Errors: undecodable bytes raise `MalformedRequest`, an unknown key `UnknownApiKey`, a version
outside the schema's `VALID_VERSIONS` `UnsupportedVersion(header)` (for ApiVersions too: its
header is parsed as v2 for versions above ours, see `protocol.headers`). Nothing else
escapes on bad bytes. A body that does not fit its schema when encoding raises
`EncodeError` naming the field path.

Decode budget: `max_decoded_bytes` bounds the estimated bytes of Python objects the body
decodes into (None = unlimited: tools and tests). A frame of tiny structs decodes into ~100x
its size, so the frame cap alone does not bound the memory of a request; over the budget,
`RequestTooComplex` (a `MalformedRequest`) is raised at the array count that would exceed it,
before its elements are created. The estimates are those of `protocol.primitives` ("Decode
budget"); the Produce fast path charges the same amounts. Responses are decoded unlimited.

Hot paths: Produce requests are decoded and Fetch and Metadata responses encoded by the
hand-written `protocol.fastcodec` (Produce records come out as memoryviews of the frame instead
of bytes copies; a response body outside its fast path falls back to construct). Property
tests prove both equal to the construct schemas.

Trailing bytes after the body are ignored, as Kafka does: its generated readers consume
what the schema describes and `RequestContext.parseRequest` does not check that the buffer
was exhausted (a newer client may append fields we do not know only in tagged sections, so
this matters only for buggy clients).
"""

from __future__ import annotations

import io
import struct
from typing import Any

from construct import ConstructError, Container

from protocol.api import ApiKey, response_header_version, schema_module
from protocol.exceptions import EncodeError, MalformedRequest, ProtocolError
from protocol.fastcodec import (
    decode_fetch_response,
    decode_produce_request,
    encode_fetch_response,
    encode_metadata_response,
)
from protocol.framing import GatherFrame, is_region
from protocol.headers import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    parse_request_header,
    parse_response_header,
)
from protocol.primitives import MAX_CHARGE_PER_BYTE, DecodeBudget

__all__ = [
    "decode_request",
    "decode_request_generic",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_generic",
]

_DECODE_ERRORS = (
    ConstructError,
    struct.error,
    ValueError,
    IndexError,
    KeyError,
    TypeError,
    OverflowError,
    EOFError,
    MemoryError,
    RecursionError,
)
_LENGTH = struct.Struct(">i")
_PRODUCE = int(ApiKey.PRODUCE)
_FETCH = int(ApiKey.FETCH)
_METADATA = int(ApiKey.METADATA)
#: api_key << 16 | version -> `MessageSpec.charge_per_byte` of the request (filled on use)
_CHARGE_PER_BYTE: dict[int, int] = {}


def _parse_body(
    schema: Any, data: bytes | bytearray, offset: int, budget: DecodeBudget | None = None
) -> Container:
    stream = io.BytesIO(data)
    stream.seek(offset)
    if budget is not None:
        stream.budget = budget  # type: ignore[attr-defined]  # read by the count readers
    try:
        return schema._parse(stream, None, "(parsing)")
    except ProtocolError:
        raise
    except _DECODE_ERRORS as exc:
        raise MalformedRequest(f"undecodable body: {exc!r}") from exc


def _build_frame(prefix: bytes, spec: Any, version: int, body: Any) -> bytes:
    """Length prefix + `prefix` (a header) + the body built with `spec`'s schema."""
    stream = io.BytesIO()
    stream.write(b"\x00\x00\x00\x00")
    stream.write(prefix)
    try:
        spec.schema(version)._build(body, stream, None, "(building)")
    except Exception as exc:
        # Re-run the interpreted construct: its errors name the failing field.
        try:
            spec.interpreted(version).build(body)
        except EncodeError:
            raise
        except Exception as exc2:
            raise EncodeError(f"{spec.name} v{version}: {exc2}") from exc2
        raise EncodeError(f"{spec.name} v{version}: {exc!r}") from exc
    view = stream.getbuffer()
    _LENGTH.pack_into(view, 0, len(view) - 4)
    view.release()
    return stream.getvalue()


def decode_request(
    frame: bytes | bytearray, *, max_decoded_bytes: int | None = None
) -> tuple[RequestHeader, Container]:
    """Parse a request frame (without length prefix) into its header and body.

    `max_decoded_bytes`: the decode budget (None = unlimited); a body over it raises
    `RequestTooComplex`.
    """
    header, offset = parse_request_header(frame)
    budget = None
    if max_decoded_bytes is not None and len(frame) * MAX_CHARGE_PER_BYTE > max_decoded_bytes:
        key = header.api_key << 16 | header.api_version
        ratio = _CHARGE_PER_BYTE.get(key)
        if ratio is None:
            spec = schema_module(header.api_key).REQUEST
            ratio = _CHARGE_PER_BYTE[key] = spec.charge_per_byte(header.api_version)
        if (len(frame) - offset) * ratio > max_decoded_bytes:
            # Only bodies that could exceed the budget carry one (see `charge_per_byte`).
            budget = DecodeBudget(max_decoded_bytes)
    if header.api_key == _PRODUCE:
        return header, decode_produce_request(frame, offset, header.api_version, budget)
    module = schema_module(header.api_key)
    body = _parse_body(module.request_schema(header.api_version), frame, offset, budget)
    return header, body


def decode_request_generic(
    frame: bytes, *, max_decoded_bytes: int | None = None
) -> tuple[RequestHeader, Container]:
    """`decode_request` through the construct schemas only (tests, benchmarks)."""
    header, offset = parse_request_header(frame)
    module = schema_module(header.api_key)
    budget = None if max_decoded_bytes is None else DecodeBudget(max_decoded_bytes)
    schema = module.request_schema(header.api_version)
    return header, _parse_body(schema, frame, offset, budget)


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: Any
) -> bytes | GatherFrame:
    """A complete response frame: length prefix, response header, body built from `body`.
    A Fetch response whose records include a region (`protocol.framing.GatherFrame`) is a
    `GatherFrame`; when construct has to build it, the regions are read into bytes first."""
    if api_key == _FETCH:
        fast = encode_fetch_response(api_version, correlation_id, body)
        if fast is not None:
            return fast
        body = _regions_read(body)
    elif api_key == _METADATA:
        fast = encode_metadata_response(api_version, correlation_id, body)
        if fast is not None:
            return fast
    return encode_response_generic(api_key, api_version, correlation_id, body)


def _regions_read(body: Any) -> Any:
    """A Fetch response body with every records region replaced by its bytes (construct
    packs bytes only); `body` itself when it has none."""
    if not isinstance(body, dict):
        return body
    topics = body.get("responses")
    if not isinstance(topics, list):
        return body

    def read(p: Any) -> Any:
        records = p.get("records") if isinstance(p, dict) else None
        if not is_region(records):
            return p
        return {**p, "records": bytes(records)}  # type: ignore[arg-type]

    return {
        **body,
        "responses": [
            {**t, "partitions": [read(p) for p in t.get("partitions") or []]}
            if isinstance(t, dict) and isinstance(t.get("partitions"), list)
            else t
            for t in topics
        ],
    }


def encode_response_generic(
    api_key: int, api_version: int, correlation_id: int, body: Any
) -> bytes:
    """`encode_response` through the construct schemas only (tests, benchmarks)."""
    module = schema_module(api_key)
    header = encode_response_header(correlation_id, response_header_version(api_key, api_version))
    return _build_frame(header, module.RESPONSE, api_version, body)


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: Any,
) -> bytes:
    """A complete request frame (for tests and tools acting as a client)."""
    module = schema_module(api_key)
    fmin = module.FLEXIBLE_MIN
    header_version = 2 if fmin is not None and api_version >= fmin else 1
    header = encode_request_header(
        RequestHeader(api_key, api_version, correlation_id, client_id), header_version
    )
    return _build_frame(header, module.REQUEST, api_version, body)


def decode_response(
    api_key: int, api_version: int, frame: bytes | bytearray
) -> tuple[int, Container]:
    """Parse a response frame (without length prefix) -> (correlation id, body)."""
    module = schema_module(api_key)
    correlation_id, offset = parse_response_header(
        frame, response_header_version(api_key, api_version)
    )
    if api_key == _FETCH:
        fast = decode_fetch_response(frame, offset, api_version)
        if fast is not None:
            return correlation_id, fast
    body = _parse_body(module.response_schema(api_version), frame, offset)
    return correlation_id, body
