"""Open file descriptors per segment: one (the `.log`), plus the two index files only while
they hold entries not yet fsynced (see wirebroker/log/index.py, "File descriptors").

Counted from /proc/self/fd: every descriptor of this process that points into the test's
directory, grouped by file suffix.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from pathlib import Path

import pytest
from logtest_helpers import NOW, TOPIC, NoSyncFileSystem, assert_consistent, batch, open_log

from protocol.records import iter_batches
from wirebroker.log import LogConfig
from wirebroker.log.log_manager import LogManager

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


def open_files(root: Path) -> Counter[str]:
    """Suffix -> descriptors of this process open on files below `root`."""
    counts: Counter[str] = Counter()
    prefix = str(root.resolve()) + os.sep
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
        if target.startswith(prefix):
            counts[Path(target).suffix] += 1
    return counts


def test_new_partitions_hold_one_descriptor_each(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], fs=NoSyncFileSystem())
    logs = mgr.create_many(TOPIC, range(200), LogConfig(), NOW, uuid.uuid4())
    assert open_files(tmp_path) == Counter({".log": 200})
    # the index files exist (empty), as Kafka's layout has them
    part = tmp_path / f"{TOPIC}-5"
    assert (part / "00000000000000000000.index").stat().st_size == 0
    assert (part / "00000000000000000000.timeindex").stat().st_size == 0
    # an index entry (the first batch past index.interval.bytes) reopens the index files
    # of that partition only; a flush lets them go again
    logs[5].append_as_leader(batch(3, value=b"x" * 5000), leader_epoch=0, now_ms=NOW)
    assert open_files(tmp_path) == Counter({".log": 200})
    logs[5].append_as_leader(batch(3, value=b"x" * 5000), leader_epoch=0, now_ms=NOW)
    assert open_files(tmp_path) == Counter({".log": 200, ".index": 1, ".timeindex": 1})
    logs[5].flush()
    assert open_files(tmp_path) == Counter({".log": 200})
    mgr.close()
    assert open_files(tmp_path) == Counter()


def test_rolled_segments_hold_only_their_log(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=20_000, index_interval_bytes=1)
    plog = open_log(tmp_path, config)
    for _ in range(30):
        plog.append_as_leader(batch(2, value=b"v" * 2000), leader_epoch=0, now_ms=NOW)
    segments = len(plog.segments)
    assert segments >= 5
    # every rolled segment was flushed at its roll; the active one has unsynced entries
    assert open_files(tmp_path) == Counter({".log": segments, ".index": 1, ".timeindex": 1})
    # reads and lookups of every segment use the in-memory entries: no file is opened
    data = plog.read(0, max_bytes=1 << 30)
    assert [h.base_offset for _, h in iter_batches(data)] == list(range(0, 60, 2))
    for seg in plog.segments:
        assert plog.offset_for_timestamp(NOW) is not None
        assert plog.read(seg.base_offset + 1, max_bytes=1)
    assert open_files(tmp_path) == Counter({".log": segments, ".index": 1, ".timeindex": 1})
    assert_consistent(plog)
    plog.flush()
    assert open_files(tmp_path) == Counter({".log": segments})
    plog.close()


@pytest.mark.parametrize("clean", [True, False])
def test_reopened_log_holds_one_descriptor_per_segment(tmp_path: Path, clean: bool) -> None:
    config = LogConfig(segment_bytes=20_000, index_interval_bytes=1)
    plog = open_log(tmp_path, config)
    for _ in range(20):
        plog.append_as_leader(batch(2, value=b"v" * 2000), leader_epoch=0, now_ms=NOW)
    segments = len(plog.segments)
    plog.close()
    if not clean:  # lose the active segment's indexes: that segment is recovered at open
        active = plog.segments[-1].base_offset
        (plog.directory / f"{active:020d}.index").unlink()
        (plog.directory / f"{active:020d}.timeindex").write_bytes(b"\xff" * 5)
    plog = open_log(tmp_path, config, clean=clean)
    assert len(plog.segments) == segments
    assert open_files(tmp_path) == Counter({".log": segments})
    assert_consistent(plog)
    # appending after the reopen writes the right entries to the reopened index files
    plog.append_as_leader(batch(2, value=b"v" * 2000), leader_epoch=0, now_ms=NOW)
    plog.close()
    plog = open_log(tmp_path, config, clean=True)
    assert_consistent(plog)
    assert plog.log_end_offset == 42
    plog.close()
