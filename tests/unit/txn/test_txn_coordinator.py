"""The transaction coordinator's state machine (wirebroker.txn.metadata's table)."""

from __future__ import annotations

from protocol.errors import ErrorCode as E
from protocol.txn_records import decode_value
from wirebroker.txn.effects import InitPidResult, for_version
from wirebroker.txn.loader import replay
from wirebroker.txn.metadata import TopicPartition as TP
from wirebroker.txn.metadata import TxnState as S

from .txnkit import Kit


def started(k: Kit, tid: str = "tx") -> InitPidResult:
    r = k.init(tid)
    assert r.error is E.NONE
    assert (
        k.apply(
            k.core.add_partitions(
                tid, r.producer_id, r.producer_epoch, [TP("t", 0), TP("u", 1)], k.now
            )
        )
        is E.NONE
    )
    return r


def test_init_new_and_bump() -> None:
    k = Kit()
    assert k.init() == InitPidResult(E.NONE, 1000, 0)
    assert k.init() == InitPidResult(E.NONE, 1000, 1)
    assert decode_value(k.log[-1].value or b"").producer_epoch == 1
    assert k.core.init_producer_id(None, 1, k.now).response == InitPidResult(E.NONE, 1001, 0)
    assert k.core.init_producer_id("", 1, k.now).response == InitPidResult(E.INVALID_REQUEST)


def test_init_timeout_bounds() -> None:
    k = Kit(max_timeout_ms=1000)
    assert k.init(timeout=1001).error is E.INVALID_TRANSACTION_TIMEOUT
    assert k.init(timeout=0).error is E.INVALID_TRANSACTION_TIMEOUT
    assert k.init(timeout=1000).error is E.NONE


def test_commit_flow_markers_then_complete() -> None:
    k = Kit()
    r = started(k)
    meta = k.core.txns["tx"]
    assert meta.state is S.ONGOING and meta.start_ms == k.now
    assert k.apply(k.core.end_txn("tx", r.producer_id, r.producer_epoch, True, k.now)) is E.NONE
    assert meta.state is S.PREPARE_COMMIT and meta.pending is not None
    (req,) = k.markers
    assert req.commit and req.partitions == {TP("t", 0), TP("u", 1)} and req.coordinator_epoch == 3
    # while the markers are written every request waits
    assert (
        k.core.end_txn("tx", r.producer_id, r.producer_epoch, True, k.now).response
        is E.CONCURRENT_TRANSACTIONS
    )
    assert (
        k.core.add_partitions("tx", r.producer_id, r.producer_epoch, [TP("t", 0)], k.now).response
        is E.CONCURRENT_TRANSACTIONS
    )
    assert k.core.init_producer_id("tx", 1000, k.now).response == InitPidResult(
        E.CONCURRENT_TRANSACTIONS
    )
    k.ack_markers()
    assert meta.state is S.COMPLETE_COMMIT and meta.partitions == set() and meta.pending is None
    assert decode_value(k.log[-1].value or b"").status == S.COMPLETE_COMMIT.id
    # retries of the completed EndTxn
    assert k.core.end_txn("tx", r.producer_id, r.producer_epoch, True, k.now).response is E.NONE
    assert (
        k.core.end_txn("tx", r.producer_id, r.producer_epoch, False, k.now).response
        is E.INVALID_TXN_STATE
    )


def test_abort_without_partitions_completes_at_once() -> None:
    k = Kit()
    r = k.init()
    assert (
        k.core.end_txn("tx", r.producer_id, r.producer_epoch, False, k.now).response
        is E.INVALID_TXN_STATE
    )
    meta = k.core.txns["tx"]
    meta.state = S.ONGOING  # an Ongoing transaction with no partition (never normal, but safe)
    assert k.apply(k.core.end_txn("tx", r.producer_id, r.producer_epoch, False, k.now)) is E.NONE
    assert meta.state is S.COMPLETE_ABORT and not k.markers


def test_producer_checks() -> None:
    k = Kit()
    r = started(k)
    assert k.core.add_partitions("nope", 1, 0, [], k.now).response is E.INVALID_PRODUCER_ID_MAPPING
    assert (
        k.core.add_partitions("tx", r.producer_id + 1, 0, [], k.now).response
        is E.INVALID_PRODUCER_ID_MAPPING
    )
    assert (
        k.core.end_txn("tx", r.producer_id, r.producer_epoch + 1, True, k.now).response
        is E.PRODUCER_FENCED
    )
    assert k.core.add_offsets("", 1, 0, "g", k.now).response is E.INVALID_REQUEST
    assert for_version(E.PRODUCER_FENCED, False) is E.INVALID_PRODUCER_EPOCH
    assert for_version(E.PRODUCER_FENCED, True) is E.PRODUCER_FENCED


