"""The Prometheus collector over a fake snapshot: names, labels, values, conventions."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.admin.metrics import BrokerCollector
from wirebroker.handlers.stats import LATENCY_BOUNDS_S, RequestStats
from wirebroker.replication.fetch_sessions import FetchSessions


def part(index: int, leader: int, replicas: list[int], isr: list[int], hosted: bool) -> Any:
    """One partition of `fake_state`: `hosted` ones carry this broker's log figures."""
    return {
        "partition": index,
        "leader": leader,
        "leader_epoch": 3,
        "replicas": replicas,
        "isr": isr,
        "offline_replicas": [],
        "role": "leader" if hosted else None,
        "log_start_offset": 0 if hosted else None,
        "log_end_offset": 42 if hosted else None,
        "high_watermark": 40 if hosted else None,
        "size_bytes": 4096 if hosted else None,
        "offline": leader < 0,
        "under_replicated": len(isr) < len(replicas),
    }


def fake_state() -> dict[str, Any]:
    return {
        "broker": {
            "node_id": 1,
            "cluster_id": "c1",
            "version": "0.1.0",
            "advertised": "127.0.0.1:9092",
            "controller_id": 2,
            "connections": 7,
            "zookeeper_session": "suspended",
        },
        "brokers": [{"node_id": n, "host": "h", "port": 1, "rack": None} for n in (1, 2, 3)],
        "topics": [
            {
                "name": "orders",
                "topic_id": "x",
                "internal": False,
                "replication_factor": 3,
                "bytes_in": 1000,
                "bytes_out": 3000,
                "partitions": [
                    part(0, 1, [1, 2, 3], [1, 2], hosted=True),
                    part(1, 2, [2, 3, 1], [2, 3, 1], hosted=False),
                    part(2, -1, [3, 2, 1], [3], hosted=False),  # under-replicated, led elsewhere
                ],
            },
            {
                "name": "__consumer_offsets",
                "topic_id": "y",
                "internal": True,
                "replication_factor": 1,
                "bytes_in": 0,
                "bytes_out": 0,
                "partitions": [part(0, -1, [1], [], hosted=True)],
            },
        ],
        "groups": [
            {
                "group_id": "billing",
                "state": "Stable",
                "generation": 5,
                "protocol_type": "consumer",
                "protocol": "range",
                "leader": "m1",
                "members": [{"member_id": "m1", "client_id": "c", "client_host": "/h"}] * 2,
                "offsets": [
                    {
                        "topic": "orders",
                        "partition": 0,
                        "committed_offset": 30,
                        "high_watermark": 40,
                        "lag": 10,
                    },
                    {
                        "topic": "orders",
                        "partition": 1,
                        "committed_offset": 5,
                        "high_watermark": None,
                        "lag": None,
                    },
                ],
            }
        ],
    }


def scrape(
    stats: RequestStats | None = None, sessions: FetchSessions | None = None
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(fake_state, stats or RequestStats(), sessions))
    text = generate_latest(registry).decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def test_partition_and_cluster_gauges() -> None:
    m = scrape()
    p0 = (("partition", "0"), ("topic", "orders"))
    assert m[("wirebroker_partition_log_size_bytes", p0)] == 4096
    assert m[("wirebroker_partition_log_end_offset", p0)] == 42
    assert m[("wirebroker_partition_high_watermark", p0)] == 40
    assert m[("wirebroker_partition_isr_size", p0)] == 2
    assert m[("wirebroker_partition_replicas", p0)] == 3
    assert m[("wirebroker_partition_under_replicated", p0)] == 1
    # a partition not hosted here has no log gauges, but its cluster view
    p1 = (("partition", "1"), ("topic", "orders"))
    assert ("wirebroker_partition_log_end_offset", p1) not in m
    assert m[("wirebroker_partition_leader", p1)] == 2
    p2 = (("partition", "2"), ("topic", "orders"))
    assert m[("wirebroker_partition_under_replicated", p2)] == 0  # its leader reports it
    assert m[("wirebroker_under_replicated_partitions", ())] == 1
    assert m[("wirebroker_offline_partitions", ())] == 2  # one of them internal
    internal = (("partition", "0"), ("topic", "__consumer_offsets"))
    assert not [k for k in m if k[1] == internal]  # internal partitions: topic-level only
    assert m[("wirebroker_topic_partitions", (("topic", "__consumer_offsets"),))] == 1
    assert m[("wirebroker_topic_log_size_bytes", (("topic", "orders"),))] == 4096
    assert m[("wirebroker_topic_bytes_in_total", (("topic", "orders"),))] == 1000
    assert m[("wirebroker_topic_bytes_out_total", (("topic", "orders"),))] == 3000
    assert m[("wirebroker_connections", ())] == 7
    assert m[("wirebroker_brokers", ())] == 3
    assert m[("wirebroker_is_controller", ())] == 0
    assert m[("wirebroker_zookeeper_session_state", (("state", "suspended"),))] == 1
    assert m[("wirebroker_zookeeper_session_state", (("state", "connected"),))] == 0


