"""LogManager: directories, loading, checkpoints, clean shutdown, create/delete."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from logtest_helpers import NOW, FaultyFileSystem, NoSyncFileSystem, assert_consistent, batch

from wirebroker.log import LogConfig, LogManager, StorageError
from wirebroker.log.checkpoint import (
    CheckpointError,
    format_topic_id,
    parse_topic_id,
    read_offset_checkpoint,
)
from wirebroker.log.fs import OsFileSystem
from wirebroker.log.log_manager import delete_dir_name, parse_partition_dir

CFG = LogConfig(segment_bytes=len(batch(1)) * 3)
FS = NoSyncFileSystem()


def configs(topic: str) -> LogConfig:
    return CFG


def test_parse_partition_dir() -> None:
    assert parse_partition_dir("my-topic-with-dashes-12") == ("my-topic-with-dashes", 12)
    assert parse_partition_dir("t-0") == ("t", 0)
    assert parse_partition_dir("t-0.abc-delete") is None
    assert parse_partition_dir("nodash") is None
    assert parse_partition_dir("-3") is None
    assert parse_partition_dir("bad topic-1") is None


def test_create_load_and_clean_shutdown(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    mgr = LogManager(dirs, fs=FS)
    assert all(d.is_dir() for d in dirs)
    tid = uuid.uuid4()
    logs = [mgr.create("a-b-c", p, CFG, NOW, topic_id=tid) for p in range(3)]
    logs.append(mgr.create("x", 0, CFG, NOW))
    assert mgr.create("x", 0, CFG, NOW) is logs[-1]
    # spread over the dirs: fewest partitions first
    assert sorted(str(mgr.log_dir_of(*k)) for k in mgr.all_logs()) == sorted(
        [str(dirs[0]), str(dirs[1]), str(dirs[0]), str(dirs[1])]
    )
    for plog in logs:
        for _ in range(4):
            plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    meta = (logs[0].directory / "partition.metadata").read_text()
    assert meta == f"version: 0\ntopic_id: {format_topic_id(tid)}"
    mgr.close()
    for d in dirs:
        assert (d / ".kafka_cleanshutdown").exists()
        ckpt = (d / "recovery-point-offset-checkpoint").read_text().splitlines()
        assert ckpt[0] == "0" and int(ckpt[1]) == 2 and len(ckpt) == 4
        assert all(line.split()[2] == "4" for line in ckpt[2:])
        assert (d / "log-start-offset-checkpoint").exists()
    (dirs[0] / "unrelated-file.txt").write_text("hello")
    (dirs[0] / "not_a_partition").mkdir()
    (dirs[0] / "meta.properties").write_text("node.id=0\n")

    fs = FaultyFileSystem()
    mgr = LogManager(dirs, fs=fs)
    mgr.load(configs, NOW)
    assert sorted(mgr.all_logs()) == [("a-b-c", 0), ("a-b-c", 1), ("a-b-c", 2), ("x", 0)]
    assert all(not (d / ".kafka_cleanshutdown").exists() for d in dirs)
    loaded = mgr.get("a-b-c", 1)
    assert loaded is not None and loaded.log_end_offset == 4 and loaded.topic_id == tid
    assert mgr.get("nope", 0) is None
    assert_consistent(loaded)
    assert (dirs[0] / "meta.properties").read_text() == "node.id=0\n"
    mgr.close()


def test_unclean_load_recovers_from_checkpoint(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], fs=FS)
    plog = mgr.create("t", 0, CFG, NOW)
    for _ in range(7):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    mgr.checkpoint()
    assert read_offset_checkpoint(
        OsFileSystem(), tmp_path / "recovery-point-offset-checkpoint"
    ) == {("t", 0): 6}
    plog._close_files()  # crash: no marker
    last = plog.directory / f"{6:020d}.log"
    os.truncate(last, last.stat().st_size - 3)
    mgr = LogManager([tmp_path], fs=FS)
    mgr.load(configs, NOW)
    plog2 = mgr.get("t", 0)
    assert plog2 is not None and plog2.log_end_offset == 6
    assert_consistent(plog2)


def test_log_start_offset_checkpoint(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], fs=FS)
    plog = mgr.create("t", 0, CFG, NOW)
    for _ in range(5):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    plog.high_watermark = 5
    plog.delete_records_before(4)
    mgr.close()
    text = (tmp_path / "log-start-offset-checkpoint").read_text()
    assert text == "0\n1\nt 0 4\n"
    mgr = LogManager([tmp_path], fs=FS)
    mgr.load(configs, NOW)
    loaded = mgr.get("t", 0)
    assert loaded is not None and loaded.log_start_offset == 4


def test_delete_a_partition_of_a_longest_named_topic(tmp_path: Path) -> None:
    """A 249-character topic name (the longest Kafka allows): `<topic>-<n>.<32 hex>-delete`
    would be 291 bytes, over NAME_MAX; the topic part is cut as Kafka cuts it."""
    topic = "x" * 249
    mgr = LogManager([tmp_path])
    mgr.create(topic, 12, CFG, NOW).append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    mgr.delete(topic, 12)
    assert mgr.get(topic, 12) is None and os.listdir(tmp_path) == []
    name = delete_dir_name(topic, 12)
    assert len(name.encode()) == 255 and name.endswith("-delete") and "-12." in name
    assert delete_dir_name("t", 0).startswith("t-0.")


def test_delete_partition(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path])  # the real OsFileSystem, fsyncs included
    plog = mgr.create("t", 0, CFG, NOW)
    plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    mgr.delete("t", 0)
    assert mgr.get("t", 0) is None
    assert os.listdir(tmp_path) == []
    mgr.delete("t", 0)  # unknown: no-op
    # a leftover from an interrupted delete is removed at load
    leftover = tmp_path / "t-1.0123abcd-delete"
    leftover.mkdir()
    (leftover / f"{0:020d}.log").write_bytes(b"x")
    mgr = LogManager([tmp_path], fs=FS)
    mgr.load(configs, NOW)
    assert not leftover.exists() and mgr.all_logs() == {}


def test_duplicate_partition_in_two_dirs(tmp_path: Path) -> None:
    for d in ("a", "b"):
        (tmp_path / d / "t-0").mkdir(parents=True)
    mgr = LogManager([tmp_path / "a", tmp_path / "b"], fs=FS)
    with pytest.raises(StorageError):
        mgr.load(configs, NOW)


def test_configs_none_leaves_the_directory_alone(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], fs=FS)
    mgr.create("keep", 0, CFG, NOW)
    mgr.create("skip", 0, CFG, NOW)
    mgr.close()
    mgr = LogManager([tmp_path], fs=FS)
    mgr.load(lambda t: CFG if t == "keep" else None, NOW)
    assert list(mgr.all_logs()) == [("keep", 0)]
    assert (tmp_path / "skip-0").is_dir()


def test_retention_and_flush_run_over_all_logs(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=len(batch(1)), retention_ms=1000, flush_ms=10)
    mgr = LogManager([tmp_path], fs=FS)
    logs = [mgr.create("t", p, cfg, NOW) for p in range(2)]
    for plog in logs:
        for i in range(3):
            plog.append_as_leader(batch(1, ts=NOW + i), leader_epoch=0, now_ms=NOW)
        plog.high_watermark = plog.log_end_offset
    mgr.flush_due(NOW + 10)
    assert all(p.recovery_point == 3 for p in logs)
    mgr.run_retention(NOW + 5000)
    assert all(p.log_start_offset == 3 for p in logs)


def test_corrupt_checkpoint_means_full_recovery(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], fs=FS)
    plog = mgr.create("t", 0, CFG, NOW)
    for _ in range(4):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    mgr.close()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n7\nt 0 4\n")
    (tmp_path / ".kafka_cleanshutdown").unlink()
    with pytest.raises(CheckpointError):
        read_offset_checkpoint(OsFileSystem(), tmp_path / "recovery-point-offset-checkpoint")
    mgr = LogManager([tmp_path], fs=FS)
    mgr.load(configs, NOW)
    loaded = mgr.get("t", 0)
    assert loaded is not None and loaded.log_end_offset == 4


def test_topic_id_round_trip() -> None:
    tid = uuid.uuid4()
    text = format_topic_id(tid)
    assert len(text) == 22 and "=" not in text
    assert parse_topic_id(text) == tid
