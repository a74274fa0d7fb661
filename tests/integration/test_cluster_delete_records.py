"""DeleteRecords in a replicated partition (Kafka's DelayedDeleteRecords): three real
`Broker`s over the in-memory ZooKeeper (`_memory_cluster.py`), replication factor 3.

The leader moves its log start at once and answers once every live follower has moved its
own (each learns the leader's log start from a Fetch response and reports its own in the next
Fetch); a follower that stops fetching holds the answer until the request's timeout_ms
(REQUEST_TIMED_OUT, with the low watermark reached so far), and catches up once it fetches
again. Followers delete their whole segments below the new log start, as the leader does.
"""

from __future__ import annotations

from typing import Any

import trio
from _memory_cluster import Cluster, eventually, leader_of, wait_roles

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.replication.partition import Partition

TOPIC = "d"


async def delete_records(cluster: Cluster, node: int, offset: int, timeout_ms: int) -> Any:
    body = {
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": offset}]}],
        "timeout_ms": timeout_ms,
    }
    resp = await cluster.request(node, ApiKey.DELETE_RECORDS, 2, body)
    return resp.topics[0].partitions[0]


def segment_bases(part: Partition) -> list[int]:
    return [seg.base_offset for seg in part.log.segments]


async def test_delete_records_waits_for_the_followers_and_times_out_without_one(
    cluster: Cluster,
) -> None:
    configs = {"internal.segment.bytes": "1024", "min.insync.replicas": "2"}
    assert await cluster.create_topic(0, TOPIC, 1, 3, configs=configs) == ErrorCode.NONE
    await wait_roles(cluster, TOPIC, 1)
    leader = await leader_of(cluster, TOPIC, 0)
    followers = [n for n in range(3) if n != leader]
    for i in range(20):
        code, base = await cluster.produce(leader, TOPIC, 0, [b"x" * 300])
        assert (code, base) == (ErrorCode.NONE, i)
    parts = {n: cluster.nodes[n].part(TOPIC, 0) for n in range(3)}
    assert all(len(segment_bases(p)) > 3 for p in parts.values())

    # every follower runs: the answer comes once each one moved its log start
    p = await delete_records(cluster, leader, 12, timeout_ms=10_000)
    assert (p.error_code, p.low_watermark) == (ErrorCode.NONE, 12)
    for n in range(3):
        assert parts[n].log_start_offset == 12, f"broker {n}"
        bases = segment_bases(parts[n])
        assert bases[0] <= 12 and all(b > 12 for b in bases[1:]), f"broker {n}: {bases}"
    assert (await cluster.fetch(leader, TOPIC, 0, 0))[0] == ErrorCode.OFFSET_OUT_OF_RANGE

    # one follower stops fetching: the leader times out, with the low watermark it has
    stopped, running = followers
    fetchers = cluster.nodes[stopped].broker.fetchers
    assert fetchers is not None
    fetchers.unfollow(TOPIC, 0)
    start = trio.current_time()
    p = await delete_records(cluster, leader, 16, timeout_ms=600)
    took = trio.current_time() - start
    assert (p.error_code, p.low_watermark) == (ErrorCode.REQUEST_TIMED_OUT, 12)
    assert 0.6 <= took < 5.0
    assert parts[leader].log_start_offset == 16  # the leader's own delete stands
    await eventually(lambda: parts[running].log_start_offset == 16, "the running follower")
    assert parts[stopped].log_start_offset == 12

    # it fetches again: it catches up, and a DeleteRecords at the same offset completes
    fetchers.follow(TOPIC, 0, parts[stopped].leader_id, parts[stopped].leader_epoch)
    p = await delete_records(cluster, leader, 16, timeout_ms=10_000)
    assert (p.error_code, p.low_watermark) == (ErrorCode.NONE, 16)
    assert parts[stopped].log_start_offset == 16
