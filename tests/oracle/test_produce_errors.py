"""Produce refusals, asked of wirebroker (alone and as a cluster) and of Apache Kafka 4.4 with
the same assertions (tests/oracle/conftest.py): the same bad batch, the same answer field by
field (error code, base offset, log start offset, record_errors, error_message).

Kafka (LogValidator, ReplicaManager): a batch with records that break a per-record rule (a
keyless record in a compacted topic, a timestamp out of range, a client's LogAppendTime) is
refused with record_errors [{batch_index, batch_index_error_message}] and an error_message
(KIP-467), and the log start offset; every other refusal has a null error_message, and a log
start offset of -1 when it is CORRUPT_MESSAGE, MESSAGE_TOO_LARGE or found before the append.
Texts carry the broker's clock ("now"), read back from the message and checked to be near ours.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from compat.oracle.javac import compile_java
from compat.oracle.kafka import classpath, java
from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import RecordSpec, build_batch

VERSION = 11
LONG_MAX = 2**63 - 1
HOUR = 3_600_000
INVALID_TS_MESSAGE = "One or more records have been rejected due to invalid timestamp"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def topic_with(bootstrap: str, name: str, configs: dict[str, str] | None = None) -> str:
    with Wire(bootstrap) as wire:
        wire.create_topic(name, 1, configs)
    return name


def produce_at_leader(wire: Wire, topic: str, *batches: bytes) -> Any:
    """One Produce (acks=-1) at the leader of `topic`-0, naming that partition once for each
    of `batches`: the whole answer."""
    leader = wire.brokers()[wire.leader(topic, 0)]
    topic_data = [
        {"name": topic, "partition_data": [{"index": 0, "records": records}]} for records in batches
    ]
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10_000, "topic_data": topic_data}
    return wire.call(ApiKey.PRODUCE, VERSION, body, leader)


def produce(bootstrap: str, topic: str, records: bytes) -> Any:
    """One Produce (acks=-1) of `records` to partition 0 at its leader: its answer."""
    with Wire(bootstrap) as wire:
        resp = produce_at_leader(wire, topic, records)
    [part] = resp.responses[0].partition_responses
    return part


def summary(p: Any) -> tuple[str, int, int, str | None]:
    return ErrorCode(p.error_code).name, p.base_offset, p.log_start_offset, p.error_message


def record_errors(p: Any) -> list[tuple[int, str]]:
    return [(e.batch_index, e.batch_index_error_message) for e in p.record_errors]


def keyless(topic: str) -> str:
    return f"Compacted topic cannot accept message without key in topic partition {topic}-0"


@pytest.mark.parametrize("compression", [0, 1, 4])
def test_keyless_records_in_a_compacted_topic(
    any_broker: str, unique: Callable[[str], str], compression: int
) -> None:
    topic = topic_with(any_broker, unique("rec-compact"), {"cleanup.policy": "compact"})
    records = [(b"k0", b"v"), (None, b"v1"), (b"k2", b"v"), (None, b"v3"), (None, b""), (None, b"")]
    p = produce(any_broker, topic, build_batch(records, compression=compression))
    text = keyless(topic)
    assert record_errors(p) == [(1, text), (3, text), (4, text), (5, text)]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{text}')" for i in (1, 3, 4))
    assert summary(p) == (
        "INVALID_RECORD",
        -1,
        0,
        "One or more records have been rejected due to 4 record errors in total, and only "
        f"showing the first three errors at most: [{shown}]",
    )
    # nothing was appended: the next good batch is at offset 0
    assert produce(any_broker, topic, build_batch([(b"k", b"v")])).base_offset == 0


_RANGE = re.compile(
    r"Timestamp (-?\d+) of message with offset (\d+) is out of range\. "
    r"The timestamp should be within \[(-?\d+), (-?\d+)\]"
)


def _range_error(message: str, before: int, after: int) -> tuple[int, int]:
    """(timestamp, offset) of an out-of-range message, checking its window: [now - before,
    now + after] in Java long arithmetic, with the broker's now within a minute of ours."""
    found = _RANGE.fullmatch(message)
    assert found is not None, message
    timestamp, offset, low, high = (int(g) for g in found.groups())
    broker_now = high - after
    assert abs(broker_now - now_ms()) < 60_000
    assert low == broker_now - before  # fits in a long for every before (now > 0)
    return timestamp, offset


def test_a_timestamp_after_the_window(any_broker: str, unique: Callable[[str], str]) -> None:
    topic = topic_with(any_broker, unique("rec-late"))
    now = now_ms()
    specs = [
        RecordSpec(b"k", b"v", timestamp=now),
        RecordSpec(b"k", b"v", timestamp=now + 2 * HOUR),
    ]
    p = produce(any_broker, topic, build_batch(specs))
    assert summary(p) == ("INVALID_TIMESTAMP", -1, 0, INVALID_TS_MESSAGE)
    [(index, message)] = record_errors(p)
    assert index == 1
    assert _range_error(message, LONG_MAX, HOUR) == (now + 2 * HOUR, 1)


