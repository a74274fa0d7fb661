"""Produce handler: success at every version, every error path, idempotence, acks=0."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import wirebroker.handlers.produce  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import RecordSpec, build_batch, decode_records, iter_batches
from wirebroker.handlers.produce import ProduceWithoutAckFailed

KEY = ApiKey.PRODUCE


def body(
    services: Any,
    topic: str,
    batches: dict[int, bytes | None],
    *,
    version: int = 9,
    acks: int = -1,
    transactional_id: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "partition_data": [{"index": i, "records": r} for i, r in batches.items()]
    }
    if version >= 13:
        info = services.cluster.topic(topic)
        entry["topic_id"] = info.topic_id if info is not None else uuid.uuid4()
    else:
        entry["name"] = topic
    return {
        "transactional_id": transactional_id,
        "acks": acks,
        "timeout_ms": 30000,
        "topic_data": [entry],
    }


def batch(services: Any, n: int = 1, **kw: Any) -> bytes:
    return build_batch(
        [(b"k%d" % i, b"v%d" % i) for i in range(n)], base_timestamp=services.clock(), **kw
    )


def parts(resp: Any) -> dict[int, Any]:
    return {p.index: p for t in resp.responses for p in t.partition_responses}


@pytest.mark.parametrize("version", range(3, 14))
async def test_produce_every_version(call, services, version):
    services.admin.create_topic("t", 2, now_ms=services.clock())
    resp = await call(
        KEY,
        version,
        body(services, "t", {0: batch(services, 3), 1: batch(services, 1)}, version=version),
    )
    assert resp.throttle_time_ms == 0
    p = parts(resp)
    assert p[0].error_code == ErrorCode.NONE and p[1].error_code == ErrorCode.NONE
    assert p[0].base_offset == 0 and p[1].base_offset == 0
    if version >= 5:
        assert p[0].log_start_offset == 0
    assert p[0].log_append_time_ms == -1
    if version >= 13:
        assert resp.responses[0].topic_id == services.cluster.topic("t").topic_id
    else:
        assert resp.responses[0].name == "t"
    again = await call(KEY, version, body(services, "t", {0: batch(services, 2)}, version=version))
    assert parts(again)[0].base_offset == 3
    assert services.replicas.partition("t", 0).log_end_offset == 5


async def test_invalid_acks_rejects_every_partition(call, services):
    services.admin.create_topic("t", 2, now_ms=services.clock())
    resp = await call(KEY, 9, body(services, "t", {0: batch(services), 1: batch(services)}, acks=2))
    for p in parts(resp).values():
        assert p.error_code == ErrorCode.INVALID_REQUIRED_ACKS
        assert (p.base_offset, p.log_append_time_ms, p.log_start_offset) == (-1, -1, -1)
    assert services.replicas.partition("t", 0).log_end_offset == 0


async def test_transactional_batch_without_transactional_id_is_refused(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    txn = batch(services, producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True)
    resp = await call(KEY, 9, body(services, "t", {0: txn}))
    assert parts(resp)[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert services.replicas.partition("t", 0).log_end_offset == 0
    # a transactional id with plain batches is accepted, as in Kafka
    resp = await call(KEY, 9, body(services, "t", {0: batch(services)}, transactional_id="tx"))
    assert parts(resp)[0].error_code == ErrorCode.NONE


async def test_unknown_topic_is_not_auto_created(call, services):
    resp = await call(KEY, 9, body(services, "nope", {0: batch(services)}))
    assert parts(resp)[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert services.cluster.topic("nope") is None


async def test_unknown_topic_id_v13(call, services):
    resp = await call(KEY, 13, body(services, "nope", {0: batch(services)}, version=13))
    assert parts(resp)[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


async def test_unknown_partition(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    resp = await call(KEY, 9, body(services, "t", {0: batch(services), 5: batch(services)}))
    p = parts(resp)
    assert p[0].error_code == ErrorCode.NONE
    assert p[5].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_internal_topic_not_writable(call, services):
    services.admin.create_topic("__consumer_offsets", 1, now_ms=services.clock())
    resp = await call(KEY, 9, body(services, "__consumer_offsets", {0: batch(services)}))
    p = parts(resp)[0]
    assert p.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert (p.error_message, p.log_start_offset) == (None, -1)  # Kafka's: no text


@pytest.mark.parametrize("records", [None, b"", "two", "truncated", "garbage"])
async def test_bad_record_sets_are_invalid_record(call, services, records):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    one = batch(services)
    data = {"two": one + one, "truncated": one[:-3], "garbage": b"\x01" * 80}.get(records, records)  # type: ignore[arg-type]
    resp = await call(KEY, 9, body(services, "t", {0: data}))
    p = parts(resp)[0]
    assert p.error_code == ErrorCode.INVALID_RECORD
    assert (p.error_message, list(p.record_errors), p.log_start_offset) == (None, [], -1)
    assert services.replicas.partition("t", 0).log_end_offset == 0


async def test_crc_mismatch_is_corrupt_message(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    bad = bytearray(batch(services))
    bad[-1] ^= 0xFF
    resp = await call(KEY, 9, body(services, "t", {0: bytes(bad)}))
    assert parts(resp)[0].error_code == ErrorCode.CORRUPT_MESSAGE


async def test_batch_above_max_message_bytes(call, services):
    services.admin.create_topic(
        "t", 1, configs={"max.message.bytes": "100"}, now_ms=services.clock()
    )
    big = build_batch([(None, b"x" * 500)], base_timestamp=services.clock())
    resp = await call(KEY, 9, body(services, "t", {0: big}))
    assert parts(resp)[0].error_code == ErrorCode.MESSAGE_TOO_LARGE


async def test_zstd_needs_v7(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    z = batch(services, compression=4)
    resp = await call(KEY, 6, body(services, "t", {0: z}, version=6))
    assert parts(resp)[0].error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    resp = await call(KEY, 7, body(services, "t", {0: z}, version=7))
    assert parts(resp)[0].error_code == ErrorCode.NONE


async def test_idempotent_duplicate_returns_original_offset(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    await call(KEY, 9, body(services, "t", {0: batch(services, 2)}))  # offsets 0-1
    b = batch(services, 3, producer_id=42, producer_epoch=0, base_sequence=0)
    first = parts(await call(KEY, 9, body(services, "t", {0: b})))[0]
    assert (first.error_code, first.base_offset) == (ErrorCode.NONE, 2)
    dup = parts(await call(KEY, 9, body(services, "t", {0: b})))[0]
    assert (dup.error_code, dup.base_offset) == (ErrorCode.NONE, 2)
    assert services.replicas.partition("t", 0).log_end_offset == 5
    gap = batch(services, 1, producer_id=42, producer_epoch=0, base_sequence=10)
    p = parts(await call(KEY, 9, body(services, "t", {0: gap})))[0]
    assert p.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert p.base_offset == -1


async def test_log_append_time_topic(call, services, clock):
    services.admin.create_topic(
        "t", 1, configs={"message.timestamp.type": "LogAppendTime"}, now_ms=services.clock()
    )
    p = parts(await call(KEY, 9, body(services, "t", {0: batch(services)})))[0]
    assert p.error_code == ErrorCode.NONE
    assert p.log_append_time_ms == clock()


def record_errors(p: Any) -> list[tuple[int, str]]:
    return [(e.batch_index, e.batch_index_error_message) for e in p.record_errors]


@pytest.mark.parametrize("compression", [0, 1, 4])
async def test_keyless_records_in_a_compacted_topic_are_record_errors(call, services, compression):
    services.admin.create_topic(
        "c", 1, configs={"cleanup.policy": "compact"}, now_ms=services.clock()
    )
    records = [(b"k0", b"v"), (None, b"v"), (b"k2", b"v"), (None, b"v"), (None, b"v"), (None, b"")]
    bad = build_batch(records, base_timestamp=services.clock(), compression=compression)
    p = parts(await call(KEY, 9, body(services, "c", {0: bad})))[0]
    text = "Compacted topic cannot accept message without key in topic partition c-0"
    assert (p.error_code, p.base_offset, p.log_start_offset) == (ErrorCode.INVALID_RECORD, -1, 0)
    assert record_errors(p) == [(1, text), (3, text), (4, text), (5, text)]
    assert p.error_message == (
        "One or more records have been rejected due to 4 record errors in total, and only "
        "showing the first three errors at most: ["
        f"RecordError(batchIndex=1, message='{text}'), "
        f"RecordError(batchIndex=3, message='{text}'), "
        f"RecordError(batchIndex=4, message='{text}')]"
    )
    assert services.replicas.partition("c", 0).log_end_offset == 0


async def test_timestamps_out_of_range_are_record_errors(call, services, clock):
    services.admin.create_topic(
        "t",
        1,
        configs={"message.timestamp.before.max.ms": "60000", "cleanup.policy": "compact"},
        now_ms=services.clock(),
    )
    now = clock()
    specs = [
        RecordSpec(b"k", b"v", timestamp=now),
        RecordSpec(b"k", b"v", timestamp=now - 60_001),  # older than the first: a negative delta
        RecordSpec(None, b"v", timestamp=now - 60_001),  # keyless: its key is refused first
        RecordSpec(b"k", b"v", timestamp=now + 3_600_001),
        RecordSpec(b"k", b"v", timestamp=now + 3_600_000),
    ]
    p = parts(await call(KEY, 9, body(services, "t", {0: build_batch(specs)})))[0]
    window = f"[{now - 60_000}, {now + 3_600_000}]"
    assert (p.error_code, p.log_start_offset) == (ErrorCode.INVALID_TIMESTAMP, 0)
    assert record_errors(p) == [
        (
            1,
            f"Timestamp {now - 60_001} of message with offset 1 is out of range. "
            f"The timestamp should be within {window}",
        ),
        (2, "Compacted topic cannot accept message without key in topic partition t-0"),
        (
            3,
            f"Timestamp {now + 3_600_001} of message with offset 3 is out of range. "
            f"The timestamp should be within {window}",
        ),
    ]
    assert p.error_message == "One or more records have been rejected due to invalid timestamp"


async def test_default_window_shows_kafkas_long_arithmetic(call, services, clock):
    """before.max.ms defaults to Long.MAX_VALUE: Kafka prints now - 2**63 + 1."""
    services.admin.create_topic("t", 1, now_ms=services.clock())
    now = clock()
    late = build_batch([RecordSpec(b"k", b"v", timestamp=now + 7_200_000)])
    p = parts(await call(KEY, 9, body(services, "t", {0: late})))[0]
    assert record_errors(p) == [
        (
            0,
            f"Timestamp {now + 7_200_000} of message with offset 0 is out of range. "
            f"The timestamp should be within [{now - 2**63 + 1}, {now + 3_600_000}]",
        )
    ]


async def test_log_append_time_batches(call, services, clock):
    services.admin.create_topic("c", 1, now_ms=services.clock())
    services.admin.create_topic(
        "l", 1, configs={"message.timestamp.type": "LogAppendTime"}, now_ms=services.clock()
    )
    now = clock()
    specs = [RecordSpec(b"k", b"v", timestamp=now - 5), RecordSpec(None, b"vv", timestamp=now)]
    lat = build_batch(specs, timestamp_type=1)
    # a LogAppendTime topic refuses each record of a client's LogAppendTime batch
    p = parts(await call(KEY, 9, body(services, "l", {0: lat})))[0]
    assert (p.error_code, p.log_start_offset) == (ErrorCode.INVALID_TIMESTAMP, 0)
    assert record_errors(p) == [
        (
            i,
            f"Invalid timestamp type in message DefaultRecord(offset={i}, timestamp={now}, "
            f"key={k} bytes, value={v} bytes). Producer should not set timestamp type to "
            "LogAppendTime.",
        )
        for i, k, v in [(0, 1, 1), (1, 0, 2)]
    ]
    # a CreateTime topic takes it (its timestamp, maxTimestamp, is in range) as CreateTime
    p = parts(await call(KEY, 9, body(services, "c", {0: lat})))[0]
    assert (p.error_code, p.base_offset) == (ErrorCode.NONE, 0)
    stored = services.replicas.partition("c", 0).log.read(0, max_bytes=1 << 20)
    [(_pos, header)] = list(iter_batches(stored))
    assert (header.timestamp_type, header.max_timestamp) == (0, now)
    assert [r.timestamp for r in decode_records(stored)] == [now - 5, now]
    # ... unless it has no timestamp
    none = build_batch([(b"k", b"v")], timestamp_type=1, base_timestamp=-1)
    p = parts(await call(KEY, 9, body(services, "c", {0: none})))[0]
    assert p.error_code == ErrorCode.INVALID_TIMESTAMP
    assert record_errors(p)[0][1].startswith(
        "Invalid timestamp type in message DefaultRecord(offset=0, timestamp=-1, key=1 bytes"
    )


async def test_batch_level_refusals_carry_no_text(call, services):
    """Kafka's ReplicaManager: error_message only with record_errors; log_start_offset -1 for
    CORRUPT_MESSAGE / MESSAGE_TOO_LARGE, the log's for errors of the append itself."""
    services.admin.create_topic(
        "t", 1, configs={"max.message.bytes": "200"}, now_ms=services.clock()
    )
    big = build_batch([(None, b"x" * 500)], base_timestamp=services.clock())
    control = batch(services, is_control=True)
    corrupt = bytearray(batch(services))
    corrupt[-1] ^= 0xFF
    expected = [
        (big, ErrorCode.MESSAGE_TOO_LARGE, -1),
        (bytes(corrupt), ErrorCode.CORRUPT_MESSAGE, -1),
        (control, ErrorCode.INVALID_RECORD, 0),
    ]
    for records, code, log_start in expected:
        p = parts(await call(KEY, 9, body(services, "t", {0: records})))[0]
        assert (p.error_code, p.log_start_offset, p.error_message) == (code, log_start, None)
        assert list(p.record_errors) == []


