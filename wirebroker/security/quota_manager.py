"""Client quota enforcement as Kafka's ClientQuotaManager does it. Pure: no trio, no clock of
its own (every call takes `now_ms`); the dispatcher records and the connection mutes.

    quotas = ClientQuotas(store)                       # a QuotaStore (client_quotas.py)
    ms = quotas.produce.record("alice", "app-1", nbytes, now_ms)   # throttle time, 0: none
    ms = quotas.fetch.record(...); ms = quotas.request.record(user, client, percent_s, now_ms)

Which quota applies (Kafka's DefaultQuotaCallback, most specific first; `<default>` is the
default entity), for a request of user U (its principal's name) and client id C:

    1 user=U, client-id=C          5 user=<default>, client-id=<default>
    2 user=U, client-id=<default>  6 user=<default>
    3 user=U                       7 client-id=C
    4 user=<default>, client-id=C  8 client-id=<default>

The first entity with a value for the quota's key is the quota. Every client it covers shares
one rate (Kafka's metric tags): an entity naming a user (or the default user) measures per
user, one naming a client id (or the default client id) per client id, so with a quota on
user=alice all of alice's clients share it, and with one on client-id=<default> each client id
has its own. Without any quota for the key, nothing is measured (no cost).

How a rate is measured (Kafka's Rate over a SampledStat; `quota.window.num` samples of
`quota.window.size.seconds`, 11 of 1 s by default):

    record(v, now)  v goes into the current sample; a sample is complete a window after it
                    started, then the next (a new one, or the oldest reset) starts at `now`
    rate(now)       samples whose start is `samples` windows old are reset first; the sum of
                    the samples over the elapsed time since the oldest sample's start, counted
                    as at least `samples - 1` whole windows plus the elapsed part (so a first
                    burst is measured over ten seconds, not one)

A record that leaves the rate above the bound is a violation (Kafka records first, then
checks, so the request is served): the throttle time is (rate - bound) / bound * window size,
rounded, at most `samples * window` (the time after which the rate is back at the bound with
nothing recorded meanwhile). The channel is then muted that long (KIP-219).

Request quotas (`request_percentage`): the value recorded is the request's handling time as a
percentage of one second ((ms / 1000) * 100 per second gives percent of a thread), as
Kafka's ClientRequestQuotaManager does with its request-thread time.

Every sensor (per quota kind and tags) also keeps the throttle time and bytes it recorded, for
/metrics and the web view (`snapshot`); sensors idle for an hour are dropped (Kafka's
inactive-sensor expiry).

Controller mutation quotas (KIP-599, `quotas.mutation`) as Apache Kafka 4.4 enforces them:
the partitions a CreateTopics, CreatePartitions or DeleteTopics request creates, adds or
deletes, counted against the `controller_mutation_rate` of (user, client id) (the handlers
record through handlers/throttle.py's `mutation_permit`, the Dispatcher answers the throttle
time and mutes, as for the other quotas).

    permit = quotas.mutation.permit(user, client_id, strict=version >= 6)
    if not permit.record(partitions, now_ms):      # strict only: refused, nothing taken
        ... THROTTLING_QUOTA_EXCEEDED
    permit.throttle_ms(now_ms)                     # the answer's throttle_time_ms

Which quota applies is the client quotas' order (quota_manager.resolve); without one, a permit
takes nothing and never throttles.

The measure is a token bucket (Kafka's TokenBucket stat), not a rate: a bucket holds up to
`burst = samples x window (s) x quota` tokens (11 x 1 s x quota with Kafka's defaults
`controller.quota.window.num` 11 and `controller.quota.window.size.seconds` 1), starts full,
refills at `quota` tokens a second and loses one per partition mutated; it may go negative.

Two ways to take (asked of Kafka 4.4: tests/oracle/test_controller_mutation_quota.py):

    strict      (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+: versions that know
                THROTTLING_QUOTA_EXCEEDED) a topic is refused, and nothing taken, when the
                bucket is already below zero; else its partitions are all taken, even into
                the negative, and that request is not throttled for it: a topic of 12
                partitions under a bucket of 11 is created with throttle 0, the next topic (in
                the same request or a later one) is refused with throttle_time_ms = the time
                the bucket needs to be back at zero (-tokens / quota x 1000, rounded)
    permissive  (older versions) every topic is accepted and taken; if the bucket is then
                below zero, the answer carries the time it needs to be back at zero

The throttle time answered is the one computed at the last violation, less the time since
(Kafka's AbstractControllerMutationQuota.throttleTime). Topics refused for other reasons
(unknown, exists, bad config, not authorized) take nothing; `validate_only` takes as a real
request does (Kafka 4.4's controller counts them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from wirebroker.security.client_quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    Entity,
    QuotaStore,
)

__all__ = [
    "ClientQuotas",
    "MutationPermit",
    "MutationQuotas",
    "QuotaKind",
    "QuotaSensor",
    "Rate",
    "SensorView",
    "TokenBucket",
    "resolve",
]

#: Kafka's inactive sensor expiry (ClientQuotaManager's InactiveSensorExpirationTimeSeconds).
SENSOR_EXPIRY_MS = 3600 * 1000


class Rate:
    """Kafka's Rate over a SampledStat (see the module docstring)."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = max(2, samples)
        self.window_ms = max(1, window_ms)
        self._starts: list[int] = []
        self._values: list[float] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._starts:
            self._starts.append(now_ms)
            self._values.append(0.0)
            self._current = 0
        elif now_ms - self._starts[self._current] >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._starts):
                self._starts.append(now_ms)
                self._values.append(0.0)
            else:
                self._starts[self._current] = now_ms
                self._values[self._current] = 0.0
        self._values[self._current] += value

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for i, start in enumerate(self._starts):
            if now_ms - start >= expire:
                self._starts[i] = now_ms
                self._values[i] = 0.0

    def window_size_ms(self, now_ms: int) -> int:
        """The time the rate divides by (purging obsolete samples first)."""
        self._purge(now_ms)
        oldest = min(self._starts) if self._starts else now_ms
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(1, elapsed)

    def rate(self, now_ms: int) -> float:
        """Per second."""
        size = self.window_size_ms(now_ms)
        return sum(self._values) * 1000.0 / size


