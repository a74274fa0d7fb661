"""Transaction version 2 (KIP-890 part 2) over real sockets: a TV2 client played with raw
Kafka requests against one broker subprocess (the coordinator and the partition leader talk
over the wire, here over the broker's own listener).

What passing proves, Kafka 4's behaviour being the spec:
- ApiVersions v3 lists the feature transaction.version (supported 0..2, finalized 2) and
  EndTxn v5 / TxnOffsetCommit v5 / Produce v12; with transaction.version=0 no finalized
  feature and those APIs capped at v4 / v4 / v11;
- Produce v12 of a transactional batch with no AddPartitionsToTxn: the leader adds the
  partition (AddPartitionsToTxn v5 to the coordinator); TxnOffsetCommit v5 with no
  AddOffsetsToTxn likewise adds the offsets partition;
- EndTxn v5 commit answers the bumped epoch, the markers carry it; read_committed Fetch sees
  the committed records, not the aborted ones; the committed offsets become visible;
- the old epoch is fenced (Produce -> INVALID_PRODUCER_EPOCH, EndTxn -> PRODUCER_FENCED) and
  a retried EndTxn with the old epoch answers NONE with the new epoch.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _broker import BrokerProcess
from _txn_raw import broker_with_topic, offset_fetch
from _txn_raw_v2 import RawTxnV2
from _txn_raw_v2 import read_committed as _read_committed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
import _wire
from _cluster import wait_until

from protocol.api import ApiKey
from protocol.errors import ErrorCode as E

TOPIC = "tv2"


def read_committed(address: str, partition: int) -> tuple[list[bytes], int]:
    return _read_committed(address, TOPIC, partition)


def api_versions(address: str) -> Any:
    return _wire.request(
        address,
        ApiKey.API_VERSIONS,
        4,
        {"client_software_name": "raw", "client_software_version": "1"},
    )


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with broker_with_topic(tmp_path, TOPIC) as proc:
        yield proc


def test_api_versions_finalize_transaction_version_2(broker: BrokerProcess) -> None:
    resp = api_versions(broker.bootstrap)
    assert [(f.name, f.min_version, f.max_version) for f in resp.supported_features] == [
        ("transaction.version", 0, 2)
    ]
    assert [(f.name, f.max_version_level) for f in resp.finalized_features] == [
        ("transaction.version", 2)
    ]
    assert resp.finalized_features_epoch >= 0
    versions = {k.api_key: k.max_version for k in resp.api_keys}
    assert versions[ApiKey.END_TXN] == 5 and versions[ApiKey.TXN_OFFSET_COMMIT] == 6
    assert versions[ApiKey.PRODUCE] >= 12


def test_transaction_version_0_keeps_part_1(tmp_path: Path) -> None:
    proc = BrokerProcess(
        tmp_path / "data", log_path=tmp_path / "b.log", overrides={"transaction.version": "0"}
    )
    proc.start()
    try:
        resp = api_versions(proc.bootstrap)
        assert not resp.finalized_features
        versions = {k.api_key: k.max_version for k in resp.api_keys}
        assert versions[ApiKey.END_TXN] == 4 and versions[ApiKey.TXN_OFFSET_COMMIT] == 4
        assert versions[ApiKey.PRODUCE] == 11
    finally:
        proc.close()


def test_tv2_commit_abort_and_fencing(broker: BrokerProcess) -> None:
    addr = broker.bootstrap
    txn = RawTxnV2(addr, "tv2-producer")
    txn.init()
    pid, epoch0 = txn.producer_id, txn.epoch

    # transaction 1: Produce v12 and TxnOffsetCommit v5 without AddPartitions/AddOffsets
    assert txn.produce_v12(TOPIC, 0, [b"a", b"b"]) == 0
    assert txn.produce_v12(TOPIC, 1, [b"c"]) == 0
    assert txn.commit_offsets_v5("g-tv2", TOPIC, {0: 2, 1: 1}) == [0, 0]
    assert read_committed(addr, 0) == ([], 0)  # open: the LSO holds
    assert txn.end_v5(commit=True) == (0, pid, epoch0 + 1)
    wait_until(lambda: read_committed(addr, 0) == ([b"a", b"b"], 3), 10, "COMMIT on p0")
    wait_until(lambda: read_committed(addr, 1) == ([b"c"], 2), 10, "COMMIT on p1")
    wait_until(
        lambda: (
            offset_fetch(addr, "g-tv2", TOPIC, [0, 1], require_stable=True)
            == {0: (2, 0), 1: (1, 0)}
        ),
        10,
        "the transaction's offsets",
    )
    # a retry of that EndTxn with the old epoch: NONE and the current epoch
    assert txn.end_v5(commit=True, epoch=epoch0) == (0, pid, epoch0 + 1)

    # transaction 2 (epoch + 1, sequences from 0): aborted
    assert txn.produce_v12(TOPIC, 0, [b"x"]) == 0
    assert txn.end_v5(commit=False) == (0, pid, epoch0 + 2)
    wait_until(lambda: read_committed(addr, 0)[1] == 5, 10, "ABORT on p0")
    assert read_committed(addr, 0) == ([b"a", b"b"], 5)

    # a zombie with an old epoch: fenced by the partition and by the coordinator (epoch0 + 1
    # would read as a retry of the abort: INVALID_TXN_STATE for a commit, as in Kafka)
    zombie = RawTxnV2(addr, "tv2-producer")
    zombie.coordinator, zombie.producer_id, zombie.epoch = txn.coordinator, pid, epoch0
    assert zombie.produce_v12(TOPIC, 0, [b"z"], seq=1) == E.INVALID_PRODUCER_EPOCH
    assert zombie.end_v5(commit=True)[0] == E.PRODUCER_FENCED

    # transaction 3 still works for the real producer
    assert txn.produce_v12(TOPIC, 1, [b"d"]) == 0
    assert txn.end_v5(commit=True) == (0, pid, epoch0 + 3)
    wait_until(lambda: read_committed(addr, 1) == ([b"c", b"d"], 4), 10, "COMMIT on p1")
