"""Request and traffic counters, cheap enough for every request (read by the admin plane).

The Dispatcher calls `record(api_key, version, seconds, body)` once per answered request and
`record_failure(...)` when a handler raised (the connection closes); the produce and fetch
handlers add the record bytes of each topic (`bytes_in`, `bytes_out`). Nothing here locks,
allocates per request once a key exists, or formats: a request costs two dict lookups, a
`bisect` over 14 bounds and a few integer adds (its cost: docs/benchmarks.md); names, labels
and cumulative buckets are computed by the Prometheus collector at scrape time
(wirebroker/admin/metrics.py).

Errors are the response's top-level `error_code` when not NONE (per-partition codes are not
walked: that would cost a pass over every response), plus handler failures, counted as
UNKNOWN_SERVER_ERROR (-1).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

__all__ = ["LATENCY_BOUNDS_S", "RequestStats"]

#: upper bounds of the latency histogram's buckets, seconds (the last bucket is +Inf)
LATENCY_BOUNDS_S: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
_UNKNOWN_SERVER_ERROR = -1


class RequestStats:
    """Counters by (api key, version): [count, sum of seconds, bucket counts (not cumulative)]."""

    def __init__(self) -> None:
        self.requests: dict[tuple[int, int], list[float]] = {}
        #: (api key, version, error code) -> count
        self.errors: dict[tuple[int, int, int], int] = {}
        #: topic -> record bytes appended by clients / sent in Fetch responses
        self.bytes_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}

    def record(
        self, api_key: int, version: int, seconds: float, body: Mapping[str, Any] | None
    ) -> None:
        key = (api_key, version)
        slots = self.requests.get(key)
        if slots is None:
            slots = self.requests[key] = [0.0] * (len(LATENCY_BOUNDS_S) + 3)
        slots[0] += 1
        slots[1] += seconds
        slots[2 + bisect_left(LATENCY_BOUNDS_S, seconds)] += 1
        if body is not None:
            code = body.get("error_code")
            if code:
                self._error(api_key, version, int(code))

    def record_failure(self, api_key: int, version: int, seconds: float) -> None:
        self.record(api_key, version, seconds, None)
        self._error(api_key, version, _UNKNOWN_SERVER_ERROR)

    def _error(self, api_key: int, version: int, code: int) -> None:
        key = (api_key, version, code)
        self.errors[key] = self.errors.get(key, 0) + 1

    def add_bytes_in(self, topic: str, size: int) -> None:
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size

    def add_bytes_out(self, topic: str, size: int) -> None:
        self.bytes_out[topic] = self.bytes_out.get(topic, 0) + size