def test_a_record_older_than_the_first(any_broker: str, unique: Callable[[str], str]) -> None:
    """The second record is older than the first (a negative timestamp delta) and than
    message.timestamp.before.max.ms allows: only a look at each record finds it."""
    topic = topic_with(any_broker, unique("rec-old"), {"message.timestamp.before.max.ms": "60000"})
    now = now_ms()
    specs = [
        RecordSpec(b"k", b"v", timestamp=now - 2 * HOUR),
        RecordSpec(b"k", b"v", timestamp=now),
    ]
    specs = [specs[1], specs[0], specs[1]]
    p = produce(any_broker, topic, build_batch(specs))
    assert summary(p) == ("INVALID_TIMESTAMP", -1, 0, INVALID_TS_MESSAGE)
    [(index, message)] = record_errors(p)
    assert index == 1
    assert _range_error(message, 60_000, HOUR) == (now - 2 * HOUR, 1)


def test_key_and_timestamp_refusals_together(any_broker: str, unique: Callable[[str], str]) -> None:
    configs = {"cleanup.policy": "compact", "message.timestamp.before.max.ms": "60000"}
    topic = topic_with(any_broker, unique("rec-both"), configs)
    old = now_ms() - 2 * HOUR
    specs = [RecordSpec(None, b"v", timestamp=old), RecordSpec(b"k", b"v", timestamp=old)]
    p = produce(any_broker, topic, build_batch(specs))
    assert summary(p) == ("INVALID_TIMESTAMP", -1, 0, INVALID_TS_MESSAGE)
    (i0, m0), (i1, m1) = record_errors(p)
    assert (i0, m0) == (0, keyless(topic))  # a record's key is checked before its timestamp
    assert i1 == 1 and _range_error(m1, 60_000, HOUR) == (old, 1)


def test_log_append_time_batches(any_broker: str, unique: Callable[[str], str]) -> None:
    create_time = topic_with(any_broker, unique("lat-ct"))
    log_append = topic_with(
        any_broker, unique("lat-lat"), {"message.timestamp.type": "LogAppendTime"}
    )
    now = now_ms()
    specs = [RecordSpec(b"k", b"v", timestamp=now - 5000), RecordSpec(None, b"vv", timestamp=now)]
    lat = build_batch(specs, timestamp_type=1)
    # a LogAppendTime topic refuses every record (each one's timestamp is the batch's max)
    p = produce(any_broker, log_append, lat)
    assert summary(p) == ("INVALID_TIMESTAMP", -1, 0, INVALID_TS_MESSAGE)
    assert record_errors(p) == [
        (
            i,
            f"Invalid timestamp type in message DefaultRecord(offset={i}, timestamp={now}, "
            f"key={k} bytes, value={v} bytes). Producer should not set timestamp type to "
            "LogAppendTime.",
        )
        for i, k, v in [(0, 1, 1), (1, 0, 2)]
    ]
    # a CreateTime topic range-checks that timestamp and stores the batch as CreateTime
    p = produce(any_broker, create_time, lat)
    assert summary(p) == ("NONE", 0, 0, None)
    with Wire(any_broker) as wire:
        stored = wire.read(create_time, 0)
    assert [(r.timestamp, r.timestamp_type) for r in stored] == [(now - 5000, 0), (now, 0)]
    # ... and refuses it when it has no timestamp
    untimed = build_batch([(b"k", b"v")], timestamp_type=1, base_timestamp=-1)
    p = produce(any_broker, create_time, untimed)
    assert summary(p) == ("INVALID_TIMESTAMP", -1, 0, INVALID_TS_MESSAGE)
    assert record_errors(p) == [
        (
            0,
            "Invalid timestamp type in message DefaultRecord(offset=0, timestamp=-1, key=1 "
            "bytes, value=1 bytes). Producer should not set timestamp type to LogAppendTime.",
        )
    ]


def _corrupt(batch: bytes) -> bytes:
    bad = bytearray(batch)
    bad[-1] ^= 0xFF
    return bytes(bad)


