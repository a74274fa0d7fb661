"""The harness's own pieces that need no cluster: reading replicas' segment files."""

from __future__ import annotations

from pathlib import Path

import pytest
from _cluster import segment_batches, wait_until

from protocol.records import build_batch


def _segment(directory: Path, base: int, batches: list[tuple[int, int]]) -> bytes:
    """A segment file `<base>.log` of batches (base offset, record count); its bytes."""
    data = b"".join(
        build_batch([(None, b"x")] * n, base_offset=off, base_timestamp=1) for off, n in batches
    )
    (directory / f"{base:020d}.log").write_bytes(data)
    return data


def test_segment_batches_reads_segments_in_offset_order_up_to_the_mark(tmp_path: Path) -> None:
    _segment(tmp_path, 5, [(5, 2), (7, 3)])
    first = _segment(tmp_path, 0, [(0, 5)])
    got = segment_batches(tmp_path, 10)
    assert [(b, last) for b, last, _ in got] == [(0, 4), (5, 6), (7, 9)]
    assert got[0][2] == first
    assert [b for b, _, _ in segment_batches(tmp_path, 7)] == [0, 5]
    assert segment_batches(tmp_path, 0) == []


def test_segment_batches_rejects_a_mark_inside_a_batch(tmp_path: Path) -> None:
    _segment(tmp_path, 0, [(0, 5)])
    with pytest.raises(AssertionError, match="straddles"):
        segment_batches(tmp_path, 3)


def test_segment_batches_stops_at_a_torn_tail(tmp_path: Path) -> None:
    data = _segment(tmp_path, 0, [(0, 2), (2, 2)])
    (tmp_path / f"{0:020d}.log").write_bytes(data[:-7])  # a live log mid-append
    assert [b for b, _, _ in segment_batches(tmp_path, 100)] == [0]


def test_wait_until_returns_the_value_or_names_what_it_waited_for() -> None:
    calls = iter([0, None, 7])
    assert wait_until(lambda: next(calls), 5, "seven") == 7
    with pytest.raises(AssertionError, match="the impossible; last: 0"):
        wait_until(lambda: 0, 0.1, "the impossible")
