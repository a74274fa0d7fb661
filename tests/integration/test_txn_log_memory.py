"""The log side of transactions in a replicated partition, over real sockets: transactional
batches appended at the leader, COMMIT/ABORT markers written there (as WriteTxnMarkers will),
followers replicating the markers (their producer state, LSO and `.txnindex` follow), and a
consumer's read_committed Fetch (LSO, aborted_transactions) and ListOffsets over TCP.
Three in-process brokers over one in-memory ZooKeeper (`_memory_cluster`)."""

from __future__ import annotations

from typing import Any

from _memory_cluster import Cluster, eventually, leader_of, wait_roles

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch, iter_batches

TOPIC = "txn"


def fetch_body(offset: int, isolation: int) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 24,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 24,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


async def test_markers_replicate_and_read_committed_over_tcp(cluster: Cluster) -> None:
    assert await cluster.create_topic(0, TOPIC, 1, 3) == 0
    await wait_roles(cluster, TOPIC, 1)
    leader = await leader_of(cluster, TOPIC, 0)
    node = cluster.nodes[leader]
    lead = node.part(TOPIC, 0)
    now = node.broker.clock()

    def txn_batch(pid: int, n: int) -> bytes:
        return build_batch(
            [(b"k", b"%d-%d" % (pid, i)) for i in range(n)],
            base_timestamp=now,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )

    node.broker.replicas.append(lead, txn_batch(1, 3), now_ms=now)  # 0-2, aborted below
    node.broker.replicas.append(lead, txn_batch(2, 2), now_ms=now)  # 3-4, committed
    node.broker.replicas.append(lead, txn_batch(3, 1), now_ms=now)  # 5, stays open
    lead.append_marker(1, 0, commit=False, coordinator_epoch=0, now_ms=now)  # 6
    lead.append_marker(2, 0, commit=True, coordinator_epoch=0, now_ms=now)  # 7
    node.broker.replicas.notify_data(TOPIC, 0)
    assert await cluster.produce(leader, TOPIC, 0, [b"plain"]) == (ErrorCode.NONE, 8)
    assert lead.high_watermark == 9

    followers = [cluster.nodes[n].part(TOPIC, 0) for n in range(3) if n != leader]
    await eventually(
        lambda: all(f.high_watermark == 9 and f.log_end_offset == 9 for f in followers),
        "followers caught up",
    )
    for f in [lead, *followers]:
        assert f.last_stable_offset == 5
        assert f.log.ongoing_transactions() == {3: 5}
        entries = [
            (e.producer_id, e.first_offset, e.last_offset)
            for s in f.log.segments
            for e in s.txn_index.entries
        ]
        assert entries == [(1, 0, 6)]

    resp = await cluster.request(leader, ApiKey.FETCH, 12, fetch_body(0, 1))
    p = resp.responses[0].partitions[0]
    assert (p.error_code, p.high_watermark, p.last_stable_offset) == (0, 9, 5)
    assert [h.base_offset for _, h in iter_batches(p.records)] == [0, 3]
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(1, 0)]
    resp = await cluster.request(leader, ApiKey.FETCH, 12, fetch_body(0, 0))
    p = resp.responses[0].partitions[0]
    assert p.last_stable_offset == 5 and p.aborted_transactions is None
    assert [h.base_offset for _, h in iter_batches(p.records)][-1] == 8

    lo = {
        "replica_id": -1,
        "isolation_level": 1,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    }
    resp = await cluster.request(leader, ApiKey.LIST_OFFSETS, 5, lo)
    assert resp.topics[0].partitions[0].offset == 5

    lead.append_marker(3, 0, commit=True, coordinator_epoch=0, now_ms=now)  # 9
    node.broker.replicas.notify_data(TOPIC, 0)
    assert await cluster.produce(leader, TOPIC, 0, [b"after"]) == (ErrorCode.NONE, 10)
    await eventually(lambda: all(f.last_stable_offset == 11 for f in followers), "LSO moves")
    resp = await cluster.request(leader, ApiKey.FETCH, 12, fetch_body(0, 1))
    p = resp.responses[0].partitions[0]
    assert p.last_stable_offset == 11
    assert [h.base_offset for _, h in iter_batches(p.records)] == [0, 3, 5, 6, 7, 8, 9, 10]
