"""Zero-copy reads: `PartitionLog.read_to_send(zero_copy=True)`, `Segment.slice`, `FileSlice`."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
from logtest_helpers import NOW, FaultyFileSystem, NoSyncFileSystem, batch, offsets_of, open_log

from protocol.records import iter_batches
from wirebroker.log import LogConfig
from wirebroker.log.file_slice import FileSlice
from wirebroker.log.segment import SLICE_SCAN_HEADERS
from wirebroker.transport import RegionGone


def _log(tmp_path: Path, config: LogConfig | None = None, **kwargs: Any) -> Any:
    plog = open_log(tmp_path, config, **kwargs)
    return plog


def _sent(region: FileSlice) -> bytes:
    """What `region.sendfile` puts on a socket, read from the other end."""
    a, b = socket.socketpair()
    with a, b:
        b.setblocking(False)
        done = 0
        out = bytearray()
        while done < len(region):
            done += region.sendfile(a.fileno(), done, len(region) - done)
            while True:
                try:
                    out += b.recv(1 << 20)
                except BlockingIOError:
                    break
        return bytes(out)


@pytest.mark.parametrize("segment_batches", [3, 1000])
def test_a_slice_holds_what_read_returns_up_to_its_segment_end(
    tmp_path: Path, segment_batches: int
) -> None:
    """Every zero-copy read is bytes equal to `read` (when no slice can be made) or a slice
    whose bytes are whole batches, a prefix of what `read` returns, ending where `read` ends
    or at the end of its segment."""
    size = len(batch(2))
    plog = _log(tmp_path, LogConfig(segment_bytes=size * segment_batches))
    for _ in range(10):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    ends = {seg.base_offset for seg in plog.segments} | {plog.log_end_offset}
    slices = 0
    for offset in range(20):
        for max_bytes in (1, size, size * 2 + 7, size * 4, 1 << 20):
            for max_offset in (offset, offset + 3, 20):
                for min_one in (True, False):
                    args = {"max_bytes": max_bytes, "max_offset": max_offset}
                    want = plog.read(offset, min_one_batch=min_one, **args)
                    got = plog.read_to_send(offset, min_one_batch=min_one, zero_copy=True, **args)
                    if isinstance(got, bytes):
                        assert got == want
                        continue
                    slices += 1
                    data = bytes(got)
                    assert data and want.startswith(data)
                    last = offsets_of(data)[-1][1] + 1
                    assert data == want or last in ends
                    assert _sent(got) == data
    assert slices > 100


def test_at_the_log_end_a_slice_reads_nothing(tmp_path: Path) -> None:
    """A follower at the log end: the batch bounds come from the recent batches, so making the
    slice reads no byte of the file."""
    fs = FaultyFileSystem()
    plog = _log(tmp_path, LogConfig(index_interval_bytes=1 << 20), fs=fs)
    for _ in range(100):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    fs.preads = 0
    got = plog.read_to_send(190, max_bytes=1 << 20, zero_copy=True)
    assert isinstance(got, FileSlice) and fs.preads == 0
    assert offsets_of(bytes(got)) == [(190, 191), (192, 193), (194, 195), (196, 197), (198, 199)]


def test_a_long_header_walk_stops_at_the_cap(tmp_path: Path) -> None:
    """Bounds found by reading headers: at most SLICE_SCAN_HEADERS of them per slice."""
    fs = FaultyFileSystem()
    plog = _log(tmp_path, LogConfig(index_interval_bytes=1 << 20), fs=fs)
    for _ in range(200):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    fs.preads = 0
    got = plog.read_to_send(3, max_bytes=1 << 20, zero_copy=True)  # old: not a recent batch
    assert isinstance(got, FileSlice)
    assert offsets_of(bytes(got)) == [(i, i) for i in range(3, 3 + SLICE_SCAN_HEADERS)]


def test_another_file_system_gets_bytes(tmp_path: Path) -> None:
    """A test's file system (not the real one): sendfile would bypass its faults, so bytes."""

    class Wrapped:
        def __init__(self) -> None:
            self._fs = NoSyncFileSystem()

        def __getattr__(self, name: str) -> Any:
            return getattr(self._fs, name)

    plog = _log(tmp_path, fs=Wrapped())
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    got = plog.read_to_send(0, max_bytes=1 << 20, zero_copy=True)
    assert isinstance(got, bytes) and offsets_of(got) == [(0, 1)]


def test_nothing_to_read_is_empty_bytes(tmp_path: Path) -> None:
    plog = _log(tmp_path)
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    assert plog.read_to_send(0, max_bytes=1 << 20, max_offset=0, zero_copy=True) == b""
    assert plog.read_to_send(2, max_bytes=1 << 20, zero_copy=True) == b""
    assert plog.read_to_send(0, max_bytes=1, min_one_batch=False, zero_copy=True) == b""


