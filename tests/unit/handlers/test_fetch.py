"""Fetch handler: byte-exact reads, limits (KIP-74), errors, sessions and the long poll."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import trio
import trio.testing

import wirebroker.handlers.fetch  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch, iter_batches
from wirebroker.log.file_slice import FileSlice

KEY = ApiKey.FETCH


def fetch_body(
    services: Any,
    topic: str,
    partitions: dict[int, int],
    *,
    version: int = 12,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = 0x7FFFFFFF,
    partition_max_bytes: int = 1 << 20,
    isolation_level: int = 0,
    current_leader_epoch: int = -1,
    replica_id: int = -1,
    session_id: int = 0,
    session_epoch: int = -1,
    last_fetched_epoch: int = -1,
    forget: tuple[int, ...] = (),
) -> dict[str, Any]:
    """A Fetch of `partitions` (index -> offset) of `topic` (no topic entry when empty),
    forgetting the partitions in `forget`."""
    entry: dict[str, Any] = {
        "partitions": [
            {
                "partition": i,
                "fetch_offset": off,
                "partition_max_bytes": partition_max_bytes,
                "current_leader_epoch": current_leader_epoch,
                "log_start_offset": -1,
                "last_fetched_epoch": last_fetched_epoch,
            }
            for i, off in partitions.items()
        ]
    }
    if version >= 13:
        info = services.cluster.topic(topic)
        entry["topic_id"] = info.topic_id if info is not None else uuid.uuid4()
    else:
        entry["topic"] = topic
    out: dict[str, Any] = {
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "session_id": session_id,
        "session_epoch": session_epoch,
        "topics": [entry] if partitions else [],
        "forgotten_topics_data": [{**entry, "partitions": list(forget)}] if forget else [],
        "rack_id": "",
    }
    if version >= 15:
        out["replica_state"] = {"replica_id": replica_id, "replica_epoch": -1}
    else:
        out["replica_id"] = replica_id
    return out


def by_index(resp: Any) -> dict[int, Any]:
    return {p.partition_index: p for t in resp.responses for p in t.partitions}


def make_batch(
    services: Any, n: int, *, base_offset: int = 0, epoch: int = -1, tag: bytes = b"v"
) -> bytes:
    return build_batch(
        [(None, tag + b"%d" % i) for i in range(n)],
        base_timestamp=services.clock(),
        base_offset=base_offset,
        partition_leader_epoch=epoch,
    )


def append(services: Any, topic: str, index: int, n: int, tag: bytes = b"v") -> None:
    services.replicas.append(
        services.replicas.partition(topic, index),
        make_batch(services, n, tag=tag),
        now_ms=services.clock(),
    )


def session_fetcher(call: Any, services: Any, topic: str = "t", **fixed: Any) -> Any:
    """fetch(named, session_id, epoch, forget=(), **more): a Fetch v12 of `topic` in a
    session, with `fixed` (and `more`) fetch_body arguments, e.g. replica_id=1."""

    async def fetch(
        named: dict[int, int], sid: int, epoch: int, forget: tuple[int, ...] = (), **more: Any
    ) -> Any:
        body = fetch_body(
            services,
            topic,
            named,
            session_id=sid,
            session_epoch=epoch,
            forget=forget,
            **fixed | more,
        )
        return await call(KEY, 12, body)

    return fetch


def follower_leads(services: Any, topic: str, partitions: int) -> None:
    """This broker (0) leads each partition of `topic`, follower 1 in the ISR."""
    for i in range(partitions):
        services.replicas.make_leader(
            topic, i, leader_epoch=1, isr=[0, 1], replicas=[0, 1], partition_epoch=1, now_ms=0
        )


def count_reads(services: Any, topic: str, partitions: int) -> list[int]:
    """The indexes of `topic`'s partitions read from now on, in order, one per read."""
    reads: list[int] = []
    for i in range(partitions):
        part = services.replicas.partition(topic, i)
        real = part.read

        def counted(*args: Any, _real: Any = real, _i: int = i, **kwargs: Any) -> Any:
            reads.append(_i)
            return _real(*args, **kwargs)

        part.read = counted
    return reads