@pytest.mark.parametrize(
    ("case", "records", "expected"),
    [
        ("too-large", build_batch([(b"k", b"x" * 2000)]), ("MESSAGE_TOO_LARGE", -1, -1, None)),
        ("crc", _corrupt(build_batch([(b"k", b"v")])), ("CORRUPT_MESSAGE", -1, -1, None)),
        ("control", build_batch([(b"k", b"v")], is_control=True), ("INVALID_RECORD", -1, 0, None)),
        (
            "no-sequence",
            build_batch([(b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=-1),
            ("INVALID_RECORD", -1, 0, None),
        ),
        (
            "base-offset",
            build_batch([(b"k", b"v")], base_offset=5),
            ("INVALID_RECORD", -1, 0, None),
        ),
        ("empty", b"", ("INVALID_RECORD", -1, -1, None)),
        ("two-batches", build_batch([(b"k", b"v")]) * 2, ("INVALID_RECORD", -1, -1, None)),
        ("truncated", build_batch([(b"k", b"v")])[:-3], ("INVALID_RECORD", -1, -1, None)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_batch_refusals_have_no_text(
    any_broker: str,
    unique: Callable[[str], str],
    case: str,
    records: bytes,
    expected: tuple[str, int, int, None],
) -> None:
    topic = topic_with(any_broker, unique(f"bad-{case}"), {"max.message.bytes": "1000"})
    p = produce(any_broker, topic, records)
    assert (summary(p), record_errors(p)) == (expected, [])


def test_out_of_order_sequence(any_broker: str, unique: Callable[[str], str]) -> None:
    topic = topic_with(any_broker, unique("seq"))
    with Wire(any_broker) as wire:
        init = wire.call(
            ApiKey.INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": None,
                "transaction_timeout_ms": 60_000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
    pid = init.producer_id
    first = build_batch([(b"k", b"v")], producer_id=pid, producer_epoch=0, base_sequence=0)
    assert summary(produce(any_broker, topic, first)) == ("NONE", 0, 0, None)
    gap = build_batch([(b"k", b"v")], producer_id=pid, producer_epoch=0, base_sequence=5)
    assert summary(produce(any_broker, topic, gap)) == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, 0, None)


def test_min_insync_replicas_above_the_replica_count(
    any_broker: str, unique: Callable[[str], str]
) -> None:
    """Kafka 4's effective minimum ISR is min(min.insync.replicas, replicas): a one-replica
    topic with min.insync.replicas=2 takes acks=-1 writes."""
    topic = topic_with(any_broker, unique("min-isr"), {"min.insync.replicas": "2"})
    assert summary(produce(any_broker, topic, build_batch([(b"k", b"v")]))) == ("NONE", 0, 0, None)


def test_a_partition_named_twice(any_broker: str, unique: Callable[[str], str]) -> None:
    """Kafka reads a Produce into a map keyed by topic-partition: a partition named twice is
    answered once and only its last data is appended; a topic named twice is one entry."""
    topic = topic_with(any_broker, unique("twice"))
    with Wire(any_broker) as wire:
        resp = produce_at_leader(wire, topic, batch_of(b"a"), batch_of(b"b"))
        answered = [
            (t.name, [(p.index, p.error_code, p.base_offset) for p in t.partition_responses])
            for t in resp.responses
        ]
        assert answered == [(topic, [(0, 0, 0)])]
        assert [r.value for r in wire.read(topic, 0)] == [b"b"]


def batch_of(value: bytes) -> bytes:
    return build_batch([(b"k", value)])


# -- what a client makes of record_errors ----------------------------------------------------


def test_librdkafka_fails_every_record_of_the_batch(
    single_broker: str, unique: Callable[[str], str]
) -> None:
    """librdkafka 2.16 (confluent-kafka) reports the partition's INVALID_RECORD for every
    record of the batch, with its generic text (the per-record ones are not surfaced by the
    Python binding); none is retried or stored."""
    topic = topic_with(single_broker, unique("rec-rdkafka"), {"cleanup.policy": "compact"})
    producer = Producer(
        {"bootstrap.servers": single_broker, "linger.ms": 1000, "batch.num.messages": 3}
    )
    reports: list[tuple[bytes | None, int]] = []

    def report(err: KafkaError | None, msg: Any) -> None:
        reports.append((msg.key(), err.code() if err else 0))

    for key in (b"a", None, b"c"):
        producer.produce(topic, key=key, value=b"v", partition=0, on_delivery=report)
    assert producer.flush(60) == 0
    assert reports == [(k, KafkaError.INVALID_RECORD) for k in (b"a", None, b"c")]
    with Wire(single_broker) as wire:
        assert wire.read(topic, 0) == []


@pytest.fixture(scope="module")
def java_probe(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that runs tests/oracle/RecordErrorsProbe.java (compiled once, into the
    oracle's cache) with Kafka's 4.4 client jars."""
    classes = compile_java(
        "record-errors-probe", [Path(__file__).with_name("RecordErrorsProbe.java")]
    )
    log4j = tmp_path_factory.mktemp("java-probe") / "log4j2.properties"
    log4j.write_text("rootLogger.level = OFF\n")
    return [
        java(),
        "-Xmx256m",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        f"{classes}{os.pathsep}{classpath()}",
        "RecordErrorsProbe",
    ]


def test_the_java_client_fails_only_the_bad_record_with_its_message(
    single_broker: str, unique: Callable[[str], str], java_probe: list[str]
) -> None:
    """The Java producer 4.4 (KIP-467): the record named in record_errors fails with
    InvalidRecordException and its message, the batch's others with a generic KafkaException."""
    topic = topic_with(single_broker, unique("rec-java"), {"cleanup.policy": "compact"})
    done = subprocess.run(
        [*java_probe, single_broker, topic],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    other = (
        "KafkaException: Failed to append record because it was part of a batch which had one "
        "more more invalid records"
    )
    assert done.stdout.splitlines() == [
        f"a {other}",
        f"null InvalidRecordException: {keyless(topic)}",
        f"c {other}",
    ]
