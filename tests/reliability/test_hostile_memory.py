"""Memory per request is bounded by the frame size (tracemalloc peak while the full server path
serves one hostile frame, the frame's own bytes excluded).

The bounds are the measured factors with headroom (docs/reliability.md has the figures): plain
bytes cost about 2x the frame (the receive buffer and the frame copied out of it); a frame made
of tiny structs decodes into one Python object per 2-6 wire bytes (~100x); keyed records sent
to a compacted topic are decoded into objects (~20x; ~200x when zstd-compressed, and at most
what the 64 MiB decode cap yields); decompression bombs stop at the decode cap.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _nettools import hostile

FRAME = 128 * 1024  # the hostile frames' size (bombs are what they are: 2 KiB to 280 KiB)
MIB = 1 << 20
CAP = MIB  # socket.request.max.bytes and message.max.bytes of the broker

#: kind -> (max peak / frame size, extra bytes allowed on top)
BOUNDS = {
    "random bytes behind a Produce header": (4, MIB),
    "Produce, garbage records (plain topic)": (4, MIB),
    "Metadata, array of empty topic names": (150, MIB),
    "Produce, array of partitions with null records": (150, MIB),
    "Produce to compacted topic, many tiny records": (40, MIB),
    "Produce to compacted topic, zstd batch of tiny records": (300, MIB),
    "Produce to compacted topic, gzip bomb (64 MiB + 1 MiB of zeros)": (
        0,
        hostile.DECODE_CAP + 8 * MIB,
    ),
    "Produce to compacted topic, zstd bomb": (0, hostile.DECODE_CAP + 8 * MIB),
    "Produce to compacted topic, lz4 bomb": (0, hostile.DECODE_CAP + 8 * MIB),
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hostile.InProcessBroker]:
    data = Path(tmp_path_factory.mktemp("hostile-memory")) / "data"
    overrides = {
        "socket.request.max.bytes": str(CAP),
        "message.max.bytes": str(CAP),
    }
    with hostile.InProcessBroker(data, overrides) as running:
        for frame in hostile.memory_frames(16 * 1024).values():  # one-time costs first
            running.exchange(frame, timeout=60)
        yield running


def test_every_hostile_frame_kind_has_a_bound() -> None:
    assert set(hostile.memory_frames(64 * 1024)) == set(BOUNDS)


@pytest.mark.parametrize("kind", sorted(BOUNDS))
def test_peak_memory_of_one_hostile_request(broker: hostile.InProcessBroker, kind: str) -> None:
    frame = _frames()[kind]
    assert len(frame) <= CAP
    figure = hostile.measure_memory(broker, frame, kind)
    assert not figure.errors
    factor, extra = BOUNDS[kind]
    assert figure.peak_bytes <= factor * figure.frame_bytes + extra, (
        f"{kind}: {figure.peak_bytes} bytes for a {figure.frame_bytes}-byte frame"
    )


def test_frame_above_the_cap_costs_nothing(broker: hostile.InProcessBroker) -> None:
    """A size prefix above socket.request.max.bytes closes the connection before buffering."""
    frame = hostile.reframe(bytes(4 * CAP))
    figure = hostile.measure_memory(broker, frame, "oversized")
    assert not figure.answered
    assert figure.peak_bytes < 512 * 1024


_CACHE: dict[str, bytes] = {}


def _frames() -> dict[str, bytes]:
    if not _CACHE:
        _CACHE.update(hostile.memory_frames(FRAME))
    return _CACHE
