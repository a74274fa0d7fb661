"""Codecs: round trips, the formats other clients write, caps and decompression bombs."""

from __future__ import annotations

import contextlib
import gzip
import random
import struct
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest
import snappy  # python-snappy: an independent implementation, test-only
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from protocol.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    DecompressionError,
    InvalidBatch,
    compress,
    decompress,
    iter_decompressed,
)
from protocol.exceptions import ProtocolError

CODECS = [GZIP, SNAPPY, LZ4, ZSTD]
MiB = 1024 * 1024
BOMB_SIZE = 100 * MiB


def _sample(size: int, seed: int = 0) -> bytes:
    """Compressible but not trivial data."""
    rng = random.Random(seed)
    words = [rng.randbytes(rng.randint(1, 12)) for _ in range(200)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words)
    return bytes(out[:size])


@pytest.mark.parametrize("codec", [NONE, *CODECS])
@pytest.mark.parametrize("size", [0, 1, 1000, 100_000, 300_000])
def test_round_trip(codec: int, size: int) -> None:
    data = _sample(size, seed=size)
    packed = compress(codec, data)
    assert decompress(codec, packed, size) == data
    assert decompress(codec, memoryview(bytearray(packed)), size) == data


@pytest.mark.parametrize("codec", [NONE, *CODECS])
def test_cap_is_exact(codec: int) -> None:
    data = _sample(50_000)
    packed = compress(codec, data)
    assert decompress(codec, packed, len(data)) == data
    with pytest.raises(DecompressionError):
        decompress(codec, packed, len(data) - 1)


def test_decompression_error_is_invalid_batch() -> None:
    assert issubclass(DecompressionError, InvalidBatch)
    assert issubclass(InvalidBatch, ValueError)
    assert issubclass(InvalidBatch, ProtocolError)


def test_unknown_codec() -> None:
    with pytest.raises(DecompressionError):
        decompress(5, b"abc", 100)
    with pytest.raises(ValueError):
        compress(7, b"abc")


# -- formats written by others ------------------------------------------------------------


def test_gzip_reads_stdlib_and_concatenated_members() -> None:
    a, b = _sample(10_000, 1), _sample(20_000, 2)
    assert decompress(GZIP, gzip.compress(a), MiB) == a
    assert decompress(GZIP, gzip.compress(a) + gzip.compress(b), MiB) == a + b
    assert gzip.decompress(compress(GZIP, a)) == a


def test_snappy_reads_xerial_and_raw() -> None:
    data = _sample(100_000)
    xerial = kafka_codec.snappy_encode(data, xerial_compatible=True)
    assert xerial.startswith(b"\x82SNAPPY\x00")
    assert decompress(SNAPPY, xerial, MiB) == data
    raw = snappy.compress(data)  # what librdkafka sends
    assert decompress(SNAPPY, raw, MiB) == data
    # what we write, the Java framing, is readable by an independent implementation
    ours = compress(SNAPPY, data)
    assert ours.startswith(b"\x82SNAPPY\x00")
    assert kafka_codec.snappy_decode(ours) == data


def test_lz4_reads_other_frames_and_writes_kafka_style_frames() -> None:
    data = _sample(200_000)
    for kwargs in (
        {},
        {"content_checksum": True, "store_size": True},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB, "block_linked": True},
    ):
        assert decompress(LZ4, lz4.frame.compress(data, **kwargs), MiB) == data
    assert decompress(LZ4, kafka_codec.lz4_encode(data), MiB) == data
    ours = compress(LZ4, data)
    info = lz4.frame.get_frame_info(ours)
    assert info["block_linked"] is False  # Kafka's Java reader decodes blocks independently
    assert info["content_size"] == 0
    assert info["block_size"] == 64 * 1024
    assert lz4.frame.decompress(ours) == data
    # two frames back to back
    assert decompress(LZ4, ours + ours, MiB) == data + data


def test_zstd_reads_frames_without_content_size_and_multiple_frames() -> None:
    data = _sample(300_000)
    cobj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    streamed = cobj.compress(data) + cobj.flush()
    assert zstandard.frame_content_size(streamed) == -1
    assert decompress(ZSTD, streamed, MiB) == data
    checked = zstandard.ZstdCompressor(write_checksum=True, level=19).compress(data)
    assert decompress(ZSTD, checked + streamed, MiB) == data + data
    skippable = struct.pack("<II", 0x184D2A53, 3) + b"xyz"
    assert decompress(ZSTD, skippable + checked, MiB) == data
    assert zstandard.ZstdDecompressor().decompress(compress(ZSTD, data)) == data


