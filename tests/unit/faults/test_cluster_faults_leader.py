"""`ClusterFaults.shrink_isr` follows the leader while a move settles (no broker needed)."""

from __future__ import annotations

from typing import Any

import pytest

import wirebroker.testing.faults as faults_mod
from wirebroker.testing.faults import ClusterFaults, FaultRequestError, Faults


def _cluster(views: dict[int, list[int]], metadata_leader: int) -> tuple[ClusterFaults, list[int]]:
    """Brokers whose successive answers name these leaders (their own id: they accept)."""
    asked: list[int] = []

    def broker(node: int) -> Faults:
        def call(method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
            asked.append(node)
            seen = views[node].pop(0) if len(views[node]) > 1 else views[node][0]
            if seen == node:
                return 201, {"fault": {"id": 40 + node}}
            return 409, {"error": f"broker {node} does not lead", "leader": seen}

        return Faults(call, where=f"fake {node}")

    brokers = {n: broker(n) for n in views}
    return ClusterFaults(brokers, lambda topic, partition: metadata_leader), asked


def test_two_brokers_naming_each_other_are_asked_until_they_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(faults_mod.time, "sleep", pauses.append)
    # right after a move: 0 says 1 leads, 1 says 0 leads, twice; then 1 has taken over
    cluster, asked = _cluster({0: [1, 1, 1], 1: [0, 0, 1], 2: [1]}, metadata_leader=0)
    assert cluster.shrink_isr("f", 0) == (1, 41)
    assert asked == [0, 1, 0, 1, 0, 1]
    assert pauses and all(p <= 0.1 for p in pauses)


def test_a_refusal_that_is_not_about_the_leader_is_raised_at_once() -> None:
    def call(method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        return 404, {"error": "unknown topic"}

    cluster = ClusterFaults({0: Faults(call)}, lambda topic, partition: 0)
    with pytest.raises(FaultRequestError, match="404"):
        cluster.shrink_isr("nope", 0)


def test_views_that_never_agree_fail_after_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults_mod.time, "sleep", lambda s: None)
    monkeypatch.setattr(faults_mod, "LEADER_WAIT_S", 0.0)
    cluster, asked = _cluster({0: [1], 1: [0]}, metadata_leader=0)
    with pytest.raises(FaultRequestError, match="409"):
        cluster.shrink_isr("f", 0)
    assert asked == [0]
