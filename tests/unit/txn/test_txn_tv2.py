"""Transaction version 2 (KIP-890 part 2) in the pure coordinator: EndTxn v5 bumps the epoch
on every commit/abort, rolls over to a next producer id at the last epoch, answers retries of
the old epoch idempotently and fences anything else; records are value v1 with the tags."""

from __future__ import annotations

from protocol.errors import ErrorCode as E
from protocol.txn_records import decode_value
from wirebroker.txn.effects import EndTxnResult
from wirebroker.txn.metadata import TopicPartition as TP
from wirebroker.txn.metadata import TxnState as S

from .txnkit import Kit

T0 = TP("t", 0)


def start(kit: Kit, tid: str = "tx") -> tuple[int, int]:
    init = kit.init(tid)
    assert init.error is E.NONE
    # a TV2 producer's partitions are added by the leader (AddPartitionsToTxn v5)
    r = kit.apply(
        kit.core.add_partitions(tid, init.producer_id, init.producer_epoch, [T0], kit.now, 2)
    )
    assert r is E.NONE
    return init.producer_id, init.producer_epoch


def end(kit: Kit, pid: int, epoch: int, commit: bool, tid: str = "tx") -> EndTxnResult:
    r = kit.apply(kit.core.end_txn(tid, pid, epoch, commit, kit.now, tv2=True))
    assert isinstance(r, EndTxnResult)
    return r


def test_every_commit_and_abort_bumps_the_epoch() -> None:
    kit = Kit()
    pid, epoch = start(kit)
    r = end(kit, pid, epoch, True)
    assert r == EndTxnResult(E.NONE, pid, epoch + 1)
    meta = kit.core.txns["tx"]
    assert meta.state is S.PREPARE_COMMIT and meta.producer_epoch == epoch + 1
    [marker] = kit.markers
    assert marker.producer_epoch == epoch + 1 and marker.transaction_version == 2
    # the record is value v1 with client_transaction_version 2
    value = decode_value(kit.log[-1].value or b"")
    assert value.version == 1 and value.client_transaction_version == 2
    assert value.producer_epoch == epoch + 1
    kit.ack_markers()
    assert meta.state is S.COMPLETE_COMMIT
    # next transaction with the new epoch, then an abort: another bump
    r2 = kit.apply(kit.core.add_partitions("tx", pid, epoch + 1, [T0], kit.now, 2))
    assert r2 is E.NONE
    assert end(kit, pid, epoch + 1, False) == EndTxnResult(E.NONE, pid, epoch + 2)
    kit.ack_markers()
    assert meta.state is S.COMPLETE_ABORT and meta.producer_epoch == epoch + 2


def test_retry_with_the_old_epoch_is_idempotent_and_others_are_fenced() -> None:
    kit = Kit()
    pid, epoch = start(kit)
    end(kit, pid, epoch, True)
    # while the markers are written: a retry -> CONCURRENT_TRANSACTIONS
    assert end(kit, pid, epoch, True).error is E.CONCURRENT_TRANSACTIONS
    # the producer's next AddPartitions waits
    assert kit.core.add_partitions("tx", pid, epoch + 1, [T0], kit.now).response is (
        E.CONCURRENT_TRANSACTIONS
    )
    kit.ack_markers()
    # once complete: the retry answers NONE with the current id/epoch; nothing written
    n = len(kit.log)
    assert end(kit, pid, epoch, True) == EndTxnResult(E.NONE, pid, epoch + 1)
    assert len(kit.log) == n
    # the retry of the other outcome is INVALID_TXN_STATE
    assert end(kit, pid, epoch, False).error is E.INVALID_TXN_STATE
    # a zombie with an older epoch is fenced, on EndTxn and on AddPartitions
    assert end(kit, pid, epoch - 1, True).error is E.PRODUCER_FENCED
    zombie = kit.core.add_partitions("tx", pid, epoch, [T0], kit.now)
    assert zombie.response is E.PRODUCER_FENCED
    assert kit.core.verify_partitions("tx", pid, epoch, [T0]) == {T0: E.PRODUCER_FENCED}
    # a commit with the current epoch and no transaction: INVALID_TXN_STATE
    assert end(kit, pid, epoch + 1, True).error is E.INVALID_TXN_STATE
    # an unknown producer id
    assert end(kit, pid + 77, epoch + 1, True).error is E.INVALID_PRODUCER_ID_MAPPING


def test_any_end_txn_waits_while_the_markers_are_written() -> None:
    """Kafka 4.4 (the oracle, EndTxn v5 pipelined right behind a commit on the coordinator
    connection) answers CONCURRENT_TRANSACTIONS to every EndTxn while the commit's markers are
    written: the new epoch's empty abort (what the Java producer sends when it aborts a
    transaction whose record never left it), a commit with it, the retry, older and newer
    epochs, another producer id. PRODUCER_FENCED there is fatal to the Java producer
    ("There is a newer producer with the same transactionalId")."""
    kit = Kit()
    pid, epoch = start(kit)
    assert end(kit, pid, epoch, True) == EndTxnResult(E.NONE, pid, epoch + 1)
    assert kit.core.txns["tx"].pending is not None  # CompleteCommit waits for the markers
    for other_pid, other_epoch, commit in (
        (pid, epoch + 1, False),
        (pid, epoch + 1, True),
        (pid, epoch, True),
        (pid, epoch, False),
        (pid, epoch + 2, False),
        (pid, epoch - 1, False),
        (pid + 7, epoch + 1, False),
    ):
        got = end(kit, other_pid, other_epoch, commit)
        assert got == EndTxnResult(E.CONCURRENT_TRANSACTIONS), (other_pid, other_epoch, commit)
    kit.ack_markers()
    # then the empty abort with the new epoch goes through, with its own bump
    assert end(kit, pid, epoch + 1, False) == EndTxnResult(E.NONE, pid, epoch + 2)


