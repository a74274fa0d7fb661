"""A transactional producer and consumer-group offsets spoken as raw Kafka requests (no client
library), so tests see exact error codes of exactly one broker (tests/cluster/_wire.py sends
them). `RawTxn(address, tid)` walks a transaction step by step:

    init()                            FindCoordinator (key type 1) + InitProducerId, retried
                                      while the coordinator loads
    add_partitions(topic, [p...])     AddPartitionsToTxn v3 -> {partition: error}
    produce(topic, p, values, seq=0)  Produce v9 of one transactional batch -> (error, base)
    add_offsets(group)                AddOffsetsToTxn v3 -> error
    commit_offsets(addr, group, topic, {p: offset})
                                      FindCoordinator (group) + TxnOffsetCommit v3 to it ->
                                      {partition: error}
    end(commit)                       EndTxn v3 -> error
and, outside a transaction:
    offset_fetch(addr, group, topic, ps, require_stable) -> {p: (offset, error)}
    lso(addr, topic, p)               ListOffsets read_committed latest -> the LSO
    describe_producers(addr, topic, p) -> the partition's active producers
Every call goes to the broker named by `address`; the transaction's requests to the
coordinator it found (`RawTxn.coordinator`).
`broker_with_topic(tmp_path, topic)` starts a broker subprocess for them (FAST settings).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from _broker import BrokerProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
import _wire

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch

#: Few `__transaction_state` / `__consumer_offsets` partitions: the broker creates them fast.
FAST = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}

_RETRY = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
}


def retry(call: Any, timeout: float = 30.0) -> Any:
    """`call()` -> (error, result) until the error is not a coordinator's retriable one."""
    deadline = time.monotonic() + timeout
    while True:
        code, result = call()
        if ErrorCode(code) not in _RETRY or time.monotonic() > deadline:
            return code, result
        time.sleep(0.05)


@contextlib.contextmanager
def broker_with_topic(
    tmp_path: Path, topic: str, partitions: int = 2, overrides: Mapping[str, str] | None = None
) -> Iterator[BrokerProcess]:
    """A broker subprocess (FAST, then `overrides`) with `topic` created (replication 1)."""
    proc = BrokerProcess(
        tmp_path / "data", log_path=tmp_path / "broker.log", overrides={**FAST, **(overrides or {})}
    )
    proc.start()
    try:
        assert _wire.create_topic(proc.bootstrap, topic, partitions, 1)[0] == 0
        yield proc
    finally:
        proc.close()


