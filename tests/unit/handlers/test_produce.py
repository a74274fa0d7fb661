"""Produce handler: success at every version, every error path, idempotence, acks=0."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import wirebroker.handlers.produce  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch
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
        info = services.topics.get(topic)
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
        assert resp.responses[0].topic_id == services.topics.get("t").topic_id
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
    assert services.topics.get("nope") is None


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
    assert "internal topic" in p.error_message


@pytest.mark.parametrize("records", [None, b"", "two", "truncated", "garbage"])
async def test_bad_record_sets_are_invalid_record(call, services, records):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    one = batch(services)
    data = {"two": one + one, "truncated": one[:-3], "garbage": b"\x01" * 80}.get(records, records)  # type: ignore[arg-type]
    resp = await call(KEY, 9, body(services, "t", {0: data}))
    p = parts(resp)[0]
    assert p.error_code == ErrorCode.INVALID_RECORD
    assert p.error_message
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


async def test_min_insync_replicas_with_acks_all(call, services):
    services.admin.create_topic(
        "t", 1, configs={"min.insync.replicas": "2"}, now_ms=services.clock()
    )
    p = parts(await call(KEY, 9, body(services, "t", {0: batch(services)}, acks=-1)))[0]
    assert p.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    p = parts(await call(KEY, 9, body(services, "t", {0: batch(services)}, acks=1)))[0]
    assert p.error_code == ErrorCode.NONE


async def test_acks_zero_sends_no_response(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    assert await call(KEY, 9, body(services, "t", {0: batch(services)}, acks=0)) is None
    assert services.replicas.partition("t", 0).log_end_offset == 1


async def test_acks_zero_failure_closes_connection(call, services):
    with pytest.raises(ProduceWithoutAckFailed):
        await call(KEY, 9, body(services, "missing", {0: batch(services)}, acks=0))
