"""Leader epoch cache (KIP-101/279) and idempotent producer state."""

from __future__ import annotations

from pathlib import Path

import pytest
from logtest_helpers import NOW, batch, offsets_of, open_log

from wirebroker.log import (
    InvalidProducerEpochError,
    LogConfig,
    OutOfOrderSequenceError,
)
from wirebroker.log.leader_epoch import LeaderEpochCache

# -- leader epoch cache -------------------------------------------------------------------------


def test_epoch_cache_assign_rules() -> None:
    c = LeaderEpochCache()
    assert c.assign(1, 0)
    assert not c.assign(1, 5)  # same epoch, later offset: no change
    assert c.assign(3, 10)
    assert c.entries == [(1, 0), (3, 10)]
    assert c.assign(3, 8)  # same epoch, earlier offset: replaces
    assert c.entries == [(1, 0), (3, 8)]
    assert c.assign(2, 9)  # lower epoch: later entries with epoch >= 2 go
    assert c.entries == [(1, 0), (2, 9)]
    assert not c.assign(-1, 20)


def test_epoch_cache_truncation() -> None:
    c = LeaderEpochCache([(0, 0), (2, 10), (4, 20), (5, 30)])
    c.truncate_from_end(20)
    assert c.entries == [(0, 0), (2, 10)]
    c.truncate_from_start(15)
    assert c.entries == [(2, 15)]
    c.truncate_from_start(15)
    assert c.entries == [(2, 15)]
    c.truncate_from_start(3)
    assert c.entries == [(2, 15)]


def test_end_offset_for_epoch_rules() -> None:
    c = LeaderEpochCache([(1, 0), (3, 10), (6, 25)])
    assert c.end_offset_for(6, 40) == (6, 40)  # latest: log end offset
    assert c.end_offset_for(3, 40) == (3, 25)  # start of the next higher epoch
    assert c.end_offset_for(4, 40) == (3, 25)  # unknown middle epoch: floor epoch, next start
    assert c.end_offset_for(0, 40) == (0, 0)  # below the first: that epoch, first start
    assert c.end_offset_for(7, 40) == (-1, -1)  # above the latest
    assert c.end_offset_for(-1, 40) == (-1, -1)
    assert LeaderEpochCache().end_offset_for(0, 0) == (-1, -1)


