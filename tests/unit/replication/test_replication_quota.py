"""The replication throttle's quota (wirebroker.replication.quota), with an injected clock:
Kafka's SimpleRate over its sample windows, the throttled-replica lists, the rates' sources,
and a follower catching up a throttled partition at the configured rate."""

from __future__ import annotations

import pytest

from wirebroker.config import LONG_MAX, BrokerConfig
from wirebroker.replication.quota import (
    ALL_REPLICAS,
    ReplicationQuota,
    ReplicationQuotas,
    dynamic_rate,
    throttled_partitions,
)

KIB = 1024


def test_the_first_window_counts_whole() -> None:
    """A burst at once is measured over one whole window, not over 0 ms."""
    quota = ReplicationQuota(samples=11, window_ms=1000, bound=1000)
    quota.record(1000, now_ms=0)
    assert quota.rate(0) == 1000.0
    assert not quota.exceeded(0)  # at the bound is not over it
    quota.record(1, now_ms=10)
    assert quota.exceeded(10)


def test_rate_is_bytes_over_the_time_since_the_oldest_sample() -> None:
    quota = ReplicationQuota(samples=11, window_ms=1000, bound=500)
    quota.record(1000, now_ms=0)
    assert quota.exceeded(1000)
    assert quota.wait_ms(1000) == 1000  # 1000 bytes at 500 B/s: 2 s after the first
    assert quota.rate(2000) == 500.0
    assert not quota.exceeded(2000)
    assert quota.wait_ms(2000) == 0
    quota.record(1000, now_ms=2500)  # a new sample (the first is complete)
    assert quota.rate(4000) == 500.0  # 2000 bytes over 4 s


def test_samples_expire_after_the_windows_they_span() -> None:
    """A sample whose last event is `samples` windows old is reset: the rate forgets it."""
    quota = ReplicationQuota(samples=3, window_ms=1000, bound=100)
    quota.record(10_000, now_ms=0)
    assert quota.exceeded(2999)
    assert quota.wait_ms(2999) == 1  # all expire at 3000, long before 100 B/s is reached
    assert quota.rate(3000) == 0.0
    assert not quota.exceeded(3000)


def test_samples_move_round() -> None:
    """Steady traffic: the current sample moves round the samples + 1 slots, and the rate
    counts those whose last event is less than `samples` windows old."""
    quota = ReplicationQuota(samples=2, window_ms=100, bound=LONG_MAX)
    for t in range(0, 1000, 100):
        quota.record(100, now_ms=t)
    assert quota.rate(900) == pytest.approx(200 * 1000 / 100)  # the samples of 800 and 900
    assert quota.rate(950) == pytest.approx(200 * 1000 / 150)
    assert quota.rate(1100) == 0.0


def test_unlimited_is_never_exceeded() -> None:
    quota = ReplicationQuota(samples=11, window_ms=1000)
    quota.record(10**15, now_ms=0)
    assert quota.unlimited and not quota.exceeded(0) and quota.wait_ms(0) == 0


def test_a_zero_rate_lets_nothing_through_until_the_samples_expire() -> None:
    quota = ReplicationQuota(samples=11, window_ms=1000, bound=0)
    assert not quota.exceeded(0)  # nothing recorded: 0 B/s is not over 0
    quota.record(1, now_ms=0)
    assert quota.exceeded(5000)
    assert quota.wait_ms(5000) == 6000


@pytest.mark.parametrize(
    ("value", "node", "expected"),
    [
        (None, 1, None),
        ("", 1, None),
        ("*", 7, ALL_REPLICAS),
        ("0:1,1:2,2:1", 1, frozenset({0, 2})),
        ("0:1,1:2,2:1", 2, frozenset({1})),
        ("0:1,1:2", 3, None),
        (" 4:0 , 5:0", 0, frozenset({4, 5})),
    ],
)
def test_throttled_partitions_of_this_broker(
    value: str | None, node: int, expected: frozenset[int] | None
) -> None:
    assert throttled_partitions(value, node) == expected