def test_add_known_partitions_writes_nothing_and_add_offsets() -> None:
    k = Kit()
    r = started(k)
    n = len(k.log)
    res = k.core.add_partitions("tx", r.producer_id, r.producer_epoch, [TP("t", 0)], k.now)
    assert res.response is E.NONE and not res.appends and len(k.log) == n
    assert (
        k.apply(k.core.add_offsets("tx", r.producer_id, r.producer_epoch, "my-group", k.now))
        is E.NONE
    )
    from wirebroker.group.partitioning import partition_for

    assert TP("__consumer_offsets", partition_for("my-group", 50)) in k.core.txns["tx"].partitions


def test_verify_only() -> None:
    k = Kit()
    r = started(k)
    got = k.core.verify_partitions("tx", r.producer_id, r.producer_epoch, [TP("t", 0), TP("t", 9)])
    assert got == {TP("t", 0): E.NONE, TP("t", 9): E.TRANSACTION_ABORTABLE}
    assert k.core.verify_partitions("tx", r.producer_id, 9, [TP("t", 0)]) == {
        TP("t", 0): E.PRODUCER_FENCED
    }


def test_reinit_on_ongoing_fences_and_aborts() -> None:
    k = Kit()
    r = started(k)
    assert k.init() == InitPidResult(E.CONCURRENT_TRANSACTIONS)
    meta = k.core.txns["tx"]
    assert meta.state is S.PREPARE_ABORT and meta.producer_epoch == r.producer_epoch + 1
    (req,) = k.markers
    assert not req.commit and req.producer_epoch == r.producer_epoch + 1
    # the zombie is fenced
    assert (
        k.core.end_txn("tx", r.producer_id, r.producer_epoch, True, k.now).response
        is E.PRODUCER_FENCED
    )
    k.ack_markers()
    assert meta.state is S.COMPLETE_ABORT
    assert k.init() == InitPidResult(E.NONE, r.producer_id, r.producer_epoch + 2)


def test_failed_fence_keeps_epoch_and_does_not_bump_twice() -> None:
    k = Kit()
    r = started(k)
    assert k.apply(
        k.core.init_producer_id("tx", 1000, k.now), fail=E.NOT_ENOUGH_REPLICAS
    ) == InitPidResult(E.COORDINATOR_NOT_AVAILABLE)
    meta = k.core.txns["tx"]
    assert meta.state is S.ONGOING and meta.producer_epoch == r.producer_epoch + 1
    assert meta.has_failed_epoch_fence
    assert k.init() == InitPidResult(E.CONCURRENT_TRANSACTIONS)
    assert meta.producer_epoch == r.producer_epoch + 1 and not meta.has_failed_epoch_fence


def test_kip360_expected_epoch_retry_and_fencing() -> None:
    k = Kit()
    r0 = k.init()
    r1 = k.init(expected=(r0.producer_id, r0.producer_epoch))
    assert r1 == InitPidResult(E.NONE, r0.producer_id, 1)
    # a retry of that request (response lost): same answer, no bump
    assert k.init(expected=(r0.producer_id, r0.producer_epoch)) == r1
    assert k.init(expected=(r0.producer_id, 7)).error is E.PRODUCER_FENCED
    assert k.init(expected=(999, 0)).error is E.PRODUCER_FENCED


def test_epoch_exhaustion_rotates_producer_id() -> None:
    k = Kit()
    r = k.init()
    meta = k.core.txns["tx"]
    meta.producer_epoch = 32766
    new = k.init(expected=(r.producer_id, 32766))
    assert new.error is E.NONE and new.producer_id != r.producer_id and new.producer_epoch == 0
    assert meta.last_producer_id == r.producer_id
    # the retry with the old id and exhausted epoch gets the same answer
    assert k.init(expected=(r.producer_id, 32766)) == new
    meta.producer_epoch = 32766
    assert k.init().producer_epoch == 0  # without expected: rotates too


