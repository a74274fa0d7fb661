"""Produce v0-2 refusal: parsing the old request layout and encoding the error answer."""

from __future__ import annotations

import struct

import pytest

from protocol.exceptions import MalformedRequest
from protocol.legacy_produce import encode_legacy_produce_error, parse_legacy_produce


def request(version: int, body: bytes, client_id: bytes | None = b"rdkafka") -> bytes:
    head = struct.pack(">hhi", 0, version, 9)
    head += struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id))
    return head + (client_id or b"") + body


def body(acks: int, topics: list[tuple[bytes, list[tuple[int, bytes]]]]) -> bytes:
    out = struct.pack(">hii", acks, 500, len(topics))
    for name, parts in topics:
        out += struct.pack(">h", len(name)) + name + struct.pack(">i", len(parts))
        for index, message_set in parts:
            out += struct.pack(">ii", index, len(message_set)) + message_set
    return out


def test_parse_keeps_topics_and_partitions_in_order_and_skips_message_sets() -> None:
    frame = request(1, body(-1, [(b"a", [(2, b"\x00" * 40), (0, b"")]), (b"b", [(7, b"xy")])]))
    parsed = parse_legacy_produce(frame)
    assert parsed.header.api_version == 1
    assert parsed.header.correlation_id == 9
    assert parsed.header.client_id == "rdkafka"
    assert parsed.acks == -1
    assert parsed.topics == [("a", [2, 0]), ("b", [7])]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_error_answer_layout(version: int) -> None:
    parsed = parse_legacy_produce(request(version, body(1, [(b"t", [(4, b"")])]), None))
    frame = encode_legacy_produce_error(parsed, 35)
    size, correlation, ntopics, nlen = struct.unpack_from(">iiih", frame, 0)
    assert size == len(frame) - 4 and correlation == 9 and ntopics == 1 and nlen == 1
    assert frame[14:15] == b"t"
    nparts, index, error, base = struct.unpack_from(">iihq", frame, 15)
    assert (nparts, index, error, base) == (1, 4, 35, -1)
    rest = frame[33:]
    expected = b""
    if version >= 2:
        expected += struct.pack(">q", -1)
    if version >= 1:
        expected += struct.pack(">i", 0)
    assert rest == expected


@pytest.mark.parametrize(
    "bad",
    [
        struct.pack(">hi", 1, 500),  # no topic array
        struct.pack(">hii", 1, 500, 3),  # three topics announced, none present
        struct.pack(">hii", 1, 500, -2),  # negative count
        struct.pack(">hiih", 1, 500, 1, -1),  # null topic name
        struct.pack(">hiih", 1, 500, 1, 1) + b"t" + struct.pack(">iii", 1, 0, 1000),  # short set
        struct.pack(">hiih", 1, 500, 1, 1) + b"\xff" + struct.pack(">i", 0),  # not UTF-8
    ],
)
def test_bad_bodies_raise_malformed(bad: bytes) -> None:
    with pytest.raises(MalformedRequest):
        parse_legacy_produce(request(2, bad))


def test_other_apis_and_versions_are_refused() -> None:
    with pytest.raises(MalformedRequest):
        parse_legacy_produce(request(3, body(1, [])))
    with pytest.raises(MalformedRequest):
        parse_legacy_produce(struct.pack(">hhih", 1, 0, 9, -1) + body(1, []))
