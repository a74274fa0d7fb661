"""Fixtures of the cluster tests: a real ZooKeeper and real broker processes.

    zookeeper          (tests/zk_fixtures.py, session) one standalone ZooKeeperServer for the
                       whole run: Debian's `zookeeper` package on a free loopback port
    cluster_factory    start(brokers=3, **overrides) -> a started ClusterProcesses on its own
                       chroot of that ZooKeeper (overrides are broker configs, Kafka key names)
    cluster            cluster_factory() with the defaults: 3 brokers, fast timeouts
                       (_cluster.DEFAULT_OVERRIDES)

Every cluster a test started is stopped at teardown. When a test fails, each broker's stderr
(all its starts) and the ZooKeeper tree of the test's chroot are attached to the report.

kafka-python 3.0.12 leaks the socket of every refused reconnect to a dead broker (and these
tests kill brokers): every test here ignores that ResourceWarning and collects the leaked
sockets at its end, so that no later test fails on them (warnings are errors in this suite).

A watchdog (WIREBROKER_TEST_WATCHDOG seconds, default 240) dumps every thread's stack and
SIGKILLs the test's brokers, so that a hung client call fails the test instead of the run.
(The report sections and the watchdog come from tests/process_guards.py, shared with
tests/integration.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import leaked_sockets
from _cluster import ClusterProcesses
from process_guards import failure_sections, watchdog

from wirebroker.coordination.zk_server import ZooKeeperServer

WATCHDOG_SECONDS = float(os.environ.get("WIREBROKER_TEST_WATCHDOG", "240"))

_CLUSTERS = pytest.StashKey[list[ClusterProcesses]]()

ClusterFactory = Callable[..., ClusterProcesses]


def _zk_tree(cluster: ClusterProcesses) -> str:
    """The chroot's znodes with their data (for the report of a failed test)."""
    lines: list[str] = []

    def walk(path: str) -> None:
        try:
            data, _ = cluster.zk.get(path)
            children = cluster.zk.get_children(path)
        except Exception as exc:
            lines.append(f"{path}: {exc!r}")
            return
        if len(lines) > 400:
            return
        text = data.decode(errors="replace") if data else ""
        lines.append(f"{path} {text}".rstrip())
        for child in sorted(children):
            walk(f"{path.rstrip('/')}/{child}")

    walk("/")
    return "\n".join(lines)


_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.filterwarnings(leaked_sockets.IGNORE))


@pytest.fixture(autouse=True)
def _finalize_leaked_sockets(finalize_leaked_sockets: None) -> None:
    """Every cluster test: kafka-python's leaked sockets collected after it."""


def _sections(item: pytest.Item, when: str) -> Iterator[tuple[str, str]]:
    for c, cluster in enumerate(item.stash.get(_CLUSTERS, [])):
        for i, proc in enumerate(cluster.brokers):
            yield f"cluster {c} broker {i} log ({when})", proc.log_text()
        if when == "call":
            yield f"cluster {c} ZooKeeper {cluster.chroot}", _zk_tree(cluster)


pytest_runtest_makereport = failure_sections(_sections)


@pytest.fixture(autouse=True)
def _watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    def kill() -> None:
        for cluster in request.node.stash.get(_CLUSTERS, []):
            for proc in cluster.brokers:
                proc.kill9()

    with watchdog(request.node.nodeid, WATCHDOG_SECONDS, kill):
        yield


@pytest.fixture
def cluster_factory(
    request: pytest.FixtureRequest, tmp_path: Path, zookeeper: ZooKeeperServer
) -> Iterator[ClusterFactory]:
    started: list[ClusterProcesses] = []
    request.node.stash[_CLUSTERS] = started

    def start(brokers: int = 3, **overrides: str) -> ClusterProcesses:
        workdir = tmp_path / f"cluster{len(started)}"
        workdir.mkdir()
        cluster = ClusterProcesses(
            zookeeper.connect_string, workdir, brokers=brokers, overrides=overrides
        )
        started.append(cluster)
        return cluster.start()

    yield start
    for cluster in started:
        cluster.close()


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> ClusterProcesses:
    return cluster_factory()
