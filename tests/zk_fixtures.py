"""Throwaway ZooKeeper for the tests (imported by tests/conftest.py, reusable by any test).

    zookeeper   session-scoped: one standalone ZooKeeperServer for the whole run (per xdist
                worker), started on first use (~0.5 s), stopped at the end. Skipped when the
                server is not installed, failed instead under CI (.ci/run installs it).
    zk_hosts    a connect string with a fresh chroot ("127.0.0.1:p/t-<hex>") for one test:
                ZkCoordination creates the chroot, tests never see each other's znodes.

`expire_session(servers, client_id)` expires a live session from outside, as ZooKeeper would
after a timeout, in milliseconds: a second client takes the session over (same id and
password; the server drops the first connection) and closes it. The owner then reconnects,
hears "session expired" (SUSPENDED, LOST) and opens a new session (CONNECTED). Blocking: call
it through trio.to_thread.run_sync.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from wirebroker.coordination.zk import split_chroot
from wirebroker.coordination.zk_server import INSTALL_HINT, ZooKeeperServer, zookeeper_available

__all__ = ["expire_session", "require_zookeeper", "zk_hosts", "zookeeper"]


def require_zookeeper() -> None:
    """Skip the test (fail it under CI) when no ZooKeeper server can be started here."""
    if not zookeeper_available():
        message = f"ZooKeeper server not installed: {INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    require_zookeeper()
    server = ZooKeeperServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_hosts(zookeeper: ZooKeeperServer) -> str:
    return f"{zookeeper.connect_string}/t-{uuid.uuid4().hex[:16]}"


def expire_session(hosts: str, client_id: tuple[int, bytes], timeout_s: float = 10.0) -> None:
    servers, _ = split_chroot(hosts)
    thief = KazooClient(hosts=servers, client_id=client_id, timeout=timeout_s)
    try:
        thief.start(timeout=timeout_s)
    finally:
        thief.stop()
        thief.close()
