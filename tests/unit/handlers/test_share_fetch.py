"""ShareFetch / ShareAcknowledge handlers (KIP-932) over real partitions in tmp_path: share
sessions, acquisition, piggy-backed and separate acknowledgements, lock timeouts, the long
poll, errors. The clock is the services' FakeClock; waits run under trio's MockClock."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import trio

import wirebroker.handlers.share_acknowledge
import wirebroker.handlers.share_fetch  # noqa: F401  (registers the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import iter_batches
from wirebroker.share.manager import SharePartitionManager
from wirebroker.share.persister import InMemoryPersister

FETCH = ApiKey.SHARE_FETCH
ACK = ApiKey.SHARE_ACKNOWLEDGE


@pytest.fixture
def share(services: Any) -> Any:
    persister = InMemoryPersister()
    services.share_persister = persister
    services.share_partitions = SharePartitionManager(
        services.config,
        persister,
        services.group_configs,
        clock=services.clock,
        wake=services.fetch_waiters.notify,
    )
    services.admin.create_topic("t", 2, now_ms=services.clock())
    return services


async def init(services: Any, group: str = "g", *, start: int = -1, partitions: int = 2) -> Any:
    tid = services.cluster.topic("t").topic_id
    for p in range(partitions):
        code = await services.share_persister.initialize_state(group, tid, p, 0, start)
        assert code is ErrorCode.NONE
    return tid


def fetch_body(
    tid: uuid.UUID,
    parts: dict[int, list[tuple[int, int, list[int]]]],
    *,
    epoch: int,
    member: str = "m1",
    group: str = "g",
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_records: int = 500,
    forget: tuple[int, ...] = (),
) -> dict[str, Any]:
    return {
        "group_id": group,
        "member_id": member,
        "share_session_epoch": epoch,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": 1 << 20,
        "max_records": max_records,
        "batch_size": 500,
        "topics": [
            {
                "topic_id": tid,
                "partitions": [
                    {
                        "partition_index": i,
                        "acknowledgement_batches": [
                            {"first_offset": a, "last_offset": b, "acknowledge_types": types}
                            for a, b, types in acks
                        ],
                    }
                    for i, acks in parts.items()
                ],
            }
        ]
        if parts
        else [],
        "forgotten_topics_data": [{"topic_id": tid, "partitions": list(forget)}] if forget else [],
    }


def parts_of(resp: Any) -> dict[int, Any]:
    return {p.partition_index: p for t in resp.responses for p in t.partitions}


def acquired(resp: Any, index: int = 0) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for a in parts_of(resp)[index].acquired_records
    ]


async def test_fetch_acquires_then_accept_moves_the_start_offset(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=3)
    produce(share, "t", 0, n=2)
    resp = await call(FETCH, 1, fetch_body(tid, {0: [], 1: []}, epoch=0))
    assert resp.error_code == 0 and resp.acquisition_lock_timeout_ms == 30_000
    assert acquired(resp) == [(0, 4, 1)]
    assert [h.base_offset for _p, h in iter_batches(parts_of(resp)[0].records)] == [0, 3]
    assert parts_of(resp)[1].acquired_records == []
    # another member gets nothing: all acquired
    other = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="m2"))
    assert acquired(other) == []
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 4, [1])]}, epoch=1))
    assert parts_of(resp)[0].acknowledge_error_code == 0
    sp = share.share_partitions.partition("g", tid, 0)
    assert sp.start_offset == 5
    state = await share.share_persister.read_state("g", tid, 0, 0)
    assert state.start_offset == 5


async def test_latest_reset_skips_existing_records(call, share, produce) -> None:
    tid = await init(share)  # start offset -1: share.auto.offset.reset latest
    produce(share, "t", 0, n=3)
    resp = await call(FETCH, 2, fetch_body(tid, {0: []}, epoch=0))
    assert acquired(resp) == []
    produce(share, "t", 0, n=1)
    resp = await call(FETCH, 2, fetch_body(tid, {}, epoch=1))
    assert acquired(resp) == [(3, 3, 1)]


async def test_earliest_reset_from_the_group_config(call, share, produce) -> None:
    share.group_configs.apply("g", {"share.auto.offset.reset": "earliest"})
    tid = await init(share)
    produce(share, "t", 0, n=3)
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    assert acquired(resp) == [(0, 2, 1)]


async def test_release_redelivers_and_reject_archives(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=2)
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 1, [2, 3])]}, epoch=1))
    assert parts_of(resp)[0].acknowledge_error_code == 0
    assert acquired(resp) == [(0, 0, 2)]  # released: delivered again; 1 rejected


async def test_acknowledge_of_records_not_acquired(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=2)
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="m2"))
    await call(FETCH, 1, fetch_body(tid, {}, epoch=1, member="m2"))
    ack = {
        "group_id": "g",
        "member_id": "m2",
        "share_session_epoch": 2,
        "topics": [
            {
                "topic_id": tid,
                "partitions": [
                    {
                        "partition_index": 0,
                        "acknowledgement_batches": [
                            {"first_offset": 0, "last_offset": 1, "acknowledge_types": [1]}
                        ],
                    }
                ],
            }
        ],
    }
    resp = await call(ACK, 1, ack)
    assert resp.error_code == 0
    assert parts_of(resp)[0].error_code == ErrorCode.INVALID_RECORD_STATE
    # malformed batches: INVALID_REQUEST; a wrong epoch: top-level
    ack["share_session_epoch"] = 3
    ack["topics"][0]["partitions"][0]["acknowledgement_batches"][0]["acknowledge_types"] = [1, 1, 1]
    assert parts_of(await call(ACK, 1, ack))[0].error_code == ErrorCode.INVALID_REQUEST
    ack["share_session_epoch"] = 9
    resp = await call(ACK, 1, ack)
    assert resp.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH and resp.responses == []


async def test_share_acknowledge_accepts(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=2)
    await call(FETCH, 2, fetch_body(tid, {0: []}, epoch=0))
    body = fetch_body(tid, {0: [(0, 1, [1])]}, epoch=1)
    ack = {k: body[k] for k in ("group_id", "member_id", "share_session_epoch", "topics")}
    resp = await call(ACK, 2, ack)
    assert resp.acquisition_lock_timeout_ms == 30_000
    assert parts_of(resp)[0].error_code == 0
    assert share.share_partitions.partition("g", tid, 0).start_offset == 2


async def test_session_epochs(call, share) -> None:
    tid = await init(share, start=0)
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=3))
    assert resp.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND and resp.responses == []
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 0, [1])]}, epoch=0))
    assert resp.error_code == ErrorCode.INVALID_REQUEST
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    resp = await call(FETCH, 1, fetch_body(tid, {}, epoch=2))
    assert resp.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert (await call(FETCH, 1, fetch_body(tid, {}, epoch=1))).error_code == 0
    assert (await call(FETCH, 1, fetch_body(tid, {}, epoch=-1))).error_code == 0
    resp = await call(FETCH, 1, fetch_body(tid, {}, epoch=2))
    assert resp.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


async def test_session_limit(call, share) -> None:
    tid = await init(share, start=0)
    share.share_partitions.sessions.max_sessions = 1
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="m2"))
    assert resp.error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED


async def test_final_epoch_releases_the_members_records(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=2)
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 0, [1])]}, epoch=-1))
    assert parts_of(resp)[0].acknowledge_error_code == 0
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="m2"))
    assert acquired(resp) == [(1, 1, 1)]  # released on close: the delivery taken back


async def test_lock_timeout_redelivers(call, share, produce) -> None:
    share.group_configs.apply("g", {"share.record.lock.duration.ms": "15000"})
    tid = await init(share, start=0)
    produce(share, "t", 0, n=1)
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    assert resp.acquisition_lock_timeout_ms == 15_000
    share.clock.advance(15_000)
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="m2"))
    assert acquired(resp) == [(0, 0, 2)]
    # the first member's acknowledgement now fails
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 0, [1])]}, epoch=1))
    assert parts_of(resp)[0].acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE


async def test_delivery_count_limit(call, share, produce) -> None:
    share.group_configs.apply("g", {"share.delivery.count.limit": "2"})
    tid = await init(share, start=0)
    produce(share, "t", 0, n=1)
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 0, [2])]}, epoch=1))
    assert acquired(resp) == [(0, 0, 2)]
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 0, [2])]}, epoch=2))
    assert acquired(resp) == []  # archived at the limit
    assert share.share_partitions.partition("g", tid, 0).start_offset == 1


async def test_uninitialised_state_and_unknown_topic(call, share) -> None:
    tid = share.cluster.topic("t").topic_id
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    assert parts_of(resp)[0].error_code == ErrorCode.UNKNOWN  # as Kafka 4.4 (-1)
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, group=""))
    assert (resp.error_code, parts_of(resp)[0].error_code) == (0, ErrorCode.UNKNOWN)
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="x" * 37))
    assert resp.error_code == ErrorCode.INVALID_REQUEST
    assert (await call(FETCH, 1, fetch_body(tid, {}, epoch=0, member="y" * 36))).error_code == 0
    resp = await call(FETCH, 1, fetch_body(uuid.uuid4(), {0: []}, epoch=0, member="m3"))
    assert parts_of(resp)[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member=""))
    assert resp.error_code == ErrorCode.INVALID_REQUEST


async def test_max_records_across_partitions(call, share, produce) -> None:
    tid = await init(share, start=0)
    for p in (0, 1):
        produce(share, "t", p, n=1)
        produce(share, "t", p, n=1)
    body = fetch_body(tid, {0: [], 1: []}, epoch=0, max_records=1)
    resp = await call(FETCH, 2, {**body, "share_acquire_mode": 1})
    got = [a for p in (0, 1) for a in acquired(resp, p)]
    assert len(got) == 1


async def test_long_poll_woken_by_produce(call, share, produce, mock_clock) -> None:
    tid = await init(share, start=0)
    result: list[Any] = []

    async def fetcher() -> None:
        result.append(await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, max_wait_ms=5000)))

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetcher)
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(1.0)
        produce(share, "t", 0, n=1)
    assert trio.current_time() - start == pytest.approx(1.0)
    assert acquired(result[0]) == [(0, 0, 1)]


async def test_long_poll_times_out(call, share, autojump_clock) -> None:
    tid = await init(share, start=0)
    start = trio.current_time()
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, max_wait_ms=500))
    assert trio.current_time() - start == pytest.approx(0.5)
    assert acquired(resp) == []


def ack_body(tid: uuid.UUID, epoch: int, acks: list[tuple[int, int, int]]) -> dict[str, Any]:
    batches = [{"first_offset": a, "last_offset": b, "acknowledge_types": [t]} for a, b, t in acks]
    return {
        "group_id": "g",
        "member_id": "m1",
        "share_session_epoch": epoch,
        "topics": [
            {
                "topic_id": tid,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
            }
        ],
    }


async def test_the_answers_kafka_gave_in_the_conformance_flow(call, share, produce) -> None:
    """compat/CONFORMANCE.md, "ShareFetch (key 78)" / "ShareAcknowledge (key 79)": Kafka 4.4's
    answers to compat/conformance/corpus/share_groups.py's steps, one by one."""
    share.group_configs.apply("g", {"share.auto.offset.reset": "earliest"})
    tid = await init(share, partitions=1)
    produce(share, "t", 0, n=3)
    leader0 = {"leader_id": 0, "leader_epoch": 0}
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))  # share.fetch
    assert (resp.error_code, resp.acquisition_lock_timeout_ms) == (0, 30_000)
    p = parts_of(resp)[0]
    assert (p.error_code, p.acknowledge_error_code, dict(p.current_leader)) == (0, 0, leader0)
    assert acquired(resp) == [(0, 2, 1)]
    resp = await call(ACK, 1, ack_body(tid, 1, [(0, 1, 1), (2, 2, 2)]))  # share.acknowledge
    assert "acquisition_lock_timeout_ms" not in resp
    assert [(p.error_code, dict(p.current_leader)) for p in parts_of(resp).values()] == [
        (0, leader0)
    ]
    resp = await call(FETCH, 2, fetch_body(tid, {0: []}, epoch=2))  # share.fetch_again
    assert acquired(resp) == [(2, 2, 2)]
    assert [h.base_offset for _p, h in iter_batches(parts_of(resp)[0].records)] == [0]
    resp = await call(ACK, 2, ack_body(tid, 3, [(2, 2, 3)]))  # share.reject
    assert (resp.acquisition_lock_timeout_ms, parts_of(resp)[0].error_code) == (30_000, 0)
    resp = await call(ACK, 2, ack_body(tid, 4, [(0, 0, 1)]))  # share.acknowledge_twice
    assert parts_of(resp)[0].error_code == 0
    resp = await call(FETCH, 2, fetch_body(tid, {0: []}, epoch=5))  # share.fetch_nothing
    assert (resp.error_code, resp.responses) == (0, [])
    resp = await call(FETCH, 2, fetch_body(tid, {0: []}, epoch=9))  # share.fetch_bad_epoch
    assert (resp.error_code, resp.acquisition_lock_timeout_ms, resp.responses) == (123, 0, [])
    unknown = uuid.UUID(int=0xC0FFEE)
    resp = await call(FETCH, 2, fetch_body(unknown, {0: []}, epoch=6))  # fetch_unknown_topic
    assert [t.topic_id for t in resp.responses] == [unknown]
    p = parts_of(resp)[0]
    assert (p.error_code, p.acknowledge_error_code, dict(p.current_leader)) == (100, 0, leader0)
    resp = await call(FETCH, 2, fetch_body(tid, {0: []}, epoch=0, member="stranger"))
    assert [(p.error_code, len(p.acquired_records)) for p in parts_of(resp).values()] == [(0, 0)]
    resp = await call(FETCH, 2, fetch_body(tid, {}, epoch=-1))  # share.fetch_close
    assert (resp.error_code, resp.acquisition_lock_timeout_ms, resp.responses) == (0, 30_000, [])


