"""Transactions with aiokafka 0.14 against a wirebroker subprocess (issue 14).

What passing proves (stories in `_txn.py`): aiokafka's transactional producer (`start()` runs
InitProducerId with the transactional id; `begin_transaction`, `send_offsets_to_transaction`,
`commit_transaction`, `abort_transaction`) commits and aborts; aiokafka's consumer with
`isolation_level="read_committed"` never returns aborted records and with `read_uncommitted`
does (kafka-python cross-checks both); offsets sent to a transaction become the group's
committed offsets only on commit; a second producer with the same transactional id fences the
first (aiokafka raises ProducerFenced: it sends the older API versions, for which Kafka answers
INVALID_PRODUCER_EPOCH rather than PRODUCER_FENCED).

aiokafka runs on asyncio: plain synchronous tests that call `asyncio.run`, every await bounded.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _broker import BrokerProcess
from _group_procs import admin_client, committed_offsets, create_topic
from _txn import PARTITIONS, check_isolation, transform, txn_values
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import InvalidProducerEpoch, ProducerFenced

pytestmark = pytest.mark.compat

TIMEOUT = 30.0
INPUTS = 20


def _producer(bootstrap: str, transactional_id: str | None = None) -> AIOKafkaProducer:
    config: dict[str, Any] = {}
    if transactional_id is not None:
        config["transactional_id"] = transactional_id
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap, request_timeout_ms=10_000, linger_ms=5, **config
    )


async def _send_all(producer: AIOKafkaProducer, topic: str, values: list[bytes]) -> None:
    futures = [
        await producer.send(topic, value=v, key=b"k%d" % i, partition=i % PARTITIONS)
        for i, v in enumerate(values)
    ]
    await asyncio.gather(*futures)


async def _own_values(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    """Every value of `topic` read by aiokafka's consumer in `isolation`, up to its end
    offsets in that isolation level, sorted."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        isolation_level=isolation,
        fetch_max_wait_ms=100,
        request_timeout_ms=10_000,
    )
    out: list[bytes] = []
    async with asyncio.timeout(TIMEOUT):
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            while not all([await consumer.position(tp) >= ends[tp] for tp in tps]):
                batch = await consumer.getmany(timeout_ms=200)
                for records in batch.values():
                    out.extend(r.value for r in records)
        finally:
            await consumer.stop()
    return sorted(out)


def _check(bootstrap: str, topic: str, committed: list[bytes], aborted: list[bytes]) -> None:
    assert asyncio.run(_own_values(bootstrap, topic, "read_committed")) == sorted(committed)
    assert asyncio.run(_own_values(bootstrap, topic, "read_uncommitted")) == sorted(
        committed + aborted
    )
    check_isolation(bootstrap, topic, committed, aborted)


def test_commit_abort_commit_isolation(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "aio-txn-iso"
    create_topic(bootstrap, topic, PARTITIONS)
    first, aborted, second = (txn_values("iso", t) for t in ("c1", "a1", "c2"))

    async def run() -> None:
        producer = _producer(bootstrap, "aio-iso")
        async with asyncio.timeout(TIMEOUT):
            await producer.start()
            try:
                async with producer.transaction():
                    await _send_all(producer, topic, first)
                await producer.begin_transaction()
                await _send_all(producer, topic, aborted)
                await producer.abort_transaction()
                async with producer.transaction():
                    await _send_all(producer, topic, second)
            finally:
                await producer.stop()

    asyncio.run(run())
    _check(bootstrap, topic, first + second, aborted)


def test_consume_transform_produce_with_offsets(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    source, sink, group = "aio-ctp-in", "aio-ctp-out", "aio-ctp-group"
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    inputs = txn_values("ctp", "in", INPUTS)
    positions: dict[TopicPartition, int] = {}

    async def run() -> None:
        plain = _producer(bootstrap)
        async with asyncio.timeout(TIMEOUT):
            await plain.start()
            try:
                await _send_all(plain, source, inputs)
            finally:
                await plain.stop()
        consumer = AIOKafkaConsumer(
            source,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            fetch_max_wait_ms=100,
            request_timeout_ms=10_000,
        )
        producer = _producer(bootstrap, "aio-ctp")
        async with asyncio.timeout(TIMEOUT):
            await consumer.start()
            await producer.start()
            try:
                records: list[Any] = []
                while len(records) < INPUTS:
                    for batch in (await consumer.getmany(timeout_ms=200)).values():
                        records.extend(batch)
                for p in range(PARTITIONS):
                    last = max(r.offset for r in records if r.partition == p)
                    positions[TopicPartition(source, p)] = last + 1
                async with producer.transaction():
                    await _send_all(producer, sink, [transform(r.value) for r in records])
                    await producer.send_offsets_to_transaction(positions, group)
                want = {(source, tp.partition): (o, "") for tp, o in positions.items()}
                admin = admin_client(bootstrap)
                try:
                    assert committed_offsets(admin, group) == want
                    await producer.begin_transaction()
                    await _send_all(producer, sink, [b"aborted-output"])
                    await producer.send_offsets_to_transaction({tp: 1 for tp in positions}, group)
                    await producer.abort_transaction()
                    assert committed_offsets(admin, group) == want
                finally:
                    admin.close()
            finally:
                await producer.stop()
                await consumer.stop()

    asyncio.run(run())
    _check(bootstrap, sink, [transform(v) for v in inputs], [b"aborted-output"])


def test_second_producer_fences_the_first(broker: BrokerProcess) -> None:
    bootstrap, topic = broker.bootstrap, "aio-txn-fence"
    create_topic(bootstrap, topic, PARTITIONS)
    zombie_values, winner_values = txn_values("fence", "zombie"), txn_values("fence", "winner")

    async def run() -> None:
        zombie, winner = _producer(bootstrap, "aio-fence"), _producer(bootstrap, "aio-fence")
        async with asyncio.timeout(TIMEOUT):
            await zombie.start()
            try:
                await zombie.begin_transaction()
                await _send_all(zombie, topic, zombie_values)
                await winner.start()  # InitProducerId: epoch bump, aborts the zombie's txn
                async with winner.transaction():
                    await _send_all(winner, topic, winner_values)
                with pytest.raises((ProducerFenced, InvalidProducerEpoch)):
                    await zombie.commit_transaction()
            finally:
                await winner.stop()
                await zombie.stop()

    asyncio.run(run())
    _check(bootstrap, topic, winner_values, zombie_values)