def test_group_gauges_and_unknown_lag_left_out() -> None:
    m = scrape()
    g = (("group", "billing"),)
    assert m[("wirebroker_group_members", g)] == 2
    assert m[("wirebroker_group_generation", g)] == 5
    assert m[("wirebroker_group_state", (("group", "billing"), ("state", "Stable")))] == 1
    assert m[("wirebroker_group_state", (("group", "billing"), ("state", "Empty")))] == 0
    o0 = (("group", "billing"), ("partition", "0"), ("topic", "orders"))
    o1 = (("group", "billing"), ("partition", "1"), ("topic", "orders"))
    assert m[("wirebroker_group_lag", o0)] == 10
    assert m[("wirebroker_group_committed_offset", o1)] == 5
    assert ("wirebroker_group_lag", o1) not in m


def test_request_counters_errors_and_histogram() -> None:
    stats = RequestStats()
    stats.record(ApiKey.PRODUCE, 9, 0.0002, {"responses": []})
    stats.record(ApiKey.PRODUCE, 9, 0.003, None)
    stats.record(ApiKey.PRODUCE, 9, 99.0, None)  # past the last bound: +Inf only
    stats.record(ApiKey.FIND_COORDINATOR, 4, 0.001, {"error_code": 15})
    stats.record_failure(ApiKey.METADATA, 12, 0.01)
    m = scrape(stats)
    produce = (("api", "Produce"), ("version", "9"))
    assert m[("wirebroker_requests_total", produce)] == 3
    assert m[("wirebroker_request_duration_seconds_count", produce)] == 3
    assert abs(m[("wirebroker_request_duration_seconds_sum", produce)] - 99.0032) < 1e-9
    bucket = "wirebroker_request_duration_seconds_bucket"
    assert m[(bucket, (("api", "Produce"), ("le", "0.0005"), ("version", "9")))] == 1
    assert m[(bucket, (("api", "Produce"), ("le", "0.005"), ("version", "9")))] == 2
    assert m[(bucket, (("api", "Produce"), ("le", "10.0"), ("version", "9")))] == 2
    assert m[(bucket, (("api", "Produce"), ("le", "+Inf"), ("version", "9")))] == 3
    errors = "wirebroker_request_errors_total"
    coord = ErrorCode(15).name
    assert m[(errors, (("api", "FindCoordinator"), ("error", coord), ("version", "4")))] == 1
    assert (
        m[(errors, (("api", "Metadata"), ("error", "UNKNOWN_SERVER_ERROR"), ("version", "12")))]
        == 1
    )
    assert (errors, (("api", "Produce"), ("error", "NONE"), ("version", "9"))) not in m
    assert len(LATENCY_BOUNDS_S) == 14


def test_fetch_session_cache_figures() -> None:
    """Kafka's NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached and the
    evictions its IncrementalFetchSessionEvictionsPerSec meters."""
    sessions = FetchSessions(1, 10, shards=1)
    first = sessions.maybe_create(False, False, [(("t", i), {}) for i in range(3)], 0)
    assert first is not None
    m = scrape(sessions=sessions)
    assert m[("wirebroker_fetch_sessions", ())] == 1
    assert m[("wirebroker_fetch_session_partitions_cached", ())] == 3
    assert m[("wirebroker_fetch_session_evictions_total", ())] == 0
    assert sessions.maybe_create(True, False, [(("t", 0), {})], 1) is not None  # evicts first
    m = scrape(sessions=sessions)
    assert m[("wirebroker_fetch_session_partitions_cached", ())] == 1
    assert m[("wirebroker_fetch_session_evictions_total", ())] == 1


def test_names_follow_prometheus_conventions() -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(fake_state, RequestStats(), FetchSessions()))
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        assert family.name.startswith("wirebroker_")
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples)
        assert not family.name.endswith("_total")  # the family name carries no suffix
        if "bytes" in family.name:
            assert (
                family.name.endswith("_bytes")
                or "bytes_in" in family.name
                or ("bytes_out" in family.name)
            )


def test_authentication_counters_per_listener_and_mechanism() -> None:
    from wirebroker.security.auth_stats import AuthenticationStats

    stats = AuthenticationStats()
    stats.success("SASL_SSL", "OAUTHBEARER")
    stats.success("SASL_SSL", "OAUTHBEARER")
    stats.failure("SASL_SSL", "OAUTHBEARER")
    stats.failure("SASL_PLAINTEXT", "")  # a handshake naming no enabled mechanism

    def state() -> dict[str, Any]:
        return fake_state() | {"authentications": stats.rows()}

    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(state, RequestStats()))
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }
    oauth = (("listener", "SASL_SSL"), ("mechanism", "OAUTHBEARER"))
    unsupported = (("listener", "SASL_PLAINTEXT"), ("mechanism", "unsupported"))
    assert samples[("wirebroker_successful_authentications_total", oauth)] == 2
    assert samples[("wirebroker_failed_authentications_total", oauth)] == 1
    assert samples[("wirebroker_failed_authentications_total", unsupported)] == 1
    assert samples[("wirebroker_successful_authentications_total", unsupported)] == 0
    # a snapshot without SASL listeners: the families, no series
    assert not any(name.endswith("authentications_total") for name, _ in scrape())