@dataclass
class QuotaSensor:
    """One rate measured against one bound, for the clients one entity covers."""

    rate: Rate
    bound: float
    last_ms: int = 0
    #: what was recorded in total, and how often and how long it was throttled
    total: float = 0.0
    throttled: int = 0
    throttle_ms_total: int = 0
    last_throttle_ms: int = 0


@dataclass(frozen=True)
class SensorView:
    """A sensor as /metrics and the web view show it."""

    kind: str
    user: str
    client_id: str
    bound: float
    rate: float
    total: float
    throttled: int
    throttle_ms_total: int
    last_throttle_ms: int


def resolve(
    store: QuotaStore, key: str, user: str, client_id: str
) -> tuple[tuple[str, str], float] | None:
    """The quota of `key` for (user, client id) and the tags of the rate it is measured by
    ((user or "", client id or "")); None: no quota."""
    candidates: list[tuple[Entity, tuple[str, str]]] = [
        (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
        (((CLIENT_ID, None), (USER, user)), (user, client_id)),
        (((USER, user),), (user, "")),
        (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
        (((CLIENT_ID, None), (USER, None)), (user, client_id)),
        (((USER, None),), (user, "")),
        (((CLIENT_ID, client_id),), ("", client_id)),
        (((CLIENT_ID, None),), ("", client_id)),
    ]
    for entity, tags in candidates:
        value = store.value(entity, key)
        if value is not None:
            return tags, value
    return None


@dataclass
class QuotaKind:
    """The quotas of one key (producer_byte_rate, consumer_byte_rate, request_percentage)."""

    name: str
    key: str
    store: QuotaStore
    samples: int = 11
    window_ms: int = 1000
    sensors: dict[tuple[str, str], QuotaSensor] = field(default_factory=dict)
    _cache: dict[tuple[str, str], tuple[tuple[str, str], float] | None] = field(
        default_factory=dict
    )
    _generation: int = -1
    _next_sweep_ms: int = 0

    @property
    def max_throttle_ms(self) -> int:
        return self.samples * self.window_ms

    def quota(self, user: str, client_id: str) -> tuple[tuple[str, str], float] | None:
        if self._generation != self.store.generation:
            self._cache.clear()
            self._generation = self.store.generation
        ident = (user, client_id)
        if ident not in self._cache:
            if len(self._cache) > 10000:
                self._cache.clear()
            self._cache[ident] = resolve(self.store, self.key, user, client_id)
        return self._cache[ident]

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record `value` for (user, client id) at `now_ms`; the throttle time in ms (0: under
        the quota, or no quota)."""
        if not self.store:
            return 0
        found = self.quota(user, client_id)
        if found is None:
            return 0
        tags, bound = found
        sensor = self.sensors.get(tags)
        if sensor is None:
            sensor = self.sensors[tags] = QuotaSensor(Rate(self.samples, self.window_ms), bound)
        sensor.bound = bound
        sensor.last_ms = now_ms
        sensor.rate.record(value, now_ms)
        sensor.total += value
        if now_ms >= self._next_sweep_ms:
            self._sweep(now_ms)
        rate = sensor.rate.rate(now_ms)
        if rate <= bound:
            return 0
        size = sensor.rate.window_size_ms(now_ms)
        throttle = min(round((rate - bound) / bound * size), self.max_throttle_ms)
        if throttle <= 0:
            return 0
        sensor.throttled += 1
        sensor.throttle_ms_total += throttle
        sensor.last_throttle_ms = throttle
        return int(throttle)

    def max_in_window(self, user: str, client_id: str) -> int | None:
        """What the quota allows over its windows (quota x (samples - 1) x window), None:
        no quota (Kafka's getMaxValueInQuotaWindow, the cap of a consumer Fetch's bytes)."""
        found = self.quota(user, client_id) if self.store else None
        if found is None:
            return None
        return int(min(found[1] * (self.samples - 1) * self.window_ms / 1000, 2**31 - 1))

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back `value` recorded at `now_ms` (a throttled fetch answered without its
        records, as Kafka's unrecordQuotaSensor)."""
        found = self.quota(user, client_id) if self.store else None
        sensor = self.sensors.get(found[0]) if found is not None else None
        if sensor is not None:
            sensor.rate.record(-value, now_ms)
            sensor.total -= value

    def _sweep(self, now_ms: int) -> None:
        self._next_sweep_ms = now_ms + 60_000
        for tags in [t for t, s in self.sensors.items() if now_ms - s.last_ms >= SENSOR_EXPIRY_MS]:
            del self.sensors[tags]

    def views(self, now_ms: int) -> Iterator[SensorView]:
        for (user, client_id), s in sorted(self.sensors.items()):
            yield SensorView(
                self.name,
                user,
                client_id,
                s.bound,
                s.rate.rate(now_ms),
                s.total,
                s.throttled,
                s.throttle_ms_total,
                s.last_throttle_ms,
            )


class TokenBucket:
    """Kafka's TokenBucket stat for one quota (the bound given per call, as it may change)."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = max(1, samples)
        self.window_ms = max(1, window_ms)
        self.tokens: float | None = None  # None: full (a new bucket)
        self.last_ms = 0

    def burst(self, bound: float) -> float:
        return self.samples * self.window_ms / 1000 * bound

    def level(self, bound: float, now_ms: int) -> float:
        """The tokens at `now_ms`, refilled at `bound` a second up to the burst."""
        burst = self.burst(bound)
        if self.tokens is None:
            self.tokens = burst
        else:
            refill = bound * max(0, now_ms - self.last_ms) / 1000
            self.tokens = min(burst, self.tokens + refill)
        self.last_ms = max(self.last_ms, now_ms)
        return self.tokens

    def take(self, bound: float, value: float, now_ms: int) -> float:
        """Take `value` tokens (the level may go negative); the level after."""
        self.tokens = min(self.burst(bound), self.level(bound, now_ms) - value)
        return self.tokens


@dataclass
class MutationSensor:
    """One bucket, for the clients one quota entity covers (as the client quotas' sensors)."""

    bucket: TokenBucket
    bound: float
    rate: Rate
    last_ms: int = 0
    total: float = 0.0
    throttled: int = 0
    throttle_ms_total: int = 0
    last_throttle_ms: int = 0


@dataclass
class MutationPermit:
    """One request's use of its quota (Kafka's Strict / Permissive ControllerMutationQuota;
    without a sensor, unbounded)."""

    sensor: MutationSensor | None
    strict: bool
    _throttle_ms: int = 0
    _at_ms: int = 0

    def record(self, partitions: int, now_ms: int) -> bool:
        """Count `partitions` mutations; False: refused (strict, the bucket below zero), the
        topic is answered THROTTLING_QUOTA_EXCEEDED and nothing was taken."""
        sensor = self.sensor
        if sensor is None:
            return True
        bucket, bound = sensor.bucket, sensor.bound
        sensor.last_ms = now_ms
        if self.strict:
            level = bucket.level(bound, now_ms)
            if level < 0:
                self._violated(sensor, level, now_ms)
                return False
        level = bucket.take(bound, partitions, now_ms)
        sensor.rate.record(partitions, now_ms)
        sensor.total += partitions
        if not self.strict and level < 0:
            self._violated(sensor, level, now_ms)
        return True

    def _violated(self, sensor: MutationSensor, level: float, now_ms: int) -> None:
        self._throttle_ms = round(-level / sensor.bound * 1000)
        self._at_ms = now_ms
        sensor.throttled += 1
        sensor.throttle_ms_total += self._throttle_ms
        sensor.last_throttle_ms = self._throttle_ms

    def throttle_ms(self, now_ms: int) -> int:
        """The throttle time to answer: the last violation's, less the time since."""
        return max(0, self._throttle_ms - max(0, now_ms - self._at_ms))


@dataclass
class MutationQuotas:
    """The broker's controller mutation quotas over one QuotaStore."""

    store: QuotaStore
    samples: int = 11
    window_ms: int = 1000
    sensors: dict[tuple[str, str], MutationSensor] = field(default_factory=dict)
    _lookup: QuotaKind = field(init=False)

    def __post_init__(self) -> None:
        self._lookup = QuotaKind(
            "controller_mutation",
            CONTROLLER_MUTATION_RATE,
            self.store,
            self.samples,
            self.window_ms,
        )

    def permit(self, user: str, client_id: str, *, strict: bool) -> MutationPermit:
        """The permit of one request of (user, client id)."""
        found = self._lookup.quota(user, client_id) if self.store else None
        if found is None:
            return MutationPermit(None, strict)
        if len(self.sensors) > 10000:  # idle ones (Kafka expires sensors idle for an hour)
            self.sensors = {t: s for t, s in self.sensors.items() if s.throttled or s.total}
        tags, bound = found
        sensor = self.sensors.get(tags)
        if sensor is None:
            bucket = TokenBucket(self.samples, self.window_ms)
            rate = Rate(self.samples, self.window_ms)
            sensor = self.sensors[tags] = MutationSensor(bucket, bound, rate)
        sensor.bound = bound
        return MutationPermit(sensor, strict)

    def views(self, now_ms: int) -> Iterator[SensorView]:
        for (user, client_id), s in sorted(self.sensors.items()):
            yield SensorView(
                "controller_mutation",
                user,
                client_id,
                s.bound,
                s.rate.rate(now_ms),
                s.total,
                s.throttled,
                s.throttle_ms_total,
                s.last_throttle_ms,
            )


class ClientQuotas:
    """The broker's client quota kinds over one QuotaStore: three rates and the controller
    mutation buckets (`controller_samples`, `controller_window_s`: Kafka's
    controller.quota.window.num and .size.seconds)."""

    def __init__(
        self,
        store: QuotaStore | None = None,
        *,
        samples: int = 11,
        window_s: int = 1,
        controller_samples: int = 11,
        controller_window_s: int = 1,
    ):
        self.store = store if store is not None else QuotaStore()
        window_ms = max(1, window_s) * 1000
        self.produce = QuotaKind("produce", PRODUCER_BYTE_RATE, self.store, samples, window_ms)
        self.fetch = QuotaKind("fetch", CONSUMER_BYTE_RATE, self.store, samples, window_ms)
        self.request = QuotaKind("request", REQUEST_PERCENTAGE, self.store, samples, window_ms)
        self.mutation = MutationQuotas(
            self.store, controller_samples, max(1, controller_window_s) * 1000
        )

    @property
    def kinds(self) -> tuple[QuotaKind, QuotaKind, QuotaKind]:
        return self.produce, self.fetch, self.request

    def snapshot(self, now_ms: int) -> list[SensorView]:
        views = [view for kind in self.kinds for view in kind.views(now_ms)]
        return views + list(self.mutation.views(now_ms))

    @staticmethod
    def percent_seconds(elapsed_s: float) -> float:
        """A request's handling time as recorded by the request quota (percent of a second)."""
        return max(0.0, elapsed_s) * 100.0
