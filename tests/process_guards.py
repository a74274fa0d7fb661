"""What the suites that run real broker processes share (tests/integration, tests/cluster).

    failure_sections(sections)   a `pytest_runtest_makereport` hook wrapper for a conftest:
                                 when a test phase fails, it appends the report sections
                                 `sections(item, when)` gives ((title, text) pairs: the logs of
                                 the test's brokers, a ZooKeeper tree...) to the report
    watchdog(nodeid, seconds, kill)
                                 a context manager around one test: after `seconds` it dumps
                                 every thread's stack and calls `kill()` (SIGKILL the test's
                                 brokers, so blocked client calls fail and the test ends as a
                                 failure); if the test still runs HARD_EXIT_SECONDS later,
                                 faulthandler ends the whole run

Each conftest keeps what is its own: which processes a test started (a `pytest.StashKey` on
the test item) and what to report of them. Usage in a conftest::

    pytest_runtest_makereport = failure_sections(_sections)

    @pytest.fixture(autouse=True)
    def _watchdog(request):
        with watchdog(request.node.nodeid, WATCHDOG_SECONDS, lambda: kill_brokers(request)):
            yield
"""

from __future__ import annotations

import faulthandler
import sys
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager

import pytest

__all__ = ["HARD_EXIT_SECONDS", "Sections", "failure_sections", "watchdog"]

HARD_EXIT_SECONDS = 60

#: (item, phase "setup" / "call" / "teardown") -> (section title, text) pairs
Sections = Callable[[pytest.Item, str], Iterable[tuple[str, str]]]


def failure_sections(
    sections: Sections,
) -> Callable[
    [pytest.Item, pytest.CallInfo[None]], Generator[None, pytest.TestReport, pytest.TestReport]
]:
    """A `pytest_runtest_makereport` hook (assign it to that name in a conftest) that adds
    `sections(item, when)` to the report of a failed phase."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.failed:
            report.sections.extend(sections(item, report.when))
        return report

    return pytest_runtest_makereport


@contextmanager
def watchdog(
    nodeid: str, seconds: float, kill: Callable[[], None], *, hard_exit_s: float = HARD_EXIT_SECONDS
) -> Iterator[None]:
    """Guard one test against a hang (see the module doc)."""

    def expire() -> None:
        sys.stderr.write(
            f"\n*** {nodeid} still running after {seconds} s: stacks follow; killing its brokers\n"
        )
        faulthandler.dump_traceback(all_threads=True)
        kill()

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    faulthandler.dump_traceback_later(seconds + hard_exit_s, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        timer.cancel()
