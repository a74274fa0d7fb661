"""Fixtures for integration tests: a real wirebroker subprocess per test.

    broker            a started BrokerProcess with default settings (see _broker.py)
    broker_factory    start(**overrides) -> BrokerProcess; for brokers with config overrides
                      (`broker_factory(**{"num.partitions": "4"})`) or several brokers
    admin_broker      a started BrokerProcess with the admin listener (`--admin-port 0`)

Every broker a test started is stopped at teardown; when the test fails, the broker's stderr
(all its starts) is attached to the report as a "broker log" section.

Every client call in these tests has its own timeout; a watchdog catches a hang that slipped
through anyway: after WATCHDOG_SECONDS it dumps every thread's stack and SIGKILLs the test's
brokers (so blocked client calls fail and the test ends as a failure); if the test is still
running HARD_EXIT_SECONDS later, faulthandler ends the whole run. (Both come from
tests/process_guards.py, shared with tests/cluster.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _broker import BrokerFactory, BrokerProcess
from process_guards import failure_sections, watchdog

WATCHDOG_SECONDS = float(os.environ.get("WIREBROKER_TEST_WATCHDOG", "180"))

_BROKERS = pytest.StashKey[list[BrokerProcess]]()


def _sections(item: pytest.Item, when: str) -> Iterator[tuple[str, str]]:
    for i, proc in enumerate(item.stash.get(_BROKERS, [])):
        yield f"broker log #{i} ({when})", proc.log_text()


pytest_runtest_makereport = failure_sections(_sections)


@pytest.fixture(autouse=True)
def _finalize_leaked_sockets(finalize_leaked_sockets: None) -> None:
    """Every integration test: kafka-python's leaked sockets collected after it."""


@pytest.fixture(autouse=True)
def _watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    def kill() -> None:
        for proc in request.node.stash.get(_BROKERS, []):
            proc.kill9()

    with watchdog(request.node.nodeid, WATCHDOG_SECONDS, kill):
        yield


@pytest.fixture
def broker_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerFactory]:
    started: list[BrokerProcess] = []
    request.node.stash[_BROKERS] = started

    def start(**overrides: str) -> BrokerProcess:
        n = len(started)
        proc = BrokerProcess(
            tmp_path / f"data{n}", log_path=tmp_path / f"broker{n}.log", overrides=overrides
        )
        started.append(proc)
        proc.start()
        return proc

    yield start
    for proc in started:
        proc.close()


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    return broker_factory()


@pytest.fixture
def admin_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path / "data", log_path=tmp_path / "broker.log", extra_args=["--admin-port", "0"]
    )
    try:
        proc.start()
        yield proc
    finally:
        proc.close()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Any]:
    """Three in-process brokers over the in-memory ZooKeeper (_memory_cluster.start_cluster),
    stopped after the test. Modules with their own `cluster` fixture override this one."""
    import trio
    from _memory_cluster import start_cluster

    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path)
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()