async def test_min_insync_replicas_with_acks_all(call, services):
    services.admin.create_topic(
        "t", 1, configs={"min.insync.replicas": "2"}, now_ms=services.clock()
    )
    # one replica: the effective minimum is 1 (Kafka's min(min.insync.replicas, replicas))
    p = parts(await call(KEY, 9, body(services, "t", {0: batch(services)}, acks=-1)))[0]
    assert (p.error_code, p.base_offset) == (ErrorCode.NONE, 0)
    services.replicas.make_leader(
        "t", 0, leader_epoch=1, isr=[0], replicas=[0, 1], partition_epoch=1, now_ms=services.clock()
    )
    p = parts(await call(KEY, 9, body(services, "t", {0: batch(services)}, acks=-1)))[0]
    # Kafka: no text, the log start offset (the append raised)
    assert (p.error_code, p.error_message, p.log_start_offset) == (
        ErrorCode.NOT_ENOUGH_REPLICAS,
        None,
        0,
    )
    p = parts(await call(KEY, 9, body(services, "t", {0: batch(services)}, acks=1)))[0]
    assert p.error_code == ErrorCode.NONE


async def test_acks_zero_sends_no_response(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    assert await call(KEY, 9, body(services, "t", {0: batch(services)}, acks=0)) is None
    assert services.replicas.partition("t", 0).log_end_offset == 1


async def test_acks_zero_failure_closes_connection(call, services):
    with pytest.raises(ProduceWithoutAckFailed):
        await call(KEY, 9, body(services, "missing", {0: batch(services)}, acks=0))


async def test_a_partition_named_twice_is_appended_once_with_its_last_data(call, services):
    """Kafka reads a Produce into a map keyed by topic-partition: the last entry wins."""
    services.admin.create_topic("t", 2, now_ms=services.clock())
    first = build_batch([(b"k", b"first")], base_timestamp=services.clock())
    last = build_batch([(b"k", b"last")], base_timestamp=services.clock())
    other = build_batch([(b"k", b"other")], base_timestamp=services.clock())
    request = body(services, "t", {})
    request["topic_data"] = [
        {"name": "t", "partition_data": [{"index": 0, "records": first}]},
        {"name": "t", "partition_data": [{"index": 1, "records": other}]},
        {"name": "t", "partition_data": [{"index": 0, "records": last}]},
    ]
    resp = await call(KEY, 9, request)
    assert [
        (t.name, [(p.index, p.base_offset) for p in t.partition_responses]) for t in resp.responses
    ] == [("t", [(0, 0), (1, 0)])]
    stored = services.replicas.partition("t", 0).log.read(0, max_bytes=1 << 20)
    assert [r.value for r in decode_records(stored)] == [b"last"]