def test_partition_log_epochs_and_checkpoint(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(3), leader_epoch=2, now_ms=NOW)
    assert plog.leader_epoch_entries() == [(0, 0), (2, 4)]
    assert plog.end_offset_for_epoch(0) == (0, 4)
    assert plog.end_offset_for_epoch(1) == (0, 4)
    assert plog.end_offset_for_epoch(2) == (2, 7)
    assert (plog.directory / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n2 4\n"
    plog.assign_epoch_start_offset(3)
    assert plog.end_offset_for_epoch(2) == (2, 7) and plog.latest_epoch == 3
    assert (plog.directory / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n2 4\n3 7\n"


def test_a_leadership_of_an_empty_log_is_checkpointed_with_its_first_append(
    tmp_path: Path,
) -> None:
    """No fsync when a new partition's leader takes over: the entry protects no record yet."""
    plog = open_log(tmp_path)
    ckpt = plog.directory / "leader-epoch-checkpoint"
    before = ckpt.read_text() if ckpt.exists() else None
    plog.assign_epoch_start_offset(2)
    assert plog.leader_epoch_entries() == [(2, 0)] and plog.latest_epoch == 2
    assert plog.end_offset_for_epoch(2) == (2, 0)
    assert (ckpt.read_text() if ckpt.exists() else None) == before
    plog.append_as_leader(batch(2), leader_epoch=2, now_ms=NOW)
    assert ckpt.read_text() == "0\n1\n2 0\n"
    # never written without a record (not at close either): the next leadership assigns it
    fresh = open_log(tmp_path / "other")
    fresh.assign_epoch_start_offset(4)
    fresh.close()
    reopened = open_log(tmp_path / "other", clean=True)
    assert reopened.leader_epoch_entries() == [] and reopened.log_end_offset == 0


def test_epoch_cache_rebuilt_when_checkpoint_missing_or_corrupt(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(segment_bytes=200))
    for e in (0, 0, 1, 1, 4):
        plog.append_as_leader(batch(2), leader_epoch=e, now_ms=NOW)
    entries = plog.leader_epoch_entries()
    assert entries == [(0, 0), (1, 4), (4, 8)]
    plog.close()
    ckpt = plog.directory / "leader-epoch-checkpoint"
    ckpt.unlink()
    assert open_log(tmp_path, clean=True).leader_epoch_entries() == entries
    assert ckpt.read_text() == "0\n3\n0 0\n1 4\n4 8\n"
    ckpt.write_text("0\n5\n0 0\n")  # count mismatch
    assert open_log(tmp_path, clean=True).leader_epoch_entries() == entries


# -- idempotent producers -----------------------------------------------------------------------


def pbatch(seq: int, n: int = 1, *, pid: int = 1000, epoch: int = 0) -> bytes:
    return batch(n, pid=pid, epoch=epoch, seq=seq)


def test_duplicate_returns_original_offsets(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    r0 = plog.append_as_leader(pbatch(0, 3), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)  # non-idempotent in between
    r1 = plog.append_as_leader(pbatch(3, 2), leader_epoch=0, now_ms=NOW)
    end = plog.log_end_offset
    dup = plog.append_as_leader(pbatch(0, 3), leader_epoch=0, now_ms=NOW)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (0, 2)
    dup = plog.append_as_leader(pbatch(3, 2), leader_epoch=0, now_ms=NOW)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (
        r1.first_offset,
        r1.last_offset,
    )
    assert plog.log_end_offset == end
    assert not r0.duplicate


def test_only_last_five_batches_are_remembered(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    for seq in range(6):
        plog.append_as_leader(pbatch(seq), leader_epoch=0, now_ms=NOW)
    assert plog.append_as_leader(pbatch(1), leader_epoch=0, now_ms=NOW).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        plog.append_as_leader(pbatch(0), leader_epoch=0, now_ms=NOW)


def test_sequence_gap_and_stale_epoch(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append_as_leader(pbatch(0, 2, epoch=3), leader_epoch=0, now_ms=NOW)
    with pytest.raises(OutOfOrderSequenceError):
        plog.append_as_leader(pbatch(3, epoch=3), leader_epoch=0, now_ms=NOW)  # gap (2 next)
    with pytest.raises(InvalidProducerEpochError):
        plog.append_as_leader(pbatch(2, epoch=2), leader_epoch=0, now_ms=NOW)
    with pytest.raises(OutOfOrderSequenceError):
        plog.append_as_leader(pbatch(5, epoch=4), leader_epoch=0, now_ms=NOW)  # bump, seq != 0
    assert plog.log_end_offset == 2
    plog.append_as_leader(pbatch(2, epoch=3), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(pbatch(0, epoch=4), leader_epoch=0, now_ms=NOW)  # bump at 0
    with pytest.raises(InvalidProducerEpochError):
        plog.append_as_leader(pbatch(3, epoch=3), leader_epoch=0, now_ms=NOW)
    assert plog.log_end_offset == 4


def test_unknown_producer_accepts_any_sequence(tmp_path: Path) -> None:
    # Kafka 4: state may have been removed by retention; the sequence is tracked from here
    plog = open_log(tmp_path)
    r = plog.append_as_leader(pbatch(42, pid=7), leader_epoch=0, now_ms=NOW)
    assert r.first_offset == 0
    with pytest.raises(OutOfOrderSequenceError):
        plog.append_as_leader(pbatch(44, pid=7), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(pbatch(43, pid=7), leader_epoch=0, now_ms=NOW)


def test_sequence_wraps_at_int32_max(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    top = 2**31 - 1
    plog.append_as_leader(pbatch(top - 1, 2), leader_epoch=0, now_ms=NOW)  # seqs top-1, top
    r = plog.append_as_leader(pbatch(0, 2), leader_epoch=0, now_ms=NOW)
    assert r.first_offset == 2 and not r.duplicate
    plog.append_as_leader(pbatch(top, 3, pid=9), leader_epoch=0, now_ms=NOW)  # top, 0, 1
    plog.append_as_leader(pbatch(2, pid=9), leader_epoch=0, now_ms=NOW)


def test_two_batches_of_one_producer_in_one_call(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    plog.append_as_leader(pbatch(0), leader_epoch=0, now_ms=NOW)
    r = plog.append_as_leader(pbatch(1, 2) + pbatch(3), leader_epoch=0, now_ms=NOW)
    assert (r.first_offset, r.last_offset) == (1, 3)
    with pytest.raises(OutOfOrderSequenceError):  # second batch out of order: nothing written
        plog.append_as_leader(pbatch(4) + pbatch(6), leader_epoch=0, now_ms=NOW)
    assert plog.log_end_offset == 4
    assert plog.append_as_leader(pbatch(4), leader_epoch=0, now_ms=NOW).first_offset == 4


@pytest.mark.parametrize("how", ["clean", "clean-no-snapshot", "unclean"])
def test_producer_state_rebuilt_after_reopen(tmp_path: Path, how: str) -> None:
    cfg = LogConfig(segment_bytes=300)
    plog = open_log(tmp_path, cfg)
    for seq in range(0, 12, 2):
        plog.append_as_leader(pbatch(seq, 2), leader_epoch=0, now_ms=NOW)
    plog.append_as_leader(pbatch(0, epoch=1, pid=55), leader_epoch=0, now_ms=NOW)
    assert len(plog.segments) > 2
    if how == "unclean":
        plog.flush()  # no close: no final snapshot, no marker
    else:
        plog.close()
    if how == "clean-no-snapshot":
        for f in plog.directory.glob("*.producers"):
            f.unlink()
    plog = open_log(tmp_path, cfg, clean=how != "unclean")
    dup = plog.append_as_leader(pbatch(10, 2), leader_epoch=0, now_ms=NOW)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (10, 11)
    with pytest.raises(OutOfOrderSequenceError):
        plog.append_as_leader(pbatch(13), leader_epoch=0, now_ms=NOW)
    with pytest.raises(InvalidProducerEpochError):
        plog.append_as_leader(pbatch(1, epoch=0, pid=55), leader_epoch=0, now_ms=NOW)
    assert plog.append_as_leader(pbatch(12), leader_epoch=0, now_ms=NOW).first_offset == 13


def test_producer_state_after_truncation(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(segment_bytes=300))
    for seq in range(8):
        plog.append_as_leader(pbatch(seq), leader_epoch=0, now_ms=NOW)
    plog.truncate_to(5)
    with pytest.raises(OutOfOrderSequenceError):
        plog.append_as_leader(pbatch(8), leader_epoch=0, now_ms=NOW)
    assert plog.append_as_leader(pbatch(5), leader_epoch=0, now_ms=NOW).first_offset == 5
    assert offsets_of(plog.read(5, max_bytes=1000)) == [(5, 5)]


def test_idle_producers_expire(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(producer_id_expiration_ms=1000))
    plog.append_as_leader(pbatch(0), leader_epoch=0, now_ms=NOW)
    plog.delete_expired_segments(NOW + 999)
    assert plog.producer_entry(1000) is not None
    plog.delete_expired_segments(NOW + 1000)
    assert plog.producer_entry(1000) is None
    # forgotten: any sequence is accepted again
    assert plog.append_as_leader(pbatch(7), leader_epoch=0, now_ms=NOW + 1000).first_offset == 1


def test_duplicate_on_log_append_time_topic_reports_original_time(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(message_timestamp_type="LogAppendTime"))
    r = plog.append_as_leader(pbatch(0), leader_epoch=0, now_ms=NOW + 5)
    assert r.log_append_time == NOW + 5
    dup = plog.append_as_leader(pbatch(0), leader_epoch=0, now_ms=NOW + 99)
    assert dup.duplicate and dup.log_append_time == NOW + 5 and dup.first_offset == 0
    entry = plog.producer_entry(1000)
    assert entry is not None and entry.last_timestamp == NOW + 5
