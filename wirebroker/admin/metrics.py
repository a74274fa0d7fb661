"""/metrics: Prometheus exposition of the broker's state, computed at scrape time.

`BrokerCollector` is a prometheus_client custom collector: at each scrape it takes one
`state.snapshot` and the request counters (`handlers.stats.RequestStats`) and yields metric
families; nothing is updated on the request path but the plain counters of RequestStats. It
lives in its own `CollectorRegistry` (never the global one: several brokers may share a
process, as in tests), next to prometheus_client's `ProcessCollector`
(process_resident_memory_bytes, process_open_fds, process_cpu_seconds_total, ...).

Names (Prometheus conventions: `wirebroker_` prefix, `_total` counters, base units):

    wirebroker_info{version,node_id,cluster_id}                     1
    wirebroker_requests_total{api,version}                          counter
    wirebroker_request_errors_total{api,version,error}              counter (top-level error
                                                                    code, or UNKNOWN_SERVER_ERROR
                                                                    when the handler failed)
    wirebroker_request_duration_seconds{api,version}                histogram
    wirebroker_topic_bytes_in_total{topic} / _bytes_out_total       counter (record bytes)
    wirebroker_topic_partitions{topic}, _topic_log_size_bytes{topic}   gauge
    wirebroker_connections                                          gauge (Kafka listener)
    wirebroker_brokers, wirebroker_controller_id, wirebroker_is_controller
    wirebroker_partition_log_size_bytes{topic,partition}            gauge (replicas hosted here)
    wirebroker_partition_log_start_offset / _log_end_offset / _high_watermark {topic,partition}
    wirebroker_partition_leader{topic,partition}                    gauge (node id, -1: none)
    wirebroker_partition_replicas / _isr_size {topic,partition}     gauge
    wirebroker_partition_under_replicated{topic,partition}          gauge 0/1 (led here)
    wirebroker_under_replicated_partitions, wirebroker_offline_partitions   gauge
    wirebroker_group_members{group} / _generation{group}            gauge
    wirebroker_group_state{group,state}                             gauge 1 for the current state
    wirebroker_group_committed_offset / _lag {group,topic,partition}   gauge
    wirebroker_zookeeper_session_state{state}                       gauge 1 for the current state
    wirebroker_successful_authentications_total{listener,mechanism} counter (Kafka's
    wirebroker_failed_authentications_total{listener,mechanism}     successful- / failed-
                                                                    authentication-total; SASL)
    wirebroker_throttled_connections_total{listener,reason}         counter: connections
                                                                    throttled by a connection
                                                                    creation rate (KIP-612;
                                                                    reason ip, listener, broker)
    wirebroker_fetch_sessions                                       gauge (Kafka's
                                                                    NumIncrementalFetchSessions)
    wirebroker_fetch_session_partitions_cached                      gauge (Kafka's NumIncremental-
                                                                    FetchPartitionsCached)
    wirebroker_fetch_session_evictions_total                        counter (Kafka's Incremental-
                                                                    FetchSessionEvictionsPerSec)

Internal topics (`__consumer_offsets`: 50 partitions) get the topic-level series only; their
partitions count in the under-replicated and offline totals. Listed partition by partition
they would be 80% of a small broker's series, and every series costs formatting time at
every scrape, which matters with a scrape every second (docs/benchmarks.md, the admin
listener's cost).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import trio
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from protocol.errors import ErrorCode
from wirebroker.admin.routes import Request, Response
from wirebroker.admin.state import AdminSources, snapshot
from wirebroker.handlers.registry import api_name
from wirebroker.handlers.stats import LATENCY_BOUNDS_S, RequestStats
from wirebroker.replication.fetch_sessions import FetchSessions

__all__ = ["CONTENT_TYPE", "BrokerCollector", "metrics_registry", "metrics_route"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
_SESSION_STATES = ("connected", "suspended", "lost")
_PARTITION = ["topic", "partition"]


def _error_name(code: int) -> str:
    if code == -1:
        return "UNKNOWN_SERVER_ERROR"  # Kafka's name (protocol.errors calls it UNKNOWN)
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class BrokerCollector(Collector):
    """Yields the metric families of one snapshot (see the module docstring)."""

    def __init__(
        self,
        state: Callable[[], dict[str, Any]],
        stats: RequestStats,
        sessions: FetchSessions | None = None,
    ) -> None:
        self.state = state
        self.stats = stats
        self.sessions = sessions

    def collect(self) -> Iterator[Metric]:
        yield from self._requests()
        yield from self._from_state(self.state())
        if self.sessions is not None:
            yield from self._fetch_sessions(self.sessions)

    def _fetch_sessions(self, sessions: FetchSessions) -> Iterator[Metric]:
        """The fetch-session cache (KIP-227, wirebroker.replication.fetch_sessions)."""
        yield GaugeMetricFamily(
            "wirebroker_fetch_sessions", "Incremental fetch sessions cached", len(sessions)
        )
        yield GaugeMetricFamily(
            "wirebroker_fetch_session_partitions_cached",
            "Partitions of the cached fetch sessions (their sizes when last used)",
            sessions.partitions_cached,
        )
        yield CounterMetricFamily(
            "wirebroker_fetch_session_evictions",
            "Fetch sessions evicted to make room for new ones",
            sessions.evictions,
        )

    def _requests(self) -> Iterator[Metric]:
        stats = self.stats
        requests = CounterMetricFamily(
            "wirebroker_requests",
            "Requests answered, by API and version",
            labels=["api", "version"],
        )
        latency = HistogramMetricFamily(
            "wirebroker_request_duration_seconds",
            "Time from decoded request to encoded response",
            labels=["api", "version"],
        )
        for (key, version), slots in sorted(stats.requests.items()):
            labels = [api_name(key), str(version)]
            requests.add_metric(labels, slots[0])
            buckets, total = [], 0.0
            for bound, count in zip((*LATENCY_BOUNDS_S, float("inf")), slots[2:], strict=True):
                total += count
                buckets.append((_bound(bound), total))
            latency.add_metric(labels, buckets, slots[1])
        errors = CounterMetricFamily(
            "wirebroker_request_errors",
            "Requests answered with a top-level error code, or that failed",
            labels=["api", "version", "error"],
        )
        for (key, version, code), count in sorted(stats.errors.items()):
            errors.add_metric([api_name(key), str(version), _error_name(code)], count)
        yield requests
        yield errors
        yield latency

    def _from_state(self, snap: dict[str, Any]) -> Iterator[Metric]:
        broker = snap["broker"]
        info = GaugeMetricFamily(
            "wirebroker_info", "This broker", labels=["version", "node_id", "cluster_id"]
        )
        info.add_metric([broker["version"], str(broker["node_id"]), str(broker["cluster_id"])], 1)
        yield info
        yield GaugeMetricFamily(
            "wirebroker_connections", "Open Kafka client connections", broker["connections"]
        )
        yield GaugeMetricFamily("wirebroker_brokers", "Live brokers", len(snap["brokers"]))
        yield GaugeMetricFamily(
            "wirebroker_controller_id", "The controller's node id", broker["controller_id"]
        )
        yield GaugeMetricFamily(
            "wirebroker_is_controller",
            "1 when this broker is the controller",
            int(broker["controller_id"] == broker["node_id"]),
        )
        session = GaugeMetricFamily(
            "wirebroker_zookeeper_session_state",
            "1 for the current ZooKeeper session state",
            labels=["state"],
        )
        for state in _SESSION_STATES:
            session.add_metric([state], int(broker["zookeeper_session"] == state))
        yield session
        yield from self._topics(snap["topics"], broker["node_id"])
        yield from self._groups(snap["groups"])
        yield from self._authentications(snap.get("authentications", []))
        yield from self._throttled_connections(snap.get("throttled_connections", []))
        yield from self._quotas(snap.get("quotas", []))

    def _authentications(self, rows: list[dict[str, Any]]) -> Iterator[Metric]:
        labels = ["listener", "mechanism"]
        ok = CounterMetricFamily(
            "wirebroker_successful_authentications",
            "Successful SASL authentications (Kafka's successful-authentication-total)",
            labels=labels,
        )
        failed = CounterMetricFamily(
            "wirebroker_failed_authentications",
            "Failed SASL authentications (Kafka's failed-authentication-total)",
            labels=labels,
        )
        for row in rows:
            ok.add_metric([row["listener"], row["mechanism"]], row["successful"])
            failed.add_metric([row["listener"], row["mechanism"]], row["failed"])
        yield ok
        yield failed

    def _throttled_connections(self, rows: list[dict[str, Any]]) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "wirebroker_throttled_connections",
            "Connections throttled by a connection creation rate (KIP-612): delayed (listener, "
            "broker) or closed unserved (ip)",
            labels=["listener", "reason"],
        )
        for row in rows:
            family.add_metric([row["listener"], row["reason"]], row["throttled"])
        yield family

    def _quotas(self, quotas: list[dict[str, Any]]) -> Iterator[Metric]:
        labels = ["kind", "user", "client_id"]

        def family(kind: type[CounterMetricFamily | GaugeMetricFamily], name: str, doc: str) -> Any:
            return kind(f"wirebroker_client_quota_{name}", doc, labels=labels)

        throttle = family(
            CounterMetricFamily, "throttle_seconds", "Throttle time answered, per quota"
        )
        throttled = family(CounterMetricFamily, "throttled_requests", "Requests throttled")
        recorded = family(
            CounterMetricFamily,
            "recorded",
            "What the quota measured: bytes (produce, fetch), percent-seconds (request), "
            "partitions mutated (controller_mutation)",
        )
        rate = family(GaugeMetricFamily, "rate", "The measured rate (per second)")
        bound = family(GaugeMetricFamily, "bound", "The quota (per second)")
        for q in quotas:
            values = [q["kind"], q["user"], q["client_id"]]
            throttle.add_metric(values, q["throttle_time_ms"] / 1000.0)
            throttled.add_metric(values, q["throttled"])
            recorded.add_metric(values, max(0.0, q["recorded"]))
            rate.add_metric(values, q["rate"])
            bound.add_metric(values, q["quota"])
        yield from (throttle, throttled, recorded, rate, bound)

    def _topics(self, topics: list[dict[str, Any]], node_id: int) -> Iterator[Metric]:
        def gauge(name: str, doc: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"wirebroker_partition_{name}", doc, labels=_PARTITION)

        bytes_in = CounterMetricFamily(
            "wirebroker_topic_bytes_in", "Record bytes appended by producers", labels=["topic"]
        )
        bytes_out = CounterMetricFamily(
            "wirebroker_topic_bytes_out", "Record bytes sent in Fetch responses", labels=["topic"]
        )
        n_parts = GaugeMetricFamily(
            "wirebroker_topic_partitions", "Partitions of the topic", labels=["topic"]
        )
        topic_size = GaugeMetricFamily(
            "wirebroker_topic_log_size_bytes",
            "Bytes of the topic's replicas on this broker",
            labels=["topic"],
        )
        size = gauge("log_size_bytes", "Bytes of the partition's log segments on this broker")
        start = gauge("log_start_offset", "Log start offset of this broker's replica")
        end = gauge("log_end_offset", "Log end offset of this broker's replica")
        hw = gauge("high_watermark", "High watermark of this broker's replica")
        leader = gauge("leader", "Node id of the partition's leader (-1: none)")
        replicas = gauge("replicas", "Size of the replica set")
        isr = gauge("isr_size", "Size of the in-sync replica set")
        under = gauge("under_replicated", "1 when led here with ISR smaller than the replicas")
        n_under = n_offline = 0
        for topic in topics:
            name = topic["name"]
            bytes_in.add_metric([name], topic["bytes_in"])
            bytes_out.add_metric([name], topic["bytes_out"])
            n_parts.add_metric([name], len(topic["partitions"]))
            topic_size.add_metric([name], sum(p["size_bytes"] or 0 for p in topic["partitions"]))
            internal = topic["internal"]
            for p in topic["partitions"]:
                led_under = int(p["under_replicated"] and p["leader"] == node_id)
                n_under += led_under
                n_offline += p["offline"]
                if internal:
                    continue  # summarized: see the module docstring
                labels = [name, str(p["partition"])]
                leader.add_metric(labels, p["leader"])
                replicas.add_metric(labels, len(p["replicas"]))
                isr.add_metric(labels, len(p["isr"]))
                under.add_metric(labels, led_under)
                if p["log_end_offset"] is not None:
                    size.add_metric(labels, p["size_bytes"])
                    start.add_metric(labels, p["log_start_offset"])
                    end.add_metric(labels, p["log_end_offset"])
                    hw.add_metric(labels, p["high_watermark"])
        yield from (bytes_in, bytes_out, n_parts, topic_size)
        yield from (size, start, end, hw, leader, replicas, isr, under)
        yield GaugeMetricFamily(
            "wirebroker_under_replicated_partitions",
            "Partitions led here whose ISR is smaller than their replica set",
            n_under,
        )
        yield GaugeMetricFamily(
            "wirebroker_offline_partitions", "Partitions without a live leader", n_offline
        )

    def _groups(self, groups: list[dict[str, Any]]) -> Iterator[Metric]:
        members = GaugeMetricFamily(
            "wirebroker_group_members", "Members of a group coordinated here", labels=["group"]
        )
        generation = GaugeMetricFamily(
            "wirebroker_group_generation", "Generation of the group", labels=["group"]
        )
        state = GaugeMetricFamily(
            "wirebroker_group_state", "1 for the group's current state", labels=["group", "state"]
        )
        labels = ["group", "topic", "partition"]
        committed = GaugeMetricFamily(
            "wirebroker_group_committed_offset", "Committed offset", labels=labels
        )
        lag = GaugeMetricFamily(
            "wirebroker_group_lag", "High watermark minus committed offset", labels=labels
        )
        for group in groups:
            gid = group["group_id"]
            members.add_metric([gid], len(group["members"]))
            generation.add_metric([gid], group["generation"])
            for name in _GROUP_STATES:
                state.add_metric([gid, name], int(group["state"] == name))
            for o in group["offsets"]:
                key = [gid, o["topic"], str(o["partition"])]
                committed.add_metric(key, o["committed_offset"])
                if o["lag"] is not None:
                    lag.add_metric(key, o["lag"])
        yield from (members, generation, state, committed, lag)


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


def metrics_registry(sources: AdminSources, *, process: bool = True) -> CollectorRegistry:
    """A registry of its own: the broker's collector (+ the process collector)."""
    registry = CollectorRegistry(auto_describe=False)
    services = sources.services
    registry.register(
        BrokerCollector(lambda: snapshot(sources), services.stats, services.fetch_sessions)
    )
    if process:
        ProcessCollector(registry=registry)
    return registry


class _One:
    """A registry-like holder of one family, for `generate_latest`."""

    def __init__(self, family: Metric) -> None:
        self.family = family

    def collect(self) -> list[Metric]:
        return [self.family]


def metrics_route(registry: CollectorRegistry) -> Callable[[Request], Any]:
    """The /metrics handler. It yields to the trio loop between metric families: formatting
    a whole scrape in one piece would hold up every Kafka request for that long once per
    scrape (it showed in the produce p99: docs/benchmarks.md, the admin listener's cost); one
    family at a time does not. The
    state is read once, when the collector starts (one consistent snapshot)."""

    async def metrics(request: Request) -> Response:
        chunks = []
        for family in registry.collect():
            chunks.append(generate_latest(_One(family)))
            await trio.sleep(0)
        return Response(200, b"".join(chunks), CONTENT_TYPE)

    return metrics
