"""Torn and corrupt files through the real broker: templates it writes, cases a client reads.

`build_broker_templates` starts `python -m wirebroker serve` (tests/integration/_broker.py),
creates topic `torn` (2 partitions, internal.segment.bytes 6000 (Kafka's config for small test
segments: segment.bytes is at least 1 MiB), index.interval.bytes 300) and produces
~700 records with kafka-python (acks=all, idempotent, every codec, keys and null keys),
recording each acknowledgement (partition, offset, key, value). The data directory is
copied after `kill -9` (`broker-crash`) and, after a restart, after a SIGTERM stop
(`broker-clean`). These templates also feed `torn.run_case` (LogManager.load).

`run_broker_case` copies a broker template, applies the same faults as `torn.apply_faults`,
starts a broker on the copy and reads every partition from the beginning with a real client
(kafka-python for even case numbers, confluent-kafka for odd ones). Checked:

- the broker starts;
- the client receives exactly the acknowledged records below the damage point, in order,
  with their offsets, keys and values, and nothing at or beyond it;
- the end offset (ListOffsets latest) is the scan's end, or, when the damage lies below the
  recovery point of a cleanly shut down log (found only when read: the partition goes
  offline with KAFKA_STORAGE_ERROR after the last valid record), it is after a restart;
- a record produced afterwards to the damaged partition gets exactly the expected end offset.
"""

from __future__ import annotations

import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from logscan import scan_partition
from torn import PARTITIONS, TOPIC, Acked, Case, CaseResult, Template, apply_faults, case_seed

from wirebroker.log import LogConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from _broker import BrokerProcess

__all__ = ["BROKER_CONFIG", "build_broker_templates", "run_broker_case"]

TOPIC_CONFIGS = {"internal.segment.bytes": "6000", "index.interval.bytes": "300"}
BROKER_CONFIG = LogConfig(segment_bytes=6000, index_interval_bytes=300)
CLIENT_TIMEOUT = 15.0
CODECS = (None, "gzip", "snappy", "lz4", "zstd")


def _produce(bootstrap: str, rng: random.Random, count: int) -> dict[int, Acked]:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, topic_configs=TOPIC_CONFIGS)])
    finally:
        admin.close()
    acked: dict[int, Acked] = {p: {} for p in range(PARTITIONS)}
    per_codec = count // len(CODECS)
    n = 0
    for codec in CODECS:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            compression_type=codec,
            linger_ms=3,
            batch_size=rng.choice((600, 1500, 4000)),
            request_timeout_ms=10_000,
        )
        try:
            futures = []
            for _ in range(per_codec):
                key = None if rng.random() < 0.1 else f"k{n}".encode()
                value = f"v{n}:".encode() + rng.randbytes(rng.randrange(0, 160))
                fut = producer.send(TOPIC, key=key, value=value, partition=n % PARTITIONS)
                futures.append((fut, key, value))
                n += 1
            producer.flush(timeout=CLIENT_TIMEOUT)
            for fut, key, value in futures:
                md = fut.get(timeout=CLIENT_TIMEOUT)
                acked[md.partition][md.offset] = (key, value)
        finally:
            producer.close(timeout=5)
    return acked


def build_broker_templates(workdir: Path, seed: int, records: int = 700) -> list[Template]:
    rng = random.Random(seed ^ 0xB0B)
    live = workdir / "broker-live"
    proc = BrokerProcess(live, log_path=workdir / "broker-template.log")
    try:
        acked = _produce(proc.start(), rng, records)
        proc.kill9()
        crash = workdir / "tmpl-broker-crash"
        shutil.copytree(live, crash)
        proc.start()
        code = proc.stop()
        assert code == 0, f"broker exited {code} on SIGTERM\n{proc.log_text()}"
        clean = workdir / "tmpl-broker-clean"
        shutil.copytree(live, clean)
    finally:
        proc.close()
    shutil.rmtree(live, ignore_errors=True)
    return [
        Template("broker-crash", crash, BROKER_CONFIG, acked, clean=False),
        Template("broker-clean", clean, BROKER_CONFIG, acked, clean=True),
    ]


# -- reading back with a real client ----------------------------------------------------------

Read = list[tuple[int, bytes | None, bytes | None]]  # (offset, key, value)


def _reached(out: Read, until: int) -> bool:
    return (not out and until == 0) or bool(out and out[-1][0] >= until - 1)