@pytest.mark.parametrize("version", range(4, 19))
async def test_produce_then_fetch_byte_exact(call, services, version):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 3, b"a")
    append(services, "t", 0, 2, b"b")
    resp = await call(KEY, version, fetch_body(services, "t", {0: 0}, version=version))
    assert resp.throttle_time_ms == 0
    if version >= 7:
        assert resp.error_code == ErrorCode.NONE and resp.session_id == 0
    p = by_index(resp)[0]
    assert p.error_code == ErrorCode.NONE
    assert (p.high_watermark, p.last_stable_offset) == (5, 5)
    if version >= 5:
        assert p.log_start_offset == 0
    if version >= 11:
        assert p.preferred_read_replica == -1
    assert p.aborted_transactions is None
    expected = make_batch(services, 3, base_offset=0, epoch=0, tag=b"a") + make_batch(
        services, 2, base_offset=3, epoch=0, tag=b"b"
    )
    assert p.records == expected
    if version >= 13:
        assert resp.responses[0].topic_id == services.cluster.topic("t").topic_id
    else:
        assert resp.responses[0].topic == "t"


async def test_fetch_inside_a_batch_returns_the_whole_batch(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 3, b"a")
    append(services, "t", 0, 2, b"b")
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 1})))[0]
    assert [h.base_offset for _pos, h in iter_batches(p.records)] == [0, 3]
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 4})))[0]
    assert [h.base_offset for _pos, h in iter_batches(p.records)] == [3]


async def test_fetch_at_log_end_is_empty(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 2)
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 2})))[0]
    assert p.error_code == ErrorCode.NONE and p.records == b"" and p.high_watermark == 2


async def test_offset_out_of_range(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 3)
    append(services, "t", 0, 3)
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 7})))[0]
    assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (p.high_watermark, p.log_start_offset, p.records) == (-1, -1, b"")
    services.replicas.partition("t", 0).log.delete_records_before(3)
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 1})))[0]
    assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 3})))[0]
    assert p.error_code == ErrorCode.NONE and p.log_start_offset == 3


async def test_unknown_topic_partition_and_id(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    p = by_index(await call(KEY, 12, fetch_body(services, "nope", {0: 0})))[0]
    assert p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # Kafka refuses these before reading: an empty aborted list, not null (Kafka 4.4's answer)
    assert p.aborted_transactions == []
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {3: 0})))[3]
    assert p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert p.high_watermark == -1 and p.aborted_transactions == []
    p = by_index(await call(KEY, 13, fetch_body(services, "nope", {0: 0}, version=13)))[0]
    assert (p.error_code, p.aborted_transactions) == (ErrorCode.UNKNOWN_TOPIC_ID, [])
    # An error of the read itself: null, as Kafka.
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 99})))[0]
    assert (p.error_code, p.aborted_transactions) == (ErrorCode.OFFSET_OUT_OF_RANGE, None)


async def test_leader_epoch_fencing(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 0}, current_leader_epoch=0)))[0]
    assert p.error_code == ErrorCode.NONE
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 0}, current_leader_epoch=1)))[0]
    assert p.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    services.replicas.partition("t", 0).leader_epoch = 3
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 0}, current_leader_epoch=2)))[0]
    assert p.error_code == ErrorCode.FENCED_LEADER_EPOCH


