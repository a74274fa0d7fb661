"""Handlers over replicated partitions: acks=-1 waits for the ISR (purgatory), DeleteRecords
for the followers' log starts, followers and brokers without a replica answer
NOT_LEADER_OR_FOLLOWER, follower fetches move the HW.

The partitions come from a single-broker `Services` (conftest) and are turned into the leader
of replicas [0, 1] or a follower of broker 1 by hand; followers' fetches are played through
the Fetch handler with replica_id 1.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import wirebroker.handlers.delete_records  # registers these handlers
import wirebroker.handlers.fetch
import wirebroker.handlers.list_offsets
import wirebroker.handlers.offset_for_leader_epoch
import wirebroker.handlers.produce  # noqa: F401
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch

NOW = 1_700_000_000_000


def produce_body(topic: str, *, acks: int = -1, timeout_ms: int = 30_000) -> dict[str, Any]:
    batch = build_batch([(None, b"v")], base_timestamp=NOW)
    return {
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }


def fetch_body(
    topic: str, offset: int, *, replica_id: int = -1, epoch: int = -1, log_start: int = 0
) -> Any:
    return {
        "replica_id": replica_id,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "fetch_offset": offset,
                        "partition_max_bytes": 1 << 20,
                        "current_leader_epoch": epoch,
                        "log_start_offset": log_start,
                        "last_fetched_epoch": -1,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def produced(resp: Any) -> Any:
    return resp.responses[0].partition_responses[0]


def fetched(resp: Any) -> Any:
    return resp.responses[0].partitions[0]


def follow_broker_1(services: Any) -> None:
    """Partition t-0 becomes a follower of broker 1 at leader epoch 2."""
    services.replicas.make_follower(
        "t",
        0,
        leader_id=1,
        leader_epoch=2,
        isr=[1, 0],
        replicas=[0, 1],
        partition_epoch=2,
        now_ms=NOW,
    )


@pytest.fixture
def leader(services: Any) -> Any:
    services.admin.create_topic(
        "t", 1, configs={"min.insync.replicas": "2"}, now_ms=services.clock()
    )
    services.replicas.make_leader(
        "t", 0, leader_epoch=1, isr=[0, 1], replicas=[0, 1], partition_epoch=1, now_ms=NOW
    )
    return services.replicas.partition("t", 0)


async def test_acks_all_waits_for_the_follower(call, services, leader, mock_clock):
    result: list[Any] = []

    async def producer() -> None:
        result.append(produced(await call(ApiKey.PRODUCE, 9, produce_body("t"))))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(producer)
        await trio.testing.wait_all_tasks_blocked()
        assert result == [] and leader.log_end_offset == 1 and leader.high_watermark == 0
        assert services.produce_waiters.waiting_count() == 1
        # the follower fetches the record, then asks for more: the HW covers the append
        f = fetched(await call(ApiKey.FETCH, 12, fetch_body("t", 0, replica_id=1)))
        assert f.error_code == ErrorCode.NONE and f.records
        await trio.testing.wait_all_tasks_blocked()
        assert result == []
        f = fetched(await call(ApiKey.FETCH, 12, fetch_body("t", 1, replica_id=1)))
        assert f.high_watermark == 0  # the HW as read before this fetch moved it
        assert leader.high_watermark == 1
    assert result[0].error_code == ErrorCode.NONE and result[0].base_offset == 0
    assert services.produce_waiters.waiting_count() == 0
    # acks=1 answers at once, acks=-1 waits again
    p = produced(await call(ApiKey.PRODUCE, 9, produce_body("t", acks=1)))
    assert p.error_code == ErrorCode.NONE and leader.high_watermark == 1


async def test_acks_all_times_out(call, services, leader, autojump_clock):
    start = trio.current_time()
    p = produced(await call(ApiKey.PRODUCE, 9, produce_body("t", timeout_ms=700)))
    assert p.error_code == ErrorCode.REQUEST_TIMED_OUT and p.base_offset == 0
    assert trio.current_time() - start == pytest.approx(0.7)


async def test_acks_all_answers_not_leader_when_leadership_moves(call, services, leader):
    result: list[Any] = []

    async def producer() -> None:
        result.append(produced(await call(ApiKey.PRODUCE, 9, produce_body("t"))))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(producer)
        await trio.testing.wait_all_tasks_blocked()
        follow_broker_1(services)
    assert result[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_a_follower_answers_not_leader(call, services, leader):
    follow_broker_1(services)
    not_leader = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert produced(await call(ApiKey.PRODUCE, 9, produce_body("t"))).error_code == not_leader
    assert fetched(await call(ApiKey.FETCH, 12, fetch_body("t", 0))).error_code == not_leader
    assert fetched(await call(ApiKey.FETCH, 12, fetch_body("t", 0, epoch=3))).error_code == (
        ErrorCode.UNKNOWN_LEADER_EPOCH
    )
    assert fetched(await call(ApiKey.FETCH, 12, fetch_body("t", 0, epoch=1))).error_code == (
        ErrorCode.FENCED_LEADER_EPOCH
    )
    lo = await call(
        ApiKey.LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    assert lo.topics[0].partitions[0].error_code == not_leader
    debug = await call(
        ApiKey.LIST_OFFSETS,
        7,
        {
            "replica_id": -2,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -2}]}],
        },
    )
    assert debug.topics[0].partitions[0].error_code == ErrorCode.NONE
    ofl = await call(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        4,
        {
            "replica_id": -2,
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "leader_epoch": 1}]}],
        },
    )
    assert ofl.topics[0].partitions[0].error_code == not_leader
    dr = await call(
        ApiKey.DELETE_RECORDS,
        2,
        {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": -1}]}]},
    )
    assert dr.topics[0].partitions[0].error_code == not_leader


async def test_partition_hosted_elsewhere_is_not_leader_unknown_topic_is_unknown(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    services.replicas.stop_replica("t", 0, delete=True)  # the topic's only partition is elsewhere
    assert produced(await call(ApiKey.PRODUCE, 9, produce_body("t"))).error_code == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    assert fetched(await call(ApiKey.FETCH, 12, fetch_body("t", 0))).error_code == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    assert produced(await call(ApiKey.PRODUCE, 9, produce_body("nope"))).error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )


async def test_fetch_from_a_broker_that_is_no_replica(call, services, leader):
    f = fetched(await call(ApiKey.FETCH, 12, fetch_body("t", 0, replica_id=7)))
    assert f.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_single_broker_acks_all_never_waits(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    p = produced(await call(ApiKey.PRODUCE, 9, produce_body("t", timeout_ms=0)))
    assert p.error_code == ErrorCode.NONE
    assert services.replicas.partition("t", 0).high_watermark == 1


async def test_a_follower_with_a_stale_broker_epoch_is_served_but_not_counted(
    call, services, leader
):
    """KIP-903: fetches carrying an older broker epoch than the follower's registration do not
    move the high watermark (nor bring it back into the ISR)."""

    class Epochs(type(services.cluster)):  # type: ignore[misc]
        def broker_epoch(self, node_id: int) -> int:
            return 50 if node_id == 1 else -1

    services.cluster.__class__ = Epochs
    p = produced(await call(ApiKey.PRODUCE, 9, produce_body("t", acks=1)))
    assert p.error_code == ErrorCode.NONE and leader.log_end_offset == 1

    def v15(offset: int, epoch: int) -> Any:
        body = fetch_body("t", offset)
        body["replica_state"] = {"replica_id": 1, "replica_epoch": epoch}
        body["topics"][0]["topic_id"] = leader.topic_id
        return body

    stale = fetched(await call(ApiKey.FETCH, 15, v15(1, 49)))
    assert stale.error_code == ErrorCode.NONE
    assert leader.high_watermark == 0  # not counted
    current = fetched(await call(ApiKey.FETCH, 15, v15(1, 50)))
    assert current.error_code == ErrorCode.NONE
    assert leader.high_watermark == 1


def delete_body(offset: int, *, timeout_ms: int = 30_000) -> Any:
    return {
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": offset}]}],
        "timeout_ms": timeout_ms,
    }


@pytest.fixture
def follower_alive(services: Any) -> None:
    """The cluster view knows broker 1 (the follower) as live."""

    class Live(type(services.cluster)):  # type: ignore[misc]
        def broker(self, node_id: int) -> Any:
            return super().broker(0) if node_id == 1 else super().broker(node_id)

    services.cluster.__class__ = Live


async def replicate_three(call: Any, leader: Any) -> None:
    for _ in range(3):
        assert produced(await call(ApiKey.PRODUCE, 9, produce_body("t", acks=1))).error_code == 0
    await call(ApiKey.FETCH, 12, fetch_body("t", 3, replica_id=1))
    assert leader.high_watermark == 3


async def test_delete_records_waits_for_the_followers_log_start(
    call, services, leader, follower_alive, mock_clock
):
    await replicate_three(call, leader)
    result: list[Any] = []

    async def delete() -> None:
        result.append((await call(ApiKey.DELETE_RECORDS, 2, delete_body(2))).topics[0])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(delete)
        await trio.testing.wait_all_tasks_blocked()
        assert result == [] and leader.log_start_offset == 2
        assert services.produce_waiters.waiting_count() == 1
        # the follower learns the leader's log start from a fetch response...
        f = fetched(await call(ApiKey.FETCH, 12, fetch_body("t", 3, replica_id=1)))
        assert f.log_start_offset == 2
        await trio.testing.wait_all_tasks_blocked()
        assert result == []
        # ...and reports its own in the next fetch
        await call(ApiKey.FETCH, 12, fetch_body("t", 3, replica_id=1, log_start=2))
    p = result[0].partitions[0]
    assert (p.error_code, p.low_watermark) == (ErrorCode.NONE, 2)
    assert services.produce_waiters.waiting_count() == 0


async def test_delete_records_times_out_without_the_follower(
    call, services, leader, follower_alive, autojump_clock
):
    await replicate_three(call, leader)
    start = trio.current_time()
    resp = await call(ApiKey.DELETE_RECORDS, 2, delete_body(-1, timeout_ms=800))
    p = resp.topics[0].partitions[0]
    assert (p.error_code, p.low_watermark) == (ErrorCode.REQUEST_TIMED_OUT, 0)
    assert trio.current_time() - start == pytest.approx(0.8)
    assert leader.log_start_offset == 3  # the leader's own delete stands


async def test_delete_records_does_not_wait_for_a_dead_follower(call, services, leader):
    """The cluster view does not know broker 1: its log start does not count."""
    await replicate_three(call, leader)
    p = (await call(ApiKey.DELETE_RECORDS, 2, delete_body(2))).topics[0].partitions[0]
    assert (p.error_code, p.low_watermark) == (ErrorCode.NONE, 2)


def fetch_v16_body(services: Any, topic: str, *, epoch: int = -1) -> Any:
    """A consumer's Fetch v16 (topics by id) of partition 0 at offset 0."""
    body = fetch_body(topic, 0, epoch=epoch)
    del body["replica_id"]
    for entry in body["topics"]:
        entry["topic_id"] = services.cluster.topic(entry.pop("topic")).topic_id
    return body


