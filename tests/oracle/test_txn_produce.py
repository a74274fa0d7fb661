"""The first transactional batch of a producer in a partition, asked of wirebroker (alone and as
a cluster) and of Apache Kafka 4.4 with the same assertions (tests/oracle/conftest.py).

Kafka (UnifiedLog.maybeStartTransactionVerification, ProducerAppendInfo.checkSequence): before
a leader checks with the transaction coordinator that a partition is in the producer's
transaction (KIP-890), it records the lowest sequence the producer tried there; until a
transactional batch of the producer is appended, a batch starting above it is refused with
OUT_OF_ORDER_SEQUENCE_NUMBER (so a retry cannot skip what an earlier attempt sent first), and
a transaction version 2 producer (Produce v12+) with no batch in the partition must start at
sequence 0. Without an earlier attempt, a producer new to the partition may start anywhere
(as an idempotent one may). A partition not in the transaction: TRANSACTION_ABORTABLE to
Produce v11+ and TxnOffsetCommit v4+, INVALID_TXN_STATE before (with Kafka's text in a Produce
answer's error_message).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import build_batch

#: retried while a coordinator loads or a previous transaction's markers are written
_RETRIABLE = {
    E.COORDINATOR_NOT_AVAILABLE,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.NOT_COORDINATOR,
    E.CONCURRENT_TRANSACTIONS,
}
NOT_ADDED = "Partition was not added to the transaction"


def _retried(call: Callable[[], Any], timeout: float = 60.0) -> Any:
    """`call()` (an answer with an error_code) again while its error is retriable."""
    deadline = time.monotonic() + timeout
    while True:
        answer = call()
        if answer.error_code not in _RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


class Producer:
    """A producer as raw requests: transactional (`tid`) or idempotent (None). `tv2`: a
    transaction version 2 client (InitProducerId v5, Produce v12, EndTxn v5)."""

    def __init__(self, wire: Wire, topic: str, tid: str | None, *, tv2: bool = False) -> None:
        self.wire, self.topic, self.tid, self.tv2 = wire, topic, tid, tv2
        self.coordinator: str | None = None
        if tid is not None:
            find = {"key": tid, "key_type": 1}
            found = _retried(lambda: wire.call(ApiKey.FIND_COORDINATOR, 3, find))
            assert found.error_code == 0
            self.coordinator = f"{found.host}:{found.port}"
        init = {
            "transactional_id": tid,
            "transaction_timeout_ms": 60_000,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        version = 5 if tv2 else 4
        answer = _retried(
            lambda: wire.call(ApiKey.INIT_PRODUCER_ID, version, init, self.coordinator)
        )
        assert answer.error_code == 0
        self.pid, self.epoch = answer.producer_id, answer.producer_epoch

    def add(self, partition: int) -> int:
        topics = [{"name": self.topic, "partitions": [partition]}]
        body = {
            "v3_and_below_transactional_id": self.tid,
            "v3_and_below_producer_id": self.pid,
            "v3_and_below_producer_epoch": self.epoch,
            "v3_and_below_topics": topics,
        }

        def call() -> Any:
            answer = self.wire.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, body, self.coordinator)
            [code] = [
                p.partition_error_code
                for t in answer.results_by_topic_v3_and_below
                for p in t.results_by_partition
            ]
            answer.error_code = code
            return answer

        return int(_retried(call).error_code)

    def produce(
        self, partition: int, sequence: int, version: int
    ) -> tuple[str, int, int, str | None]:
        """One batch of one record: (error, base offset, log start offset, error_message)."""
        batch = build_batch(
            [(b"k", b"v")],
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=sequence,
            is_transactional=self.tid is not None,
        )
        leader = self.wire.brokers()[self.wire.leader(self.topic, partition)]
        body = {
            "transactional_id": self.tid,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [
                {"name": self.topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }
        [p] = self.wire.call(ApiKey.PRODUCE, version, body, leader).responses[0].partition_responses
        return E(p.error_code).name, p.base_offset, p.log_start_offset, p.error_message

    def abort(self) -> None:
        body = {
            "transactional_id": self.tid,
            "producer_id": self.pid,
            "producer_epoch": self.epoch,
            "committed": False,
        }
        version = 5 if self.tv2 else 4
        answer = _retried(lambda: self.wire.call(ApiKey.END_TXN, version, body, self.coordinator))
        assert answer.error_code == 0


@pytest.fixture
def wire(any_broker: str) -> Any:
    with Wire(any_broker) as w:
        w.ensure_txn_state_topic()
        w.ensure_producer_ids()
        yield w


def _topic(wire: Wire, name: str) -> str:
    wire.create_topic(name, 2)
    return name


@pytest.mark.parametrize("version", [10, 11])
def test_a_retried_first_batch_may_not_skip_what_an_earlier_attempt_sent(
    wire: Wire, unique: Callable[[str], str], version: int
) -> None:
    producer = Producer(wire, _topic(wire, unique("txn-seq")), unique("txn-seq"))
    refused = producer.produce(0, 2, version)  # the partition is not in the transaction
    if version >= 11:
        assert refused == ("TRANSACTION_ABORTABLE", -1, -1, None)
    else:
        assert refused == ("INVALID_TXN_STATE", -1, -1, NOT_ADDED)
    assert producer.add(0) == 0
    # the attempt at sequence 2 was recorded: a first batch may not start above it
    assert producer.produce(0, 5, version) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, 0, None)
    assert producer.produce(0, 3, version) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, 0, None)
    assert producer.produce(0, 2, version) == ("NONE", 0, 0, None)
    assert producer.produce(0, 3, version) == ("NONE", 1, 0, None)
    producer.abort()


def test_a_transaction_version_2_producer_starts_each_partition_at_sequence_0(
    wire: Wire, unique: Callable[[str], str]
) -> None:
    producer = Producer(wire, _topic(wire, unique("txn-tv2")), unique("txn-tv2"), tv2=True)
    assert producer.produce(1, 5, 12) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, 0, None)
    assert producer.produce(1, 0, 12) == ("NONE", 0, 0, None)
    producer.abort()


def test_a_first_batch_above_zero_without_an_earlier_attempt_is_stored(
    wire: Wire, unique: Callable[[str], str]
) -> None:
    """A producer new to the partition: its first sequence is taken as it comes (Kafka 4
    accepts any sequence from a producer it has no state for)."""
    topic = _topic(wire, unique("txn-first"))
    producer = Producer(wire, topic, unique("txn-first"))
    assert producer.add(0) == 0
    assert producer.produce(0, 5, 11) == ("NONE", 0, 0, None)
    producer.abort()
    idempotent = Producer(wire, topic, None)
    assert idempotent.produce(1, 5, 11) == ("NONE", 0, 0, None)
    assert idempotent.produce(1, 7, 11) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, 0, None)


@pytest.mark.parametrize(
    ("version", "expected"), [(3, E.INVALID_TXN_STATE), (4, E.TRANSACTION_ABORTABLE)]
)
def test_txn_offset_commit_without_add_offsets(
    wire: Wire, unique: Callable[[str], str], version: int, expected: E
) -> None:
    wire.ensure_offsets_topic()
    topic = _topic(wire, unique("txn-toc"))
    producer = Producer(wire, topic, unique("txn-toc"))
    group = unique("txn-toc-group")
    body = {
        "transactional_id": producer.tid,
        "group_id": group,
        "producer_id": producer.pid,
        "producer_epoch": producer.epoch,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }

    def call() -> Any:
        answer = wire.call(ApiKey.TXN_OFFSET_COMMIT, version, body, wire._coordinator(group))
        [answer.error_code] = [p.error_code for t in answer.topics for p in t.partitions]
        return answer

    assert _retried(call).error_code == expected
