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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _broker import BrokerProcess
from _txn_raw import RawTxn, find_group_coordinator, offset_fetch, retry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
import _wire
from _cluster import wait_until

from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import build_batch, decode_records, iter_batches

TOPIC = "tv2"
FAST = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}


class RawTxnV2(RawTxn):
    """A TV2 producer: no AddPartitionsToTxn / AddOffsetsToTxn; EndTxn v5 moves the epoch."""

    def produce_v12(
        self, topic: str, partition: int, values: Sequence[bytes], *, seq: int = 0
    ) -> int:
        batch = build_batch(
            [(None, v) for v in values],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=seq,
            is_transactional=True,
        )
        body = {
            "transactional_id": self.tid,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }

        def send() -> tuple[int, None]:
            resp = _wire.request(self.address, ApiKey.PRODUCE, 12, body, timeout=20)
            code = resp.responses[0].partition_responses[0].error_code
            # the leader maps a busy coordinator (markers under way) to NOT_ENOUGH_REPLICAS
            return (E.CONCURRENT_TRANSACTIONS if code == E.NOT_ENOUGH_REPLICAS else code), None

        return int(retry(send)[0])

    def commit_offsets_v5(self, group: str, offsets: dict[int, int]) -> list[int]:
        code, address = retry(lambda: find_group_coordinator(self.address, group))
        assert code == 0
        parts = [
            {
                "partition_index": p,
                "committed_offset": o,
                "committed_leader_epoch": -1,
                "committed_metadata": "",
            }
            for p, o in offsets.items()
        ]
        body = {
            "transactional_id": self.tid,
            "group_id": group,
            "producer_id": self.producer_id,
            "producer_epoch": self.epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": TOPIC, "partitions": parts}],
        }

        def commit() -> tuple[int, list[int]]:
            resp = _wire.request(address, ApiKey.TXN_OFFSET_COMMIT, 5, body)
            codes = [p.error_code for t in resp.topics for p in t.partitions]
            return max(codes), codes

        return list(retry(commit)[1])

    def end_v5(self, commit: bool, epoch: int | None = None) -> tuple[int, int, int]:
        """EndTxn v5 -> (error, producer id, epoch); on success the producer moves to them."""

        def end() -> tuple[int, Any]:
            resp = _wire.request(
                self.coordinator,
                ApiKey.END_TXN,
                5,
                {
                    "transactional_id": self.tid,
                    "producer_id": self.producer_id,
                    "producer_epoch": self.epoch if epoch is None else epoch,
                    "committed": commit,
                },
            )
            return resp.error_code, resp

        code, resp = retry(end)
        if code == 0 and epoch is None:
            self.producer_id, self.epoch = resp.producer_id, resp.producer_epoch
        return code, resp.producer_id, resp.producer_epoch


def read_committed(address: str, partition: int) -> tuple[list[bytes], int]:
    """Fetch v12 read_committed from 0: (values of the committed data records, LSO)."""
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 24,
        "isolation_level": 1,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 24,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    p = _wire.request(address, ApiKey.FETCH, 12, body).responses[0].partitions[0]
    assert p.error_code == 0
    aborted = {a.producer_id: a.first_offset for a in p.aborted_transactions or []}
    values: list[bytes] = []
    for pos, h in iter_batches(p.records or b""):
        if h.is_control or (h.producer_id in aborted and h.base_offset >= aborted[h.producer_id]):
            continue
        values += [r.value or b"" for r in decode_records(p.records, pos)]
    return values, int(p.last_stable_offset)


def api_versions(address: str) -> Any:
    return _wire.request(
        address,
        ApiKey.API_VERSIONS,
        3,
        {"client_software_name": "raw", "client_software_version": "1"},
    )


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log", overrides=FAST)
    proc.start()
    assert _wire.create_topic(proc.bootstrap, TOPIC, 2, 1)[0] == 0
    yield proc
    proc.close()


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
    assert versions[ApiKey.END_TXN] == 5 and versions[ApiKey.TXN_OFFSET_COMMIT] == 5
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
    assert txn.commit_offsets_v5("g-tv2", {0: 2, 1: 1}) == [0, 0]
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