async def test_follower_answers_not_leader_with_hints(call, share) -> None:
    tid = await init(share, start=0)
    share.replicas.make_follower(
        "t",
        0,
        leader_id=1,
        leader_epoch=2,
        isr=[1, 0],
        replicas=[0, 1],
        partition_epoch=2,
        now_ms=share.clock(),
    )
    resp = await call(FETCH, 2, fetch_body(tid, {0: [], 1: []}, epoch=0))
    p = parts_of(resp)[0]
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert dict(p.current_leader) == {"leader_id": 1, "leader_epoch": 2}
    assert parts_of(resp)[1].error_code == 0
    await call(FETCH, 2, fetch_body(tid, {}, epoch=1))
    body = fetch_body(tid, {0: [(0, 0, [1])]}, epoch=2)
    ack = {k: body[k] for k in ("group_id", "member_id", "share_session_epoch", "topics")}
    resp = await call(ACK, 2, ack)
    assert parts_of(resp)[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert dict(parts_of(resp)[0].current_leader) == {"leader_id": 1, "leader_epoch": 2}


async def test_a_refused_write_answers_its_error_and_changes_nothing(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=2)
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    refused: list[Any] = []

    async def write_state(*args: Any) -> ErrorCode:
        refused.append(args)
        return ErrorCode.NOT_COORDINATOR

    share.share_persister.write_state = write_state
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 1, [1])]}, epoch=1))
    assert parts_of(resp)[0].acknowledge_error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert len(refused) == 1
    sp = share.share_partitions.partition("g", tid, 0)
    assert sp.start_offset == 0 and all(r.member_id == "m1" for r in sp.records.values())


