"""Transactions with kafkajs 2.2.4 (Node) against a wirebroker subprocess (issue 14).

kafkajs has its own protocol code for transactions (FindCoordinator TRANSACTION,
InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, all at their
older versions). The test drives `js/txn_client.js` with `node` (one JSON request in argv, one
JSON result on stdout, a watchdog inside the script and a timeout outside).

What passing proves (stories in `_txn.py`): kafkajs commits and aborts transactions; a kafkajs
consumer with `readUncommitted: false` reads only committed records (each story ends with a
committed transaction on every partition, so an aborted record delivered by mistake would
take the place of a committed one in the first `expect` records) and with
`readUncommitted: true` reads them all (kafka-python cross-checks both exactly); offsets sent
with `sendOffsets` become the group's committed offsets only on commit; a second producer with
the same transactional id fences the first, whose commit fails with INVALID_PRODUCER_EPOCH or
PRODUCER_FENCED.

Needs `node` and `npm ci --prefix tests/integration/js`; missing either is a failure.
"""

from __future__ import annotations

from typing import Any

import pytest
from _broker import BrokerProcess
from _group_procs import admin_client, committed_offsets, create_topic
from _kafkajs import run_script
from _txn import PARTITIONS, check_isolation, transform, txn_values
from kafka import KafkaProducer

pytestmark = pytest.mark.compat

RUN_TIMEOUT_MS = 60_000


def _run(bootstrap: str, mode: str, **request: Any) -> dict[str, Any]:
    payload = {"brokers": [bootstrap], "mode": mode, **request}
    return run_script("txn_client.js", payload, RUN_TIMEOUT_MS)


def _hex(values: list[bytes]) -> list[str]:
    return [v.hex() for v in values]


def _check(bootstrap: str, topic: str, committed: list[bytes], aborted: list[bytes]) -> None:
    for uncommitted, want in ((False, committed), (True, committed + aborted)):
        got = _run(bootstrap, "consume", topic=topic, readUncommitted=uncommitted, expect=len(want))
        assert sorted(bytes.fromhex(v) for v in got["values"]) == sorted(want), uncommitted
    check_isolation(bootstrap, topic, committed, aborted)


def test_commit_abort_commit_isolation(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "kjs-txn-iso"
    create_topic(bootstrap, topic, PARTITIONS)
    first, aborted, second = (txn_values("iso", t) for t in ("c1", "a1", "c2"))
    txns = [
        {"values": _hex(first), "end": "commit"},
        {"values": _hex(aborted), "end": "abort"},
        {"values": _hex(second), "end": "commit"},
    ]
    _run(bootstrap, "produce", transactionalId="kjs-iso", topic=topic, txns=txns)
    _check(bootstrap, topic, first + second, aborted)


def test_consume_transform_produce_with_offsets(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    source, sink, group = "kjs-ctp-in", "kjs-ctp-out", "kjs-ctp-group"
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    inputs = txn_values("ctp", "in", 20)
    plain = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        for i, v in enumerate(inputs):
            plain.send(source, value=v, partition=i % PARTITIONS)
        plain.flush(timeout=30)
    finally:
        plain.close(timeout=5)

    result = _run(
        bootstrap,
        "ctp",
        transactionalId="kjs-ctp",
        source=source,
        sink=sink,
        groupId=group,
        expect=len(inputs),
        abortAfter=True,
    )
    want = {(source, int(p)): (o, "") for p, o in result["positions"].items()}
    assert want == {(source, p): (len(inputs) // PARTITIONS, "") for p in range(PARTITIONS)}
    admin = admin_client(bootstrap)
    try:
        assert committed_offsets(admin, group) == want
    finally:
        admin.close()

    # A committed tail on every partition after the aborted transaction (see the docstring).
    tail = txn_values("ctp", "tail", 2 * PARTITIONS)
    _run(
        bootstrap,
        "produce",
        transactionalId="kjs-tail",
        topic=sink,
        txns=[{"values": _hex(tail), "end": "commit"}],
    )
    _check(bootstrap, sink, [transform(v) for v in inputs] + tail, [b"aborted-output"])


def test_second_producer_fences_the_first(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "kjs-txn-fence"
    create_topic(bootstrap, topic, PARTITIONS)
    zombie_values, winner_values = txn_values("fence", "zombie"), txn_values("fence", "winner")
    result = _run(
        bootstrap,
        "fence",
        transactionalId="kjs-fence",
        topic=topic,
        zombie=_hex(zombie_values),
        winner=_hex(winner_values),
    )
    assert result["zombieError"] is not None, "the fenced producer's commit succeeded"
    assert result["zombieError"]["type"] in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"), result
    _check(bootstrap, topic, winner_values, zombie_values)
