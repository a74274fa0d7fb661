"""Cluster chaos in CI: a short mix of faults of every kind on a 3-ZooKeeper, 3-broker cluster
under load (idempotent acks=all and acks=1 producers, a plain consumer, a committing group),
checked by `_chaos`'s history checker; and the negative control that proves the checker fails
when acknowledged records are really lost (unclean leader election of a stale replica).

The harness is `_cluster_chaos.py`; the seed is the run's `reliability_seed` (printed; replay
with WIREBROKER_RELIABILITY_SEED, or `python tools/reliability/cluster_chaos.py --seed N`).
"""

from __future__ import annotations

from pathlib import Path

import _chaos
import _cluster_chaos as cc
import pytest
from zk_fixtures import require_zookeeper

pytestmark = [pytest.mark.slow, pytest.mark.compat, pytest.mark.exclusive]

FAULTS = 10  # every kind once, one kind twice (the schedule cycles the kinds shuffled)


def test_short_fault_mix_loses_nothing(tmp_path: Path, reliability_seed: int) -> None:
    require_zookeeper()
    report = cc.run_cluster_chaos(
        tmp_path, reliability_seed, FAULTS, rolling_restarts=2, min_gap=0.3, max_gap=1.0
    )
    c = report.check
    lines = "\n".join(cc.fault_lines(report))
    print(f"{lines}\n{c.summary()}")
    assert len(report.faults) == FAULTS and not c.not_healed, c.summary()
    assert set(report.by_kind()) == set(cc.KINDS), lines
    assert c.acked > 1000, c.summary()  # the load really ran across the faults
    assert c.lost == 0 and c.misplaced == 0, c.summary()
    assert c.duplicates == 0 and c.reorders == 0 and c.gaps == 0, c.summary()
    assert c.overwritten == 0 and c.reads_checked > 0, c.summary()
    assert c.divergent == 0 and c.replicas_compared == 6, c.summary()
    assert c.epoch_regressions == 0 and c.epoch_samples > 0, c.summary()
    assert c.commit_regressions == 0 and c.commits > 0, c.summary()
    assert report.isr_slow == 0, c.summary()
    assert report.ok


def test_sasl_ssl_cluster_under_faults_loses_nothing(tmp_path: Path, reliability_seed: int) -> None:
    """The same workload on a cluster whose clients and inter-broker traffic use SASL_SSL
    (SCRAM-SHA-256; `tools/reliability/cluster_chaos.py --security SASL_SSL` runs the full mix):
    three faults that make followers and clients reconnect (and re-authenticate) through it."""
    require_zookeeper()
    kinds = ("kill_leader", "partition", "kill_follower")
    report = cc.run_cluster_chaos(
        tmp_path, reliability_seed, 3, kinds=kinds, min_gap=0.3, max_gap=1.0, security="SASL_SSL"
    )
    c = report.check
    print("\n".join(cc.fault_lines(report)) + f"\n{c.summary()}")
    assert len(report.faults) == 3 and not c.not_healed, c.summary()
    assert c.acked > 300, c.summary()
    assert c.lost == 0 and c.misplaced == 0 and c.duplicates == 0, c.summary()
    assert c.divergent == 0 and c.replicas_compared == 6, c.summary()
    assert report.ok
    logs = "".join((tmp_path / f"broker-{i}.log").read_text(errors="replace") for i in range(3))
    assert "authenticated User:alice on listener SASL_SSL" in logs  # peers and clients did


def test_negative_control_unclean_election_loses_acked_records(
    tmp_path: Path, reliability_seed: int
) -> None:
    require_zookeeper()
    check = cc.run_negative_control(tmp_path, reliability_seed)
    print(check.summary())
    assert check.lost > 0, f"the stale leader kept every acknowledged record? {check.summary()}"
    assert not check.ok


def test_checker_sees_weak_losses_apart_and_changed_offsets() -> None:
    acked = {"idem-all-000000000": (0, 0), "plain-1-000000000": (0, 1)}
    log = {0: [(0, _chaos.payload("idem-all", 0)), (2, _chaos.payload("idem-all", 1))]}
    report = _chaos.ChaosReport(seed=0)
    _chaos.check_log(log, acked, report, weak=("plain-1",), dense=True)
    assert (report.lost, report.weak_lost, report.weak_acked, report.gaps) == (0, 1, 1, 1)
    _chaos.check_reads(log, [(0, 0, "idem-all-000000000"), (0, 1, "plain-1-000000000")], report)
    assert report.overwritten == 1 and report.reads_checked == 2
    assert not report.ok


def test_checker_sees_a_fenced_leader_acknowledging_lost_records() -> None:
    """A synthetic history: b1 leads p0 at epoch 3 until the controller writes epoch 4 (b2)
    at t=10. b1 acknowledged offsets 0-1 at t=5 (before the fence, kept), offset 2 at t=11
    (after the fence, but b2 took the record over: honest), and offsets 3-4 at t=12 as a
    zombie; the final log holds b2's own records at 3-4: a fenced acknowledgement lost."""
    ident = _chaos.ident_of
    final = [(off, _chaos.payload("idem-all", off)) for off in range(3)]
    final += [(3, _chaos.payload("idem-all", 10)), (4, _chaos.payload("idem-all", 11))]
    log = {0: final}
    acks = [
        _chaos.Ack(1, 0, 3, 5.0, ((0, ident(final[0][1])), (1, ident(final[1][1])))),
        _chaos.Ack(1, 0, 3, 11.0, ((2, ident(final[2][1])),)),
        _chaos.Ack(1, 0, 3, 12.0, ((3, "idem-all-000000003"), (4, "idem-all-000000004"))),
        _chaos.Ack(2, 0, 4, 13.0, ((3, ident(final[3][1])), (4, ident(final[4][1])))),
    ]
    epochs = [(0, 3, 1.0), (0, 4, 10.0), (1, 9, 0.5)]
    report = _chaos.ChaosReport(seed=0)
    _chaos.check_fenced_acks(acks, epochs, log, report)
    assert (report.acks_attributed, report.acks_after_fence, report.fenced_acks_lost) == (4, 2, 1)
    assert not report.ok and "fenced ack: b1" in report.examples[0]

    clean = _chaos.ChaosReport(seed=0)
    _chaos.check_fenced_acks(acks[:2] + acks[3:], epochs, log, clean)
    assert (clean.acks_after_fence, clean.fenced_acks_lost) == (1, 0) and clean.ok
    # the same zombie ack with the new epoch written only after it: not fenced (lost, though)
    late = _chaos.ChaosReport(seed=0)
    _chaos.check_fenced_acks(acks[2:3], [(0, 3, 1.0), (0, 4, 12.5)], log, late)
    assert (late.acks_after_fence, late.fenced_acks_lost) == (0, 0)


def test_schedule_is_reproducible_and_covers_every_kind() -> None:
    import random

    a = cc.schedule(random.Random(7), 10, cc.KINDS)
    assert a == cc.schedule(random.Random(7), 10, cc.KINDS)
    assert set(a) == set(cc.KINDS)
