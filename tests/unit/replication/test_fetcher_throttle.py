"""The follower's side of the replication throttle (KIP-73, Kafka's ReplicaFetcherThread
rules) in wirebroker.replication.fetcher: over the follower quota, a throttled partition that
is not in sync is left out of the next Fetch until the rate is back under the bound; in sync
(its last answer reached the leader's high watermark) it never is; the records appended of a
throttled partition are recorded. No sockets: the fetcher's round planning and answer handling
are called directly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from protocol.records import build_batch
from tests.unit.local_metadata import Leader, LocalTopicAdmin, lead_every_partition
from wirebroker.config import BrokerConfig
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.fetcher import ReplicaFetcherManager, _Follow, _LeaderFetcher
from wirebroker.replication.replica_manager import ReplicaManager

NOW = 1_700_000_000_000
LEADER = 1


class Clock:
    def __init__(self) -> None:
        self.now_ms = NOW

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[ReplicaManager, LeaderFetcherEnv]]:
    config = BrokerConfig({"node.id": "0", "log.dirs": str(tmp_path)})
    topics = TopicStore.open(tmp_path)
    logs = LogManager([tmp_path])
    rm = ReplicaManager(config, logs, topics, node_id=0)
    rm.load(NOW)
    lead_every_partition(rm, NOW)
    admin = LocalTopicAdmin(config, topics, logs, node_id=0, listener=Leader(rm, lambda: NOW))
    clock = Clock()
    manager = ReplicaFetcherManager(
        rm,
        node_id=0,
        endpoint=lambda _node: None,
        broker_epoch=lambda: 0,
        config=config,
        clock=clock,
    )
    admin.create_topic("t", 2, now_ms=NOW)
    for index in (0, 1):
        rm.make_follower(
            "t",
            index,
            leader_id=LEADER,
            leader_epoch=1,
            isr=[LEADER],
            replicas=[LEADER, 0],
            partition_epoch=1,
            now_ms=NOW,
        )
    admin.alter_topic_configs("t", {"follower.replication.throttled.replicas": "0:0"})
    yield rm, LeaderFetcherEnv(manager._fetchers[LEADER], clock)
    logs.close()


class LeaderFetcherEnv:
    def __init__(self, fetcher: _LeaderFetcher, clock: Clock) -> None:
        self.fetcher = fetcher
        self.clock = clock

    def follow(self, index: int) -> _Follow:
        return self.fetcher.follows[("t", index)]

    def ready(self) -> tuple[list[int], float]:
        ready, backoff_end = self.fetcher._scan()
        return sorted(f.part.index for f in ready), backoff_end


async def test_a_throttled_partition_waits_out_the_follower_quota(env: Any) -> None:
    rm, f = env
    quota = rm.quotas.follower
    assert quota.is_throttled("t", 0) and not quota.is_throttled("t", 1)
    assert f.ready() == ([0, 1], float("inf"))  # unlimited: nothing is left out
    quota.bound = 1000
    quota.record(1500, f.clock())  # 1500 B/s in the first window: over until 1.5 s later
    ready, backoff_end = f.ready()
    assert ready == [1]
    # at most replica.fetch.backoff.ms (1 s) at a time: the rate may change meanwhile
    assert backoff_end == pytest.approx(trio.current_time() + 1.0, abs=0.05)
    f.follow(0).delay_until = trio.current_time()  # 1.5 s later the rate is back at the bound
    f.clock.now_ms += 1500
    assert f.ready() == ([0, 1], float("inf"))


async def test_a_follower_in_sync_is_never_throttled(env: Any) -> None:
    rm, f = env
    quota = rm.quotas.follower
    quota.bound = 1
    quota.record(10_000, f.clock())
    assert f.ready()[0] == [1]
    follow = f.follow(0)
    follow.delay_until = trio.current_time()
    follow.in_sync = True
    assert f.ready()[0] == [0, 1]


async def test_an_answer_is_recorded_and_tells_whether_the_follower_is_in_sync(env: Any) -> None:
    rm, f = env
    quota = rm.quotas.follower
    part = rm.partition("t", 0)
    records = build_batch([(None, b"x" * 200)] * 2, base_timestamp=NOW, partition_leader_epoch=1)
    answer = {"error_code": 0, "records": records, "high_watermark": 5, "log_start_offset": 0}
    await f.fetcher._handle(f.follow(0), part.log_end_offset, answer)
    assert part.log_end_offset == 2
    assert quota.rate(f.clock()) == len(records)  # one window: bytes per second
    assert not f.follow(0).in_sync  # the leader's high watermark is 5
    more = build_batch(
        [(None, b"y")] * 3, base_timestamp=NOW, base_offset=2, partition_leader_epoch=1
    )
    await f.fetcher._handle(f.follow(0), part.log_end_offset, {**answer, "records": more})
    assert part.log_end_offset == 5 and f.follow(0).in_sync
    other = rm.partition("t", 1)
    await f.fetcher._handle(f.follow(1), other.log_end_offset, answer)
    assert quota.rate(f.clock()) == len(records) + len(more)  # partition 1 is not throttled
