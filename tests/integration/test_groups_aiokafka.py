"""Consumer groups with aiokafka 0.14 against a wirebroker subprocess (issue 3).

What passing proves: aiokafka's group consumer (its own coordinator code: FindCoordinator,
JoinGroup with the MEMBER_ID_REQUIRED retry, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit,
LeaveGroup on stop) reads every record of a subscribed topic, commits, stops; the next consumer
of the group starts exactly at the committed offsets, including after a commit that rewinds
with metadata; aiokafka's admin client lists the group (ListGroups) and reads its offsets with
their metadata (OffsetFetch).

Plain synchronous tests calling `asyncio.run` (pytest-trio leaves them alone); every await is
bounded by `asyncio.timeout`.
"""

from __future__ import annotations

import asyncio

import pytest
from _broker import BrokerProcess
from _group_procs import create_topic, produce
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

pytestmark = pytest.mark.compat

TIMEOUT = 30.0

Got = dict[int, list[tuple[int, bytes | None, bytes | None]]]


async def _run_consumer(
    bootstrap: str,
    topic: str,
    group: str,
    n: int,
    commit: dict[TopicPartition, tuple[int, str]] | None = None,
) -> tuple[Got, dict[int, int | None]]:
    """Subscribe, read exactly `n` records, commit (positions, or `commit`), stop.

    Returns the records and the committed offsets the consumer then sees."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=f"aio-{group}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        request_timeout_ms=10_000,
        fetch_max_wait_ms=100,
    )
    got: Got = {}
    async with asyncio.timeout(TIMEOUT):
        await consumer.start()
        try:
            total = 0
            while total < n:
                batch = await consumer.getmany(timeout_ms=500)
                for tp, records in batch.items():
                    got.setdefault(tp.partition, []).extend(
                        (r.offset, r.key, r.value) for r in records
                    )
                    total += len(records)
            if commit is None:
                await consumer.commit()
            else:
                await consumer.commit(commit)
            committed = {
                tp.partition: await consumer.committed(tp) for tp in sorted(consumer.assignment())
            }
        finally:
            await consumer.stop()
    return got, committed


def _expected(sent: dict[int, list[tuple[bytes | None, bytes]]], starts: dict[int, int]) -> Got:
    return {
        p: [(o, k, v) for o, (k, v) in enumerate(sent[p]) if o >= starts[p]]
        for p in sent
        if len(sent[p]) > starts[p]
    }


async def _admin_view(
    bootstrap: str, group: str
) -> tuple[list[tuple[str, str]], dict[TopicPartition, tuple[int, str]]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    async with asyncio.timeout(TIMEOUT):
        await admin.start()
        try:
            groups = [tuple(g) for g in await admin.list_consumer_groups()]
            offsets = await admin.list_consumer_group_offsets(group)
        finally:
            await admin.close()
    return groups, {tp: (om.offset, om.metadata) for tp, om in offsets.items()}


def test_subscribe_commit_stop_then_resume(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic, group = "aio-resume", "aio-resume-group"
    create_topic(bootstrap, topic, 3)
    sent = produce(bootstrap, topic, 3, 0, 25)
    tps = [TopicPartition(topic, p) for p in range(3)]

    got, committed = asyncio.run(_run_consumer(bootstrap, topic, group, 75))
    assert got == _expected(sent, dict.fromkeys(range(3), 0))
    assert committed == dict.fromkeys(range(3), 25)

    more = produce(bootstrap, topic, 3, 25, 4)
    for p in range(3):
        sent[p].extend(more[p])

    rewind = {tps[0]: (2, "aio rewind"), tps[1]: (25, ""), tps[2]: (28, "x" * 300)}
    got, committed = asyncio.run(_run_consumer(bootstrap, topic, group, 12, commit=rewind))
    assert got == _expected(sent, dict.fromkeys(range(3), 25))
    assert committed == {0: 2, 1: 25, 2: 28}

    groups, offsets = asyncio.run(_admin_view(bootstrap, group))
    assert (group, "consumer") in groups, groups
    assert offsets == rewind

    got, _ = asyncio.run(_run_consumer(bootstrap, topic, group, (29 - 2) + (29 - 25) + (29 - 28)))
    assert got == _expected(sent, {0: 2, 1: 25, 2: 28})
