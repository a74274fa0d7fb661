"""Fixtures for integration tests: a real wirebroker subprocess per test.

    broker            a started BrokerProcess with default settings (see _broker.py)
    broker_factory    start(**overrides) -> BrokerProcess; for brokers with config overrides
                      (`broker_factory(**{"num.partitions": "4"})`) or several brokers

Every broker a test started is stopped at teardown; when the test fails, the broker's stderr
(all its starts) is attached to the report as a "broker log" section.

Every client call in these tests has its own timeout; a watchdog catches a hang that slipped
through anyway: after WATCHDOG_SECONDS it dumps every thread's stack and SIGKILLs the test's
brokers (so blocked client calls fail and the test ends as a failure); if the test is still
running HARD_EXIT_SECONDS later, faulthandler ends the whole run.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _broker import BrokerFactory, BrokerProcess

WATCHDOG_SECONDS = float(os.environ.get("WIREBROKER_TEST_WATCHDOG", "180"))
HARD_EXIT_SECONDS = 60

_BROKERS = pytest.StashKey[list[BrokerProcess]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        none: list[BrokerProcess] = []
        brokers = item.stash.get(_BROKERS, none)
        for i, proc in enumerate(brokers):
            report.sections.append((f"broker log #{i} ({report.when})", proc.log_text()))
    return report


@pytest.fixture(autouse=True)
def _watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    def expire() -> None:
        sys.stderr.write(
            f"\n*** {request.node.nodeid} still running after "
            f"{WATCHDOG_SECONDS} s: stacks follow; killing its brokers\n"
        )
        faulthandler.dump_traceback(all_threads=True)
        for proc in request.node.stash.get(_BROKERS, []):
            proc.kill9()

    timer = threading.Timer(WATCHDOG_SECONDS, expire)
    timer.daemon = True
    timer.start()
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS + HARD_EXIT_SECONDS, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        timer.cancel()


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
