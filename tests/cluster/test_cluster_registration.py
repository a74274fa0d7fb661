"""Broker registration on a real ZooKeeper when /brokers/ids/<id> is held by another session.

kill -9 then an immediate restart: the killed process's session still holds the registration
until ZooKeeper expires it (the cluster tests' 4 s session timeout); the new process waits for
it, saying so in one log line, and comes back. A second process started with the id of a live
broker waits the session timeout + 3 s, then exits with status 1 and one error line.
"""

from __future__ import annotations

import time

import pytest
from _broker import BrokerProcess, BrokerStartError
from _cluster import ClusterProcesses

SESSION_S = 4.0  # _cluster.DEFAULT_OVERRIDES' zookeeper.session.timeout.ms
MARGIN_S = 3.0  # wirebroker.cluster.zk_registration.REGISTRATION_MARGIN_S
WAIT_LINE = "for the previous session of broker {id} to expire"


def _starts(text: str) -> list[str]:
    """The broker's stderr, one string per start (BrokerProcess writes a marker line)."""
    return text.split("===== start #")[1:]


def test_restart_right_after_kill9_waits_for_the_old_session(cluster: ClusterProcesses) -> None:
    victim = 1
    cluster.kill9(victim)
    began = time.monotonic()
    cluster.restart(victim)  # waits for the ready line and the registration
    took = time.monotonic() - began
    assert took < SESSION_S + MARGIN_S, f"restart took {took:.1f} s"
    last = _starts(cluster.brokers[victim].log_text())[-1]
    assert last.count(WAIT_LINE.format(id=victim)) == 1, last[-3000:]
    assert victim in cluster.registered()


def test_an_id_held_by_a_live_broker_exits_with_one_line(cluster: ClusterProcesses) -> None:
    workdir = cluster.workdir / "duplicate"
    twin = BrokerProcess(
        workdir / "data",
        log_path=workdir / "stderr.log",
        overrides=cluster.overrides,
        ready_timeout=SESSION_S + MARGIN_S + 20,
        extra_args=["--zookeeper", cluster.connect, "--node-id", "0"],
    )
    try:
        began = time.monotonic()
        with pytest.raises(BrokerStartError, match="exited with code 1"):
            twin.start()
        took = time.monotonic() - began
        assert SESSION_S + MARGIN_S <= took < SESSION_S + MARGIN_S + 15, took
        text = _starts(twin.log_text())[-1]
        assert text.count(WAIT_LINE.format(id=0)) == 1, text[-3000:]
        errors = [line for line in text.splitlines() if line.startswith("wirebroker: cannot")]
        assert errors == [
            "wirebroker: cannot start: broker id 0 is registered in ZooKeeper by another live "
            "session after 7.0 s (is another broker running with node.id 0?)"
        ], text[-3000:]
        assert "Traceback" not in text
        assert 0 in cluster.registered()  # the live broker keeps its registration
    finally:
        twin.close()
