"""Connection creation rate quotas (KIP-612) as Apache Kafka 4.4's ConnectionQuotas applies
them when a connection is accepted. Pure: no trio, no sockets; every call takes `now_ms`
(net/server.py's accept loop asks, delays and closes).

    rates = ConnectionRates(store, broker_rate=..., listener_rates={...}, protected="INTERNAL")
    delay = rates.accept_delay_ms("PLAINTEXT", now_ms)   # before the connection is served
    close = rates.ip_throttle_ms("10.0.0.7", now_ms)     # > 0: close it after that long

Two kinds of limit, each a rate over `quota.window.num` samples of
`quota.window.size.seconds` (Kafka's Rate, quota_manager.Rate: a first burst is measured over
ten windows), each violation answered with (rate - limit) / limit x the window's length:

- `max.connection.creation.rate` (broker-wide, every listener but the inter-broker one) and
  `listener.name.<l>.max.connection.creation.rate` (that listener, the inter-broker one
  included): every new connection is counted; over the limit, the acceptor waits the
  throttle time (the larger of the two) before it takes the connection, and newer clients
  wait in the listen backlog meanwhile (Kafka's acceptor blocks). Nothing is refused.
- `connection_creation_rate` of the client's address (an `ip` client quota entity, else the
  default `ip` entity, else none): over it, the connection is not counted (Kafka unrecords
  it), not served, and closed once the throttle time has passed (Kafka's delayed close:
  the client sees its connection accepted, nothing answered, then closed). Its connections
  during that time meet the same rate and are throttled the same way (asked of Kafka 4.4:
  tests/oracle/test_connection_rate_quota.py).

`throttled` counts the throttled connections per (listener, reason: "ip", "listener",
"broker") for /metrics.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from wirebroker.security.client_quotas import CONNECTION_CREATION_RATE, IP, QuotaStore
from wirebroker.security.quota_manager import Rate

__all__ = ["UNLIMITED", "ConnectionRates", "canonical_ip"]

#: Kafka's default for max.connection.creation.rate: no limit.
UNLIMITED = 2**31 - 1
#: an address idle this long has nothing left in its rate: its sensor is dropped
_SWEEP_EVERY_MS = 60_000


def canonical_ip(address: str) -> str:
    """An address as one string whatever its spelling ('::ffff:10.0.0.7' is 10.0.0.7)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


@dataclass
class _Sensor:
    rate: Rate
    last_ms: int = 0


@dataclass
class ConnectionRates:
    """The broker's connection creation limits (see the module docstring)."""

    store: QuotaStore | None = None
    samples: int = 11
    window_ms: int = 1000
    broker_rate: float = UNLIMITED
    listener_rates: Mapping[str, float] = field(default_factory=dict)
    #: the inter-broker listener: exempt from the broker-wide limit
    protected: str | None = None
    throttled: Counter[tuple[str, str]] = field(default_factory=Counter)
    _sensors: dict[str, _Sensor] = field(default_factory=dict)
    _ip_quotas: dict[str | None, float] = field(default_factory=dict)
    _generation: int = -1
    _next_sweep_ms: int = 0

    def _sensor(self, key: str, now_ms: int) -> _Sensor:
        sensor = self._sensors.get(key)
        if sensor is None:
            sensor = self._sensors[key] = _Sensor(Rate(self.samples, self.window_ms))
        sensor.last_ms = now_ms
        return sensor

    def _record(self, key: str, bound: float, now_ms: int) -> int:
        """Count one connection in `key`'s rate; the throttle time (0: within `bound`)."""
        rate = self._sensor(key, now_ms).rate
        rate.record(1.0, now_ms)
        value = rate.rate(now_ms)
        if value <= bound:
            return 0
        longest = self.samples * self.window_ms  # (a limit of 0: every connection waits this)
        if bound <= 0:
            return longest
        size = rate.window_size_ms(now_ms)
        return int(min(round((value - bound) / bound * size), longest))

    def accept_delay_ms(self, listener: str, now_ms: int) -> int:
        """Count a connection accepted on `listener` against the broker-wide and listener
        limits; how long the acceptor waits before it takes it (0: at once)."""
        self._sweep(now_ms)
        delay = 0
        reason = ""
        if listener != self.protected and self.broker_rate < UNLIMITED:
            delay = self._record("broker:", self.broker_rate, now_ms)
            reason = "broker"
        limit = self.listener_rates.get(listener)
        if limit is not None and limit < UNLIMITED:
            own = self._record(f"listener:{listener}", limit, now_ms)
            if own > delay:
                delay, reason = own, "listener"
        if delay > 0:
            self.throttled[listener, reason] += 1
        return delay

    def ip_quota(self, ip: str) -> float | None:
        """The connection_creation_rate of `ip` (canonical), else the default ip's; None."""
        store = self.store
        if store is None:
            return None
        if self._generation != store.generation:
            self._generation = store.generation
            self._ip_quotas = {
                None if name is None else canonical_ip(name): values[CONNECTION_CREATION_RATE]
                for entity, values in store.entities().items()
                if CONNECTION_CREATION_RATE in values
                for kind, name in entity
                if kind == IP
            }
        found = self._ip_quotas.get(ip)
        return found if found is not None else self._ip_quotas.get(None)

    def ip_throttle_ms(self, address: str, now_ms: int, listener: str = "") -> int:
        """Count a connection from `address` against its connection_creation_rate; > 0:
        over it, the connection is not counted and is to be closed after that long."""
        self._sweep(now_ms)
        ip = canonical_ip(address)
        bound = self.ip_quota(ip)
        if bound is None:
            return 0
        throttle = self._record(f"ip:{ip}", bound, now_ms)
        if throttle > 0:
            self._sensors[f"ip:{ip}"].rate.record(-1.0, now_ms)  # Kafka unrecords it
            self.throttled[listener, "ip"] += 1
        return throttle

    def _sweep(self, now_ms: int) -> None:
        if now_ms < self._next_sweep_ms:
            return
        self._next_sweep_ms = now_ms + _SWEEP_EVERY_MS
        idle = self.samples * self.window_ms
        for key in [k for k, s in self._sensors.items() if now_ms - s.last_ms >= idle]:
            del self._sensors[key]

    def rows(self) -> Iterator[dict[str, object]]:
        """Throttled connections per listener and reason (for /metrics, /api/state)."""
        for (listener, reason), count in sorted(self.throttled.items()):
            yield {"listener": listener, "reason": reason, "throttled": count}
