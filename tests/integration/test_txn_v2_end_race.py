"""A TV2 (KIP-890 part 2) producer that ends its next transaction while the previous one's
markers are still being written, on wirebroker and on Apache Kafka 4.4 (the oracle).

The Java producer does exactly this when it commits, begins a transaction, sends a record
that never leaves it (not flushed) and aborts: EndTxn v5 commit answers the bumped epoch at
once, and the empty abort with that epoch follows on the same connection right behind it
(librdkafka's test 0098, "rapid abort / committing", with its Java TransactionProducerCli).
Kafka answers the abort CONCURRENT_TRANSACTIONS until the markers are done, and the producer
retries; wirebroker answered PRODUCER_FENCED, fatal to the producer ("There is a newer
producer with the same transactionalId which fences the current one").

The requests are pipelined on one connection, as the producer's are: the second is read
once the first is answered. Whether the markers are still being written then is a race the
broker usually loses (every time here); the test accepts the other outcome too (the abort
done, with its own bump), never PRODUCER_FENCED.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _broker import BrokerProcess
from _txn_raw import broker_with_topic

from compat.scenarios.wire import Wire, _Conn
from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode as E
from protocol.records import RecordSpec, build_batch


@pytest.fixture(params=["wirebroker", "kafka"])
def bootstrap(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "kafka":
        yield request.getfixturevalue("apache_kafka")
        return
    with broker_with_topic(tmp_path, "unused") as proc:
        broker: BrokerProcess = proc
        yield broker.bootstrap


def _retry(call: Callable[[], Any], retriable: set[int], what: str) -> Any:
    deadline = time.monotonic() + 60
    while True:
        resp = call()
        code = int(resp.error_code)
        if code not in retriable:
            return resp
        assert time.monotonic() < deadline, f"{what}: still {E(code).name} after 60 s"
        time.sleep(0.05)


def test_end_txn_while_the_markers_are_written_waits_not_fences(bootstrap: str) -> None:
    topic, tid = f"tv2-race-{uuid.uuid4().hex[:8]}", f"tv2-race-{uuid.uuid4().hex[:8]}"
    busy = {E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR}
    with Wire(bootstrap) as w:
        w.create_topic(topic, 1)
        w.ensure_txn_state_topic()
        found = _retry(
            lambda: w.call(ApiKey.FIND_COORDINATOR, 3, {"key": tid, "key_type": 1}),
            busy,
            "FindCoordinator",
        )
        coordinator = f"{found.host}:{found.port}"
        body = {"transactional_id": tid, "transaction_timeout_ms": 60_000}
        init = _retry(
            lambda: w.call(
                ApiKey.INIT_PRODUCER_ID,
                5,
                {**body, "producer_id": -1, "producer_epoch": -1},
                coordinator,
            ),
            busy | {E.CONCURRENT_TRANSACTIONS},
            "InitProducerId",
        )
        assert init.error_code == 0
        pid, epoch = int(init.producer_id), int(init.producer_epoch)
        batch = build_batch(
            [RecordSpec(None, b"x")],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
            is_transactional=True,
        )
        produce = {
            "transactional_id": tid,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }

        def produced() -> Any:
            resp = w.call(ApiKey.PRODUCE, 12, produce)
            return resp.responses[0].partition_responses[0]

        part = _retry(produced, {E.CONCURRENT_TRANSACTIONS, E.NOT_ENOUGH_REPLICAS}, "Produce")
        assert part.error_code == 0
        conn = _Conn(coordinator, 15)
        try:
            end = {"transactional_id": tid, "producer_id": pid}
            conn.sock.sendall(
                encode_request(
                    26, 5, 1, "race", {**end, "producer_epoch": epoch, "committed": True}
                )
                + encode_request(
                    26, 5, 2, "race", {**end, "producer_epoch": epoch + 1, "committed": False}
                )
            )
            answers = []
            for _ in range(2):
                (size,) = struct.unpack(">i", conn._recv_exact(4))
                _correlation, resp = decode_response(26, 5, conn._recv_exact(size))
                answers.append((int(resp.error_code), int(resp.producer_epoch)))
        finally:
            conn.close()
    assert answers[0] == (E.NONE, epoch + 1)
    assert answers[1] in ((E.CONCURRENT_TRANSACTIONS, -1), (E.NONE, epoch + 2)), answers[1]