def test_timeout_abort_bumps_epoch() -> None:
    k = Kit()
    r = started(k)
    assert not k.core.abort_timed_out(k.now + 60_000).appends
    k.now += 60_001
    k.apply(k.core.abort_timed_out(k.now))
    meta = k.core.txns["tx"]
    assert meta.state is S.PREPARE_ABORT and meta.producer_epoch == r.producer_epoch + 1
    k.ack_markers()
    assert meta.state is S.COMPLETE_ABORT
    assert (
        k.core.end_txn("tx", r.producer_id, r.producer_epoch, True, k.now).response
        is E.PRODUCER_FENCED
    )


def test_expiration_tombstones_and_removes() -> None:
    k = Kit(id_expiration_ms=1000)
    started(k, "busy")
    k.init("idle")
    k.now += 1000
    res = k.core.expire_transactional_ids(k.now)
    assert [a.transactional_id for a in res.appends] == ["idle"] and res.appends[0].value is None
    k.apply(res)
    assert "idle" not in k.core.txns and "busy" in k.core.txns
    assert k.core.describe("idle").error is E.TRANSACTIONAL_ID_NOT_FOUND


def test_append_failure_reverts_and_maps_errors() -> None:
    k = Kit()
    r = k.init()
    got = k.apply(
        k.core.add_partitions("tx", r.producer_id, r.producer_epoch, [TP("t", 0)], k.now),
        fail=E.NOT_LEADER_OR_FOLLOWER,
    )
    assert got is E.NOT_COORDINATOR
    meta = k.core.txns["tx"]
    assert meta.state is S.EMPTY and meta.pending is None and not meta.partitions


def test_ownership_and_unload() -> None:
    k = Kit()
    r = started(k)
    p = k.core.partition_for("tx")
    res = k.core.end_txn("tx", r.producer_id, r.producer_epoch, True, k.now)
    k.core.begin_loading(p)
    assert k.core.init_producer_id("tx", 1000, k.now).response == InitPidResult(
        E.COORDINATOR_LOAD_IN_PROGRESS
    )
    assert k.core.append_done(res.appends[0], None, k.now).response is E.NOT_COORDINATOR
    k.core.unload([p])
    assert k.core.describe("tx").error is E.NOT_COORDINATOR


def test_describe_and_list() -> None:
    k = Kit()
    r = started(k, "a")
    k.init("b")
    d = k.core.describe("a")
    assert (d.error, d.state, d.producer_id, d.partitions) == (
        E.NONE,
        "Ongoing",
        r.producer_id,
        (TP("t", 0), TP("u", 1)),
    )
    assert [t.transactional_id for t in k.core.list_transactions(k.now).transactions] == ["a", "b"]
    res = k.core.list_transactions(k.now, state_filters=["Ongoing", "Bogus"])
    assert [t.transactional_id for t in res.transactions] == [
        "a"
    ] and res.unknown_state_filters == ("Bogus",)
    assert [
        t.transactional_id
        for t in k.core.list_transactions(k.now, producer_id_filters=[1001]).transactions
    ] == ["b"]
    assert not k.core.list_transactions(k.now + 10, min_duration_ms=10).transactions
    assert len(k.core.list_transactions(k.now + 11, min_duration_ms=10).transactions) == 1


def test_loader_replays_and_resends_markers() -> None:
    k = Kit()
    r = started(k)
    started(k, "gone")
    k.apply(k.core.end_txn("tx", r.producer_id, r.producer_epoch, True, k.now))  # PrepareCommit
    records = [(a.key, a.value) for a in k.log]
    from protocol.txn_records import encode_key

    records.append((encode_key("gone"), None))
    records.append((b"\x00\x05junk", b"ignored"))
    loaded = replay(records)
    assert set(loaded) == {"tx"} and loaded["tx"].state is S.PREPARE_COMMIT
    assert loaded["tx"].partitions == {TP("t", 0), TP("u", 1)}
    k2 = Kit()
    k2.core.begin_loading(k.core.partition_for("tx"))
    res = k2.core.complete_loading(k.core.partition_for("tx"), 4, loaded, k2.now)
    (req,) = res.markers
    assert req.commit and req.coordinator_epoch == 4 and req.producer_epoch == r.producer_epoch
    k2.markers = list(res.markers)
    k2.ack_markers()
    assert k2.core.txns["tx"].state is S.COMPLETE_COMMIT