async def test_session_closes_with_its_connection(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=1)
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    manager = share.share_partitions
    session = manager.sessions.get("g", "m1")
    session.connection.closed()  # the connection that opened it closes
    assert manager.sessions.get("g", "m1") is None
    await manager.release_closed()
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="m2"))
    assert acquired(resp) == [(0, 0, 1)]  # released, the delivery taken back


@pytest.mark.parametrize(
    ("persisted", "answered"),
    [
        (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_ID_NOT_FOUND),
        (ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN),
    ],
)
async def test_read_state_errors(call, share, persisted, answered) -> None:
    tid = await init(share, start=0)

    async def read_state(*_args: Any) -> ErrorCode:
        return persisted

    share.share_persister.read_state = read_state
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    assert parts_of(resp)[0].error_code == answered
    assert share.share_partitions.partition("g", tid, 0) is None


async def test_by_duration_reset(call, share, produce) -> None:
    share.group_configs.apply("g", {"share.auto.offset.reset": "by_duration:PT1M"})
    tid = await init(share)
    produce(share, "t", 0, n=2)  # two minutes ago
    share.clock.advance(120_000)
    produce(share, "t", 0, n=1)
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    assert acquired(resp) == [(2, 2, 1)]


async def test_read_committed_archives_aborted_data_and_stops_at_the_lso(
    call, share, produce
) -> None:
    from test_fetch_transactions import end, plain, txn

    share.group_configs.apply("g", {"share.isolation.level": "read_committed"})
    tid = await init(share, start=0)
    txn(share, 1, 0)  # 0-1 aborted
    txn(share, 2, 0)  # 2-3 committed
    end(share, 1, commit=False)  # 4
    end(share, 2, commit=True)  # 5
    plain(share)  # 6
    txn(share, 3, 0)  # 7-8 ongoing: beyond the last stable offset
    plain(share, 2)  # 9-10
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    # 0-1 archived, not delivered; the markers (4, 5) delivered for the client to GAP
    assert acquired(resp) == [(2, 6, 1)]
    assert [h.base_offset for _p, h in iter_batches(parts_of(resp)[0].records)] == [2, 4, 5, 6]
    assert share.share_partitions.partition("g", tid, 0).start_offset == 2
    state = await share.share_persister.read_state("g", tid, 0, 0)
    assert state.start_offset == 2


