"""The admin listener of each broker of a real 3-broker cluster (real ZooKeeper).

Healthy: every broker's /metrics shows 3 live brokers, one controller, full ISRs and no
under-replicated partition. Then a follower is frozen (SIGSTOP, as test_cluster_isr.py): the
ISR shrinks, and the leaders' /metrics show the partitions as under-replicated with ISR size 2,
/api/state flags them, and the web view (headless Chromium) shows the flag and the group.

WIREBROKER_SCREENSHOT_DIR=docs/img keeps the screenshot as docs/img/web-view-cluster.png.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

import _wire
from _cluster import ClusterProcesses, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import admin_listener
from admin_listener import Samples, group_member, parse_metrics
from chromium import chromium_binary, dump_dom, keep_screenshot, screenshot

TOPIC = "payments"
GROUP = "fraud-check"


def admin_url(cluster: ClusterProcesses, node: int) -> str:
    return admin_listener.admin_url(cluster.brokers[node].stdout_lines)


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return bytes(resp.read())


def metrics(url: str) -> Samples:
    return parse_metrics(get(url + "metrics").decode())


def part(p: int) -> tuple[tuple[str, str], ...]:
    return (("partition", str(p)), ("topic", TOPIC))


def _check_healthy(urls: list[str], controller: int, leaders: dict[int, int]) -> None:
    """Every broker's metrics: 3 brokers, the controller, a connected session, nothing
    under-replicated or offline, full ISRs, and its replicas caught up at offset 50."""
    for node, url in enumerate(urls):
        m = metrics(url)
        assert m[("wirebroker_brokers", ())] == 3
        assert m[("wirebroker_controller_id", ())] == controller
        assert m[("wirebroker_is_controller", ())] == int(node == controller)
        assert m[("wirebroker_zookeeper_session_state", (("state", "connected"),))] == 1
        assert m[("wirebroker_under_replicated_partitions", ())] == 0
        assert m[("wirebroker_offline_partitions", ())] == 0
        for p in range(3):
            assert m[("wirebroker_partition_isr_size", part(p))] == 3
            assert m[("wirebroker_partition_replicas", part(p))] == 3
            assert m[("wirebroker_partition_leader", part(p))] == leaders[p]
            # every broker hosts a replica: its own log end (followers catch up)
        wait_until(
            lambda url=url: all(
                metrics(url)[("wirebroker_partition_log_end_offset", part(p))] == 50
                for p in range(3)
            ),
            20,
            f"broker {node}'s replicas at offset 50",
        )


def _wait_group_lag(url: str, lag: int) -> None:
    """Until the coordinator at `url` reports GROUP's lag on each TOPIC partition as `lag`."""
    # the coordinator's replica of a partition it follows knows the high watermark the
    # leader last sent (one fetch behind): wait for it
    wait_until(
        lambda: all(
            metrics(url).get(
                (
                    "wirebroker_group_lag",
                    (("group", GROUP), ("partition", str(p)), ("topic", TOPIC)),
                )
            )
            == lag
            for p in range(3)
        ),
        20,
        "the group's lag (50 - 20) on its coordinator",
    )


def test_cluster_metrics_show_isr_and_under_replicated_partitions(
    cluster_factory: Callable[..., ClusterProcesses], tmp_path: Path
) -> None:
    cluster = cluster_factory(
        **{
            "admin.listeners": "127.0.0.1:0",
            "replica.lag.time.max.ms": "2000",
            "zookeeper.session.timeout.ms": "10000",  # outlives the freeze (test_cluster_isr)
        }
    )
    urls = [admin_url(cluster, i) for i in range(3)]
    cluster.create_topic(TOPIC, partitions=3, replication_factor=3)
    leaders = {p: cluster.leader(TOPIC, p) for p in range(3)}
    for p, leader in leaders.items():
        code, _ = _wire.produce(
            cluster.address(leader), TOPIC, p, [b"pay-%d" % i for i in range(50)]
        )
        assert code == 0

    controller = cluster.controller()
    _check_healthy(urls, controller, leaders)

    commit = dict.fromkeys(range(3), 20)
    with group_member(
        cluster.bootstrap, TOPIC, GROUP, "fraud-check-1", expect=150, commit=commit, polls=60
    ) as got:
        assert got == 150
        states = [json.loads(get(u + "api/state")) for u in urls]
        coordinators = [
            i for i, s in enumerate(states) if any(g["group_id"] == GROUP for g in s["groups"])
        ]
        assert len(coordinators) == 1
        coordinator = coordinators[0]
        _wait_group_lag(urls[coordinator], 30)

        frozen = next(i for i in range(3) if i not in (controller, coordinator))
        led_elsewhere = [p for p in range(3) if leaders[p] != frozen]
        cluster.sigstop(frozen)
        try:

            def under_replicated() -> bool:
                for p in led_elsewhere:  # a follower at the log end counts as caught up
                    code, _ = _wire.produce(cluster.address(leaders[p]), TOPIC, p, [b"x"], acks=1)
                    assert code == 0
                return all(
                    metrics(urls[leaders[p]])[("wirebroker_partition_under_replicated", part(p))]
                    == 1
                    for p in led_elsewhere
                )

            wait_until(under_replicated, 30, f"under-replicated partitions once {frozen} froze")
            for p in led_elsewhere:
                m = metrics(urls[leaders[p]])
                assert m[("wirebroker_partition_isr_size", part(p))] == 2
                assert m[("wirebroker_under_replicated_partitions", ())] >= 1
            state = json.loads(get(urls[coordinator] + "api/state"))
            (topic,) = [t for t in state["topics"] if t["name"] == TOPIC]
            flagged = {p["partition"] for p in topic["partitions"] if p["under_replicated"]}
            assert set(led_elsewhere) <= flagged

            if chromium_binary() is not None:  # the Chromium checks are tests/integration's
                dom = dump_dom(urls[coordinator])
                assert "live, updated" in dom and "under-replicated" in dom and GROUP in dom
                png = screenshot(urls[coordinator], tmp_path / "web-view-cluster.png", height=760)
                keep_screenshot(png, "web-view-cluster.png")
        finally:
            cluster.sigcont(frozen)
