"""Power loss on all replicas at once (issue 13 part 5; tests/reliability/powerloss.py).

The model first (what survives a cut: fsynced content, fsynced directory entries), then the
3-broker cluster: with flush.messages=1 no acknowledged acks=all record may be lost; with
Kafka's default flush settings the checker must find the losses (so the test fails both
ways); in both cases the brokers restart on the rewound files, elect leaders, get their ISR
back with equal replicas, and take new writes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from powerloss import PowerLossFileSystem, run_power_loss

from wirebroker.log.fs import APPEND_FLAGS, write_all, write_file, write_file_atomic


def test_only_fsynced_content_and_entries_survive(tmp_path: Path) -> None:
    root = tmp_path / "d"
    (root / "old").mkdir(parents=True)
    (root / "ren").mkdir()
    (root / "old" / "kept.log").write_bytes(b"before")
    fs = PowerLossFileSystem([root])
    sub = root / "old"
    # appended and fsynced, then more appended: the tail goes
    fd = fs.open(sub / "kept.log", APPEND_FLAGS)
    write_all(fs, fd, b"+synced")
    fs.fsync(fd)
    write_all(fs, fd, b"+page-cache")
    fs.close(fd)
    # truncated below the durable length without fsync: the durable bytes come back
    fd = fs.open(sub / "kept.log", APPEND_FLAGS)
    fs.ftruncate(fd, 2)
    fs.close(fd)
    # a new file fsynced, but its directory not: gone
    fd = fs.open(sub / "new.log", APPEND_FLAGS)
    write_all(fs, fd, b"x")
    fs.fsync(fd)
    fs.close(fd)
    # a new file in a directory that was fsynced: there, content as of its own fsync (none)
    fs.makedirs(root / "made")
    fs.fsync_dir(root)
    write_file(fs, root / "made" / "meta", b"unsynced")
    fs.fsync_dir(root / "made")
    # atomic replace: durable; an unlinked durable file comes back
    write_file_atomic(fs, root / "cp", b"v1")
    fs.unlink(root / "cp")
    # a directory created and not fsynced in its parent: gone with its synced content
    fs.makedirs(root / "made" / "lost")
    write_file_atomic(fs, root / "made" / "lost" / "f", b"durable in a lost dir")
    # a rename whose directory was not fsynced reverts
    write_file_atomic(fs, root / "ren" / "a", b"A")
    fs.rename(root / "ren" / "a", root / "ren" / "b")

    stats = fs.power_loss()

    assert (sub / "kept.log").read_bytes() == b"before+synced"
    assert not (sub / "new.log").exists()
    assert (root / "made" / "meta").read_bytes() == b""
    assert (root / "cp").read_bytes() == b"v1"
    assert not (root / "made" / "lost").exists()
    assert (root / "ren" / "a").read_bytes() == b"A"
    assert not (root / "ren" / "b").exists()
    assert stats.files_rewound >= 1
    # after a power loss everything on disk is durable again, and the model goes on
    fd = fs.open(sub / "kept.log", os.O_RDWR | os.O_APPEND)
    write_all(fs, fd, b"!")
    fs.close(fd)
    fs.power_loss()
    assert (sub / "kept.log").read_bytes() == b"before+synced"


def test_power_loss_with_flush_messages_1_loses_no_acknowledged_record(tmp_path: Path) -> None:
    report = trio.run(lambda: run_power_loss(tmp_path, flush_messages=1, load_s=2.0))
    print(report.summary())
    assert report.check.acked >= 50, report.summary()
    assert report.check.lost == 0, report.check.summary()
    assert report.check.ok, report.check.summary()
    assert report.recovered, report.summary()


def test_power_loss_with_default_flush_loses_what_the_page_cache_held(tmp_path: Path) -> None:
    """Kafka's defaults never fsync a segment before it rolls: after a power loss on every
    replica at once, the acknowledged records of the active segments are gone (KIP-966's
    'last replica standing' case), and the checker says so; the cluster still recovers."""
    report = trio.run(lambda: run_power_loss(tmp_path, flush_messages=None, load_s=2.0))
    print(report.summary())
    assert report.check.acked >= 50, report.summary()
    assert report.check.lost > 0, report.summary()
    assert report.check.lost == report.check.acked  # nothing of a first segment is fsynced
    assert not (report.check.duplicates or report.check.gaps or report.check.reorders)
    assert report.fs.bytes_lost > 0
    assert report.recovered, report.summary()
