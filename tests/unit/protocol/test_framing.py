"""FrameDecoder: byte-by-byte arrival, several frames per chunk, limits, pending frames."""

from __future__ import annotations

import itertools
import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import framing
from protocol.exceptions import FrameTooLarge
from protocol.framing import SPARE_MAX, FrameDecoder, frame


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


# -- large frames received in place ---------------------------------------------------------


def _feed_in_place(decoder: FrameDecoder, data: bytes, piece: int) -> list[bytes | bytearray]:
    """Deliver `data` as a socket would, `piece` bytes per receive at most, using the in-place
    buffer whenever the decoder offers one."""
    got: list[bytes | bytearray] = []
    pos = 0
    while pos < len(data):
        into = decoder.receive_buffer()
        if into is not None:
            n = min(piece, len(into), len(data) - pos)
            into[:n] = data[pos : pos + n]
            into.release()
            decoder.received_into(n)
        else:
            n = min(piece, len(data) - pos)
            decoder.receive_data(data[pos : pos + n])
        pos += n
        got += _drain(decoder)
    return got


def test_a_large_frame_is_received_in_place_and_handed_over() -> None:
    big = bytes(range(256)) * 40  # 10,240 bytes
    decoder = FrameDecoder(1 << 20, in_place_min=1024)
    wire = frame(big) + frame(b"small") + frame(big[::-1])
    decoder.receive_data(wire[:644])  # the size and the first 640 bytes (1/16), buffered
    assert decoder.bytes_wanted == 4 + len(big) - 644
    into = decoder.receive_buffer()
    assert into is not None and len(into) == len(big) - 640  # the buffered part moved in
    assert decoder.buffered_bytes == 644
    assert decoder.bytes_wanted == len(into)
    into[:] = big[640:]
    into.release()
    assert decoder.next_frame() is None  # not reported yet
    decoder.received_into(len(big) - 640)
    assert decoder.receive_buffer() is None  # complete: nothing left to receive into
    first = decoder.next_frame()
    assert isinstance(first, bytearray) and first == big
    assert decoder.buffered_bytes == 0
    got = _feed_in_place(decoder, wire[4 + len(big) :], 4096)
    assert got == [b"small", big[::-1]]
    assert type(got[0]) is bytes  # below the threshold: copied out as bytes
    assert decoder.receive_buffer() is None and decoder.buffered_bytes == 0


def test_receive_data_fills_a_frame_being_received_in_place() -> None:
    big = b"\x07" * 5000
    decoder = FrameDecoder(1 << 20, in_place_min=1000)
    wire = frame(big) + frame(b"next") + frame(b"x" * 10)
    decoder.receive_data(wire[:400])
    assert decoder.receive_buffer() is not None
    decoder.receive_data(wire[400:4000])  # a caller may still use receive_data
    decoder.received_into(0)
    assert decoder.next_frame() is None
    decoder.receive_data(wire[4000:])  # the rest of the frame and what follows
    assert _drain(decoder) == [big, b"next", b"x" * 10]


def test_received_into_without_room_is_refused() -> None:
    decoder = FrameDecoder(1 << 20, in_place_min=100)
    with pytest.raises(ValueError):
        decoder.received_into(1)  # no frame received in place
    decoder.receive_data(frame(b"a" * 200)[:20])
    into = decoder.receive_buffer()
    assert into is not None and len(into) == 184
    into.release()
    with pytest.raises(ValueError):
        decoder.received_into(201)


