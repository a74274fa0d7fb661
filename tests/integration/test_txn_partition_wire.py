"""The partition and group side of transactions over real sockets, as raw Kafka requests
against one broker subprocess (issue 14; helpers in _txn_raw.py).

What passing proves, Kafka's behaviour being the spec:
- a transactional batch holds the partition's last stable offset until the coordinator's
  COMMIT marker arrives over the wire (WriteTxnMarkers to this broker's own listener);
- KIP-890 part 1 over loopback: a transactional batch for a partition the producer never
  added to its transaction -> INVALID_TXN_STATE, nothing appended; with
  transaction.partition.verification.enable=false it is appended;
- TxnOffsetCommit: invisible to OffsetFetch (require_stable -> UNSTABLE_OFFSET_COMMIT) until
  the COMMIT marker, dropped on ABORT;
- DescribeProducers shows the producer and its open transaction.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _broker import BrokerProcess
from _txn_raw import RawTxn, broker_with_topic, describe_producers, lso, offset_fetch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
import _wire
from _cluster import wait_until

from protocol.errors import ErrorCode as E

TOPIC = "txp"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with broker_with_topic(tmp_path, TOPIC) as proc:
        yield proc


def test_commit_moves_lso_and_makes_offsets_visible(broker: BrokerProcess) -> None:
    addr = broker.bootstrap
    txn = RawTxn(addr, "tx-commit")
    txn.init()
    assert txn.add_partitions(TOPIC, [0, 1]) == {0: 0, 1: 0}
    assert txn.produce(addr, TOPIC, 0, [b"a", b"b"]) == (0, 0)
    assert txn.produce(addr, TOPIC, 1, [b"c"]) == (0, 0)
    assert lso(addr, TOPIC, 0) == 0 and lso(addr, TOPIC, 1) == 0
    [producer] = describe_producers(addr, TOPIC, 0).active_producers
    assert (producer.producer_id, producer.current_txn_start_offset) == (txn.producer_id, 0)

    assert txn.add_offsets("g1") == 0
    assert txn.commit_offsets(addr, "g1", TOPIC, {0: 2, 1: 1}) == {0: 0, 1: 0}
    assert offset_fetch(addr, "g1", TOPIC, [0], require_stable=True) == {
        0: (-1, E.UNSTABLE_OFFSET_COMMIT)
    }
    assert offset_fetch(addr, "g1", TOPIC, [0], require_stable=False) == {0: (-1, 0)}

    assert txn.end(commit=True) == 0
    wait_until(lambda: lso(addr, TOPIC, 0) == 3, 10, "the COMMIT marker on partition 0")
    wait_until(lambda: lso(addr, TOPIC, 1) == 2, 10, "the COMMIT marker on partition 1")
    wait_until(
        lambda: (
            offset_fetch(addr, "g1", TOPIC, [0, 1], require_stable=True) == {0: (2, 0), 1: (1, 0)}
        ),
        10,
        "committed transactional offsets",
    )


def test_abort_drops_offsets(broker: BrokerProcess) -> None:
    addr = broker.bootstrap
    txn = RawTxn(addr, "tx-abort")
    txn.init()
    assert txn.add_partitions(TOPIC, [0]) == {0: 0}
    assert txn.produce(addr, TOPIC, 0, [b"x"]) == (0, 0)
    assert txn.add_offsets("g2") == 0
    assert txn.commit_offsets(addr, "g2", TOPIC, {0: 1}) == {0: 0}
    assert txn.end(commit=False) == 0
    wait_until(lambda: lso(addr, TOPIC, 0) == 2, 10, "the ABORT marker")
    wait_until(
        lambda: offset_fetch(addr, "g2", TOPIC, [0], require_stable=True) == {0: (-1, 0)},
        10,
        "aborted offsets dropped",
    )


def test_unverified_partition_is_invalid_txn_state(broker: BrokerProcess) -> None:
    addr = broker.bootstrap
    txn = RawTxn(addr, "tx-verify")
    txn.init()
    assert txn.add_partitions(TOPIC, [0]) == {0: 0}
    assert txn.produce(addr, TOPIC, 1, [b"never added"]) == (E.INVALID_TXN_STATE, -1)
    assert _wire.list_offset(addr, TOPIC, 1) == (0, 0)
    assert txn.produce(addr, TOPIC, 0, [b"added"]) == (0, 0)


def test_verification_can_be_disabled(tmp_path: Path) -> None:
    unverified = {"transaction.partition.verification.enable": "false"}
    with broker_with_topic(tmp_path, TOPIC, overrides=unverified) as proc:
        addr = proc.bootstrap
        txn = RawTxn(addr, "tx-unverified")
        txn.init()
        assert txn.produce(addr, TOPIC, 1, [b"not added"]) == (0, 0)
        assert lso(addr, TOPIC, 1) == 0