# -- corrupt and truncated input ----------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation_is_rejected(codec: int) -> None:
    data = _sample(40_000)
    packed = compress(codec, data)
    step = max(1, len(packed) // 200)
    for cut in [*range(0, len(packed), step), len(packed) - 1]:
        with pytest.raises(DecompressionError):
            decompress(codec, packed[:cut], MiB)


@pytest.mark.parametrize("codec", CODECS)
def test_garbage_raises_decompression_error_only(codec: int) -> None:
    rng = random.Random(codec)
    for size in (1, 3, 16, 100, 5000):
        for _ in range(20):
            with contextlib.suppress(DecompressionError):
                decompress(codec, rng.randbytes(size), 64 * 1024)


def test_snappy_bad_xerial_block_length() -> None:
    header = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for tail in (struct.pack(">i", -1) + b"x", struct.pack(">i", 100) + b"short", b"\x00\x00"):
        with pytest.raises(DecompressionError):
            decompress(SNAPPY, header + tail, MiB)


def test_gzip_trailing_garbage_rejected() -> None:
    with pytest.raises(DecompressionError):
        decompress(GZIP, gzip.compress(b"abc") + b"garbage!", MiB)


# -- decompression bombs ------------------------------------------------------------------


def _chunks() -> list[bytes]:
    return [bytes(MiB)] * (BOMB_SIZE // MiB)


@pytest.fixture(scope="module")
def bombs() -> dict[str, tuple[int, bytes]]:
    """100 MiB of zeros per codec, built chunk by chunk (never 100 MiB in memory at once)."""
    out: dict[str, tuple[int, bytes]] = {}
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out["gzip"] = (GZIP, b"".join(z.compress(c) for c in _chunks()) + z.flush())
    zc = zstandard.ZstdCompressor().compressobj()
    out["zstd-no-size"] = (ZSTD, b"".join(zc.compress(c) for c in _chunks()) + zc.flush())
    zs = zstandard.ZstdCompressor().compressobj(size=BOMB_SIZE)
    out["zstd-sized"] = (ZSTD, b"".join(zs.compress(c) for c in _chunks()) + zs.flush())
    lc = lz4.frame.LZ4FrameCompressor(block_linked=False)
    out["lz4"] = (LZ4, lc.begin() + b"".join(lc.compress(c) for c in _chunks()) + lc.flush())
    block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    xerial += (struct.pack(">i", len(block)) + block) * (BOMB_SIZE // (32 * 1024))
    out["snappy-xerial"] = (SNAPPY, xerial)
    out["snappy-raw"] = (SNAPPY, bytes(cramjam.snappy.compress_raw(bytes(BOMB_SIZE))))
    # raw snappy declaring 100 MiB, then garbage: rejected on the declared length alone
    out["snappy-raw-liar"] = (SNAPPY, b"\x80\x80\x80\x32" + b"\x00" * 64)
    return out


BOMB_NAMES = [
    "gzip",
    "zstd-no-size",
    "zstd-sized",
    "lz4",
    "snappy-xerial",
    "snappy-raw",
    "snappy-raw-liar",
]


@pytest.mark.parametrize("name", BOMB_NAMES)
def test_bomb_rejected_without_materializing_it(
    bombs: dict[str, tuple[int, bytes]], name: str
) -> None:
    codec, bomb = bombs[name]
    assert len(bomb) < 6 * MiB
    cap = MiB
    tracemalloc.start()
    try:
        with pytest.raises(DecompressionError, match="exceed"):
            decompress(codec, bomb, cap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the cap plus one 256 KiB chunk, plus slack for bookkeeping; far below 100 MiB
    assert peak < cap + 2 * MiB, peak


def test_bomb_measurement_can_fail() -> None:
    """Control: the tracemalloc measurement does see a full decompression."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(z.compress(bytes(MiB)) for _ in range(20)) + z.flush()
    tracemalloc.start()
    try:
        gzip.decompress(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak >= 20 * MiB


# -- incremental decompression --------------------------------------------------------------


def _outcome(codec: int, data: bytes, max_size: int, chunk: int | None) -> bytes | str:
    """The joined pieces (checking their sizes), or the exception's class name."""
    try:
        if chunk is None:
            return decompress(codec, data, max_size)
        pieces = list(iter_decompressed(codec, data, max_size, chunk))
    except DecompressionError as e:
        return type(e).__name__
    assert all(pieces)
    if codec != SNAPPY:  # snappy yields whole blocks
        assert max(map(len, pieces), default=0) <= chunk
    return b"".join(pieces)


_data = st.one_of(
    st.binary(max_size=3000),
    st.builds(_sample, st.integers(0, 200_000), st.integers(0, 5)),
)


@settings(max_examples=60, deadline=None)
@given(
    codec=st.sampled_from([NONE, *CODECS]),
    data=_data,
    chunk=st.one_of(st.integers(1, 70), st.integers(1000, 300_000)),
)
def test_pieces_join_to_the_data(codec: int, data: bytes, chunk: int) -> None:
    if chunk < 100:
        data = data[:5000]  # one-byte pieces are slow
    packed = compress(codec, data)
    assert _outcome(codec, packed, len(data), chunk) == data
    assert _outcome(codec, packed, len(data), None) == data
    if data:
        assert _outcome(codec, packed, len(data) - 1, chunk) == "DecompressionError"


@settings(max_examples=150, deadline=None)
@given(
    codec=st.sampled_from(CODECS),
    data=st.binary(max_size=2000),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    garbage=st.binary(max_size=6),
    cap_cut=st.integers(0, 3),
)
def test_corrupt_input_gives_the_same_outcome_for_every_piece_size(
    codec: int,
    data: bytes,
    flips: list[tuple[int, int]],
    cut: int | None,
    garbage: bytes,
    cap_cut: int,
) -> None:
    """Flipped bytes, cut tails, appended garbage, caps just below the size: whatever the
    one-shot `decompress` says (bytes or DecompressionError), every piece size says."""
    packed = bytearray(compress(codec, data))
    for where, xor in flips:
        packed[where % len(packed)] ^= xor
    if cut is not None:
        del packed[cut % len(packed) :]
    packed += garbage
    max_size = max(len(data) - cap_cut, 0)
    want = _outcome(codec, bytes(packed), max_size, None)
    for chunk in (1, 2, 7, 4096):
        assert _outcome(codec, bytes(packed), max_size, chunk) == want, chunk


def test_iter_decompressed_arguments() -> None:
    with pytest.raises(DecompressionError):
        iter_decompressed(9, b"x", 10)
    with pytest.raises(ValueError):
        iter_decompressed(GZIP, b"x", -1)
    with pytest.raises(ValueError):
        iter_decompressed(GZIP, b"x", 10, 0)
    assert list(iter_decompressed(NONE, b"abcde", 5, 2)) == [b"ab", b"cd", b"e"]
    with pytest.raises(DecompressionError):
        list(iter_decompressed(NONE, b"abcde", 4))


def _iteration_peak(codec: int, packed: bytes, max_size: int, chunk: int) -> int:
    """tracemalloc peak of iterating (and dropping) the pieces; -> peak (raises through)."""
    tracemalloc.start()
    try:
        for _ in iter_decompressed(codec, packed, max_size, chunk):
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("name", BOMB_NAMES)
def test_bomb_iterated_in_small_pieces(bombs: dict[str, tuple[int, bytes]], name: str) -> None:
    """Dropping the pieces, memory stays about one piece (plus a 32 KiB snappy block), far
    below the cap, until the cap is passed."""
    codec, bomb = bombs[name]
    cap = 16 * MiB
    tracemalloc.start()
    try:
        with pytest.raises(DecompressionError, match="exceed"):
            for _ in iter_decompressed(codec, bomb, cap, 64 * 1024):
                pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 512 * 1024, peak


@pytest.mark.parametrize("codec", [GZIP, LZ4])
def test_input_is_fed_in_slices(codec: int) -> None:
    """Incompressible input: the decompressor never holds a copy of all of it (zlib's
    `unconsumed_tail`, lz4's buffered input)."""
    data = random.Random(3).randbytes(8 * MiB)
    packed = compress(codec, data)
    assert _iteration_peak(codec, packed, len(data), 64 * 1024) < MiB


@pytest.mark.parametrize("codec", [GZIP, LZ4])
@pytest.mark.parametrize("in_slice", [1, 2, 5, 64])
def test_tiny_input_slices_change_nothing(
    monkeypatch: pytest.MonkeyPatch, codec: int, in_slice: int
) -> None:
    """Members/frames ending on, before and after a slice boundary; cut and garbage tails."""
    from protocol import compression

    a, b = _sample(3000, 1), _sample(500, 2)
    inputs = [compress(codec, a) + compress(codec, b), compress(codec, b"") + compress(codec, a)]
    inputs += [inputs[0][:-3], inputs[0] + b"\x00", inputs[0] + b"garbage", b"", b"\x1f"]
    want = [_outcome(codec, data, MiB, 100) for data in inputs]
    monkeypatch.setattr(compression, "_IN_SLICE", in_slice)
    for data, expected in zip(inputs, want, strict=True):
        for chunk in (1, 100, MiB):
            assert _outcome(codec, data, MiB, chunk) == expected
    assert want[0] == a + b
    assert want[1] == a


@pytest.mark.parametrize("chunk", [1, 2, 3, 256 * 1024])
@pytest.mark.parametrize("declared", [1, 2, 3, 200])
def test_zstd_frame_whose_content_size_lies_fails_at_every_chunk_size(
    chunk: int, declared: int
) -> None:
    """A single-segment frame declaring `declared` bytes that holds one empty raw block:
    zstandard's reader notices only when a read asks for at least the declared size (so a
    frame declaring more than a 256 KiB chunk got through); both paths must refuse it."""
    frame = b"\x28\xb5\x2f\xfd" + bytes([0x20, declared]) + b"\x01\x00\x00"
    with pytest.raises(DecompressionError):
        decompress(ZSTD, frame, 1 << 20)
    with pytest.raises(DecompressionError):
        b"".join(iter_decompressed(ZSTD, frame, 1 << 20, chunk))
