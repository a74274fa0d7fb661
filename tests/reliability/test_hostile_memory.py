"""Memory per request is bounded by the frame size (tracemalloc peak while the full server path
serves one hostile frame, the frame's own bytes excluded).

The bounds are the measured factors with headroom (docs/reliability.md has the figures): plain
bytes cost about 2x the frame (the receive buffer and the frame copied out of it); a frame made
of tiny structs decodes into one Python object per 2-6 wire bytes (~100x), so it is bounded by
the decode budget instead (`max(socket.request.max.bytes, 16 MiB)` of estimated objects): the
decoded request stays under the budget and the handler's answer to it (a response entry per
partition) costs at most about as much again, so peak <= 4x the frame + 2x the budget (worst
measured: 1.5x the budget, Produce partitions just under it); near the frame cap such a frame
is refused (connection closed, one warning) at ~2x the frame when one array count is over the
budget, or around the budget when nested counts reach it one by one. Records sent
to a compacted topic are checked for keys without being decoded into objects (~2-3x; zstd batches
of tiny records ~12x at this frame size: their decompression window is a fixed 1 MiB);
decompression bombs are refused holding a few MiB, long before the 64 MiB decode cap.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from _nettools import hostile

from wirebroker.handlers.dispatcher import decode_budget

FRAME = 128 * 1024  # the hostile frames' size (bombs are what they are: 2 KiB to 280 KiB)
MIB = 1 << 20
CAP = MIB  # socket.request.max.bytes and message.max.bytes of the broker
BUDGET = decode_budget(CAP)  # the decode budget the broker gives a request: the 16 MiB floor

#: kind -> (max peak / frame size, extra bytes allowed on top)
BOUNDS = {
    "random bytes behind a Produce header": (4, MIB),
    "Produce, garbage records (plain topic)": (4, MIB),
    "Metadata, array of empty topic names": (4, 2 * BUDGET + MIB),
    "Produce, array of partitions with null records": (4, 2 * BUDGET + MIB),
    "Produce, topics of 1000 partitions with null records": (4, 2 * BUDGET + MIB),
    "Produce to compacted topic, many tiny records": (6, MIB),
    "Produce to compacted topic, zstd batch of tiny records": (20, MIB),
    "Produce to compacted topic, gzip bomb (64 MiB + 1 MiB of zeros)": (0, 8 * MIB),
    "Produce to compacted topic, zstd bomb": (0, 8 * MIB),
    "Produce to compacted topic, lz4 bomb": (0, 8 * MIB),
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


def test_tiny_struct_kinds_are_the_budgeted_ones() -> None:
    assert set(hostile.TINY_STRUCT_KINDS) <= set(BOUNDS)
    assert BUDGET == 16 * MIB


@pytest.mark.parametrize("kind", hostile.TINY_STRUCT_KINDS)
def test_tiny_structs_near_the_cap_are_refused_within_the_budget(
    broker: hostile.InProcessBroker, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A frame near the cap made of tiny structs would decode into ~100x its size (100 MiB
    here); it is refused, unanswered, with a peak of about the budget at most."""
    frame = hostile.tiny_struct_frames(CAP - 4096)[kind]
    assert CAP // 2 < len(frame) <= CAP
    with caplog.at_level(logging.WARNING, logger="wirebroker.net"):
        figure = hostile.measure_memory(broker, frame, kind)
    assert not figure.answered
    assert not figure.errors
    warnings = [r.getMessage() for r in caplog.records if r.name == "wirebroker.net"]
    assert len(warnings) == 1 and "budget" in warnings[0], warnings
    assert figure.peak_bytes <= 4 * figure.frame_bytes + 1.25 * BUDGET + MIB
    if kind == hostile.NESTED_KIND:
        # the nested counts charge one by one: objects were created up to ~the budget
        assert figure.peak_bytes >= BUDGET // 4
    else:
        # one count is over the budget: refused before any element exists
        assert figure.peak_bytes <= 4 * figure.frame_bytes + MIB


@pytest.mark.parametrize("kind", hostile.TINY_STRUCT_KINDS)
def test_tiny_structs_just_under_the_budget_are_served(
    broker: hostile.InProcessBroker, kind: str
) -> None:
    """The worst accepted frame of each kind: its decode charges 90-97% of the budget."""
    frame = _under_budget()[kind]
    assert hostile.decode_charge(frame) >= 0.9 * BUDGET
    figure = hostile.measure_memory(broker, frame, kind)
    assert figure.answered
    assert not figure.errors
    factor, extra = BOUNDS[kind]
    assert figure.peak_bytes <= factor * figure.frame_bytes + extra
    assert figure.peak_bytes >= BUDGET // 4  # it did decode ~the budget's worth of objects


def test_frame_above_the_cap_costs_nothing(broker: hostile.InProcessBroker) -> None:
    """A size prefix above socket.request.max.bytes closes the connection before buffering."""
    frame = hostile.reframe(bytes(4 * CAP))
    figure = hostile.measure_memory(broker, frame, "oversized")
    assert not figure.answered
    assert figure.peak_bytes < 512 * 1024


_CACHE: dict[str, bytes] = {}
_UNDER: dict[str, bytes] = {}


def _under_budget() -> dict[str, bytes]:
    if not _UNDER:
        _UNDER.update(hostile.tiny_struct_frames_under(BUDGET))
    return _UNDER


def _frames() -> dict[str, bytes]:
    if not _CACHE:
        _CACHE.update(hostile.memory_frames(FRAME))
    return _CACHE
