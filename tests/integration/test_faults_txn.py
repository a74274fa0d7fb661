"""Fault injection meets a transactional producer (kafka-python): fenced by an injected error.

What passing proves: an EndTxn answered PRODUCER_FENCED (one injected fault, hit once) makes
kafka-python's commit fail with ProducerFencedError, a fatal error (the producer refuses to
begin another transaction), as a real fencing would; the application's recovery, as Kafka's
documentation prescribes (a new producer with the same transactional id), works: its
InitProducerId bumps the epoch and aborts the fenced producer's open transaction, so a
read_committed consumer sees the new producer's records and none of the fenced one's, and a
read_uncommitted consumer sees both.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _group_procs import create_topic
from _txn import (
    PARTITIONS,
    check_isolation,
    kafka_python_producer,
    kafka_python_send_all,
    txn_values,
)
from kafka import errors as Errors
from leaked_sockets import MARKS as LEAKED_SOCKETS

import wirebroker
from wirebroker.testing import BrokerHandle

pytestmark = [
    pytest.mark.compat,
    # kafka-python 3.0.12 leaves a connection of the fatally failed producer unclosed.
    *LEAKED_SOCKETS,
]


@pytest.fixture
def broker() -> Iterator[BrokerHandle]:
    with wirebroker.running(thread=True) as handle:
        yield handle


def test_transactional_producer_fenced_by_an_injected_error(broker: BrokerHandle) -> None:
    bootstrap, topic = broker.bootstrap, "txn-fenced"
    create_topic(bootstrap, topic, PARTITIONS)
    doomed, fresh = txn_values("fault", "doomed"), txn_values("fault", "fresh")

    fenced = kafka_python_producer(bootstrap, "faulty-txn")
    try:
        fenced.init_transactions()
        fenced.begin_transaction()
        kafka_python_send_all(fenced, topic, doomed)
        fault = broker.faults.error("EndTxn", "PRODUCER_FENCED")
        with pytest.raises(Errors.ProducerFencedError):
            fenced.commit_transaction()
        assert broker.faults.list() == [], f"fault {fault} was not met"
        with pytest.raises(Errors.KafkaError):
            fenced.begin_transaction()  # fatal: this producer is done
    finally:
        fenced.close(timeout=5)

    successor = kafka_python_producer(bootstrap, "faulty-txn")
    try:
        successor.init_transactions()  # aborts the fenced producer's open transaction
        successor.begin_transaction()
        kafka_python_send_all(successor, topic, fresh)
        successor.commit_transaction()
    finally:
        successor.close(timeout=5)

    check_isolation(bootstrap, topic, fresh, doomed)
