"""Injected I/O failures: a failed append never leaves a half-written batch to be served."""

from __future__ import annotations

from pathlib import Path

import pytest
from logtest_helpers import (
    NOW,
    FaultyFileSystem,
    assert_consistent,
    batch,
    full_scan,
    offsets_of,
    open_log,
)

from protocol.errors import ErrorCode
from wirebroker.log import LogConfig, StorageError
from wirebroker.log.errors import OutOfOrderSequenceError


def test_torn_write_is_rolled_back(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, LogConfig(index_interval_bytes=0), fs=fs)
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    size = plog.size_in_bytes()
    fs.fail_write_after = 40  # 40 bytes of the batch reach the file, then ENOSPC
    with pytest.raises(StorageError) as exc_info:
        plog.append_as_leader(batch(3), leader_epoch=0, now_ms=NOW)
    assert exc_info.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert plog.log_end_offset == 4 and plog.size_in_bytes() == size
    assert (plog.directory / f"{0:020d}.log").stat().st_size == size
    assert not plog.offline
    assert_consistent(plog)
    r = plog.append_as_leader(batch(3), leader_epoch=0, now_ms=NOW)  # the disk has room again
    assert (r.first_offset, r.last_offset) == (4, 6)
    assert offsets_of(plog.read(0, max_bytes=1 << 20)) == [(0, 1), (2, 3), (4, 6)]
    assert_consistent(plog)


def test_failed_index_write_rolls_back_the_log(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, LogConfig(index_interval_bytes=0), fs=fs)
    plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    fs.write_match = lambda p: p.suffix == ".index"
    fs.fail_write_after = 0
    with pytest.raises(StorageError):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    assert plog.log_end_offset == 1
    assert [b.header.base_offset for b in full_scan(plog.directory)] == [0]
    assert_consistent(plog)


def test_failed_rollback_takes_the_log_offline(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, fs=fs)
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    fs.fail_write_after = 25
    fs.fail_truncate = True
    with pytest.raises(StorageError):
        plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    assert plog.offline
    with pytest.raises(StorageError):
        plog.read(0, max_bytes=1000)
    with pytest.raises(StorageError):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    plog.close()
    # the half-written batch is on disk; recovery removes it
    plog = open_log(tmp_path, recovery_point=0)
    assert plog.log_end_offset == 2
    assert_consistent(plog)


def test_failed_fsync_takes_the_log_offline(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, fs=fs)
    plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    fs.fail_fsync = True
    with pytest.raises(StorageError):
        plog.flush()
    assert plog.offline
    assert plog.recovery_point == 0


def test_flush_policies(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(flush_messages=3, flush_ms=1000))
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    assert plog.recovery_point == 0
    plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)  # 3 unflushed records
    assert plog.recovery_point == 3
    plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    plog.maybe_flush(NOW + 999)
    assert plog.recovery_point == 3
    plog.maybe_flush(NOW + 1000)
    assert plog.recovery_point == 4


def test_producer_state_untouched_by_a_failed_write(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, fs=fs)
    plog.append_as_leader(batch(1, pid=5, epoch=0, seq=0), leader_epoch=0, now_ms=NOW)
    fs.fail_write_after = 10
    with pytest.raises(StorageError):
        plog.append_as_leader(batch(1, pid=5, epoch=0, seq=1), leader_epoch=0, now_ms=NOW)
    r = plog.append_as_leader(batch(1, pid=5, epoch=0, seq=1), leader_epoch=0, now_ms=NOW)
    assert not r.duplicate and r.first_offset == 1


def test_open_failure_is_a_storage_error(tmp_path: Path) -> None:
    class BrokenFs(FaultyFileSystem):
        def listdir(self, path: Path) -> list[str]:
            raise PermissionError(13, "Permission denied (injected)")

    with pytest.raises(StorageError):
        open_log(tmp_path, fs=BrokenFs())


def test_a_batch_pipelined_behind_a_failed_write_gets_a_storage_error(tmp_path: Path) -> None:
    """An idempotent producer pipelines R1 (seq 1) and R2 (seq 2); R1's write fails (full
    disk, undone). R2 must get KAFKA_STORAGE_ERROR, as from Kafka (whose log dir goes offline
    on the failed write), not OUT_OF_ORDER_SEQUENCE_NUMBER: librdkafka answers that with an
    epoch bump that renumbers the unacknowledged records of every partition, so a record
    already written elsewhere whose acknowledgement was lost is written twice (cluster
    chaos seed 195923930: disk_full after a network partition)."""
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, fs=fs)
    plog.append_as_leader(batch(1, pid=5, epoch=0, seq=0), leader_epoch=0, now_ms=NOW)
    fs.fail_write_after = 0
    with pytest.raises(StorageError):  # R1
        plog.append_as_leader(batch(1, pid=5, epoch=0, seq=1), leader_epoch=0, now_ms=NOW)
    for r2 in (batch(1, pid=5, epoch=0, seq=2), batch(1, pid=5, epoch=1, seq=1)):
        with pytest.raises(StorageError) as exc_info:
            plog.append_as_leader(r2, leader_epoch=0, now_ms=NOW)
        assert exc_info.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert not plog.offline and plog.log_end_offset == 1
    # the retries, in order, once the disk has room: R1 then R2
    r1 = plog.append_as_leader(batch(1, pid=5, epoch=0, seq=1), leader_epoch=0, now_ms=NOW)
    r2 = plog.append_as_leader(batch(1, pid=5, epoch=0, seq=2), leader_epoch=0, now_ms=NOW)
    assert (r1.first_offset, r2.first_offset) == (1, 2)
    # a write succeeded: a real sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER again
    with pytest.raises(OutOfOrderSequenceError):
        plog.append_as_leader(batch(1, pid=5, epoch=0, seq=9), leader_epoch=0, now_ms=NOW)
    assert_consistent(plog)


def test_the_storage_answer_lasts_until_the_producer_writes_again_in_that_leader_epoch(
    tmp_path: Path,
) -> None:
    fs = FaultyFileSystem()
    plog = open_log(tmp_path, fs=fs)
    plog.append_as_leader(batch(1, pid=5, epoch=0, seq=0), leader_epoch=0, now_ms=NOW)
    fs.fail_write_after = 0
    with pytest.raises(StorageError):  # R1
        plog.append_as_leader(batch(1, pid=5, epoch=0, seq=1), leader_epoch=0, now_ms=NOW)
    # the disk has room again: another producer's write (or a plain one) gets in first
    plog.append_as_leader(batch(1, pid=6, epoch=0, seq=0), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    with pytest.raises(StorageError):  # R2, still behind R1
        plog.append_as_leader(batch(1, pid=5, epoch=0, seq=2), leader_epoch=0, now_ms=NOW)
    with pytest.raises(OutOfOrderSequenceError):  # another producer's gap is its own
        plog.append_as_leader(batch(1, pid=6, epoch=0, seq=5), leader_epoch=0, now_ms=NOW)
    # a new leader epoch: no failed write of this leadership, a gap is a gap
    with pytest.raises(OutOfOrderSequenceError):
        plog.append_as_leader(batch(1, pid=5, epoch=0, seq=2), leader_epoch=1, now_ms=NOW)
