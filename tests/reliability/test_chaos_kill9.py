"""kill -9 chaos in CI: five SIGKILLs of the broker under idempotent (acks=all) and acks=1
producers and a committing two-member consumer group; no acknowledged record may be lost,
duplicated, moved or reordered, and no acknowledged commit may go backwards.

The workload and the checker are in `_chaos.py`; the seed is the run's `reliability_seed`
(printed; replay with WIREBROKER_RELIABILITY_SEED). The soak version with 50+ kills is
`tools/reliability/chaos.py`.
"""

from __future__ import annotations

from pathlib import Path

import _chaos
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.compat, pytest.mark.exclusive]

KILLS = 5


def test_kill9_under_load_loses_nothing(tmp_path: Path, reliability_seed: int) -> None:
    report = _chaos.run_chaos(tmp_path, reliability_seed, KILLS, min_gap=1.0, max_gap=2.5)
    print(report.summary())
    assert report.kills == KILLS
    assert report.acked > 1000, report.summary()  # the workload really ran across the kills
    assert report.lost == 0, report.summary()
    assert report.misplaced == 0, report.summary()
    assert report.duplicates == 0, report.summary()
    assert report.reorders == 0, report.summary()
    assert report.commit_regressions == 0, report.summary()
    assert report.commits > 0 and report.commit_checks > 0, report.summary()
    assert report.duration_s < 90, report.summary()


def _log(*records: tuple[int, int, str, int]) -> dict[int, list[tuple[int, bytes]]]:
    out: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}
    for p, off, name, seq in records:
        out[p].append((off, _chaos.payload(name, seq)))
    return out


def test_checker_counts_each_kind_of_damage() -> None:
    """The checker itself: a clean log passes; each fault is counted where it belongs."""
    acked = {"a-000000000": (0, 0), "a-000000001": (0, 1), "b-000000000": (1, 0)}
    clean = _chaos.ChaosReport(seed=0)
    _chaos.check_log(_log((0, 0, "a", 0), (0, 1, "a", 1), (1, 0, "b", 0)), acked, clean)
    assert clean.ok and clean.log_records == 3

    lost = _chaos.ChaosReport(seed=0)
    _chaos.check_log(_log((0, 0, "a", 0), (1, 0, "b", 0)), acked, lost)
    assert (lost.lost, lost.misplaced, lost.duplicates, lost.reorders) == (1, 0, 0, 0)

    moved = _chaos.ChaosReport(seed=0)
    _chaos.check_log(_log((0, 0, "a", 0), (0, 2, "a", 1), (1, 0, "b", 0)), acked, moved)
    assert (moved.lost, moved.misplaced) == (0, 1)

    dup = _chaos.ChaosReport(seed=0)
    log = _log((0, 0, "a", 0), (0, 1, "a", 1), (0, 2, "a", 1), (1, 0, "b", 0))
    _chaos.check_log(log, acked, dup)
    assert (dup.duplicates, dup.reorders, dup.lost) == (1, 0, 0)

    swapped = _chaos.ChaosReport(seed=0)
    _chaos.check_log(_log((0, 0, "a", 1), (0, 1, "a", 0), (1, 0, "b", 0)), acked, swapped)
    assert swapped.reorders == 1 and swapped.misplaced == 2

    offsets = _chaos.ChaosReport(seed=0)
    _chaos.check_log(_log((0, 1, "a", 0), (0, 1, "a", 1), (1, 0, "b", 0)), acked, offsets)
    assert offsets.reorders == 1


def test_checker_counts_commit_regressions() -> None:
    events = [
        {"t": 1.0, "offsets": {"0": 5, "1": 3}},
        {"t": 3.0, "offsets": {"0": 4}},  # went backwards
        {"t": 2.0, "offsets": {"0": 7}},
    ]
    report = _chaos.ChaosReport(seed=0)
    assert _chaos.check_commits(events, report) == {0: 7, 1: 3}
    assert (report.commits, report.commit_regressions) == (4, 1)
