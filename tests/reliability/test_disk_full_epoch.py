"""Disk full under an idempotent librdkafka producer: no epoch bump, so no duplicate.

The producer pipelines up to 5 requests per partition. On a full disk R1's write fails
(undone; KAFKA_STORAGE_ERROR) and R2..R5, whose sequences follow R1's, must get
KAFKA_STORAGE_ERROR too, as from Kafka (whose log dir is offline by then). Answered
OUT_OF_ORDER_SEQUENCE_NUMBER, librdkafka takes R1 for lost ("skipped sequence numbers"),
bumps the producer epoch and renumbers the unacknowledged records of every partition: a
record already written to another partition whose acknowledgement was lost is then written
twice (cluster chaos seed 195923930, a network partition then disk_full on another leader).
Checked here on one partition: every batch of the producer in the log is at epoch 0, and
every acknowledged record is there once.

The broker runs under quota_broker.py (a byte quota on the storage seam, deterministic, no
root needed); the disk is filled once 200 records are acknowledged and freed once 100 sent
while full are unacknowledged (the client keeps retrying them).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from diskfull import QuotaSpace

from protocol.records import iter_batches

pytestmark = [pytest.mark.slow]

TOPIC = "t"


def _producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,  # one request per record: R2..R5 in flight behind R1
            "retry.backoff.ms": 20,
            "message.timeout.ms": 60_000,
            "log_level": 0,
        }
    )


def _log_batches(partition_dir: Path) -> list[tuple[int, int, int]]:
    """(producer id, producer epoch, record count) of every batch in the partition."""
    out = []
    for seg in sorted(partition_dir.glob("*.log"), key=lambda p: int(p.stem)):
        for _pos, h in iter_batches(seg.read_bytes()):
            out.append((h.producer_id, h.producer_epoch, h.last_offset - h.base_offset + 1))
    return out


def test_a_full_disk_does_not_make_librdkafka_bump_its_epoch(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    space = QuotaSpace(tmp_path, "deterministic")
    broker = space.broker(tmp_path / "broker.log")
    bootstrap = broker.start()
    acked: list[int] = []
    failed: Counter[str] = Counter()

    def done(err: Any, msg: Any) -> None:
        if err is not None:
            failed[err.name()] += 1
        else:
            acked.append(int(msg.offset()))

    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for fut in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            fut.result(15)
        producer = _producer(bootstrap)
        sent = 0
        deadline = time.monotonic() + 60

        def send_until(cond: Any) -> None:
            nonlocal sent
            while not cond():
                assert time.monotonic() < deadline, f"stuck: sent {sent}, acked {len(acked)}"
                producer.produce(TOPIC, b"r-%06d" % sent, partition=0, on_delivery=done)
                sent += 1
                producer.poll(0.001)

        send_until(lambda: len(acked) >= 200)
        space.fill_to(0)
        full_from = sent
        send_until(lambda: sent - full_from >= 100 and sent - len(acked) >= 100)
        space.free_all()
        send_until(lambda: sent - full_from >= 200)
        assert producer.flush(60) == 0, "records still unresolved"
    finally:
        broker.close()
    batches = _log_batches(space.data_dir / f"{TOPIC}-0")
    epochs = Counter(epoch for pid, epoch, _n in batches if pid >= 0)
    assert not failed and len(acked) == sent, (failed, sent, len(acked))
    assert set(epochs) == {0}, f"librdkafka bumped its epoch on the full disk: {epochs}"
    assert sum(n for _pid, _epoch, n in batches) == sent  # every record once
