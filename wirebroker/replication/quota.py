"""Replication throttles (KIP-73): byte-rate quotas on the replication of chosen replicas.

Pure (no trio, no clock of its own: every call that needs the time takes `now_ms`).

What is throttled. A topic's `leader.replication.throttled.replicas` and
`follower.replication.throttled.replicas` configs list `partition:broker` pairs (or `*`, every
replica). Each broker takes the pairs naming itself: the partitions it throttles as a leader
(what it sends to followers) and as a follower (what it fetches). `ReplicationQuotas.on_topic`
reads them whenever a topic's configs change or one of its partitions is hosted here.

How fast. `leader.replication.throttled.rate` / `follower.replication.throttled.rate` (bytes
per second; dynamic broker configs, this broker's value else the cluster default, else
unlimited: wirebroker.config.BROKER_QUOTA_CONFIGS). A `ReplicationQuota` measures the bytes of
its throttled partitions as Kafka's ReplicationQuotaManager does (a sensor with a SimpleRate
over `replication.quota.window.num` samples of `replication.quota.window.size.seconds`):

    record(n, now)   n bytes go into the current sample; a sample is complete once it is a
                     window old, and the next one (a new one, or the oldest reset) starts at
                     `now`; at most samples + 1 are kept
    rate(now)        samples whose last event is `samples` windows old or more are reset
                     (value 0, starting at `now`); the sum of the samples' bytes divided by
                     max(now - the oldest sample's start, one window) (the first window counts
                     as a whole window, so a burst is not measured as an enormous rate)
    exceeded(now)    rate(now) > the bound (never, unlimited)

Recording never refuses: a fetch that starts under the quota is served whole (up to its byte
limits), and the next one waits until the rate is back under the bound, so the long-run rate
is the bound and a single fetch (replica.fetch.max.bytes per partition) is the largest burst.

Where it applies (Kafka's rules; replicas in the ISR are never throttled):
    leader    a follower's Fetch: a throttled partition whose follower is out of the ISR is
              answered without records while the leader quota is exceeded (and counts for
              nothing towards min_bytes); the records sent of every throttled partition,
              in the ISR or not, are recorded (wirebroker.handlers.fetch)
    follower  a throttled partition is left out of the next Fetch while the follower quota is
              exceeded, unless the follower is in sync (its last fetch reached the leader's
              high watermark); the records fetched of every throttled partition are recorded
              (wirebroker.replication.fetcher)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from wirebroker.config import BROKER_QUOTA_CONFIGS, LONG_MAX

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig

__all__ = [
    "ALL_REPLICAS",
    "FOLLOWER_RATE",
    "LEADER_RATE",
    "ReplicationQuota",
    "ReplicationQuotas",
    "dynamic_rate",
    "throttled_partitions",
]

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"

#: Every partition of the topic (`*`).
ALL_REPLICAS: frozenset[int] = frozenset({-1})


def throttled_partitions(value: str | None, node_id: int) -> frozenset[int] | None:
    """The partitions of a `*.replication.throttled.replicas` value throttled on `node_id`:
    ALL_REPLICAS for `*`, None when none (unset, empty, or no pair names this broker). The
    value was validated when it was set (wirebroker.metadata.topic_configs); a pair that does
    not parse is skipped."""
    text = (value or "").strip()
    if not text:
        return None
    if text == "*":
        return ALL_REPLICAS
    out = set()
    for item in text.split(","):
        partition, _, broker = item.strip().partition(":")
        if partition.isdigit() and broker.isdigit() and int(broker) == node_id:
            out.add(int(partition))
    return frozenset(out) or None


def dynamic_rate(config: BrokerConfig, name: str) -> int:
    """A broker quota's bound: this broker's dynamic value, else the cluster default's, else
    unlimited (LONG_MAX), as Kafka's broker config handler reads it."""
    for layer in (config.dynamic_broker, config.dynamic_default):
        raw = layer.get(name)
        if raw is not None:
            try:
                return int(raw.strip())
            except ValueError:
                break  # refused when set; never applied
    return int(BROKER_QUOTA_CONFIGS[name].default or LONG_MAX)


