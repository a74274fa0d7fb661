"""aiokafka 0.14 against a wirebroker subprocess.

What passing proves: aiokafka's admin client creates a topic; its producer (acks=1 by default,
no idempotence) writes keyed records with headers and null values to several partitions; a
group-less consumer (group_id=None, assign(), seek_to_beginning) reads back exactly those bytes,
in order, at contiguous offsets.

aiokafka runs on asyncio: these are plain synchronous tests that call `asyncio.run`, so
pytest-trio (trio_mode) leaves them alone. Every await is bounded with `asyncio.timeout`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _broker import BrokerProcess
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

pytestmark = pytest.mark.compat

TIMEOUT = 15.0
PARTITIONS = 3


def _records(n: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]:
    out: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]] = []
    for i in range(n):
        key = None if i % 4 == 0 else b"\x00k" + i.to_bytes(2, "big")
        value: bytes | None = b"aio-" + bytes(range(i % 64)) + str(i).encode()
        if i % 10 == 7:
            value = None
        headers = [("i", str(i).encode())] if i % 2 else []
        out.append((key, value, headers))
    return out


async def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    async with asyncio.timeout(TIMEOUT):
        await admin.start()
        try:
            response = await admin.create_topics(
                [NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)]
            )
        finally:
            await admin.close()
    errors = [err for _name, err, *_rest in response.topic_errors]
    assert errors == [0], response


async def _produce(bootstrap: str, topic: str, sent: list[Any]) -> list[Any]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    async with asyncio.timeout(TIMEOUT):
        await producer.start()
        try:
            futures = [
                await producer.send(topic, value=v, key=k, headers=h, partition=i % PARTITIONS)
                for i, (k, v, h) in enumerate(sent)
            ]
            return list(await asyncio.gather(*futures))
        finally:
            await producer.stop()


async def _consume(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, list[Any]]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        request_timeout_ms=10_000,
    )
    out: dict[int, list[Any]] = {p: [] for p in counts}
    async with asyncio.timeout(TIMEOUT):
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in counts]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while any(len(out[p]) < n for p, n in counts.items()):
                batch = await consumer.getmany(timeout_ms=500)
                for tp, records in batch.items():
                    out[tp.partition].extend(records)
        finally:
            await consumer.stop()
    return out


def test_produce_acks1_and_assign_consume(broker: BrokerProcess) -> None:
    topic = "aio-data"
    sent = _records(250)
    asyncio.run(_create_topic(broker.bootstrap, topic))
    metas = asyncio.run(_produce(broker.bootstrap, topic, sent))

    counts = {p: len(sent[p::PARTITIONS]) for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        mine = metas[p::PARTITIONS]
        assert [m.offset for m in mine] == list(range(counts[p]))
        assert {m.partition for m in mine} == {p}

    got = asyncio.run(_consume(broker.bootstrap, topic, counts))
    for p in range(PARTITIONS):
        records = got[p]
        assert [r.offset for r in records] == list(range(counts[p]))
        assert [(r.key, r.value, list(r.headers)) for r in records] == sent[p::PARTITIONS]
