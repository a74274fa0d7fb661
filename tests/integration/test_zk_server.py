"""Throwaway ZooKeeper servers (wirebroker/coordination/zk_server.py) and ZkCoordination
riding through server failures: a 3-member ensemble losing its leader, a standalone server
killed and restarted within the session timeout (same session, SUSPENDED then CONNECTED)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from zk_fixtures import require_zookeeper

from wirebroker.coordination import zk_server
from wirebroker.coordination.api import CoordinationError, SessionState
from wirebroker.coordination.zk import ZkCoordination
from wirebroker.coordination.zk_server import (
    ZooKeeperEnsemble,
    ZooKeeperError,
    ZooKeeperServer,
    server_mode,
)

DEADLINE_S = 20.0


async def test_ensemble_keeps_serving_writes_when_its_leader_dies() -> None:
    require_zookeeper()
    with ZooKeeperEnsemble(3) as ensemble:
        modes = [ensemble.mode(i) for i in range(3)]
        assert sorted(m or "" for m in modes) == ["follower", "follower", "leader"]
        zk = ZkCoordination(
            ensemble.connect_string + "/cluster", session_timeout_s=6.0, connect_timeout_s=10.0
        )
        states: list[SessionState] = []
        zk.add_session_listener(states.append)
        async with trio.open_nursery() as nursery:
            await nursery.start(zk.run)
            await zk.create("/brokers/ids/1", b"1", ephemeral=True, makepath=True)
            session = zk.session_id
            ensemble.kill(modes.index("leader"))
            with trio.fail_after(DEADLINE_S):
                while True:
                    try:
                        await zk.create("/after-kill", b"x")
                        break
                    except CoordinationError:  # ConnectionLoss while the followers elect a leader
                        await trio.sleep(0.1)
            assert (await zk.get("/after-kill"))[0] == b"x"
            assert zk.session_id == session  # the session moved to a live member
            assert (await zk.get("/brokers/ids/1"))[1].ephemeral_owner == session
            assert SessionState.LOST not in states
            nursery.cancel_scope.cancel()


async def test_server_restart_within_the_session_timeout_keeps_the_session() -> None:
    require_zookeeper()
    with ZooKeeperServer() as server:
        zk = ZkCoordination(server.connect_string, session_timeout_s=10.0, connect_timeout_s=10.0)
        states: list[SessionState] = []
        zk.add_session_listener(states.append)
        async with trio.open_nursery() as nursery:
            await nursery.start(zk.run)
            await zk.create("/e", b"mine", ephemeral=True)
            seen: list[bytes | None] = []
            await zk.watch_data("/w", lambda data, stat: seen.append(data))
            session = zk.session_id
            await trio.to_thread.run_sync(server.kill)
            await trio.to_thread.run_sync(server.restart)
            with trio.fail_after(DEADLINE_S):
                while states[-1:] != [SessionState.CONNECTED]:
                    await trio.sleep(0.05)
            assert states == [SessionState.SUSPENDED, SessionState.CONNECTED]
            assert zk.session_id == session
            assert (await zk.get("/e"))[1].ephemeral_owner == session
            await zk.create("/w", b"after")  # the watch was set again on CONNECTED
            with trio.fail_after(DEADLINE_S):
                while seen[-1:] != [b"after"]:
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()


def test_standalone_server_serves_and_cleans_up() -> None:
    require_zookeeper()
    server = ZooKeeperServer()
    server.start()
    directory = server.members[0].directory
    assert server_mode(server.port) == "standalone"
    assert server.connect_string == f"127.0.0.1:{server.port}"
    server.stop()
    assert not directory.exists()
    assert server_mode(server.port) is None


def test_a_server_that_cannot_start_reports_its_log() -> None:
    require_zookeeper()
    server = ZooKeeperServer(java_options=["-Xmx1k"], start_timeout_s=20.0)
    with pytest.raises(ZooKeeperError, match="exited during start") as failed:
        server.start()
    assert "log tail" in str(failed.value)
    assert "heap" in str(failed.value).lower()


def test_missing_package_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(zk_server, "JAVA_DIR", tmp_path)
    assert not zk_server.zookeeper_available()
    with pytest.raises(ZooKeeperError, match="apt-get install zookeeper default-jre-headless"):
        ZooKeeperServer().start()


async def test_no_server_means_coordination_error_within_the_connect_timeout() -> None:
    port = zk_server._free_ports(1)[0]
    zk = ZkCoordination(f"127.0.0.1:{port}/chroot", session_timeout_s=4.0, connect_timeout_s=1.0)
    start = trio.current_time()
    with pytest.RaisesGroup(CoordinationError, flatten_subgroups=True):
        async with trio.open_nursery() as nursery:
            await nursery.start(zk.run)
    assert trio.current_time() - start < 3.0


async def test_cancelling_run_after_the_server_died_does_not_hang() -> None:
    require_zookeeper()
    with ZooKeeperServer() as server:
        zk = ZkCoordination(server.connect_string, session_timeout_s=4.0, connect_timeout_s=2.0)
        async with trio.open_nursery() as nursery:
            await nursery.start(zk.run)
            await trio.to_thread.run_sync(server.kill)
            start = trio.current_time()
            nursery.cancel_scope.cancel()
        assert trio.current_time() - start < 4.0