def _read_kafka_python(
    bootstrap: str, partition: int, until: int, settle: float
) -> tuple[int, Read]:
    """(end offset, records read) from the beginning until offset `until`, then `settle`
    more seconds of polling (to see that nothing beyond it arrives)."""
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(TOPIC, partition)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=10_000,
        fetch_max_wait_ms=100,
        check_crcs=True,
    )
    out: Read = []
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp], timeout_ms=10_000)[tp]
        deadline = time.monotonic() + CLIENT_TIMEOUT
        settle_until: float | None = None
        while True:
            now = time.monotonic()
            if settle_until is None and _reached(out, until):
                settle_until = now + settle
            if settle_until is not None and now >= settle_until:
                break
            assert now < deadline, f"kafka-python read {len(out)} records, wanted up to {until}"
            for records in consumer.poll(timeout_ms=100).values():
                out.extend((r.offset, r.key, r.value) for r in records)
    finally:
        consumer.close(autocommit=False, timeout_ms=5000)
    return end, out


def _read_confluent(bootstrap: str, partition: int, until: int, settle: float) -> tuple[int, Read]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "wirebroker-torn-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
            "check.crcs": True,
        }
    )
    out: Read = []
    try:
        _, end = consumer.get_watermark_offsets(
            TopicPartition(TOPIC, partition), timeout=10.0, cached=False
        )
        consumer.assign([TopicPartition(TOPIC, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + CLIENT_TIMEOUT
        settle_until: float | None = None
        while True:
            now = time.monotonic()
            if settle_until is None and _reached(out, until):
                settle_until = now + settle
            if settle_until is not None and now >= settle_until:
                break
            assert now < deadline, f"confluent-kafka read {len(out)} records, wanted {until}"
            for msg in consumer.consume(num_messages=500, timeout=0.1):
                err = msg.error()
                if err is not None:
                    assert err.retriable() or err.code() < 0, f"consumer error {err}"
                    continue
                offset = msg.offset()
                assert offset is not None
                out.append((offset, msg.key(), msg.value()))
    finally:
        consumer.close()
    return end, out


def _produce_one(bootstrap: str, partition: int) -> int:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=10_000)
    try:
        md = producer.send(TOPIC, value=b"after recovery", partition=partition).get(
            timeout=CLIENT_TIMEOUT
        )
        return int(md.offset)
    finally:
        producer.close(timeout=5)


def run_broker_case(tmpl: Template, run_seed: int, index: int, workdir: Path) -> CaseResult:
    """Damage a copy of a broker template, serve it with the real broker, read it back."""
    seed = case_seed(run_seed, index)
    rng = random.Random(seed)
    case = Case(index, seed, tmpl.name + "+broker", rng.randrange(PARTITIONS))
    result = CaseResult(case)
    root = workdir / f"bcase-{index}"
    proc = BrokerProcess(root / "data", log_path=root / "broker.log")
    reader: Any = _read_kafka_python if index % 2 == 0 else _read_confluent
    try:
        shutil.copytree(tmpl.root, root / "data")
        apply_faults(case, root / "data", tmpl.clean, rng)
        scans = {p: scan_partition(root / "data" / f"{TOPIC}-{p}") for p in range(PARTITIONS)}
        result.expected_end = scans[case.partition].end_offset
        result.stage = "load"
        bootstrap = proc.start()
        result.stage = "serve"
        found_at = "load"
        for p in range(PARTITIONS):
            expected = scans[p].end_offset
            want = sorted((o, k, v) for o, (k, v) in tmpl.acked[p].items() if o < expected)
            end, got = reader(bootstrap, p, expected, 1.0 if p == case.partition else 0.0)
            result.batches_served += len(got)
            assert got == want, f"partition {p}: read {len(got)} records, expected {len(want)}"
            if end != expected:
                assert p == case.partition, f"partition {p}: end {end}, expected {expected}"
                found_at = "read"
        if found_at == "read":
            result.stage = "load"
            proc.stop()
            bootstrap = proc.start()
            result.stage = "serve"
            for p in range(PARTITIONS):
                expected = scans[p].end_offset
                want = sorted((o, k, v) for o, (k, v) in tmpl.acked[p].items() if o < expected)
                end, got = reader(bootstrap, p, expected, 0.0)
                assert (end, got) == (expected, want), f"partition {p} after the restart"
        result.acked_checked = sum(
            1 for p in range(PARTITIONS) for o in tmpl.acked[p] if o < scans[p].end_offset
        )
        result.stage = "append"
        offset = _produce_one(bootstrap, case.partition)
        assert offset == result.expected_end, (offset, result.expected_end)
        result.found_at = found_at
        if all(s.damage is None for s in scans.values()) and found_at == "load":
            result.found_at = "intact"
        result.ok = True
    except Exception as exc:
        result.error = (
            f"{result.stage or 'setup'}: {type(exc).__name__}: {exc}\n{proc.log_text()[-3000:]}"
        )
    finally:
        proc.close()
        shutil.rmtree(root, ignore_errors=True)
    return result
