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


def test_partition_story_shows_who_read_and_committed_what() -> None:
    m0 = [
        {"ev": "assigned", "t": 1.0, "gen": 1, "partitions": [0, 1]},
        {"ev": "records", "t": 1.5, "gen": 1, "records": [[1, 0, None, ""], [1, 1, None, ""]]},
        {"ev": "commit", "t": 1.6, "gen": 1, "offsets": {"1": 2}},
        {"ev": "records", "t": 1.7, "gen": 1, "records": [[1, 2, None, ""], [0, 9, None, ""]]},
        {"ev": "commit", "t": 1.8, "gen": 1, "offsets": {"1": 3}},
        {"ev": "revoked", "t": 2.0, "gen": 1, "partitions": [0, 1]},
    ]
    m1 = [
        {"ev": "assigned", "t": 2.5, "gen": 2, "partitions": [1]},
        {"ev": "records", "t": 3.0, "gen": 2, "records": [[1, 0, None, ""]]},
        {"ev": "commit", "t": 3.1, "gen": 2, "offsets": {"1": 1}},
    ]
    story = _chaos.partition_story([("m0", m0), ("m1", m1)], 1)
    assert story == [
        "+0.00s m0 gen 1 assigned [0, 1]",
        "+0.50s m0 gen 1 read 0..2",
        "+0.80s m0 gen 1 commit 3",
        "+1.00s m0 gen 1 revoked [0, 1]",
        "+1.50s m1 gen 2 assigned [1]",
        "+2.00s m1 gen 2 read 0..0",
        "+2.10s m1 gen 2 commit 1",
    ]
