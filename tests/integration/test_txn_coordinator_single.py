"""The transaction coordinator of a single broker, driven by kafka-python's transactional
producer over real sockets (issue 14).

What passing proves, Kafka's behaviour being the spec:
- commit: records of a committed transaction are read by a read_committed consumer, once;
  abort: they never are (a read_uncommitted consumer sees both), across two partitions;
- the coordinator's markers reach the partitions over the wire (this broker's own listener);
- fencing: a second producer with the same transactional.id fences the first one
  (ProducerFenced on its next send/commit), and its own transactions commit;
- transaction.timeout.ms above transaction.max.timeout.ms -> InvalidTransactionTimeout;
- DescribeTransactions / ListTransactions report the id;
- send_offsets_to_transaction (AddOffsetsToTxn + TxnOffsetCommit): the markers reach the
  group's `__consumer_offsets` partition; committed -> the group's offset moves, aborted -> it
  stays where it was;
- `kill -9` of the broker in the middle of a transaction: after the restart the transaction
  is aborted by the coordinator when its timeout passes (never half visible), later
  transactions of a new producer with the same id commit, and read_committed reads exactly
  the committed records.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _broker import BrokerProcess
from _txn import read_values
from leaked_sockets import MARKS as LEAKED_SOCKETS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
import _wire
from _cluster import wait_until
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError

from protocol.api import ApiKey

#: kafka-python 3.0.12 leaks the socket of a refused reconnect (this module kills the broker
#: and closes fenced producers): ignore that warning and collect the sockets after each test.
pytestmark = [pytest.mark.compat, *LEAKED_SOCKETS]


TOPIC = "txn-out"
FAST = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "transaction.state.log.num.partitions": "5",
}


def _create(bootstrap: str, topic: str = TOPIC, partitions: int = 2) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def _producer(bootstrap: str, tid: str, **kw: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id=tid,
        request_timeout_ms=10_000,
        max_block_ms=20_000,
        **kw,
    )


def _read(bootstrap: str, isolation: str, expect_at_least: int = 0) -> list[bytes]:
    """Every record value of TOPIC (both partitions) as a consumer with `isolation` reads it,
    until the end offsets it sees are reached (read_committed: the LSO)."""
    return read_values(
        bootstrap, TOPIC, 2, isolation, expect_at_least=expect_at_least, consumer_timeout_ms=1500
    )


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log", overrides=FAST)
    proc.start()
    yield proc
    proc.close()


def test_commit_and_abort(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    _create(bootstrap)
    producer = _producer(bootstrap, "tx-commit-abort")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(10):
            producer.send(TOPIC, value=f"c{i}".encode(), partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(10):
            producer.send(TOPIC, value=f"a{i}".encode(), partition=i % 2)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(TOPIC, value=b"c-last", partition=0)
        producer.commit_transaction()
    finally:
        producer.close()
    committed = sorted([f"c{i}".encode() for i in range(10)] + [b"c-last"])
    assert _read(bootstrap, "read_committed", len(committed)) == committed
    everything = _read(bootstrap, "read_uncommitted", 21)
    assert everything == sorted(committed + [f"a{i}".encode() for i in range(10)])


def test_fencing_and_admin_views(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    _create(bootstrap)
    first = _producer(bootstrap, "tx-fence")
    second = _producer(bootstrap, "tx-fence")
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send(TOPIC, value=b"zombie", partition=0).get(timeout=10)
        second.init_transactions()  # aborts the first one's transaction, bumps the epoch
        with pytest.raises(KafkaError) as fenced:
            first.send(TOPIC, value=b"zombie-2", partition=1).get(timeout=10)
            first.commit_transaction()
        assert "Fenced" in type(fenced.value).__name__ or "fenced" in str(fenced.value).lower()
        second.begin_transaction()
        second.send(TOPIC, value=b"winner", partition=1)
        second.commit_transaction()

        def described() -> tuple[int, str]:
            body = {"transactional_ids": ["tx-fence"]}
            [state] = _wire.request(
                bootstrap, ApiKey.DESCRIBE_TRANSACTIONS, 0, body
            ).transaction_states
            return state.error_code, state.transaction_state

        # EndTxn answers once PrepareCommit is written; the markers and CompleteCommit follow
        wait_until(lambda: described() == (0, "CompleteCommit"), 10, "tx-fence to complete")
        listed = _wire.request(
            bootstrap,
            ApiKey.LIST_TRANSACTIONS,
            0,
            {"state_filters": [], "producer_id_filters": []},
        )
        assert "tx-fence" in [t.transactional_id for t in listed.transaction_states]
    finally:
        first.close(timeout=2)
        second.close()
    assert _read(bootstrap, "read_committed", 1) == [b"winner"]


def test_transaction_timeout_above_the_maximum(broker: BrokerProcess) -> None:
    producer = _producer(broker.bootstrap, "tx-long", transaction_timeout_ms=900_001)
    try:
        with pytest.raises(KafkaError) as error:
            producer.init_transactions()
        # kafka-python wraps it: "Unexpected error in InitProducerIdResponse: [Error 50] ..."
        assert "InvalidTransactionTimeout" in f"{type(error.value).__name__} {error.value}"
    finally:
        producer.close(timeout=2)


def test_kill9_mid_transaction_aborts_it(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    _create(bootstrap)
    producer = _producer(bootstrap, "tx-crash", transaction_timeout_ms=3000)
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(TOPIC, value=b"ok", partition=0)
    producer.commit_transaction()
    producer.begin_transaction()
    for i in range(6):
        producer.send(TOPIC, value=f"lost{i}".encode(), partition=i % 2)
    producer.flush()
    broker.kill9()
    producer.close(timeout=0)
    bootstrap = broker.restart()

    # The open transaction times out (3 s) and the coordinator aborts it; read_committed then
    # gets past it (the LSO moves) and never shows its records.
    def state() -> str:
        d = _wire.request(
            bootstrap, ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["tx-crash"]}
        ).transaction_states[0]
        return str(d.transaction_state)

    wait_until(lambda: state() == "CompleteAbort", 30, "the coordinator to abort tx-crash")
    again = _producer(bootstrap, "tx-crash")
    try:
        again.init_transactions()
        again.begin_transaction()
        again.send(TOPIC, value=b"after", partition=1)
        again.commit_transaction()
    finally:
        again.close()
    assert _read(bootstrap, "read_committed", 2) == [b"after", b"ok"]


def test_offsets_in_the_transaction(broker: BrokerProcess) -> None:
    from kafka import OffsetAndMetadata, TopicPartition

    bootstrap = broker.bootstrap
    _create(bootstrap, "txn-in", 1)
    _create(bootstrap)
    plain = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(10):
        plain.send("txn-in", f"v{i}".encode())
    plain.flush()
    plain.close()
    source = TopicPartition("txn-in", 0)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id="ctp",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    producer = _producer(bootstrap, "tx-ctp")
    try:
        consumer.assign([source])
        producer.init_transactions()
        for upto, commit in ((4, True), (8, False)):
            producer.begin_transaction()
            producer.send(TOPIC, value=f"out-{upto}".encode(), partition=0)
            offsets = {source: OffsetAndMetadata(upto, "", -1)}
            producer.send_offsets_to_transaction(offsets, "ctp")
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
            wait_until(
                lambda: consumer.committed(source) == 4,
                10,
                "the group's committed offset to be 4 (the committed transaction's)",
            )
    finally:
        producer.close()
        consumer.close()
    assert _read(bootstrap, "read_committed", 1) == [b"out-4"]
