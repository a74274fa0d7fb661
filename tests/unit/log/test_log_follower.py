"""Follower appends and truncation: `PartitionLog.append_as_follower`, `truncate_to`,
`truncate_fully_and_start_at`, `advance_log_start_offset`, and the KIP-101/279 divergent-log
cases played between logs with the fetch protocol's truncation rules."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logtest_helpers import NOW, TOPIC, NoSyncFileSystem, batch, open_log

from protocol.records import iter_batches
from wirebroker.log import LogConfig, PartitionLog
from wirebroker.log.checkpoint import read_epoch_checkpoint
from wirebroker.log.errors import CorruptRecordError, UnexpectedAppendOffsetError
from wirebroker.log.partition_log import LEADER_EPOCH_FILE
from wirebroker.replication import rules


def _pair(tmp_path: Path) -> tuple[PartitionLog, PartitionLog]:
    leader = open_log(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    return leader, follower


def _all(plog: PartitionLog, start: int = 0) -> bytes:
    return plog.read(start, max_bytes=1 << 30) if plog.log_end_offset > start else b""


def test_follower_append_keeps_offsets_epochs_and_bytes(tmp_path: Path) -> None:
    leader, follower = _pair(tmp_path)
    leader.append_as_leader(batch(2), leader_epoch=3, now_ms=NOW)
    leader.append_as_leader(batch(3, ts=NOW - 5000), leader_epoch=5, now_ms=NOW)
    data = _all(leader)
    result = follower.append_as_follower(data, now_ms=NOW + 99_000)
    assert (result.first_offset, result.last_offset) == (0, 4)
    assert follower.log_end_offset == 5
    assert _all(follower) == data  # byte for byte: offsets, epochs, timestamps, CRCs
    assert follower.leader_epoch_entries() == [(3, 0), (5, 2)]
    saved = read_epoch_checkpoint(NoSyncFileSystem(), follower.directory / LEADER_EPOCH_FILE)
    assert saved == [(3, 0), (5, 2)]
    assert follower.end_offset_for_epoch(3) == (3, 2)


def test_follower_append_checks(tmp_path: Path) -> None:
    leader, follower = _pair(tmp_path)
    leader.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    leader.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    first, second = (bytes(_all(leader)[p : p + h.size]) for p, h in iter_batches(_all(leader)))
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(second + first, now_ms=NOW)  # not increasing
    follower.append_as_follower(first, now_ms=NOW)
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(first, now_ms=NOW)  # below the log end
    bad = bytearray(second)
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        follower.append_as_follower(bytes(bad), now_ms=NOW)
    assert follower.log_end_offset == 2
    follower.append_as_follower(second, now_ms=NOW)
    assert _all(follower) == _all(leader)


def test_follower_append_accepts_a_gap(tmp_path: Path) -> None:
    """A compacted leader may have dropped whole batches: the next one starts higher."""
    leader, follower = _pair(tmp_path)
    for _ in range(3):
        leader.append_as_leader(batch(2), leader_epoch=0, now_ms=NOW)
    batches = list(iter_batches(_all(leader)))
    data = _all(leader)
    follower.append_as_follower(data[: batches[0][1].size], now_ms=NOW)
    pos, h = batches[2]
    follower.append_as_follower(data[pos : pos + h.size], now_ms=NOW)
    assert follower.log_end_offset == 6
    assert [h.base_offset for _, h in iter_batches(_all(follower))] == [0, 4]
    assert [h.base_offset for _, h in iter_batches(follower.read(2, max_bytes=1 << 20))] == [4]


def test_follower_producer_state_lets_a_new_leader_dedup(tmp_path: Path) -> None:
    leader, follower = _pair(tmp_path)
    first = batch(2, pid=7, epoch=0, seq=0)
    leader.append_as_leader(first, leader_epoch=0, now_ms=NOW)
    follower.append_as_follower(_all(leader), now_ms=NOW)
    # the producer's retry reaches the follower after it became leader: a duplicate
    follower.assign_epoch_start_offset(1)
    retry = follower.append_as_leader(first, leader_epoch=1, now_ms=NOW)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (0, 1)
    nxt = follower.append_as_leader(batch(1, pid=7, epoch=0, seq=2), leader_epoch=1, now_ms=NOW)
    assert not nxt.duplicate and nxt.first_offset == 2


def test_truncation_rolls_back_epochs_and_producer_state(tmp_path: Path) -> None:
    leader, follower = _pair(tmp_path)
    leader.append_as_leader(batch(2, pid=7, epoch=0, seq=0), leader_epoch=1, now_ms=NOW)
    leader.roll(NOW)
    leader.append_as_leader(batch(2, pid=7, epoch=0, seq=2), leader_epoch=2, now_ms=NOW)
    follower.append_as_follower(_all(leader), now_ms=NOW)
    follower.high_watermark = 4
    follower.truncate_to(2)
    assert follower.log_end_offset == 2 and follower.high_watermark == 2
    assert follower.leader_epoch_entries() == [(1, 0)]
    entry = follower.producer_entry(7)
    assert entry is not None and entry.last_seq == 1
    # the truncated batch is no longer a duplicate of anything: it can be written again
    follower.assign_epoch_start_offset(3)
    again = follower.append_as_leader(batch(2, pid=7, epoch=0, seq=2), leader_epoch=3, now_ms=NOW)
    assert not again.duplicate and again.first_offset == 2


def test_truncate_at_the_end_drops_an_epoch_without_data(tmp_path: Path) -> None:
    """A leader that took epoch 4 and lost it before appending must not keep claiming it."""
    plog = open_log(tmp_path)
    plog.append_as_leader(batch(2), leader_epoch=3, now_ms=NOW)
    plog.assign_epoch_start_offset(4)
    assert plog.leader_epoch_entries() == [(3, 0), (4, 2)]
    plog.truncate_to(2)
    assert plog.leader_epoch_entries() == [(3, 0)]
    assert plog.log_end_offset == 2


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    leader, follower = _pair(tmp_path)
    follower.append_as_leader(batch(3, pid=9, epoch=0, seq=0), leader_epoch=0, now_ms=NOW)
    follower.truncate_fully_and_start_at(100)
    assert (follower.log_start_offset, follower.log_end_offset, follower.high_watermark) == (
        100,
        100,
        100,
    )
    assert follower.leader_epoch_entries() == [] and follower.producer_entry(9) is None
    for _ in range(101):
        leader.append_as_leader(batch(1), leader_epoch=2, now_ms=NOW)
    follower.append_as_follower(leader.read(100, max_bytes=1 << 20), now_ms=NOW)
    assert follower.log_end_offset == 101
    assert follower.leader_epoch_entries() == [(2, 100)]
    follower.close()
    reopened = open_log(tmp_path / "follower")
    assert (reopened.log_start_offset, reopened.log_end_offset) == (100, 101)
    reopened.close()


def test_advance_log_start_offset_follows_the_leader(tmp_path: Path) -> None:
    plog = open_log(tmp_path, LogConfig(segment_bytes=200))
    for _ in range(10):
        plog.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    segments = len(plog.segments)
    assert segments > 2
    assert plog.advance_log_start_offset(6) == 6
    assert plog.log_start_offset == 6 and len(plog.segments) < segments
    assert plog.advance_log_start_offset(3) == 6  # never backwards
    assert plog.advance_log_start_offset(50) == 10  # not past the log end


# -- KIP-101 / KIP-279: divergent logs never survive ---------------------------------------------


def sync(follower: PartitionLog, leader: PartitionLog, max_batches: int | None = None) -> None:
    """What the fetcher and the leader's Fetch handler do, without the network: diverging
    epoch -> truncate by `rules.truncate_on_fetch_offset`; undefined epoch or fetch offset past
    the leader's end -> truncate to the leader's end; then copy batches."""
    copied = 0
    for _ in range(1000):
        offset = follower.log_end_offset
        last = follower.latest_epoch
        if last is not None:
            epoch, end = leader.end_offset_for_epoch(last)
            if epoch < 0 or end < 0:
                follower.truncate_to(min(offset, leader.log_end_offset))
                if follower.log_end_offset == offset:
                    return
                continue
            if epoch < last or end < offset:
                follower.truncate_to(
                    rules.truncate_on_fetch_offset(
                        epoch,
                        end,
                        follower.leader_epoch_entries(),
                        offset,
                        follower.high_watermark,
                    )
                )
                continue
        if offset > leader.log_end_offset:
            follower.truncate_to(leader.log_end_offset)
            continue
        if offset == leader.log_end_offset or (max_batches is not None and copied >= max_batches):
            return
        data = leader.read(offset, max_bytes=1, max_offset=leader.log_end_offset)
        follower.append_as_follower(data, now_ms=NOW)
        copied += 1
    raise AssertionError("sync did not converge")


def _become_leader(plog: PartitionLog, epoch: int) -> None:
    plog.assign_epoch_start_offset(epoch)


def test_kip101_scenario_1_no_loss_on_restart(tmp_path: Path) -> None:
    """A follower with the data beyond its HW keeps it after a restart (no HW truncation)."""
    a, b = _pair(tmp_path)
    _become_leader(a, 0)
    a.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    a.append_as_leader(batch(1), leader_epoch=0, now_ms=NOW)
    sync(b, a)
    b.high_watermark = 1  # it had not heard the leader's HW move yet
    b.close()
    b = open_log(tmp_path / "follower")
    _become_leader(a, 1)
    sync(b, a)
    assert b.log_end_offset == 2 and _all(b) == _all(a)


def test_kip101_scenario_2_divergent_logs(tmp_path: Path) -> None:
    """Two replicas wrote different records at offset 1 in epochs 0 and 1: the old one goes."""
    a, b = _pair(tmp_path)
    _become_leader(a, 0)
    a.append_as_leader(batch(1, value=b"m1"), leader_epoch=0, now_ms=NOW)
    sync(b, a)
    a.append_as_leader(batch(1, value=b"m2"), leader_epoch=0, now_ms=NOW)  # never replicated
    _become_leader(b, 1)  # a crashed; b leads and writes m3 at offset 1
    b.append_as_leader(batch(1, value=b"m3"), leader_epoch=1, now_ms=NOW)
    sync(a, b)
    assert _all(a) == _all(b)
    assert b"m2" not in _all(a) and b"m3" in _all(a)
    assert a.leader_epoch_entries() == [(0, 0), (1, 1)]


def test_kip279_fast_leader_changes(tmp_path: Path) -> None:
    """The follower lacks the epoch the leader answers with: it truncates to the end of its
    largest epoch below and asks again (KIP-279)."""
    a = open_log(tmp_path / "a")
    b = open_log(tmp_path / "b")
    c = open_log(tmp_path / "c")
    _become_leader(a, 0)
    a.append_as_leader(batch(2, value=b"e0"), leader_epoch=0, now_ms=NOW)
    sync(b, a)
    sync(c, a)
    _become_leader(b, 1)  # b leads epoch 1 briefly; only c gets part of it
    b.append_as_leader(batch(2, value=b"e1-x"), leader_epoch=1, now_ms=NOW)
    b.append_as_leader(batch(2, value=b"e1-y"), leader_epoch=1, now_ms=NOW)
    sync(c, b, max_batches=1)
    _become_leader(a, 2)  # a back at epoch 2, with neither of b's epoch-1 batches
    a.append_as_leader(batch(3, value=b"e2"), leader_epoch=2, now_ms=NOW)
    _become_leader(c, 3)  # then c leads epoch 3 (it has epochs 0 and 1)
    c.append_as_leader(batch(1, value=b"e3"), leader_epoch=3, now_ms=NOW)
    for follower in (a, b):
        sync(follower, c)
        assert _all(follower) == _all(c)
    assert b"e2" not in _all(a) and b"e1-y" not in _all(b)


def _data_epochs(plog: PartitionLog) -> list[tuple[int, int]]:
    """The epoch cache without a last entry that holds no data yet (a leader's new epoch)."""
    return [(e, o) for e, o in plog.leader_epoch_entries() if o < plog.log_end_offset]


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_random_leader_changes_converge_and_keep_what_all_replicas_had(seed: int) -> None:
    """Leaders change at random, each appends, followers copy some of it; at every election,
    what all three replicas hold identically (committed) must survive; at the end every
    follower equals the last leader byte for byte."""
    rnd = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        logs = [
            PartitionLog.open(
                Path(tmp) / str(i) / f"{TOPIC}-0",
                TOPIC,
                0,
                LogConfig(segment_bytes=600),
                now_ms=NOW,
                fs=NoSyncFileSystem(),
            )
            for i in range(3)
        ]
        leader = 0
        committed = b""
        for epoch in range(rnd.randint(1, 6)):
            common = min(len(_all(p)) for p in logs)
            prefix = _all(logs[0])[:common]
            if all(_all(p)[:common] == prefix for p in logs):
                assert prefix.startswith(committed)
                committed = prefix
            leader = rnd.randrange(3) if epoch else 0
            lead = logs[leader]
            _become_leader(lead, epoch)
            for _ in range(rnd.randint(0, 4)):
                lead.append_as_leader(
                    batch(rnd.randint(1, 3), value=b"e%d" % epoch), leader_epoch=epoch, now_ms=NOW
                )
                for i, p in enumerate(logs):
                    if i != leader and rnd.random() < 0.5:
                        sync(p, lead, max_batches=rnd.randint(0, 2))
        final = logs[leader]
        for i, p in enumerate(logs):
            if i != leader:
                sync(p, final)
        for p in logs:
            assert _all(p) == _all(final)
            assert _all(p).startswith(committed)
            assert _data_epochs(p) == _data_epochs(final)
        for p in logs:
            p.close()