def test_a_damaged_first_batch_is_left_to_read(tmp_path: Path) -> None:
    """A header that does not parse: no slice; `read` raises as it always did."""
    plog = _log(tmp_path, LogConfig(index_interval_bytes=1 << 20))
    for _ in range(3):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    seg = plog.segments[0]
    seg._recent.clear()  # make the slice read the headers from the file
    fd = os.open(seg.log_path, os.O_WRONLY)  # not O_APPEND, where pwrite would append
    try:
        os.pwrite(fd, b"\x09", 16)  # the magic byte of the first batch
    finally:
        os.close(fd)
    assert seg.slice(0, 1 << 20, 100, True) is None
    pos = len(batch(2))
    got = seg.slice(pos, 1 << 20, 100, True)
    assert got is not None and got[0] is not None and offsets_of(bytes(got[0]))[0] == (2, 3)


def test_a_truncation_voids_the_slices_made_before(tmp_path: Path) -> None:
    plog = _log(tmp_path)
    for _ in range(4):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    early = plog.read_to_send(0, max_bytes=len(batch(2)), zero_copy=True)
    late = plog.read_to_send(6, max_bytes=1 << 20, zero_copy=True)
    assert isinstance(early, FileSlice) and isinstance(late, FileSlice)
    plog.truncate_to(6)
    plog.append_as_leader(batch(2), leader_epoch=1, now_ms=NOW)  # the same bytes' place
    for gone in (early, late):  # even a slice below the truncation point: the bytes may move
        with pytest.raises(RegionGone):
            bytes(gone)
        with pytest.raises(RegionGone):
            gone.sendfile(0, 0, 1)
    fresh = plog.read_to_send(6, max_bytes=1 << 20, zero_copy=True)
    assert isinstance(fresh, FileSlice)
    assert [h.partition_leader_epoch for _p, h in iter_batches(bytes(fresh))] == [1]


def test_a_deleted_segment_voids_its_slices(tmp_path: Path) -> None:
    size = len(batch(2))
    plog = _log(tmp_path, LogConfig(segment_bytes=size * 2, retention_bytes=size * 2))
    for _ in range(6):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    old = plog.read_to_send(0, max_bytes=1 << 20, zero_copy=True)
    assert isinstance(old, FileSlice) and offsets_of(bytes(old)) == [(0, 1), (2, 3)]
    plog.high_watermark = plog.log_end_offset
    assert plog.delete_expired_segments(NOW) > 0
    with pytest.raises(RegionGone):
        bytes(old)
    with pytest.raises(RegionGone):
        old.sendfile(0, 0, 1)


def test_only_batches_checked_since_the_log_was_opened_go_unread(tmp_path: Path) -> None:
    """Batches from before the log was opened (start-up does not scan them all) are read and
    CRC-checked as for a consumer, so the leader still finds damage in them; batches appended
    since (checked on the way in) are sliced. A truncation below that point moves it down."""
    plog = _log(tmp_path)
    for _ in range(3):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    plog.close()
    plog = _log(tmp_path)
    old = plog.read_to_send(0, max_bytes=1 << 20, zero_copy=True)
    assert isinstance(old, bytes) and offsets_of(old) == [(0, 1), (2, 3), (4, 5)]
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    assert isinstance(plog.read_to_send(4, max_bytes=1 << 20, zero_copy=True), bytes)
    new = plog.read_to_send(6, max_bytes=1 << 20, zero_copy=True)
    assert isinstance(new, FileSlice) and offsets_of(bytes(new)) == [(6, 7)]
    plog.truncate_to(2)
    plog.append_as_leader(batch(2), leader_epoch=1, now_ms=NOW)
    assert isinstance(plog.read_to_send(0, max_bytes=1 << 20, zero_copy=True), bytes)
    again = plog.read_to_send(2, max_bytes=1 << 20, zero_copy=True)
    assert isinstance(again, FileSlice) and offsets_of(bytes(again)) == [(2, 3)]


def test_the_offset_index_bounds_a_slice_of_many_small_batches(tmp_path: Path) -> None:
    """Thousands of small batches (a consumer far behind, 1 MiB asked): the slice's end is
    found from the offset index's entry before it, so only the few headers after that entry
    are read; its bytes are whole batches, the same as `read` up to where it ends, which is
    within a few KiB of the byte limit and never past `max_offset`."""
    fs = FaultyFileSystem()
    plog = _log(tmp_path, LogConfig(index_interval_bytes=4096), fs=fs)
    for _ in range(3000):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    size = len(batch(1))
    for offset, max_bytes, max_offset in (
        (0, 1 << 20, 3000),
        (5, 100_000, 3000),
        (100, 50_000, 2990),
        (100, 1 << 20, 700),
        (100, 1 << 20, 101),
    ):
        want = plog.read(offset, max_bytes=max_bytes, max_offset=max_offset, min_one_batch=True)
        fs.preads = 0
        got = plog.read_to_send(
            offset, max_bytes=max_bytes, max_offset=max_offset, min_one_batch=True, zero_copy=True
        )
        assert isinstance(got, FileSlice)
        assert fs.preads <= 4096 // size + 2  # the headers after one index entry, not all
        data = bytes(got)
        assert want.startswith(data) and len(want) - len(data) <= 4096 + size
        assert [o for o, _ in offsets_of(data)] == list(range(offset, offset + len(data) // size))
        assert offsets_of(data)[-1][1] < max_offset
