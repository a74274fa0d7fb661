"""Request/response headers v0-v2, unknown keys, unsupported versions, ApiVersions fallback."""

from __future__ import annotations

import struct

import pytest

from protocol import codec
from protocol.api import ApiKey
from protocol.exceptions import MalformedRequest, UnknownApiKey, UnsupportedVersion
from protocol.headers import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    parse_header,
    parse_request_header,
    parse_response_header,
)


def _prefix(key: int, version: int, corr: int) -> bytes:
    return struct.pack(">hhi", key, version, corr)


def test_v0_header_has_no_client_id() -> None:
    header, offset = parse_header(_prefix(3, 0, 7) + b"body", 0)
    assert header == RequestHeader(3, 0, 7, None)
    assert offset == 8


def test_v1_header() -> None:
    frame = _prefix(3, 4, 9) + b"\x00\x03abc" + b"BODY"
    header, offset = parse_request_header(frame)
    assert header == RequestHeader(ApiKey.METADATA, 4, 9, "abc")
    assert frame[offset:] == b"BODY"


def test_v1_null_and_empty_client_id() -> None:
    header, offset = parse_request_header(_prefix(3, 4, 1) + b"\xff\xff")
    assert header.client_id is None and offset == 10
    header, offset = parse_request_header(_prefix(3, 4, 1) + b"\x00\x00")
    assert header.client_id == "" and offset == 10


def test_v2_header_client_id_is_not_compact_and_tags_are_skipped() -> None:
    # Metadata v12 is flexible: header v2. Client id keeps its int16 length.
    tags = b"\x02" + b"\x00\x02hi" + b"\x05\x00"
    frame = _prefix(3, 12, 5) + b"\x00\x02id" + tags + b"\x99"
    header, offset = parse_request_header(frame)
    assert header == RequestHeader(3, 12, 5, "id")
    assert frame[offset:] == b"\x99"
    # the same bytes read as v1 would leave the tag section in the body
    _, offset_v1 = parse_header(frame, 1)
    assert offset_v1 == 12


def test_header_version_follows_flexible_versions() -> None:
    assert parse_request_header(_prefix(0, 8, 1) + b"\xff\xff")[1] == 10  # Produce v8: v1
    assert parse_request_header(_prefix(0, 9, 1) + b"\xff\xff\x00")[1] == 11  # v9: v2


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x03\x00",
        _prefix(3, 4, 1)[:7],
        _prefix(3, 4, 1),  # no client id length
        _prefix(3, 4, 1) + b"\x00",
        _prefix(3, 4, 1) + b"\x00\x05ab",  # client id longer than the frame
        _prefix(3, 4, 1) + b"\xff\xfe",  # length -2
        _prefix(3, 12, 1) + b"\xff\xff",  # v2 without tag section
        _prefix(3, 12, 1) + b"\xff\xff\x01\x00\x05ab",  # tag longer than the frame
        _prefix(3, 12, 1) + b"\xff\xff\x7f",  # 127 tags in 0 bytes
        _prefix(3, 12, 1) + b"\xff\xff\xff\xff\xff\xff\xff\x01",  # 6-byte varint
    ],
)
def test_malformed_headers(frame: bytes) -> None:
    with pytest.raises(MalformedRequest):
        parse_request_header(frame)


def test_unknown_api_key() -> None:
    for key in (-1, 4, 7, 999, 32767):
        with pytest.raises(UnknownApiKey) as exc:
            parse_request_header(_prefix(key, 0, 1) + b"\xff\xff")
        assert exc.value.api_key == key


def test_unsupported_version_carries_the_header() -> None:
    with pytest.raises(UnsupportedVersion) as exc:
        parse_request_header(_prefix(0, 2, 44) + b"\x00\x01c")  # Produce v2 < min 3
    assert exc.value.header == RequestHeader(0, 2, 44, "c")
    with pytest.raises(UnsupportedVersion) as exc:
        parse_request_header(_prefix(0, 14, 45) + b"\x00\x01c\x00")  # above max: v2 header
    assert exc.value.header == RequestHeader(0, 14, 45, "c")


def test_api_versions_above_max_parses_v2_header_and_raises_from_decode_request() -> None:
    # A newer client sends ApiVersions v9 (header v2 + a body we cannot know).
    frame = _prefix(18, 9, 77) + b"\x00\x06client" + b"\x00" + b"\x07future\x01\x02\x00"
    with pytest.raises(UnsupportedVersion) as exc:
        codec.decode_request(frame)
    assert exc.value.header == RequestHeader(ApiKey.API_VERSIONS, 9, 77, "client")


def test_api_versions_below_min_is_unsupported_too() -> None:
    with pytest.raises(UnsupportedVersion) as exc:
        codec.decode_request(_prefix(18, -1, 3) + b"\xff\xff")
    assert exc.value.header.api_version == -1


def test_invalid_utf8_client_id_is_replaced() -> None:
    header, _ = parse_request_header(_prefix(3, 4, 1) + b"\x00\x02\xc3\x28")
    assert header.client_id == "\ufffd("


def test_request_header_encoding_round_trips() -> None:
    for version in (0, 1, 2):
        for client_id in (None, "", "cli€nt"):
            header = RequestHeader(3, 12, 123456, client_id if version else None)
            data = encode_request_header(header, version)
            assert parse_header(data + b"rest", version) == (header, len(data))


def test_response_headers() -> None:
    assert encode_response_header(7, 0) == b"\x00\x00\x00\x07"
    assert encode_response_header(-2, 1) == b"\xff\xff\xff\xfe\x00"
    assert parse_response_header(b"\x00\x00\x00\x07body", 0) == (7, 4)
    assert parse_response_header(b"\x00\x00\x00\x07\x01\x00\x01zbody", 1) == (7, 8)
    with pytest.raises(MalformedRequest):
        parse_response_header(b"\x00\x00", 0)


def test_encode_response_uses_header_v0_for_api_versions() -> None:
    frame = codec.encode_response(ApiKey.API_VERSIONS, 4, 9, {"error_code": 35})
    # size, correlation id, then directly the body's error code (no tag byte)
    assert frame[4:8] == b"\x00\x00\x00\x09"
    assert frame[8:10] == b"\x00\x23"
    frame = codec.encode_response(ApiKey.METADATA, 12, 9, {})
    assert frame[4:9] == b"\x00\x00\x00\x09\x00"  # header v1: empty tag section
    frame = codec.encode_response(ApiKey.METADATA, 8, 9, {})
    assert frame[4:8] == b"\x00\x00\x00\x09"
    assert len(frame) - 4 == int.from_bytes(frame[:4], "big")