def test_throttled_replicas_follow_the_topic_configs() -> None:
    quotas = ReplicationQuotas(BrokerConfig(), node_id=2)
    quotas.on_topic(
        "t",
        {
            "leader.replication.throttled.replicas": "0:1,1:2",
            "follower.replication.throttled.replicas": "*",
        },
    )
    assert [quotas.leader.is_throttled("t", i) for i in range(3)] == [False, True, False]
    assert all(quotas.follower.is_throttled("t", i) for i in range(3))
    assert not quotas.leader.is_throttled("u", 1)
    quotas.on_topic("t", {"follower.replication.throttled.replicas": "0:2"})
    assert not quotas.leader.throttles_any
    assert quotas.follower.throttled_topics() == {"t": frozenset({0})}
    quotas.forget_topic("t")
    assert not quotas.follower.throttles_any


def test_the_rates_are_the_dynamic_values_only() -> None:
    """This broker's dynamic value, else the cluster default; a static value is ignored (as
    Kafka's broker config handler reads them); unset: unlimited."""
    config = BrokerConfig({"leader.replication.throttled.rate": "5"})
    assert dynamic_rate(config, "leader.replication.throttled.rate") == LONG_MAX
    config.set_dynamic(default={"leader.replication.throttled.rate": "300"})
    assert dynamic_rate(config, "leader.replication.throttled.rate") == 300
    config.set_dynamic(broker={"leader.replication.throttled.rate": " 200 "})
    quotas = ReplicationQuotas(config, node_id=0)
    assert (quotas.leader.bound, quotas.follower.bound) == (200, LONG_MAX)
    config.set_dynamic(default={}, broker={"follower.replication.throttled.rate": "7"})
    quotas.update_rates(config)
    assert (quotas.leader.bound, quotas.follower.bound) == (LONG_MAX, 7)


def catch_up(backlog: int, rate: int, *, fetch_bytes: int, step_ms: int = 5) -> tuple[int, int]:
    """A follower out of the ISR catching up `backlog` bytes of a throttled partition from
    its leader, both throttled at `rate` (0: not throttled), with the rules of
    wirebroker.replication.fetcher and handlers.fetch: the follower asks only while its quota
    is not exceeded, the leader answers without records while its own is, else with up to
    `fetch_bytes`; both record what was sent. One fetch every `step_ms` of virtual time.
    Returns (ms until caught up, fetches that carried records)."""
    bound = rate or LONG_MAX
    leader = ReplicationQuota(samples=11, window_ms=1000, bound=bound)
    follower = ReplicationQuota(samples=11, window_ms=1000, bound=bound)
    left, now, fetches = backlog, 0, 0
    while left > 0:
        if not follower.exceeded(now) and not leader.exceeded(now):
            size = min(fetch_bytes, left)
            leader.record(size, now)
            follower.record(size, now)
            left -= size
            fetches += 1
        now += step_ms
    return now, fetches


@pytest.mark.parametrize("rate", [100 * KIB, 1024 * KIB])
def test_a_throttled_follower_catches_up_at_the_configured_rate(rate: int) -> None:
    """60 s worth of backlog at the rate, fetched 64 KiB at a time: the achieved rate is the
    configured one within 5 % (the first window and one fetch are the only burst)."""
    backlog = 60 * rate
    elapsed_ms, _ = catch_up(backlog, rate, fetch_bytes=64 * KIB)
    achieved = backlog / (elapsed_ms / 1000)
    assert achieved == pytest.approx(rate, rel=0.05)
    unthrottled_ms, fetches = catch_up(backlog, 0, fetch_bytes=64 * KIB)
    assert unthrottled_ms == fetches * 5  # a fetch every step: 1000x faster here


def test_a_large_fetch_is_the_burst_and_the_next_waits_for_the_rate() -> None:
    """With Kafka's 1 MiB fetches at 256 KiB/s: 1 MiB at once, the next 4 s later."""
    elapsed_ms, fetches = catch_up(2 * 1024 * KIB, 256 * KIB, fetch_bytes=1024 * KIB, step_ms=1)
    assert fetches == 2
    assert 4000 <= elapsed_ms <= 4002