def test_abort_without_partitions_is_an_empty_transaction_with_a_bump() -> None:
    kit = Kit()
    init = kit.init()
    pid, epoch = init.producer_id, init.producer_epoch
    r = end(kit, pid, epoch, False)  # from Empty
    assert r == EndTxnResult(E.NONE, pid, epoch + 1)
    assert kit.markers == []
    meta = kit.core.txns["tx"]
    assert meta.state is S.COMPLETE_ABORT and meta.producer_epoch == epoch + 1
    # commit from Empty / CompleteAbort: INVALID_TXN_STATE
    assert end(kit, pid, epoch + 1, True).error is E.INVALID_TXN_STATE
    # abort again from CompleteAbort with the current epoch: another empty transaction
    assert end(kit, pid, epoch + 1, False) == EndTxnResult(E.NONE, pid, epoch + 2)


def test_epoch_rollover_to_the_next_producer_id() -> None:
    kit = Kit()
    pid, _ = start(kit)
    meta = kit.core.txns["tx"]
    meta.producer_epoch = 32766  # exhausted: the bump goes to Short.MaxValue
    r = end(kit, pid, 32766, True)
    nxt = r.producer_id
    assert r == EndTxnResult(E.NONE, nxt, 0) and nxt != pid
    assert meta.producer_id == pid and meta.producer_epoch == 32767
    assert meta.next_producer_id == nxt
    value = decode_value(kit.log[-1].value or b"")
    assert value.next_producer_id == nxt
    [marker] = kit.markers
    assert (marker.producer_id, marker.producer_epoch) == (pid, 32767)
    # the client's next transaction (new id) waits for the markers
    early = kit.core.add_partitions("tx", nxt, 0, [T0], kit.now)
    assert early.response is E.CONCURRENT_TRANSACTIONS
    kit.ack_markers()
    assert (meta.producer_id, meta.producer_epoch, meta.last_producer_id) == (nxt, 0, pid)
    assert meta.state is S.COMPLETE_COMMIT and meta.next_producer_id == -1
    # the retry of the EndTxn with the old id and epoch: NONE with the new id
    assert end(kit, pid, 32766, True) == EndTxnResult(E.NONE, nxt, 0)
    # the new id works
    assert kit.apply(kit.core.add_partitions("tx", nxt, 0, [T0], kit.now, 2)) is E.NONE
    assert end(kit, nxt, 0, True) == EndTxnResult(E.NONE, nxt, 1)


def test_v4_end_txn_after_tv2_answers_an_error_code() -> None:
    kit = Kit()
    pid, epoch = start(kit)
    end(kit, pid, epoch, True)
    kit.ack_markers()
    assert kit.apply(kit.core.add_partitions("tx", pid, epoch + 1, [T0], kit.now, 0)) is E.NONE
    assert kit.apply(kit.core.end_txn("tx", pid, epoch + 1, True, kit.now)) is E.NONE
    assert kit.markers[0].transaction_version == 0
    assert kit.markers[0].producer_epoch == epoch + 1


def test_tv2_state_survives_a_reload() -> None:
    kit = Kit()
    pid, epoch = start(kit)
    end(kit, pid, epoch, True)
    # replay the PrepareCommit record: markers sent again with the bumped epoch and TV2
    from wirebroker.txn.metadata import TxnMetadata

    value = decode_value(kit.log[-1].value or b"")
    loaded = TxnMetadata.from_value("tx", value)
    assert loaded.client_transaction_version == 2 and loaded.producer_epoch == epoch + 1
    p = kit.core.partition_for("tx")
    kit.markers.clear()
    result = kit.core.complete_loading(p, 4, {"tx": loaded}, kit.now)
    [marker] = result.markers
    assert marker.producer_epoch == epoch + 1 and marker.transaction_version == 2


def test_value_version_follows_the_feature_level() -> None:
    """At transaction.version 2 every record is value v1 (Kafka); below, v0 for TV0/1."""
    for level, expected in ((2, 1), (1, 0), (0, 0)):
        kit = Kit(transaction_version=level)
        init = kit.init()
        kit.apply(
            kit.core.add_partitions("tx", init.producer_id, init.producer_epoch, [T0], kit.now)
        )
        versions = {decode_value(a.value or b"").version for a in kit.log}
        assert versions == {expected}, level


def test_no_bump_past_short_max_after_a_fence() -> None:
    kit = Kit()
    pid, _ = start(kit)
    meta = kit.core.txns["tx"]
    meta.producer_epoch = 32766
    kit.apply(kit.core.abort_timed_out(kit.now + 10**9))  # fence: 32767, PrepareAbort
    kit.ack_markers()
    assert meta.state is S.COMPLETE_ABORT and meta.producer_epoch == 32767
    assert end(kit, pid, 32767, False).error is E.PRODUCER_FENCED
    # InitProducerId rotates to a new producer id
    again = kit.init()
    assert again.error is E.NONE and again.producer_id != pid and again.producer_epoch == 0
