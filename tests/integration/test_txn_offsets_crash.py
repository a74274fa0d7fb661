"""`kill -9` of the broker between a TxnOffsetCommit and its transaction's marker (issue 14).

After the restart the transactional offsets are replayed from `__consumer_offsets` as pending:
OffsetFetch does not show them (require_stable -> UNSTABLE_OFFSET_COMMIT, plain -> the last
committed offset); the coordinator, recovered from `__transaction_state`, still has the
transaction open, and its COMMIT makes them visible, its ABORT (asked for, or on the
transaction's timeout) drops them. The data batches of the transaction follow the same marker
(the LSO moves past it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _broker import BrokerProcess
from _txn_raw import RawTxn, broker_with_topic, lso, offset_fetch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
from _cluster import wait_until

from protocol.errors import ErrorCode as E

TOPIC = "txc"
GROUP = "crash-group"
#: FAST (_txn_raw.py), and timed-out transactions aborted soon.
ABORT_SOON = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "300"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with broker_with_topic(tmp_path, TOPIC, 1, ABORT_SOON) as proc:
        yield proc


def _crash_mid_transaction(broker: BrokerProcess, tid: str, timeout_ms: int) -> RawTxn:
    """A transaction with data and offsets, then kill -9 before EndTxn; -> it, pointed at the
    restarted broker."""
    addr = broker.bootstrap
    txn = RawTxn(addr, tid, timeout_ms=timeout_ms)
    txn.init()
    # a committed offset before the transaction: what OffsetFetch shows meanwhile
    first = RawTxn(addr, tid + "-before")
    first.init()
    assert first.add_offsets(GROUP) == 0
    assert first.commit_offsets(addr, GROUP, TOPIC, {0: 1}) == {0: 0}
    assert first.end(commit=True) == 0
    wait_until(
        lambda: offset_fetch(addr, GROUP, TOPIC, [0], require_stable=True) == {0: (1, 0)},
        10,
        "the first transaction's offset",
    )

    assert txn.add_partitions(TOPIC, [0]) == {0: 0}
    assert txn.produce(addr, TOPIC, 0, [b"a", b"b", b"c"]) == (0, 0)
    assert txn.add_offsets(GROUP) == 0
    assert txn.commit_offsets(addr, GROUP, TOPIC, {0: 3}) == {0: 0}
    broker.kill9()
    new = broker.restart()
    txn.address = txn.coordinator = new
    assert offset_fetch(new, GROUP, TOPIC, [0], require_stable=True) == {
        0: (-1, E.UNSTABLE_OFFSET_COMMIT)
    }
    assert offset_fetch(new, GROUP, TOPIC, [0], require_stable=False) == {0: (1, 0)}
    assert lso(new, TOPIC, 0) == 0
    return txn


def test_commit_after_restart_makes_offsets_visible(broker: BrokerProcess) -> None:
    txn = _crash_mid_transaction(broker, "tx-crash-commit", timeout_ms=60_000)
    addr = broker.bootstrap
    assert txn.end(commit=True) == 0
    wait_until(
        lambda: offset_fetch(addr, GROUP, TOPIC, [0], require_stable=True) == {0: (3, 0)},
        15,
        "the committed transactional offset after the restart",
    )
    wait_until(lambda: lso(addr, TOPIC, 0) == 4, 10, "the COMMIT marker after the restart")


def test_abort_after_restart_drops_offsets(broker: BrokerProcess) -> None:
    txn = _crash_mid_transaction(broker, "tx-crash-abort", timeout_ms=60_000)
    addr = broker.bootstrap
    assert txn.end(commit=False) == 0
    wait_until(lambda: lso(addr, TOPIC, 0) == 4, 10, "the ABORT marker after the restart")
    wait_until(
        lambda: offset_fetch(addr, GROUP, TOPIC, [0], require_stable=True) == {0: (1, 0)},
        10,
        "the aborted offset dropped",
    )


def test_timed_out_transaction_is_aborted_after_restart(broker: BrokerProcess) -> None:
    _crash_mid_transaction(broker, "tx-crash-timeout", timeout_ms=3_000)
    addr = broker.bootstrap
    wait_until(
        lambda: offset_fetch(addr, GROUP, TOPIC, [0], require_stable=True) == {0: (1, 0)},
        20,
        "the coordinator aborting the timed-out transaction",
    )
    wait_until(lambda: lso(addr, TOPIC, 0) == 4, 10, "its ABORT marker")