class RawTxn:
    def __init__(self, address: str, tid: str, timeout_ms: int = 60_000) -> None:
        self.address = address
        self.tid = tid
        self.timeout_ms = timeout_ms
        self.coordinator = address
        self.coordinator_id = -1
        self.producer_id = -1
        self.epoch = -1

    def _find(self) -> tuple[int, str]:
        resp = _wire.request(
            self.address, ApiKey.FIND_COORDINATOR, 3, {"key": self.tid, "key_type": 1}
        )
        self.coordinator_id = resp.node_id
        return resp.error_code, f"{resp.host}:{resp.port}"

    def init(self) -> None:
        code, self.coordinator = retry(self._find)
        assert code == 0, ErrorCode(code)

        def init() -> tuple[int, Any]:
            resp = _wire.request(
                self.coordinator,
                ApiKey.INIT_PRODUCER_ID,
                4,
                {
                    "transactional_id": self.tid,
                    "transaction_timeout_ms": self.timeout_ms,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            )
            return resp.error_code, resp

        code, resp = retry(init)
        assert code == 0, ErrorCode(code)
        self.producer_id, self.epoch = resp.producer_id, resp.producer_epoch

    def add_partitions(self, topic: str, partitions: Sequence[int]) -> dict[int, int]:
        def add() -> tuple[int, Any]:
            resp = _wire.request(
                self.coordinator,
                ApiKey.ADD_PARTITIONS_TO_TXN,
                3,
                {
                    "v3_and_below_transactional_id": self.tid,
                    "v3_and_below_producer_id": self.producer_id,
                    "v3_and_below_producer_epoch": self.epoch,
                    "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}],
                },
            )
            codes = {
                p.partition_index: p.partition_error_code
                for t in resp.results_by_topic_v3_and_below
                for p in t.results_by_partition
            }
            return max(codes.values(), key=lambda c: c in {int(e) for e in _RETRY}), codes

        return retry(add)[1]

    def produce_body(
        self, topic: str, partition: int, values: Sequence[bytes], seq: int
    ) -> dict[str, Any]:
        """A Produce request body: one transactional batch of `values` from this producer."""
        batch = build_batch(
            [(None, v) for v in values],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=seq,
            is_transactional=True,
        )
        return {
            "transactional_id": self.tid,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }

    def produce(
        self, address: str, topic: str, partition: int, values: Sequence[bytes], seq: int = 0
    ) -> tuple[int, int]:
        body = self.produce_body(topic, partition, values, seq)
        resp = _wire.request(address, ApiKey.PRODUCE, 9, body, timeout=20)
        p = resp.responses[0].partition_responses[0]
        return p.error_code, p.base_offset

    def add_offsets(self, group: str) -> int:
        def add() -> tuple[int, None]:
            resp = _wire.request(
                self.coordinator,
                ApiKey.ADD_OFFSETS_TO_TXN,
                3,
                {
                    "transactional_id": self.tid,
                    "producer_id": self.producer_id,
                    "producer_epoch": self.epoch,
                    "group_id": group,
                },
            )
            return resp.error_code, None

        return int(retry(add)[0])

    def offset_commit_body(
        self, group: str, topic: str, offsets: Mapping[int, int]
    ) -> dict[str, Any]:
        """A TxnOffsetCommit request body of this producer for `{partition: offset}`."""
        return {
            "transactional_id": self.tid,
            "group_id": group,
            "producer_id": self.producer_id,
            "producer_epoch": self.epoch,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": p,
                            "committed_offset": o,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                        for p, o in offsets.items()
                    ],
                }
            ],
        }

    def commit_offsets(
        self, address: str, group: str, topic: str, offsets: Mapping[int, int]
    ) -> dict[int, int]:
        body = self.offset_commit_body(group, topic, offsets)
        code, address = retry(lambda: find_group_coordinator(address, group))
        assert code == 0, ErrorCode(code)

        def commit() -> tuple[int, dict[int, int]]:
            resp = _wire.request(address, ApiKey.TXN_OFFSET_COMMIT, 3, body)
            codes = {p.partition_index: p.error_code for t in resp.topics for p in t.partitions}
            return max(codes.values()), codes

        return retry(commit)[1]

    def end(self, commit: bool) -> int:
        def end() -> tuple[int, None]:
            resp = _wire.request(
                self.coordinator,
                ApiKey.END_TXN,
                3,
                {
                    "transactional_id": self.tid,
                    "producer_id": self.producer_id,
                    "producer_epoch": self.epoch,
                    "committed": commit,
                },
            )
            return resp.error_code, None

        return int(retry(end)[0])


def find_group_coordinator(address: str, group: str) -> tuple[int, str]:
    """FindCoordinator for a group (creates `__consumer_offsets`): (error, "host:port")."""
    resp = _wire.request(address, ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
    return resp.error_code, f"{resp.host}:{resp.port}"


def offset_fetch(
    address: str, group: str, topic: str, partitions: Sequence[int], *, require_stable: bool
) -> dict[int, tuple[int, int]]:
    def fetch() -> tuple[int, Any]:
        resp = _wire.request(
            address,
            ApiKey.OFFSET_FETCH,
            7,
            {
                "group_id": group,
                "topics": [{"name": topic, "partition_indexes": list(partitions)}],
                "require_stable": require_stable,
            },
        )
        return resp.error_code, resp

    code, resp = retry(fetch)
    assert code == 0, ErrorCode(code)
    return {
        p.partition_index: (p.committed_offset, p.error_code)
        for t in resp.topics
        for p in t.partitions
    }


def lso(address: str, topic: str, partition: int) -> int:
    body = {
        "replica_id": -1,
        "isolation_level": 1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}
                ],
            }
        ],
    }
    resp = _wire.request(address, ApiKey.LIST_OFFSETS, 7, body)
    p = resp.topics[0].partitions[0]
    assert p.error_code == 0, ErrorCode(p.error_code)
    return int(p.offset)


def describe_producers(address: str, topic: str, partition: int) -> Any:
    resp = _wire.request(
        address,
        ApiKey.DESCRIBE_PRODUCERS,
        0,
        {"topics": [{"name": topic, "partition_indexes": [partition]}]},
    )
    return resp.topics[0].partitions[0]
