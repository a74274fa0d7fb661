"""Fetch and ListOffsets over transactional data (the log side of issue 14): read_committed
stops at the last stable offset and lists the aborted transactions of the returned batches;
read_uncommitted sees everything below the high watermark with the LSO filled in;
ListOffsets latest is the LSO for read_committed. Markers are appended directly, as the
coordinator's WriteTxnMarkers will."""

from __future__ import annotations

from typing import Any

from test_fetch import by_index, fetch_body
from test_list_offsets import req

import wirebroker.handlers.fetch
import wirebroker.handlers.list_offsets  # noqa: F401
from protocol.api import ApiKey
from protocol.records import build_batch, iter_batches


def txn(services: Any, pid: int, seq: int, n: int = 2) -> None:
    now = services.clock()
    data = build_batch(
        [(b"k", b"v%d" % i) for i in range(n)],
        base_timestamp=now,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )
    services.replicas.append(services.replicas.partition("t", 0), data, now_ms=now)


def end(services: Any, pid: int, *, commit: bool) -> None:
    part = services.replicas.partition("t", 0)
    part.log.append_marker(
        pid, 0, commit=commit, coordinator_epoch=0, leader_epoch=0, now_ms=services.clock()
    )
    part.log.high_watermark = part.log.log_end_offset


def plain(services: Any, n: int = 1) -> None:
    now = services.clock()
    data = build_batch([(None, b"p")] * n, base_timestamp=now)
    services.replicas.append(services.replicas.partition("t", 0), data, now_ms=now)


async def test_read_committed_fetch_and_list_offsets(call, services):
    services.admin.create_topic("t", 1, now_ms=services.clock())
    txn(services, 1, 0)  # 0-1 aborted
    txn(services, 2, 0)  # 2-3 committed
    end(services, 1, commit=False)  # 4
    end(services, 2, commit=True)  # 5
    plain(services)  # 6
    txn(services, 3, 0)  # 7-8 ongoing
    plain(services, 2)  # 9-10
    for version in (4, 11, 12):
        committed = by_index(
            await call(
                ApiKey.FETCH,
                version,
                fetch_body(services, "t", {0: 0}, version=version, isolation_level=1),
            )
        )[0]
        assert (committed.high_watermark, committed.last_stable_offset) == (11, 7)
        assert [h.base_offset for _, h in iter_batches(committed.records)] == [0, 2, 4, 5, 6]
        assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(1, 0)]
        uncommitted = by_index(
            await call(ApiKey.FETCH, version, fetch_body(services, "t", {0: 0}, version=version))
        )[0]
        assert (uncommitted.high_watermark, uncommitted.last_stable_offset) == (11, 7)
        assert uncommitted.aborted_transactions is None
        assert [h.base_offset for _, h in iter_batches(uncommitted.records)][-1] == 9
    # from past the aborted transaction: nothing to list
    p = by_index(
        await call(ApiKey.FETCH, 12, fetch_body(services, "t", {0: 5}, isolation_level=1))
    )[0]
    assert p.aborted_transactions == []
    # at the LSO: no records yet
    p = by_index(
        await call(ApiKey.FETCH, 12, fetch_body(services, "t", {0: 7}, isolation_level=1))
    )[0]
    assert p.records in (b"", None) and p.aborted_transactions == []

    async def latest(isolation: int) -> int:
        resp = await call(ApiKey.LIST_OFFSETS, 5, req("t", [(0, -1)], isolation_level=isolation))
        return resp.topics[0].partitions[0].offset

    assert await latest(0) == 11
    assert await latest(1) == 7
    end(services, 3, commit=False)  # 11
    assert await latest(1) == 12
    p = by_index(
        await call(ApiKey.FETCH, 12, fetch_body(services, "t", {0: 0}, isolation_level=1))
    )[0]
    assert p.last_stable_offset == 12
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(1, 0), (3, 7)]