async def test_not_leader_and_fenced_answers_name_the_leader(call, services, leader):
    """KIP-951: Produce v10+ and Fetch v16+ answers that refuse a partition for leadership
    carry its current leader and epoch, and the live leaders' endpoints; older versions do
    not (their schemas have no such fields)."""
    not_leader = ErrorCode.NOT_LEADER_OR_FOLLOWER
    # this broker leads at epoch 1: a consumer at epoch 0 is fenced and told epoch 1, here
    resp = await call(ApiKey.FETCH, 16, fetch_v16_body(services, "t", epoch=0))
    p = fetched(resp)
    assert p.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (0, 1)
    me = services.cluster.broker(0)
    assert [(n.node_id, n.host, n.port, n.rack) for n in resp.node_endpoints] == [
        (0, me.host, me.port, me.rack)
    ]
    # a successful answer names no leader
    resp = await call(ApiKey.FETCH, 16, fetch_v16_body(services, "t"))
    assert fetched(resp).error_code == ErrorCode.NONE
    assert fetched(resp).current_leader.leader_id == -1 and resp.node_endpoints == []
    # now a follower of broker 1 at epoch 2 (a broker this single-broker view does not know
    # as live: no endpoint for it, as Kafka lists only live leaders)
    follow_broker_1(services)
    resp = await call(ApiKey.PRODUCE, 10, produce_body("t", acks=1))
    p = produced(resp)
    assert p.error_code == not_leader
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 2)
    assert resp.node_endpoints == []
    resp = await call(ApiKey.FETCH, 16, fetch_v16_body(services, "t"))
    p = fetched(resp)
    assert p.error_code == not_leader
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 2)
    # before Produce v10 / Fetch v16 the fields do not exist
    assert "current_leader" not in produced(await call(ApiKey.PRODUCE, 9, produce_body("t")))
    p = fetched(await call(ApiKey.FETCH, 15, fetch_v16_body(services, "t")))
    assert p.error_code == not_leader and p.current_leader.leader_id == -1
