"""Transactions on the log side (KIP-98): transactional batches, COMMIT/ABORT markers, the
last stable offset, the `.txnindex` (byte layout, truncation, recovery), ongoing transactions
across restarts, read_committed aborted-transaction lists."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from logtest_helpers import NOW, TOPIC, NoSyncFileSystem, open_log

from protocol.records import RecordSpec, build_batch, decode_records, iter_batches
from wirebroker.log import InvalidProducerEpochError, LogConfig, PartitionLog
from wirebroker.log.control import ABORT, COMMIT, marker_batch, parse_marker
from wirebroker.log.errors import (
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from wirebroker.log.producer_state import ProducerStateManager
from wirebroker.log.txn_index import ENTRY_SIZE, AbortedTxn, TxnIndex

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=0)


def txn_batch(pid: int, seq: int, n: int = 2, *, epoch: int = 0, ts: int = NOW) -> bytes:
    specs = [RecordSpec(key=b"k%d" % i, value=b"v" * 20, timestamp=ts) for i in range(n)]
    return build_batch(
        specs,
        base_timestamp=ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def plain(n: int = 1) -> bytes:
    return build_batch([(b"k", b"v")] * n, base_timestamp=NOW)


def append(plog: PartitionLog, data: bytes) -> tuple[int, int]:
    r = plog.append_as_leader(data, leader_epoch=0, now_ms=NOW)
    plog.high_watermark = plog.log_end_offset
    return r.first_offset, r.last_offset


def marker(plog: PartitionLog, pid: int, *, commit: bool, epoch: int = 0, coord: int = 0) -> int:
    r = plog.append_marker(
        pid, epoch, commit=commit, coordinator_epoch=coord, leader_epoch=0, now_ms=NOW
    )
    return r.first_offset


def txn_file(plog: PartitionLog, base: int = 0) -> Path:
    return plog.directory / f"{base:020d}.txnindex"


def crash(plog: PartitionLog) -> None:
    plog._close_files()


def reopen(tmp_path: Path, config: LogConfig = SMALL, **kw: object) -> PartitionLog:
    return open_log(tmp_path, config, **kw)  # type: ignore[arg-type]


# -- control records ----------------------------------------------------------------------------


def test_marker_batch_layout() -> None:
    data = marker_batch(7, 3, commit=False, coordinator_epoch=9, now_ms=NOW)
    ((_, h),) = list(iter_batches(data))
    assert h.is_control and h.is_transactional
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) == (7, 3, -1, 1)
    rec = decode_records(data, 0)[0]
    assert rec.key == b"\x00\x00\x00\x00"  # version 0, type ABORT
    assert rec.value == b"\x00\x00\x00\x00\x00\x09"  # version 0, coordinator epoch 9
    assert parse_marker(data) == (ABORT, 9)
    assert parse_marker(marker_batch(7, 3, commit=True, coordinator_epoch=1, now_ms=NOW)) == (
        COMMIT,
        1,
    )


# -- txn index format ---------------------------------------------------------------------------


def test_txn_index_entry_is_kafkas_34_bytes(tmp_path: Path) -> None:
    fs = NoSyncFileSystem()
    path = tmp_path / "00000000000000000000.txnindex"
    idx = TxnIndex(fs, path, create=True)
    assert not path.exists()  # lazily created, like Kafka's
    idx.append(AbortedTxn(5, 10, 20, 11))
    idx.append(AbortedTxn(6, 12, 30, 31))
    raw = path.read_bytes()
    assert ENTRY_SIZE == 34
    assert raw == struct.pack(">hqqqq", 0, 5, 10, 20, 11) + struct.pack(">hqqqq", 0, 6, 12, 30, 31)
    again = TxnIndex(fs, path, create=False)
    assert again.entries == idx.entries and not again.needs_rebuild
    path.write_bytes(raw + b"\x00\x00\x01")  # torn tail
    torn = TxnIndex(fs, path, create=False)
    assert torn.needs_rebuild and len(torn) == 2
    idx.truncate_to(30)
    assert path.read_bytes() == raw[:34]
    idx.truncate_to(0)
    assert not path.exists()


def test_txn_index_collect_rules(tmp_path: Path) -> None:
    idx = TxnIndex(NoSyncFileSystem(), tmp_path / "x.txnindex", create=True)
    idx.append(AbortedTxn(1, 0, 5, 3))  # txn 2 (from 3) still open
    idx.append(AbortedTxn(2, 3, 10, 11))
    idx.append(AbortedTxn(3, 12, 20, 21))
    assert idx.collect(6, 9) == ([AbortedTxn(2, 3, 10, 11)], True)  # lso 11 >= 9
    assert idx.collect(0, 4) == ([AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 10, 11)], True)
    assert idx.collect(0, 100) == (idx.entries, False)  # later segments may hold more


# -- appends, markers, LSO ----------------------------------------------------------------------


def test_ongoing_transaction_holds_the_lso(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    append(plog, plain(2))  # 0-1
    assert plog.last_stable_offset == 2
    append(plog, txn_batch(100, 0))  # 2-3
    append(plog, plain(1))  # 4
    append(plog, txn_batch(100, 2))  # 5-6, same transaction
    assert plog.ongoing_transactions() == {100: 2}
    assert plog.high_watermark == 7 and plog.last_stable_offset == 2
    assert plog.producer_entry(100).txn_first_offset == 2  # type: ignore[union-attr]
    m = marker(plog, 100, commit=True)
    assert m == 7
    # marker not yet below the high watermark: still unstable
    assert plog.high_watermark == 7 and plog.last_stable_offset == 2
    plog.high_watermark = 8
    assert plog.last_stable_offset == 8 and plog.ongoing_transactions() == {}
    assert not txn_file(plog).exists()  # a commit writes no index entry


def test_lso_is_the_oldest_of_several_and_bounded_by_the_hw(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    append(plog, txn_batch(1, 0))  # 0-1
    append(plog, txn_batch(2, 0))  # 2-3
    assert plog.last_stable_offset == 0
    marker(plog, 1, commit=False)  # 4
    plog.high_watermark = 5
    assert plog.last_stable_offset == 2
    assert plog.segments[0].txn_index.entries == [AbortedTxn(1, 0, 4, 2)]  # lso: pid 2 open
    marker(plog, 2, commit=False)  # 5
    assert plog.segments[0].txn_index.entries[-1] == AbortedTxn(2, 2, 5, 6)
    plog.high_watermark = 5
    assert plog.last_stable_offset == 2  # marker 5 not replicated yet
    plog.high_watermark = 6
    assert plog.last_stable_offset == 6
    append(plog, plain(3))  # 6-8
    plog.high_watermark = 7
    assert plog.last_stable_offset == 7


def test_transactional_rules(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    append(plog, txn_batch(9, 0, epoch=1))
    idem = build_batch(
        [(b"k", b"v")], base_timestamp=NOW, producer_id=9, producer_epoch=1, base_sequence=2
    )
    with pytest.raises(InvalidTxnStateError):
        plog.append_as_leader(idem, leader_epoch=0, now_ms=NOW)
    with pytest.raises(InvalidProducerEpochError):
        marker(plog, 9, commit=True, epoch=0)
    marker(plog, 9, commit=True, epoch=1, coord=4)
    with pytest.raises(TransactionCoordinatorFencedError):
        marker(plog, 9, commit=False, epoch=1, coord=3)
    # KIP-890: the marker may carry a bumped epoch; the next transaction starts at seq 0
    marker(plog, 9, commit=False, epoch=2, coord=4)
    assert plog.producer_entry(9).epoch == 2  # type: ignore[union-attr]
    first, _ = append(plog, txn_batch(9, 0, epoch=2))
    assert plog.ongoing_transactions() == {9: first}
    # a marker without an ongoing transaction of its producer: an empty txn at the marker
    m = marker(plog, 77, commit=False)
    assert plog.segments[-1].txn_index.entries[-1] == AbortedTxn(77, m, m, first)


def test_idempotent_retry_of_a_transactional_batch(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    b = txn_batch(3, 0)
    r1 = plog.append_as_leader(b, leader_epoch=0, now_ms=NOW)
    r2 = plog.append_as_leader(b, leader_epoch=0, now_ms=NOW)
    assert r2.duplicate and r2.first_offset == r1.first_offset
    assert plog.ongoing_transactions() == {3: 0}


def test_producer_with_ongoing_transaction_never_expires() -> None:
    state = ProducerStateManager()
    ((_, h),) = list(iter_batches(txn_batch(4, 0)))
    state.apply(h)
    assert state.remove_expired(NOW + 10**9, 1000) == 0
    state.end_txn(4, 0, 0, 5, NOW, aborted=False)
    assert state.remove_expired(NOW + 10**9, 1000) == 1


def verify(plog: PartitionLog, pid: int, seq: int, *, epoch: int = 0, adds: bool = False) -> bool:
    return plog.start_txn_verification(pid, seq, epoch, adds=adds, now_ms=NOW)


def test_a_verified_transaction_may_not_start_above_the_first_sequence_tried(
    tmp_path: Path,
) -> None:
    """Kafka's VerificationStateEntry: the lowest sequence tried while no transaction was
    ongoing bounds the first batch (an attempt at 0 refused by the coordinator, then 5)."""
    plog = open_log(tmp_path)
    assert verify(plog, 9, 0)  # the coordinator refuses it (not added): nothing appended
    assert verify(plog, 9, 5)  # the lowest stays 0
    with pytest.raises(OutOfOrderSequenceError):
        append(plog, txn_batch(9, 5))
    with pytest.raises(OutOfOrderSequenceError):
        append(plog, txn_batch(9, 3))
    assert append(plog, txn_batch(9, 0)) == (0, 1)
    assert not verify(plog, 9, 2)  # ongoing at this epoch: nothing to verify
    assert plog._producers.verifying == {}  # the transactional append ended it
    assert append(plog, txn_batch(9, 2)) == (2, 3)


def test_a_first_verified_batch_above_zero_is_stored_before_kip_890_part_2(
    tmp_path: Path,
) -> None:
    """Without an earlier attempt a TV1 producer unknown here may start at any sequence (as
    an idempotent one may); a TV2 producer (`adds`) with no batch here must start at 0."""
    plog = open_log(tmp_path)
    assert verify(plog, 9, 5)
    assert append(plog, txn_batch(9, 5)) == (0, 1)
    assert verify(plog, 10, 5, adds=True)
    with pytest.raises(OutOfOrderSequenceError):
        append(plog, txn_batch(10, 5))
    assert append(plog, txn_batch(10, 0)) == (2, 3)


def test_verification_state_of_a_newer_epoch_starts_over(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    assert verify(plog, 9, 0, epoch=1)
    assert verify(plog, 9, 4, epoch=2)  # a newer epoch: its own lowest sequence
    assert plog._producers.verifying[9].lowest_seq == 4
    assert verify(plog, 9, 7, epoch=1)  # an older one changes nothing
    assert plog._producers.verifying[9].lowest_seq == 4
    append(plog, txn_batch(9, 0, epoch=1))
    with pytest.raises(InvalidProducerEpochError):  # older than the producer's, at once
        verify(plog, 9, 0, epoch=0)


def test_verification_state_expires_and_survives_a_tv2_marker_of_its_epoch() -> None:
    state = ProducerStateManager()
    assert state.start_verification(4, 0, 1, adds=True, now_ms=NOW)
    state.end_txn(4, 1, 0, 5, NOW, aborted=False)  # TV2: the next transaction's entry stays
    assert 4 in state.verifying
    state.end_txn(4, 2, 0, 6, NOW, aborted=False)
    assert 4 not in state.verifying
    assert state.start_verification(5, 0, 0, adds=False, now_ms=NOW)
    state.remove_expired(NOW + 999, 1000)
    assert 5 in state.verifying
    state.remove_expired(NOW + 1000, 1000)
    assert 5 not in state.verifying


# -- read_committed -----------------------------------------------------------------------------


def build_history(plog: PartitionLog) -> None:
    """0-1 txn A(1) aborted at 6; 2-3 txn B(2) committed at 7; 4-5 txn C(3) aborted at 8;
    9-10 plain; 11-12 txn D(4) ongoing."""
    append(plog, txn_batch(1, 0))  # 0-1
    append(plog, txn_batch(2, 0))  # 2-3
    append(plog, txn_batch(3, 0))  # 4-5
    marker(plog, 1, commit=False)  # 6
    marker(plog, 2, commit=True)  # 7
    marker(plog, 3, commit=False)  # 8
    append(plog, plain(2))  # 9-10
    append(plog, txn_batch(4, 0))  # 11-12
    plog.high_watermark = plog.log_end_offset


def aborted(plog: PartitionLog, offset: int) -> list[tuple[int, int]]:
    data = plog.read(offset, max_bytes=10**6, max_offset=plog.last_stable_offset)
    return [(t.producer_id, t.first_offset) for t in plog.aborted_in(offset, data)]


@pytest.mark.parametrize("config", [LogConfig(), SMALL], ids=["one-segment", "many-segments"])
def test_read_committed_ranges_and_aborted_lists(tmp_path: Path, config: LogConfig) -> None:
    plog = open_log(tmp_path, config)
    build_history(plog)
    assert plog.last_stable_offset == 11
    data = plog.read(0, max_bytes=10**6, max_offset=plog.last_stable_offset)
    last = [h for _, h in iter_batches(data)][-1]
    assert last.next_offset == 11  # nothing of the ongoing transaction
    assert aborted(plog, 0) == [(1, 0), (3, 4)]
    assert aborted(plog, 5) == [(1, 0), (3, 4)]  # markers at/after 5 for txns started before
    assert aborted(plog, 7) == [(3, 4)]
    assert aborted(plog, 9) == []
    assert plog.aborted_in(11, b"") == []
    # a fetch of the first batch only: the bound is its end (offset 2)
    first = plog.read(0, max_bytes=1, max_offset=11)
    assert [(t.producer_id, t.first_offset) for t in plog.aborted_in(0, first)] == [(1, 0)]


# -- truncation ---------------------------------------------------------------------------------


def test_truncation_drops_index_entries_and_restores_ongoing_txns(tmp_path: Path) -> None:
    plog = open_log(tmp_path, SMALL)
    build_history(plog)
    plog.truncate_to(8)  # the ABORT of C at 8 goes
    entries = [e for s in plog.segments for e in s.txn_index.entries]
    assert entries == [AbortedTxn(1, 0, 6, 2)]
    assert plog.ongoing_transactions() == {3: 4}
    assert plog.last_stable_offset == 4
    plog.truncate_to(6)
    assert [e for s in plog.segments for e in s.txn_index.entries] == []
    assert plog.ongoing_transactions() == {1: 0, 2: 2, 3: 4}
    plog.close()
    plog = reopen(tmp_path)
    assert plog.ongoing_transactions() == {1: 0, 2: 2, 3: 4}
    assert [e for s in plog.segments for e in s.txn_index.entries] == []
    plog.close()


# -- restarts -----------------------------------------------------------------------------------


def index_files(plog: PartitionLog) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(plog.directory.glob("*.txnindex"))}


def test_clean_restart_keeps_ongoing_transactions_and_the_index(tmp_path: Path) -> None:
    plog = open_log(tmp_path, SMALL)
    build_history(plog)
    before = index_files(plog)
    assert before
    plog.close()
    plog = reopen(tmp_path)
    assert plog.ongoing_transactions() == {4: 11}
    assert plog.last_stable_offset == 11
    assert index_files(plog) == before
    assert aborted(plog, 0) == [(1, 0), (3, 4)]
    marker(plog, 4, commit=False)
    plog.high_watermark = plog.log_end_offset
    assert plog.last_stable_offset == plog.log_end_offset
    plog.close()


def test_unclean_shutdown_rebuilds_the_index_and_ongoing_txns(tmp_path: Path) -> None:
    plog = open_log(tmp_path, SMALL)
    build_history(plog)
    before = index_files(plog)
    crash(plog)
    for p in plog.directory.glob("*.producers"):
        p.unlink()  # only the log itself remains to tell
    for p in plog.directory.glob("*.txnindex"):
        p.write_bytes(b"garbage")
    plog = reopen(tmp_path, recovery_point=0)
    assert index_files(plog) == before
    assert plog.ongoing_transactions() == {4: 11}
    assert plog.last_stable_offset == 11
    plog.close()


def test_torn_txn_index_is_rebuilt_after_clean_shutdown(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    build_history(plog)
    before = index_files(plog)
    plog.close()
    ((name, raw),) = before.items()
    (plog.directory / name).write_bytes(raw[:-5])
    plog = reopen(tmp_path, LogConfig())
    assert index_files(plog) == before
    plog.close()


def test_snapshot_v1_still_loads(tmp_path: Path) -> None:
    state = ProducerStateManager()
    ((_, h),) = list(iter_batches(txn_batch(4, 0)))
    state.apply(h)
    snap = state.to_snapshot(2)
    offset, producers = ProducerStateManager.from_snapshot(snap)
    assert offset == 2 and producers[4].txn_first_offset == 0
    import json

    from protocol.crc32c import crc32c

    body = json.dumps({"version": 1, "offset": 2, "producers": [[4, 0, NOW, []]]}).encode()
    offset, producers = ProducerStateManager.from_snapshot(b"%08x\n" % crc32c(body) + body)
    assert producers[4].txn_first_offset == -1


# -- follower -----------------------------------------------------------------------------------


def test_follower_replicates_markers_and_the_index(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    build_history(leader)
    follower = open_log(tmp_path / "follower", SMALL)
    offset = 0
    while offset < leader.log_end_offset:
        data = leader.read(offset, max_bytes=300)
        r = follower.append_as_follower(data, now_ms=NOW)
        offset = r.last_offset + 1
    follower.high_watermark = follower.log_end_offset
    assert follower.ongoing_transactions() == {4: 11}
    assert follower.last_stable_offset == 11
    assert aborted(follower, 0) == [(1, 0), (3, 4)]
    assert TOPIC in follower.name


# -- compaction ---------------------------------------------------------------------------------


def test_compaction_drops_aborted_data_and_keeps_markers_as_kafka(tmp_path: Path) -> None:
    from wirebroker.log.cleaner import LogCleaner

    cfg = LogConfig(
        cleanup_policy=("compact",),
        min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=10_000,
        index_interval_bytes=0,
    )
    plog = open_log(tmp_path, cfg)

    def kv(pid: int, seq: int, key: bytes, value: bytes) -> bytes:
        return build_batch(
            [(key, value)],
            base_timestamp=NOW,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=seq,
            is_transactional=True,
        )

    append(plog, kv(1, 0, b"a", b"aborted"))  # 0: aborted txn of 1
    append(plog, kv(2, 0, b"b", b"committed"))  # 1: committed txn of 2
    marker(plog, 1, commit=False)  # 2
    marker(plog, 2, commit=True)  # 3
    append(plog, build_batch([(b"c", b"plain")], base_timestamp=NOW))  # 4
    append(plog, kv(3, 0, b"d", b"open"))  # 5: open txn of 3 (uncleanable)
    plog.roll(NOW)
    append(plog, build_batch([(b"e", b"x")], base_timestamp=NOW))  # 6: active
    plog.high_watermark = plog.log_end_offset

    def view() -> list[tuple[int, bool, bytes | None]]:
        data = plog.read(0, max_bytes=1 << 30)
        out = []
        for pos, h in iter_batches(data):
            for r in decode_records(data, pos):
                out.append((r.offset, h.is_control, r.value if not h.is_control else r.key))
        return out

    # the open transaction at 5 bounds the cleanable range: its segment is not cleaned
    LogCleaner().run({(TOPIC, 0): plog}, NOW, max_bytes=1 << 40)
    assert [o for o, _, _ in view()] == [0, 1, 2, 3, 4, 5, 6]
    marker(plog, 3, commit=True)  # 7
    plog.roll(NOW)
    append(plog, build_batch([(b"f", b"y")], base_timestamp=NOW))  # 8
    plog.high_watermark = plog.log_end_offset

    LogCleaner().run({(TOPIC, 0): plog}, NOW, max_bytes=1 << 40)
    got = view()
    assert (0, False, b"aborted") not in got  # aborted data gone
    assert (1, False, b"committed") in got
    # the pass that removed the aborted data keeps the ABORT marker (and copies its index
    # entry into the cleaned segment); COMMIT markers stay while their data remains
    assert [o for o, c, _ in got if c] == [2, 3, 7]
    assert [e for s in plog.segments for e in s.txn_index.entries] == [AbortedTxn(1, 0, 2, 1)]
    # the producer's last batch (offset 0) stays as an empty batch while the producer is
    # known, so the marker stays too (as in Kafka); once the producer expired:
    LogCleaner().run({(TOPIC, 0): plog}, NOW, max_bytes=1 << 40)
    assert [o for o, c, _ in view() if c] == [2, 3, 7]
    t = NOW + 10**9
    plog.delete_expired_segments(t)
    assert plog.producer_entry(1) is None
    LogCleaner().run({(TOPIC, 0): plog}, t, max_bytes=1 << 40)  # the empty batch goes
    assert 0 not in [h.base_offset for _, h in iter_batches(plog.read(0, max_bytes=1 << 30))]
    # next pass: no data of that transaction left -> the marker gets a delete horizon
    LogCleaner().run({(TOPIC, 0): plog}, t, max_bytes=1 << 40)
    assert [o for o, c, _ in view() if c] == [2, 3, 7]
    assert [e for s in plog.segments for e in s.txn_index.entries] == []
    LogCleaner().run({(TOPIC, 0): plog}, t + 5_000, max_bytes=1 << 40)
    assert [o for o, c, _ in view() if c] == [2, 3, 7]  # horizon not reached
    LogCleaner().run({(TOPIC, 0): plog}, t + 20_000, max_bytes=1 << 40)
    assert [o for o, c, _ in view() if c] == [3, 7]  # the ABORT marker went
    plog.close()
    plog = reopen(tmp_path, cfg)
    assert [o for o, c, _ in view() if c] == [3, 7]
    assert plog.ongoing_transactions() == {}
    plog.close()


def test_lso_never_below_the_log_start(tmp_path: Path) -> None:
    plog = open_log(tmp_path, SMALL)
    append(plog, txn_batch(1, 0))  # 0-1, stays open
    for _ in range(10):
        append(plog, plain(2))
    assert plog.last_stable_offset == 0
    plog.delete_records_before(8)
    assert plog.log_start_offset == 8
    assert plog.last_stable_offset == 8
    assert plog.ongoing_transactions() == {1: 0}
    marker(plog, 1, commit=False)
    plog.high_watermark = plog.log_end_offset
    assert plog.last_stable_offset == plog.log_end_offset


def test_segment_recovered_for_a_missing_offset_index_gets_its_txn_index_back(
    tmp_path: Path,
) -> None:
    plog = open_log(tmp_path, SMALL)
    build_history(plog)
    before = index_files(plog)
    plog.close()
    # as after an interrupted cleaner swap completed at load: only the .log is left
    for name in before:
        base = name.split(".")[0]
        (plog.directory / name).unlink()
        (plog.directory / f"{base}.index").unlink()
    plog = reopen(tmp_path)
    assert index_files(plog) == before
    assert aborted(plog, 0) == [(1, 0), (3, 4)]
    plog.close()