@pytest.mark.parametrize(
    ("session_id", "epoch", "error"),
    [
        (0, -1, ErrorCode.NONE),
        (0, 0, ErrorCode.NONE),
        (123, -1, ErrorCode.NONE),
        (123, 0, ErrorCode.NONE),
        (123, 5, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
        (0, 1, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
    ],
)
async def test_sessions(call, services, session_id, epoch, error):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 1)
    resp = await call(
        KEY, 12, fetch_body(services, "t", {0: 0}, session_id=session_id, session_epoch=epoch)
    )
    assert resp.error_code == error
    # INITIAL makes a session (closing the one it names), FINAL none
    assert (resp.session_id != 0) == (epoch == 0)
    if error == ErrorCode.NONE:
        assert by_index(resp)[0].records
    else:
        assert resp.responses == []


@pytest.mark.parametrize(("version", "epoch"), [(4, -1), (12, -1), (12, 0), (17, 0)])
async def test_a_partition_named_twice_is_read_once(call, services, version, epoch):
    """As Kafka 4.4 (a map of topic-partitions; no error): a full or sessionless fetch naming
    a partition twice answers it once, in its first place, from its last fetch offset;
    consecutive entries of a topic are one entry of the answer."""
    services.admin.create_topic("t", 2, now_ms=services.clock())
    append(services, "t", 0, 1, b"a")
    append(services, "t", 0, 1, b"b")
    body = fetch_body(services, "t", {0: 0}, version=version, session_epoch=epoch)
    entry = body["topics"][0]
    later = {**entry["partitions"][0], "fetch_offset": 1}
    entry["partitions"].append({**later, "partition": 1, "fetch_offset": 0})
    body["topics"].append({**entry, "partitions": [later]})
    resp = await call(KEY, version, body)
    assert len(resp.responses) == 1
    answered = [(p.partition_index, p.records) for p in resp.responses[0].partitions]
    assert [index for index, _records in answered] == [0, 1]
    assert [h.base_offset for _pos, h in iter_batches(answered[0][1])] == [1]
    if epoch == 0:
        session = services.fetch_sessions.get(resp.session_id)
        cached = [(k[1], c.fetch["fetch_offset"]) for k, c in session.partitions.items()]
        assert cached == [(0, 1), (1, 0)]


async def test_max_bytes_kip74(call, services):
    services.admin.create_topic("t", 2, now_ms=services.clock())
    append(services, "t", 0, 5, b"first-partition-")
    append(services, "t", 0, 5, b"first-partition-")
    append(services, "t", 1, 5, b"second-partition-")
    one = len(make_batch(services, 5, tag=b"first-partition-"))
    # max_bytes below one batch: the first partition still returns one whole batch.
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 0, 1: 0}, max_bytes=10)))
    assert len(p[0].records) == one
    assert p[1].records == b""
    # partition_max_bytes below one batch: the same for the first non-empty partition only.
    p = by_index(
        await call(KEY, 12, fetch_body(services, "t", {0: 0, 1: 0}, partition_max_bytes=10))
    )
    assert len(p[0].records) == one and p[1].records == b""
    # Room for everything.
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 0, 1: 0})))
    assert len(p[0].records) == 2 * one and p[1].records
    # The first non-empty partition is the one that gets the KIP-74 exception.
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 10, 1: 0}, max_bytes=10)))
    assert p[0].records == b"" and p[1].records


async def test_read_committed_and_follower_bounds(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 2)
    append(services, "t", 0, 2)
    part = services.replicas.partition("t", 0)
    # broker 1 becomes a follower replica (a fetch from a non-replica is refused)
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 0}, replica_id=1)))[0]
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    services.replicas.make_leader(
        "t", 0, leader_epoch=1, isr=[0, 1], replicas=[0, 1], partition_epoch=1, now_ms=0
    )
    part.log.high_watermark = 2  # as if a follower had not caught up yet
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 0}, isolation_level=1)))[0]
    assert p.aborted_transactions == []
    assert (p.high_watermark, p.last_stable_offset) == (2, 2)
    assert [h.base_offset for _pos, h in iter_batches(p.records)] == [0]
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 0}, replica_id=1)))[0]
    assert [h.base_offset for _pos, h in iter_batches(p.records)] == [0, 2]
    p = by_index(await call(KEY, 15, fetch_body(services, "t", {0: 0}, version=15, replica_id=1)))[
        0
    ]
    assert [h.base_offset for _pos, h in iter_batches(p.records)] == [0, 2]