class ReplicationQuota:
    """One byte-rate quota and the partitions it throttles (see the module doc)."""

    def __init__(self, *, samples: int = 11, window_ms: int = 1000, bound: int = LONG_MAX) -> None:
        self.samples = max(1, samples)
        self.window_ms = max(1, window_ms)
        self.bound = bound
        self._throttled: dict[str, frozenset[int]] = {}
        # each sample: [start_ms, last_event_ms, bytes]; `_current` indexes the newest
        self._samples: list[list[int]] = []
        self._current = 0

    # -- which partitions -------------------------------------------------------------------
    def mark_throttled(self, topic: str, partitions: frozenset[int] | None) -> None:
        """Throttle these partitions of `topic` (ALL_REPLICAS: all); None: none of them."""
        if partitions:
            self._throttled[topic] = partitions
        else:
            self._throttled.pop(topic, None)

    def is_throttled(self, topic: str, index: int) -> bool:
        partitions = self._throttled.get(topic)
        return partitions is not None and (index in partitions or -1 in partitions)

    @property
    def throttles_any(self) -> bool:
        return bool(self._throttled)

    def throttled_topics(self) -> dict[str, frozenset[int]]:
        return dict(self._throttled)

    # -- the rate ----------------------------------------------------------------------------
    @property
    def unlimited(self) -> bool:
        return self.bound >= LONG_MAX

    def record(self, size: int, now_ms: int) -> None:
        """Count `size` bytes replicated of a throttled partition at `now_ms`."""
        if not self._samples:
            self._samples.append([now_ms, now_ms, 0])
            self._current = 0
        sample = self._samples[self._current]
        if now_ms - sample[0] >= self.window_ms:
            sample = self._advance(now_ms)
        sample[2] += size
        sample[1] = now_ms

    def _advance(self, now_ms: int) -> list[int]:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = [now_ms, now_ms, 0]
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample[:] = [now_ms, now_ms, 0]
        return sample

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample[1] >= expire:
                sample[:] = [now_ms, now_ms, 0]

    def rate(self, now_ms: int) -> float:
        """Bytes per second over the kept samples."""
        if not self._samples:
            return 0.0
        self._purge(now_ms)
        total = sum(s[2] for s in self._samples)
        oldest = min(s[0] for s in self._samples)
        return total * 1000.0 / max(now_ms - oldest, self.window_ms)

    def exceeded(self, now_ms: int) -> bool:
        """Over the bound now (never when unlimited)."""
        return not self.unlimited and self.rate(now_ms) > self.bound

    def wait_ms(self, now_ms: int) -> int:
        """How long until the rate is back under the bound, at the latest (0: it is; no
        record meanwhile). Samples expiring on the way only make it sooner."""
        if not self.exceeded(now_ms):
            return 0
        total = sum(s[2] for s in self._samples)
        oldest = min(s[0] for s in self._samples)
        by_rate = math.inf if self.bound <= 0 else total * 1000.0 / self.bound - (now_ms - oldest)
        expire = self.samples * self.window_ms
        all_expired = max(s[1] for s in self._samples) + expire - now_ms
        return max(1, math.ceil(min(by_rate, all_expired)))


class ReplicationQuotas:
    """A broker's replication quotas: `leader` (what it sends), `follower` (what it fetches)
    and `alter_log_dirs` (replica moves between log dirs: none here, kept for its config)."""

    def __init__(self, config: BrokerConfig, node_id: int) -> None:
        self.node_id = node_id
        samples = config.get_int("replication.quota.window.num")
        window_ms = config.get_int("replication.quota.window.size.seconds") * 1000
        self.leader = ReplicationQuota(samples=samples, window_ms=window_ms)
        self.follower = ReplicationQuota(samples=samples, window_ms=window_ms)
        self.alter_log_dirs = ReplicationQuota(samples=samples, window_ms=window_ms)
        self.update_rates(config)

    def update_rates(self, config: BrokerConfig) -> None:
        """Take the rates' current dynamic values (after a dynamic broker config change)."""
        self.leader.bound = dynamic_rate(config, LEADER_RATE)
        self.follower.bound = dynamic_rate(config, FOLLOWER_RATE)
        self.alter_log_dirs.bound = dynamic_rate(config, ALTER_LOG_DIRS_RATE)

    def on_topic(self, topic: str, configs: Mapping[str, str]) -> None:
        """Take a topic's throttled replicas from its configs (overrides)."""
        node = self.node_id
        self.leader.mark_throttled(topic, throttled_partitions(configs.get(LEADER_REPLICAS), node))
        self.follower.mark_throttled(
            topic, throttled_partitions(configs.get(FOLLOWER_REPLICAS), node)
        )

    def forget_topic(self, topic: str) -> None:
        self.leader.mark_throttled(topic, None)
        self.follower.mark_throttled(topic, None)