def test_a_frame_goes_in_place_only_once_a_sixteenth_has_arrived() -> None:
    """The whole buffer is allocated at once: a peer must have sent 1/16 of what it
    announces first, so announcing the frame cap and trickling holds only what arrived."""
    size = 1 << 20
    decoder = FrameDecoder(size, in_place_min=1024)
    wire = frame(b"\x01" * size)
    decoder.receive_data(wire[:5])
    assert decoder.receive_buffer() is None  # 1 byte of 1 MiB: no 1 MiB buffer for it
    decoder.receive_data(wire[5 : 4 + size // 16 - 1])
    assert decoder.receive_buffer() is None  # one byte short of 1/16
    assert decoder.buffered_bytes == 4 + size // 16 - 1
    decoder.receive_data(wire[4 + size // 16 - 1 : 4 + size // 16])
    into = decoder.receive_buffer()
    assert into is not None and len(into) == size - size // 16
    into[:] = wire[4 + size // 16 :]
    into.release()
    decoder.received_into(size - size // 16)
    got = decoder.next_frame()
    assert isinstance(got, bytearray) and got == wire[4:]


def test_receive_buffer_checks_the_size() -> None:
    decoder = FrameDecoder(1000, in_place_min=10)
    decoder.receive_data(b"\x00\x00")
    assert decoder.receive_buffer() is None  # size not known yet
    decoder.receive_data(b"\x00\x05")
    assert decoder.receive_buffer() is None  # below in_place_min
    assert decoder.next_frame() is None
    decoder = FrameDecoder(1000, in_place_min=10)
    with pytest.raises(FrameTooLarge):
        decoder.receive_data(struct.pack(">i", 1001))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), max_size=6),
    piece=st.integers(1, 5000),
    threshold=st.integers(1, 2000),
)
def test_in_place_and_buffered_frames_any_split(
    sizes: list[int], piece: int, threshold: int
) -> None:
    payloads = [bytes([i % 251]) * n + bytes([n % 256]) for i, n in enumerate(sizes)]
    decoder = FrameDecoder(1 << 20, in_place_min=threshold)
    got = _feed_in_place(decoder, b"".join(frame(p) for p in payloads), piece)
    assert got == payloads
    assert decoder.buffered_bytes == 0 and decoder.receive_buffer() is None


def _in_place_frame(decoder: FrameDecoder, payload: bytes) -> bytearray:
    got = _feed_in_place(decoder, frame(payload), len(payload) // 8)  # 1/8, then in place
    assert len(got) == 1 and isinstance(got[0], bytearray) and got[0] == payload
    return got[0]


def test_an_in_place_frame_is_reused_once_the_caller_has_dropped_it() -> None:
    decoder = FrameDecoder(1 << 20, in_place_min=1024)
    first = _in_place_frame(decoder, b"a" * 10_000)
    assert decoder.reused == 0
    del first
    second = _in_place_frame(decoder, b"b" * 9_000)  # smaller: fits its allocation
    assert decoder.reused == 1
    del second
    _in_place_frame(decoder, b"c" * 9_500)  # grown again within the allocation
    assert decoder.reused == 2


def test_a_frame_the_caller_still_refers_to_is_never_written() -> None:
    decoder = FrameDecoder(1 << 20, in_place_min=1024)
    held = _in_place_frame(decoder, b"a" * 10_000)
    second = _in_place_frame(decoder, b"b" * 10_000)
    assert decoder.reused == 0 and held == b"a" * 10_000
    view = memoryview(second)[100:200]  # a view of it is a reference too
    del second
    third = _in_place_frame(decoder, b"c" * 10_000)
    assert decoder.reused == 0
    assert view == b"b" * 100 and third == b"c" * 10_000


def test_a_frame_above_spare_max_or_larger_than_the_spare_gets_a_new_buffer() -> None:
    decoder = FrameDecoder(SPARE_MAX * 2, in_place_min=1024)
    _in_place_frame(decoder, bytes(SPARE_MAX + 1))  # dropped at once, but too big to keep
    _in_place_frame(decoder, b"x" * 5_000)
    assert decoder.reused == 0
    _in_place_frame(decoder, b"y" * 6_000)  # beyond the spare's allocation
    assert decoder.reused == 0
    _in_place_frame(decoder, b"z" * 3_000)  # half of it at least: reused
    assert decoder.reused == 1
    _in_place_frame(decoder, b"w" * 2_000)  # under half: CPython would reallocate
    assert decoder.reused == 1


def test_all_decoders_together_keep_at_most_spare_total_max(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(framing, "SPARE_TOTAL_MAX", framing._spare_total + 15_000)
    first, second = (FrameDecoder(1 << 20, in_place_min=1024) for _ in range(2))
    _in_place_frame(first, b"a" * 10_000)  # kept: 10,001 of the 15,000
    _in_place_frame(second, b"b" * 10_000)  # not kept: over the total
    _in_place_frame(first, b"c" * 10_000)
    _in_place_frame(second, b"d" * 10_000)
    assert (first.reused, second.reused) == (1, 0)
    del first  # its buffer is given up with it
    _in_place_frame(second, b"e" * 10_000)  # kept now
    _in_place_frame(second, b"f" * 10_000)
    assert second.reused == 1