async def test_followers_and_consumers_get_file_slices_read_committed_bytes(call, services):
    """A follower's and a read_uncommitted consumer's records are a slice of the segment file
    (sent with sendfile), whose bytes are what a read_committed consumer reading up to the log
    end gets as bytes (its aborted transactions come from the bytes read)."""
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 2)
    append(services, "t", 0, 3)
    services.replicas.make_leader(
        "t", 0, leader_epoch=1, isr=[0, 1], replicas=[0, 1], partition_epoch=1, now_ms=0
    )
    services.replicas.partition("t", 0).log.high_watermark = 5

    async def records(**kw: Any) -> Any:
        got = await call(KEY, 15, fetch_body(services, "t", {0: 0}, version=15, **kw), raw=True)
        return got["responses"][0]["partitions"][0]["records"]

    follower = await records(replica_id=1)
    consumer = await records()
    committed = await records(isolation_level=1)
    assert isinstance(follower, FileSlice) and isinstance(consumer, FileSlice)
    assert isinstance(committed, bytes) and bytes(follower) == bytes(consumer) == committed
    assert [h.base_offset for _pos, h in iter_batches(committed)] == [0, 2]


async def test_diverging_epoch(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 3)
    ok = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 3}, last_fetched_epoch=0)))[0]
    assert ok.error_code == ErrorCode.NONE and ok.diverging_epoch.epoch == -1
    # an epoch newer than every epoch the leader knows: undefined end -> OFFSET_OUT_OF_RANGE
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 3}, last_fetched_epoch=5)))[0]
    assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and p.records == b""
    # a newer leadership at 2 from offset 3: a follower that fetched epoch 1 up to 4 diverges
    services.replicas.make_leader(
        "t", 0, leader_epoch=2, isr=[0], replicas=[0], partition_epoch=1, now_ms=0
    )
    append(services, "t", 0, 2)
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 4}, last_fetched_epoch=1)))[0]
    assert p.error_code == ErrorCode.NONE and p.records == b""
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (0, 3)
    p = by_index(await call(KEY, 12, fetch_body(services, "t", {0: 3}, last_fetched_epoch=0)))[0]
    assert p.diverging_epoch.epoch == -1 and len(p.records) > 0


# -- long poll ------------------------------------------------------------------------------


async def test_long_poll_times_out_after_max_wait(call, services, autojump_clock):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    start = trio.current_time()
    resp = await call(KEY, 12, fetch_body(services, "t", {0: 0}, max_wait_ms=500, min_bytes=1))
    assert trio.current_time() - start == pytest.approx(0.5)
    assert by_index(resp)[0].records == b""


async def test_long_poll_woken_by_produce(call, services, mock_clock):
    services.admin.create_topic("t", 2, now_ms=services.clock())
    result: list[Any] = []

    async def fetcher() -> None:
        result.append(
            await call(
                KEY, 12, fetch_body(services, "t", {0: 0, 1: 0}, max_wait_ms=5000, min_bytes=1)
            )
        )

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetcher)
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(1.0)
        await trio.testing.wait_all_tasks_blocked()
        assert result == []
        append(services, "t", 1, 2)
    assert trio.current_time() - start == pytest.approx(1.0)
    p = by_index(result[0])
    assert p[0].records == b"" and p[1].records


async def test_long_poll_waits_for_min_bytes(call, services, mock_clock):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    one = len(make_batch(services, 1))
    result: list[Any] = []

    async def fetcher() -> None:
        result.append(
            await call(
                KEY, 12, fetch_body(services, "t", {0: 0}, max_wait_ms=5000, min_bytes=2 * one + 1)
            )
        )

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetcher)
        await trio.testing.wait_all_tasks_blocked()
        append(services, "t", 0, 1)
        await trio.testing.wait_all_tasks_blocked()
        append(services, "t", 0, 1)
        await trio.testing.wait_all_tasks_blocked()
        assert result == []  # 2 batches, still below min_bytes
        append(services, "t", 0, 1)
    assert trio.current_time() == start
    assert len(by_index(result[0])[0].records) == 3 * one


async def test_long_poll_deadline_returns_partial_data(call, services, autojump_clock):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    append(services, "t", 0, 1)
    start = trio.current_time()
    resp = await call(
        KEY, 12, fetch_body(services, "t", {0: 0}, max_wait_ms=300, min_bytes=1 << 20)
    )
    assert trio.current_time() - start == pytest.approx(0.3)
    assert by_index(resp)[0].records