async def test_state_reset_elsewhere_is_read_again(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=3)
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    # AlterShareGroupOffsets (the share coordinator): start offset 2, a new state epoch
    assert await share.share_persister.initialize_state("g", tid, 0, 1, 2) == 0
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 2, [1])]}, epoch=1))
    assert parts_of(resp)[0].acknowledge_error_code == ErrorCode.FENCED_STATE_EPOCH
    # the fetch of the same request reads the new state: from offset 2
    assert acquired(resp) == [(2, 2, 1)]
    assert share.share_partitions.partition("g", tid, 0).start_offset == 2
    share.share_partitions.forget_group("g")
    assert share.share_partitions.partition("g", tid, 0) is None


async def test_acknowledgements_to_a_share_partition_not_loaded(call, share, produce) -> None:
    """Kafka 4.4: UNKNOWN_TOPIC_OR_PARTITION with its text (the probe of 2026-12-07)."""
    tid = await init(share, start=0)
    await call(FETCH, 2, fetch_body(tid, {}, epoch=0))
    body = fetch_body(tid, {0: [(0, 0, [1])]}, epoch=1)
    resp = await call(FETCH, 2, body)
    p = parts_of(resp)[0]
    assert p.acknowledge_error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert p.acknowledge_error_message == "This server does not host this topic-partition."


