"""Many connections against a broker subprocess (tools/reliability/connections.py with CI-sized
numbers; the tool itself runs 10,000): idle connections all served and their memory, slow
partial frames closed after connections.max.idle.ms, max.connections and
max.connections.per.ip as Kafka applies them, and the broker raising its own open-file limit.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest
from _nettools import BrokerProcess, connections

pytestmark = pytest.mark.slow  # broker subprocesses

N_IDLE = int(os.environ.get("WIREBROKER_IDLE_CONNECTIONS", "1000"))
IDLE_MS = 500


@pytest.fixture
def start(tmp_path: Path) -> Iterator[object]:
    procs: list[BrokerProcess] = []

    def _start(**overrides: str) -> BrokerProcess:
        proc = BrokerProcess(
            tmp_path / f"data{len(procs)}",
            log_path=tmp_path / f"broker{len(procs)}.log",
            overrides=overrides,
        )
        procs.append(proc)
        proc.start()
        return proc

    yield _start
    for proc in procs:
        proc.close()


def test_idle_connections_beyond_the_inherited_fd_limit_are_all_served(
    tmp_path: Path,
) -> None:
    """The broker starts with a soft RLIMIT_NOFILE below N_IDLE and raises it itself."""
    connections.raise_nofile_limit(N_IDLE + 200)
    inherited = N_IDLE // 2
    proc = connections.LowFdBroker(
        tmp_path / "lowfd", log_path=tmp_path / "lowfd.log", soft_nofile=inherited
    )
    try:
        proc.start()
        _check_idle_connections(proc, inherited)
    finally:
        proc.close()
    assert f"from {inherited} to" in proc.log_text()  # the broker says it raised its limit


def _check_idle_connections(proc: BrokerProcess, inherited: int) -> None:
    assert proc.pid is not None
    assert connections.process_nofile_soft_limit(proc.pid) > N_IDLE + 100
    figures = connections.idle_connections(proc, N_IDLE)
    assert figures.connections == N_IDLE
    assert figures.broker_fds > N_IDLE > inherited
    assert figures.served == figures.sampled == N_IDLE
    assert proc.is_running()
    # the memory an idle connection costs stays small (measured: ~7 KiB)
    assert 0 < figures.rss_per_connection < 64 * 1024, figures


def test_slow_partial_frames_are_closed_after_the_idle_timeout(start) -> None:
    proc = start(**{"connections.max.idle.ms": str(IDLE_MS)})
    figures = connections.partial_frames(proc, IDLE_MS, per_kind=3)
    assert figures.not_closed == []
    assert set(figures.closed_after_ms) == set(connections.PARTIAL_KINDS)
    for kind, times in figures.closed_after_ms.items():
        for elapsed in times:
            # closed at idle after the first byte; trickled bytes do not extend it
            assert IDLE_MS * 0.9 <= elapsed <= IDLE_MS + 1500, (kind, times)
    assert figures.control_open and figures.control_requests >= 6


def test_max_connections_blocks_accepting_until_one_closes(start) -> None:
    proc = start(**{"max.connections": "20"})
    figures = connections.max_connections(proc, 20)
    assert figures.served_under_limit == 20
    assert not figures.extra_answered_while_full
    assert figures.extra_served_after_a_close


def test_max_connections_per_ip_closes_the_extra_connection_at_accept(start) -> None:
    proc = start(**{"max.connections.per.ip": "3"})
    figures = connections.per_ip_limit(proc, 3)
    assert figures.served_under_limit == 3
    assert figures.extra_closed_at_accept
    assert figures.other_address_served is True
    assert figures.served_again_after_a_close
    assert "Rejected connection from 127.0.0.1" in proc.log_text()


def test_running_out_of_file_descriptors_delays_clients_instead_of_failing(start) -> None:
    """accept() failing with EMFILE is logged once and retried; queued clients are served as
    soon as descriptors free up."""
    proc = start()
    assert proc.pid is not None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (connections.open_fds(proc.pid) + 4, hard))
    address = connections.address_of(proc)
    first = [connections.connect(address) for _ in range(4)]
    waiting = [connections.connect(address) for _ in range(8)]  # queued in the backlog
    try:
        assert all(connections.api_versions_ok(s, i) for i, s in enumerate(first))
        for i, sock in enumerate(waiting):
            sock.sendall(connections.api_versions_request(100 + i))
        for sock in first:
            sock.close()
        first = []
        resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
        for i, sock in enumerate(waiting):
            frame = connections.read_frame(sock)
            assert frame is not None, f"queued connection {i} never served"
    finally:
        for sock in first + waiting:
            sock.close()
    log_text = proc.log_text()
    assert log_text.count("accept failed") == 1, log_text[-3000:]
    assert "accepting connections again" in log_text
    assert proc.is_running()