async def test_errors_answer_at_once(call, services, autojump_clock):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    start = trio.current_time()
    resp = await call(
        KEY, 12, fetch_body(services, "t", {0: 0, 9: 0}, max_wait_ms=5000, min_bytes=1)
    )
    assert trio.current_time() == start
    assert by_index(resp)[9].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_topic_deleted_during_long_poll(call, services, mock_clock):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    result: list[Any] = []

    async def fetcher() -> None:
        result.append(
            await call(KEY, 12, fetch_body(services, "t", {0: 0}, max_wait_ms=5000, min_bytes=1))
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetcher)
        await trio.testing.wait_all_tasks_blocked()
        services.admin.delete_topic("t")
    assert by_index(result[0])[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_a_follower_fetch_session_answers_only_what_changed(call, services):
    """KIP-227 between brokers: an INITIAL follower Fetch opens a session (all partitions in
    the answer); incremental ones name only what moved and get only partitions with records
    or a changed high watermark; forgotten partitions leave; a wrong epoch or session, or a
    closed one, is refused."""
    services.admin.create_topic("t", 3, now_ms=services.clock())
    follower_leads(services, "t", 3)
    append(services, "t", 0, 2)

    follower = session_fetcher(call, services, replica_id=1)

    first = await follower({0: 0, 1: 0, 2: 0}, 0, 0)
    sid = first.session_id
    assert first.error_code == ErrorCode.NONE and sid != 0
    assert set(by_index(first)) == {0, 1, 2} and by_index(first)[0].records
    # the follower appended the 2 records: its new position is named, nothing else is
    second = await follower({0: 2}, sid, 1)
    assert (second.error_code, second.session_id, by_index(second)) == (0, sid, {})
    # the leader counted that position: the high watermark moved, so partition 0 comes back
    third = await follower({}, sid, 2)
    assert set(by_index(third)) == {0} and by_index(third)[0].high_watermark == 2
    assert by_index(third)[0].records == b""
    # data on an idle partition: sent from the fetch offset the session holds for it
    append(services, "t", 1, 3)
    fourth = await follower({}, sid, 3)
    assert set(by_index(fourth)) == {1}
    assert [h.base_offset for _pos, h in iter_batches(by_index(fourth)[1].records)] == [0]
    # forget partition 1: its new records are no longer answered
    await follower({}, sid, 4, forget=[1])
    append(services, "t", 1, 1)
    append(services, "t", 2, 1)
    fifth = await follower({}, sid, 5)
    assert set(by_index(fifth)) == {2}
    # a stale epoch, another session id: refused, nothing moves
    for body_sid, epoch in ((sid, 5), (sid + 1, 6)):
        bad = await follower({}, body_sid, epoch)
        code = (
            ErrorCode.INVALID_FETCH_SESSION_EPOCH
            if body_sid == sid
            else ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        )
        assert (bad.error_code, bad.session_id, bad.responses) == (code, 0, [])
    assert (await follower({}, sid, 6)).error_code == ErrorCode.NONE
    # FINAL closes it: a full, sessionless answer, then the id is unknown
    final = await follower({0: 2}, sid, -1)
    assert (final.error_code, final.session_id, set(by_index(final))) == (0, 0, {0})
    assert (await follower({}, sid, 7)).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    # consumers get sessions too (unprivileged: tests/unit/replication/test_fetch_sessions.py)
    consumer = await call(KEY, 12, fetch_body(services, "t", {0: 0}, session_epoch=0))
    assert consumer.error_code == ErrorCode.NONE and consumer.session_id not in (0, sid)


async def test_a_consumer_fetch_session(call, services):
    """KIP-227 for consumers (Kafka's FetchManager): INITIAL opens a session; incremental
    fetches get only partitions with records or a changed high watermark, those that sent
    records go to the end of the session's order; forgetting every partition closes the
    session (a sessionless answer); FINAL closes it; a full cache makes none."""
    services.admin.create_topic("t", 3, now_ms=services.clock())
    for i in range(3):
        append(services, "t", i, 1)

    consumer = session_fetcher(call, services)

    first = await consumer({0: 0, 1: 0, 2: 0}, 0, 0)
    sid = first.session_id
    assert sid != 0 and [p.partition_index for p in first.responses[0].partitions] == [0, 1, 2]
    # the consumer moved past the records it got: named, nothing new to answer
    second = await consumer({0: 1, 1: 1, 2: 1}, sid, 1)
    assert (second.error_code, second.session_id, second.responses) == (0, sid, [])
    # records on partitions 0 and 1, a budget for one (max_bytes 1: the first partition with
    # records gets its first batch, later ones nothing): 0 sends records and goes last, 1 is
    # answered for its new high watermark
    append(services, "t", 1, 1)
    append(services, "t", 0, 1)
    third = await consumer({}, sid, 2, max_bytes=1)
    assert list(by_index(third)) == [0, 1] and by_index(third)[0].records
    assert not by_index(third)[1].records and by_index(third)[1].high_watermark == 2
    fourth = await consumer({0: 2}, sid, 3, max_bytes=1)
    assert list(by_index(fourth)) == [1] and by_index(fourth)[1].records
    assert list(services.fetch_sessions.get(sid).partitions) == [("t", 2), ("t", 0), ("t", 1)]
    # a session left empty is closed; the request is served sessionless
    gone = await consumer({}, sid, 4, forget=[0, 1, 2])
    assert (gone.error_code, gone.session_id, gone.responses) == (0, 0, [])
    assert (await consumer({}, sid, 5)).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    # FINAL with a session: closed, a full sessionless answer
    sid = (await consumer({0: 0}, 0, 0)).session_id
    final = await consumer({0: 0}, sid, -1)
    assert (final.session_id, list(by_index(final))) == (0, [0])
    assert services.fetch_sessions.get(sid) is None


async def test_a_consumer_session_skips_partitions_read_to_their_end(call, services):
    """In a consumer's incremental fetch, a partition whose fetch offset was the high
    watermark at the last read, with nothing changed since (leader epoch, HW, log start,
    LSO) and that HW and log start sent, is not read again (the read would answer nothing);
    new records or naming it again end that."""
    services.admin.create_topic("t", 3, now_ms=services.clock())
    append(services, "t", 0, 2)
    reads = count_reads(services, "t", 3)

    consumer = session_fetcher(call, services)

    sid = (await consumer({0: 0, 1: 0, 2: 0}, 0, 0)).session_id
    assert sorted(reads) == [0, 1, 2]
    reads.clear()
    # 1 and 2 were read at their end: skipped; 0 is named at its new position: read
    assert (await consumer({0: 2}, sid, 1)).responses == []
    assert reads == [0]
    reads.clear()
    assert (await consumer({}, sid, 2)).responses == [] and reads == []  # all quiet
    append(services, "t", 2, 1)  # records on 2: its HW moves, it is read and answered
    assert list(by_index(await consumer({}, sid, 3))) == [2] and reads == [2]
    reads.clear()
    assert (await consumer({2: 1}, sid, 4)).responses == [] and reads == [2]
    reads.clear()
    assert (await consumer({}, sid, 5)).responses == [] and reads == []


async def test_no_session_when_the_cache_has_no_slot(make_services, call_with):
    services = make_services(**{"max.incremental.fetch.session.cache.slots": "0"})
    services.admin.create_topic("t", 1, now_ms=services.clock())
    body = fetch_body(services, "t", {0: 0}, session_epoch=0)
    resp = await call_with(services, KEY, 12, body)
    assert (resp.error_code, resp.session_id, len(resp.responses)) == (0, 0, 1)


async def test_a_quiet_session_partition_is_not_read_again(call, services, clock):
    """In an incremental fetch, a session partition where the follower is in the ISR and at
    the log end with the HW there too, as when last answered, is not read again: its
    follower's caught-up time moves, nothing is answered; new records on it end that."""
    services.admin.create_topic("t", 3, now_ms=services.clock())
    follower_leads(services, "t", 3)
    append(services, "t", 0, 2)
    parts = [services.replicas.partition("t", i) for i in range(3)]
    reads = count_reads(services, "t", 3)

    follower = session_fetcher(call, services, replica_id=1)

    first = await follower({0: 0, 1: 0, 2: 0}, 0, 0)
    sid = first.session_id
    assert set(by_index(first)) == {0, 1, 2} and sorted(reads) == [0, 1, 2]
    reads.clear()
    # partition 0 moves (and its HW after this fetch); 1 and 2 are quiet: not read
    assert by_index(await follower({0: 2}, sid, 1)) == {}
    assert reads == [0]
    reads.clear()
    clock.advance(5_000)
    answer = await follower({}, sid, 2)
    assert set(by_index(answer)) == {0} and by_index(answer)[0].high_watermark == 2
    assert reads == [0]  # 0's HW moved after the last answer: read and answered once more
    for part in parts[1:]:
        assert part.followers[1].last_caught_up_ms == clock()
    reads.clear()
    clock.advance(5_000)
    assert by_index(await follower({}, sid, 3)) == {} and reads == []  # all quiet now
    assert parts[0].followers[1].last_caught_up_ms == clock()
    # records on a quiet partition: read and answered from the session's fetch offset
    append(services, "t", 1, 3)
    answer = await follower({}, sid, 4)
    assert set(by_index(answer)) == {1} and reads == [1]
    assert [h.base_offset for _pos, h in iter_batches(by_index(answer)[1].records)] == [0]


async def test_a_quiet_partitions_caught_up_time_moves_at_most_every_quiet_touch_ms(
    call, services, clock
):
    """Skipped quiet partitions refresh their follower's caught-up time at most every
    `ReplicaManager.quiet_touch_ms` (not on every fetch): within it the recorded time stays,
    after it the next fetch moves it."""
    services.admin.create_topic("t", 2, now_ms=services.clock())
    follower_leads(services, "t", 2)
    quiet = services.replicas.partition("t", 1)
    interval = services.replicas.quiet_touch_ms
    assert 1 <= interval <= 100

    follower = session_fetcher(call, services, replica_id=1)

    first = await follower({0: 0, 1: 0}, 0, 0)
    sid = first.session_id
    recorded = quiet.followers[1].last_caught_up_ms
    assert recorded == clock()
    clock.advance(interval - 1)
    await follower({}, sid, 1)  # quiet, within the interval: not recorded again
    assert quiet.followers[1].last_caught_up_ms == recorded
    clock.advance(1)
    await follower({}, sid, 2)  # the interval is over: recorded
    assert quiet.followers[1].last_caught_up_ms == clock() == recorded + interval


async def test_a_quiet_partition_keeps_an_hw_the_follower_has_not_been_sent(
    call, services, mock_clock
):
    """A partition is skipped as quiet only once the follower has been sent what its stamp
    holds: one read at the new HW in a long poll's first pass is not skipped in the re-read
    after the wake-up, so the answer sent then carries that HW (before, it was left out of
    that answer and skipped ever after: the follower never learned the HW)."""
    services.admin.create_topic("t", 2, now_ms=services.clock())
    follower_leads(services, "t", 2)
    append(services, "t", 0, 2)

    follower = session_fetcher(call, services, replica_id=1, min_bytes=1)

    sid = (await follower({0: 0, 1: 0}, 0, 0)).session_id
    # at the log end of 0: its HW moves to 2 only after this answer (HW 0) was built
    assert by_index(await follower({0: 2}, sid, 1)) == {}
    assert services.replicas.partition("t", 0).high_watermark == 2
    result: list[Any] = []

    async def parked() -> None:  # 0 is read at HW 2 (quiet), then parks; 1's data wakes it
        result.append(await follower({}, sid, 2, max_wait_ms=5000))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(parked)
        await trio.testing.wait_all_tasks_blocked()
        append(services, "t", 1, 1)
    woken = by_index(result[0])
    assert set(woken) == {0, 1} and woken[0].high_watermark == 2 and woken[1].records
    # now the follower has it: quiet, skipped
    assert set(by_index(await follower({1: 1}, sid, 3))) == set()
