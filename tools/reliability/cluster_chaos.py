#!/usr/bin/env python3
"""Cluster chaos: `--faults` seeded faults of mixed kinds on a 3-ZooKeeper, 3-broker cluster
under load, then the history checker; prints the figures per fault kind.

    python tools/reliability/cluster_chaos.py [--faults 50] [--seed N] [--kinds a,b,...]
                                              [--rolling-restarts 5] [--json FILE]
                                              [--security SASL_SSL]

The harness, the fault kinds and the checks are described in tests/reliability/_cluster_chaos.py
(the CI short mix is tests/reliability/test_cluster_chaos.py). Prints the seed (replay with
--seed), one line per fault, then per fault kind: N, acknowledged acks=all records lost,
duplicates, unavailability p50/p99 (fault -> first acks=all acknowledgement of a record sent
after it, and -> first such record consumed) and the slowest ISR shrink; then the checker's
summary. Exit status 1 on any violation: an acknowledged acks=all record lost or moved, a
duplicate, a gap, an offset that changed its record, divergent replicas, an epoch or committed
offset going backwards, a fault not healed, an ISR shrink slower than 1.5 x
replica.lag.time.max.ms (+0.5 s of measurement slack). acks=1 losses are printed apart.

--security SASL_SSL: every broker's clients (producers, consumers, group members, the final
read-back) and its peers (follower fetches, controller requests, markers) use a SASL_SSL
listener with SCRAM-SHA-256 and a throwaway CA, through the proxies; only the harness's own
probes (Metadata, ListOffsets, CreateTopics) use a second, PLAINTEXT listener.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "reliability"), str(ROOT)]

import _cluster_chaos as cc  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--faults", type=int, default=50)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--kinds", default=",".join(cc.KINDS), help="comma-separated fault kinds")
    ap.add_argument("--rolling-restarts", type=int, default=5)
    ap.add_argument("--rate", type=float, default=100.0, help="records/s per producer")
    ap.add_argument("--json", type=Path, default=None, help="also write the report as JSON")
    ap.add_argument(
        "--security",
        choices=["PLAINTEXT", "SASL_SSL"],
        default="PLAINTEXT",
        help="SASL_SSL: clients and inter-broker traffic over SASL_SSL (SCRAM-SHA-256)",
    )
    args = ap.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = set(kinds) - set(cc.KINDS)
    if unknown:
        ap.error(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(cc.KINDS)}")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"cluster chaos seed {seed} (replay: --seed {seed})", flush=True)
    with tempfile.TemporaryDirectory(prefix="wb-cluster-chaos-") as tmp:
        r = cc.run_cluster_chaos(
            Path(tmp),
            seed,
            args.faults,
            kinds=kinds,
            rate=args.rate,
            rolling_restarts=args.rolling_restarts,
            log=lambda s: print(s, flush=True),
            security=None if args.security == "PLAINTEXT" else args.security,
        )
    for line in cc.fault_lines(r):
        print(line)
    print(r.check.summary())
    print(
        f"acks=1 (plain-1) acknowledged records lost: {r.check.weak_lost} of {r.check.weak_acked}"
    )
    if args.json is not None:
        args.json.write_text(cc.report_json(r))
    print("OK" if r.ok else "VIOLATIONS (see the examples above)")
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main())
