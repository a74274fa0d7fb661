"""Creating many partitions: fsyncs per partition, and crashes at every step of a create.

`LogManager.create_many` (behind CreateTopics and CreatePartitions) makes every directory and
file first and then fsyncs each new partition directory and each log directory once; the
topic store write that follows is the commit point. Checked here through the file-system
seam:

- the fsyncs of a 1,000-partition create are bounded by n + the log dirs (no file fsync);
- a process crash (`kill -9`: the page cache survives, nothing else runs) at every file
  operation of a small CreateTopics / CreatePartitions, and just before the store write,
  leaves a state that loads: the topic (or the new partitions) is either absent with no
  directory left, or complete, every partition empty and writable;
- what power loss can drop (the un-fsynced `partition.metadata` content, a whole partition
  directory, the index files) is repaired at load from the topic store;
- an I/O error in the middle of a create removes what it made and a retry succeeds.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest
from crash_fs import Crash, CrashingFileSystem
from logtest_helpers import NOW, NoSyncFileSystem

from protocol.records import build_batch, iter_batches
from tests.unit.local_metadata import Leader, LocalTopicAdmin, lead_every_partition
from wirebroker.config import BrokerConfig
from wirebroker.log import LogConfig, LogManager, StorageError
from wirebroker.log.checkpoint import read_partition_metadata
from wirebroker.log.fs import OsFileSystem
from wirebroker.log.partition_log import LEADER_EPOCH_FILE, PARTITION_METADATA_FILE
from wirebroker.metadata.topic_admin import NewPartitions
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.replica_manager import ReplicaManager

CFG = LogConfig()
TOPIC = "wide"


class CountingFileSystem(NoSyncFileSystem):
    """Counts fsyncs (files and directories); no real fsync, so 1,000 partitions stay fast."""

    def __init__(self) -> None:
        self.file_fsyncs = 0
        self.dir_fsyncs: list[Path] = []

    def fsync(self, fd: int) -> None:
        self.file_fsyncs += 1

    def fsync_dir(self, path: Path) -> None:
        self.dir_fsyncs.append(Path(path))


class Broker:
    """TopicStore + LogManager + ReplicaManager on `data`, loaded."""

    def __init__(self, data: Path, fs: OsFileSystem | None = None, log_dirs: int = 1) -> None:
        self.config = BrokerConfig({"node.id": "0", "log.dirs": str(data)})
        self.topics = TopicStore.open(data)
        dirs = [data] if log_dirs == 1 else [data / f"d{i}" for i in range(log_dirs)]
        self.logs = LogManager(dirs, fs=fs or NoSyncFileSystem())
        self.rm = ReplicaManager(self.config, self.logs, self.topics, node_id=0)
        self.rm.load(NOW)
        lead_every_partition(self.rm, NOW)
        self.admin = LocalTopicAdmin(
            self.config, self.topics, self.logs, node_id=0, listener=Leader(self.rm, lambda: NOW)
        )


def batch(value: bytes) -> bytes:
    return build_batch([(None, value)], base_timestamp=NOW)


def partition_dirs(data: Path, topic: str) -> list[str]:
    return sorted(
        n for n in os.listdir(data) if n.rsplit("-", 1)[0] == topic and (data / n).is_dir()
    )


def assert_complete_and_writable(b: Broker, topic: str, count: int) -> None:
    info = b.topics.get(topic)
    assert info is not None and info.partitions == count
    parts = b.rm.partitions_of(topic)
    assert [p.index for p in parts] == list(range(count))
    for p in parts:
        assert (p.log.log_start_offset, p.log.log_end_offset) == (0, 0)
        assert p.log.topic_id == info.topic_id
        assert read_partition_metadata(
            OsFileSystem(), p.log.directory / PARTITION_METADATA_FILE
        ) == (info.topic_id)
        result = b.rm.append(p, batch(b"v%d" % p.index), now_ms=NOW)
        assert result.first_offset == 0
        data = p.log.read(0, max_bytes=1 << 20)
        assert [h.base_offset for _, h in iter_batches(data)] == [0]


# -- fsync counts ------------------------------------------------------------------------------


def test_fsyncs_of_a_1000_partition_create_are_one_per_directory(tmp_path: Path) -> None:
    fs = CountingFileSystem()
    mgr = LogManager([tmp_path], fs=fs)
    tid = uuid.uuid4()
    logs = mgr.create_many(TOPIC, range(1000), CFG, NOW, tid)
    assert [p.partition for p in logs] == list(range(1000))
    assert fs.file_fsyncs == 0
    assert len(fs.dir_fsyncs) <= 1000 + 2
    # each new partition directory once, then its parent once, after them
    assert sorted(map(str, fs.dir_fsyncs[:-1])) == sorted(
        str(tmp_path / f"{TOPIC}-{i}") for i in range(1000)
    )
    assert fs.dir_fsyncs[-1] == tmp_path
    # nothing else was written: three empty segment files and the topic id
    names = sorted(os.listdir(tmp_path / f"{TOPIC}-7"))
    assert names == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        PARTITION_METADATA_FILE,
    ]
    assert read_partition_metadata(fs, tmp_path / f"{TOPIC}-7" / PARTITION_METADATA_FILE) == tid
    # asking again returns the same logs and touches nothing
    fs.dir_fsyncs.clear()
    assert mgr.create_many(TOPIC, [3, 999], CFG, NOW, tid) == [logs[3], logs[999]]
    assert fs.dir_fsyncs == [] and fs.file_fsyncs == 0
    mgr.close()


def test_two_log_dirs_are_balanced_and_each_fsynced_once(tmp_path: Path) -> None:
    fs = CountingFileSystem()
    dirs = [tmp_path / "a", tmp_path / "b"]
    mgr = LogManager(dirs, fs=fs)
    mgr.create("other", 0, CFG, NOW)  # dir a now holds one more
    fs.dir_fsyncs.clear()
    mgr.create_many(TOPIC, range(9), CFG, NOW)
    placed = [mgr.log_dir_of(TOPIC, i) for i in range(9)]
    assert placed.count(dirs[0]) == 4 and placed.count(dirs[1]) == 5
    assert len(fs.dir_fsyncs) == 9 + 2
    assert sorted(map(str, fs.dir_fsyncs[-2:])) == sorted(map(str, dirs))
    mgr.delete(TOPIC, 0)
    mgr.delete(TOPIC, 2)  # the per-dir counts follow deletes too
    counts = {d: sum(1 for k in mgr.all_logs() if mgr.log_dir_of(*k) == d) for d in dirs}
    new = mgr.create("late", 0, CFG, NOW)
    assert new.directory.parent == min(dirs, key=lambda d: counts[d])
    mgr.close()


def test_create_topic_and_create_partitions_use_the_batched_path(tmp_path: Path) -> None:
    fs = CountingFileSystem()
    b = Broker(tmp_path / "data", fs)
    b.admin.create_topic(TOPIC, 1000, now_ms=NOW)
    assert fs.file_fsyncs == 0 and len(fs.dir_fsyncs) == 1001
    fs.dir_fsyncs.clear()
    b.admin.create_partitions(NewPartitions(TOPIC, 1200), now_ms=NOW)
    assert fs.file_fsyncs == 0 and len(fs.dir_fsyncs) == 201
    assert len(b.rm.partitions_of(TOPIC)) == 1200
    b.logs.close()


def test_reloading_new_partitions_writes_no_epoch_checkpoint(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = Broker(data)
    b.admin.create_topic(TOPIC, 3, now_ms=NOW)
    for plog in b.logs.all_logs().values():
        plog._close_files()  # kill -9: no clean shutdown
    fs = CountingFileSystem()
    b = Broker(data, fs)
    assert not (data / f"{TOPIC}-0" / LEADER_EPOCH_FILE).exists()
    assert_complete_and_writable(b, TOPIC, 3)
    assert (data / f"{TOPIC}-0" / LEADER_EPOCH_FILE).exists()  # the first append's epoch
    b.logs.close()


# -- crashes -----------------------------------------------------------------------------------


def _crash_run(
    data: Path, crash_at: int | None, action: Callable[[Broker], None], before_store: bool
) -> int:
    """Run `action` on a broker whose file system dies at operation `crash_at` (or, with
    `before_store`, whose topic store dies before writing). Returns the operations done."""
    fs = CrashingFileSystem()
    b = Broker(data, fs)
    fs.ops = 0
    fs.crash_at = crash_at
    if before_store:

        def dead_put(*_args: object) -> None:
            raise Crash("store")

        b.topics.put = dead_put  # type: ignore[method-assign, assignment]
    with suppress(Crash):
        action(b)
    fs.release()
    return fs.ops


def _check_after_crash(data: Path, topic: str, before: int, after: int) -> int:
    """Load with a healthy file system; the topic has `before` or `after` partitions (0:
    absent), complete and writable, and no directory of a partition it does not have."""
    b = Broker(data)
    info = b.topics.get(topic)
    count = 0 if info is None else info.partitions
    assert count in (before, after)
    assert partition_dirs(data, topic) == sorted(f"{topic}-{i}" for i in range(count))
    if count:
        assert_complete_and_writable(b, topic, count)
    b.logs.close()
    return count


def test_crash_at_every_step_of_create_topic(tmp_path: Path) -> None:
    def create(b: Broker) -> None:
        b.admin.create_topic(TOPIC, 3, now_ms=NOW)

    total = _crash_run(tmp_path / "count", None, create, False)
    assert total > 10
    outcomes = []
    for k in range(total + 1):
        data = tmp_path / f"k{k}"
        _crash_run(data, k, create, before_store=k == total)
        outcomes.append(_check_after_crash(data, TOPIC, 0, 3))
    # crashed before the store write: removed at start; the full run: complete
    assert outcomes == [0] * (total + 1)
    data = tmp_path / "done"
    _crash_run(data, None, create, False)
    assert _check_after_crash(data, TOPIC, 0, 3) == 3


def test_crash_at_every_step_of_create_partitions(tmp_path: Path) -> None:
    def seed(data: Path) -> None:
        b = Broker(data)
        b.admin.create_topic(TOPIC, 2, now_ms=NOW)
        b.rm.append(b.rm.partition(TOPIC, 1), batch(b"kept"), now_ms=NOW)
        b.logs.close()

    def grow(b: Broker) -> None:
        b.admin.create_partitions(NewPartitions(TOPIC, 4), now_ms=NOW)

    seed(tmp_path / "count")
    total = _crash_run(tmp_path / "count", None, grow, False)
    for k in range(total + 1):
        data = tmp_path / f"k{k}"
        seed(data)
        _crash_run(data, k, grow, before_store=k == total)
        b = Broker(data)
        info = b.topics.get(TOPIC)
        assert info is not None and info.partitions == 2
        assert partition_dirs(data, TOPIC) == [f"{TOPIC}-0", f"{TOPIC}-1"]
        p1 = b.rm.partition(TOPIC, 1)
        assert p1 is not None and p1.log.log_end_offset == 1
        b.admin.create_partitions(NewPartitions(TOPIC, 4), now_ms=NOW)  # the retry works
        b.logs.close()
        b = Broker(data)
        assert [p.index for p in b.rm.partitions_of(TOPIC)] == [0, 1, 2, 3]
        b.logs.close()


# -- power loss --------------------------------------------------------------------------------


def test_what_power_loss_can_drop_is_repaired_at_load(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = Broker(data)
    info = b.admin.create_topic(TOPIC, 4, now_ms=NOW)
    for plog in b.logs.all_logs().values():
        plog._close_files()
    # never fsynced: partition.metadata content; fsynced, but lost in this scenario anyway:
    # a whole directory, the index files of another
    (data / f"{TOPIC}-0" / PARTITION_METADATA_FILE).write_bytes(b"")
    (data / f"{TOPIC}-1" / PARTITION_METADATA_FILE).unlink()
    for name in os.listdir(data / f"{TOPIC}-2"):
        (data / f"{TOPIC}-2" / name).unlink()
    (data / f"{TOPIC}-2").rmdir()
    (data / f"{TOPIC}-3" / "00000000000000000000.index").unlink()
    (data / f"{TOPIC}-3" / "00000000000000000000.timeindex").unlink()
    b = Broker(data)
    assert b.topics.get(TOPIC) == info
    assert_complete_and_writable(b, TOPIC, 4)
    b.logs.close()


# -- I/O errors --------------------------------------------------------------------------------


class FailingOpenFileSystem(NoSyncFileSystem):
    """ENOSPC when creating the `fail_on`-th `.timeindex` file."""

    def __init__(self, fail_on: int) -> None:
        self.fail_on = fail_on
        self.seen = 0

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        if str(path).endswith(".timeindex") and flags & os.O_CREAT:
            self.seen += 1
            if self.seen == self.fail_on:
                raise OSError(28, "No space left on device (injected)")
        return super().open(path, flags, mode)


def test_an_io_error_mid_create_removes_what_it_made(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = Broker(data, FailingOpenFileSystem(fail_on=4))
    with pytest.raises(StorageError):
        b.admin.create_topic(TOPIC, 6, now_ms=NOW)
    assert b.topics.get(TOPIC) is None
    assert b.rm.partitions_of(TOPIC) == []
    assert all(b.logs.get(TOPIC, i) is None for i in range(6))
    assert partition_dirs(data, TOPIC) == []
    b.admin.create_topic(TOPIC, 6, now_ms=NOW)  # the retry works
    assert_complete_and_writable(b, TOPIC, 6)
    b.logs.close()