async def test_renew_acknowledgements(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=2)
    await call(FETCH, 2, fetch_body(tid, {0: []}, epoch=0))
    share.clock.advance(20_000)
    renew = {**fetch_body(tid, {0: [(0, 1, [4])]}, epoch=1), "is_renew_ack": True}
    resp = await call(FETCH, 2, renew)  # asks for records too: refused (KIP-1222)
    assert (resp.error_code, resp.acquisition_lock_timeout_ms) == (ErrorCode.INVALID_REQUEST, 0)
    zero = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0}
    resp = await call(FETCH, 2, {**renew, **zero})
    assert (resp.error_code, parts_of(resp)[0].acknowledge_error_code) == (0, 0)
    share.clock.advance(20_000)  # 40 s after the acquisition, 20 s after the renewal
    resp = await call(FETCH, 2, fetch_body(tid, {0: []}, epoch=0, member="m2"))
    assert acquired(resp) == []  # still locked by m1
    # without is_renew_ack, RENEW (4) is not an acknowledgement type
    resp = await call(FETCH, 2, fetch_body(tid, {0: [(0, 1, [4])]}, epoch=2))
    assert parts_of(resp)[0].acknowledge_error_code == ErrorCode.INVALID_REQUEST
    # nor in v1
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 1, [4])]}, epoch=3))
    assert parts_of(resp)[0].acknowledge_error_code == ErrorCode.INVALID_REQUEST
