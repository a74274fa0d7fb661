"""A fuzzing client against a live broker subprocess: after every hostile case a new
connection and a witness connection (opened before the first case) still get ApiVersions
answered, the process is alive at the end, and its log holds no traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _nettools import BrokerProcess, hostile

pytestmark = pytest.mark.slow  # a broker subprocess

CASES = int(os.environ.get("WIREBROKER_HOSTILE_CASES", "250"))


def test_broker_keeps_serving_through_hostile_clients(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log")
    try:
        bootstrap = proc.start()
        hostile.create_topics_live(bootstrap)
        figures = hostile.fuzz_live(bootstrap, CASES, seed=20240601)
        alive = proc.is_running()
    finally:
        proc.close()
    log_text = proc.log_text()
    assert figures.failures == [], figures.failures[:5]
    assert figures.cases == figures.healthy_after == figures.witness_ok == CASES
    assert alive
    assert hostile.count_unhandled(log_text) == 0, log_text[-4000:]
    assert set(figures.kinds) == set(hostile.CASE_KINDS)  # every kind of case was sent
    assert figures.outcomes.get("closed", 0) > 0 and figures.outcomes.get("answered", 0) > 0
