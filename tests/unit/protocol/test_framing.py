"""FrameDecoder: byte-by-byte arrival, several frames per chunk, limits, pending frames."""

from __future__ import annotations

import itertools
import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.exceptions import FrameTooLarge
from protocol.framing import FrameDecoder, frame


def _drain(decoder: FrameDecoder) -> list[bytes]:
    out = []
    while (f := decoder.next_frame()) is not None:
        out.append(f)
    return out


def test_frame_prefixes_the_length() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame(b"") == b"\x00\x00\x00\x00"


def test_byte_by_byte() -> None:
    payloads = [b"hello", b"", b"x" * 300]
    stream = b"".join(frame(p) for p in payloads)
    decoder = FrameDecoder(1000)
    got = []
    for i in range(len(stream)):
        decoder.receive_data(stream[i : i + 1])
        got += _drain(decoder)
    assert got == payloads
    assert decoder.buffered_bytes == 0


def test_several_frames_in_one_chunk() -> None:
    payloads = [bytes([i]) * i for i in range(50)]
    decoder = FrameDecoder(100)
    decoder.receive_data(b"".join(frame(p) for p in payloads))
    assert _drain(decoder) == payloads


@settings(max_examples=50, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=40), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_any_split(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(p) for p in payloads)
    points = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    decoder = FrameDecoder(64)
    got = []
    for a, b in itertools.pairwise(points):
        decoder.receive_data(stream[a:b])
        got += _drain(decoder)
    assert got == payloads


def test_truncated_frame_stays_pending() -> None:
    decoder = FrameDecoder(100)
    decoder.receive_data(frame(b"complete") + frame(b"partial")[:-2])
    assert decoder.next_frame() == b"complete"
    assert decoder.next_frame() is None
    assert decoder.next_frame() is None
    assert decoder.buffered_bytes == 4 + 5
    decoder.receive_data(b"al")
    assert decoder.next_frame() == b"partial"
    assert decoder.next_frame() is None


def test_partial_length_prefix_is_pending() -> None:
    decoder = FrameDecoder(100)
    decoder.receive_data(b"\x00\x00")
    assert decoder.next_frame() is None
    decoder.receive_data(b"\x00\x01z")
    assert decoder.next_frame() == b"z"


def test_oversize_raises_before_the_body_arrives() -> None:
    decoder = FrameDecoder(1024)
    with pytest.raises(FrameTooLarge) as exc:
        decoder.receive_data(struct.pack(">i", 1025))
    assert exc.value.size == 1025 and exc.value.limit == 1024
    # exactly at the cap is fine
    ok = FrameDecoder(4)
    ok.receive_data(frame(b"abcd"))
    assert ok.next_frame() == b"abcd"


def test_negative_size_raises() -> None:
    decoder = FrameDecoder(1024)
    with pytest.raises(FrameTooLarge):
        decoder.receive_data(b"\xff\xff\xff\xff")


def test_oversize_second_frame_detected_when_reached() -> None:
    decoder = FrameDecoder(10)
    decoder.receive_data(frame(b"ok") + struct.pack(">i", 11) + b"zz")
    assert decoder.next_frame() == b"ok"
    with pytest.raises(FrameTooLarge):
        decoder.next_frame()


def test_oversize_size_split_across_chunks() -> None:
    decoder = FrameDecoder(10)
    decoder.receive_data(b"\x7f\xff")
    assert decoder.next_frame() is None
    with pytest.raises(FrameTooLarge):
        decoder.receive_data(b"\xff\xff")


def test_invalid_cap() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(-1)


def test_huge_frame_in_small_pieces_is_linear() -> None:
    size = 8 << 20
    payload = bytes(range(256)) * (size // 256)
    data = frame(payload)
    decoder = FrameDecoder(size)
    piece = 4096
    start = time.perf_counter()
    for i in range(0, len(data), piece):
        decoder.receive_data(data[i : i + piece])
        if i + piece < len(data):
            assert decoder.next_frame() is None
    got = decoder.next_frame()
    elapsed = time.perf_counter() - start
    assert got == payload
    assert elapsed < 2.0  # quadratic copying of 8 MiB in 4 KiB steps would take far longer


def test_many_small_frames_is_linear() -> None:
    data = frame(b"0123456789") * 200_000  # 2.8 MB of 14-byte frames in one chunk
    decoder = FrameDecoder(100)
    start = time.perf_counter()
    decoder.receive_data(data)
    count = len(_drain(decoder))
    elapsed = time.perf_counter() - start
    assert count == 200_000
    assert elapsed < 2.0


def test_bytes_wanted_follows_the_head_frame() -> None:
    decoder = FrameDecoder(1 << 20)
    assert decoder.bytes_wanted == 4
    decoder.receive_data(b"\x00\x00")
    assert decoder.bytes_wanted == 2
    decoder.receive_data(b"\x01\x00")  # frame of 256 bytes announced
    assert decoder.bytes_wanted == 256
    decoder.receive_data(b"x" * 100)
    assert decoder.bytes_wanted == 156
    decoder.receive_data(b"x" * 156 + frame(b"abc")[:2])
    assert decoder.bytes_wanted == 0  # a whole frame is buffered
    assert decoder.next_frame() == b"x" * 256
    assert decoder.bytes_wanted == 2  # the next frame's prefix is half there
    decoder.receive_data(frame(b"abc")[2:])
    assert decoder.bytes_wanted == 0
    assert decoder.next_frame() == b"abc"
    assert decoder.bytes_wanted == 4


def test_bytes_wanted_of_an_oversize_prefix_is_zero() -> None:
    decoder = FrameDecoder(10)
    with pytest.raises(FrameTooLarge):
        decoder.receive_data(b"\x00\x00\x01\x00")
    assert decoder.bytes_wanted == 0
