"""Run the deterministic cluster simulation (tests/sim/_sim.py) for many seeds, or replay one.

    python tools/reliability/sim.py --seeds 200            seeds 0..199 (--first to shift)
    python tools/reliability/sim.py --seed 1234 [--trace]  replay one seed (its event trace)

Each seed is a whole run of three brokers under faults in virtual time (see tests/sim/_sim.py);
a failing seed is printed with its replay command, and the exit status is 1 if any failed.
The same seed gives the same run (digest) in any process: string hashing does not take part
(PYTHONHASHSEED is fixed to 0 here anyway, by re-executing, so that a replay cannot differ).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "sim"))

from _sim import SimConfig, replay_command, run_seed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=0, help="run this many seeds")
    ap.add_argument("--first", type=int, default=0, help="the first seed of --seeds")
    ap.add_argument("--seed", type=int, action="append", default=[], help="replay this seed")
    ap.add_argument("--load", type=float, default=SimConfig.load_s, help="virtual s of load")
    ap.add_argument("--records", type=int, default=SimConfig.records)
    ap.add_argument(
        "--unsafe",
        action="store_true",
        help="negative control: min.insync.replicas=1, unclean election (losses expected)",
    )
    ap.add_argument("--trace", action="store_true", help="print the event trace of each run")
    ap.add_argument("--log", default="CRITICAL", help="broker log level (default: CRITICAL)")
    args = ap.parse_args()
    logging.basicConfig(level=getattr(logging, args.log.upper()), stream=sys.stderr)
    seeds = list(args.seed) + list(range(args.first, args.first + args.seeds))
    if not seeds:
        ap.error("give --seeds N or --seed S")
    cfg = SimConfig(load_s=args.load, records=args.records, unsafe=args.unsafe)
    failed = []
    t0 = time.perf_counter()
    for seed in seeds:
        result = run_seed(seed, cfg)
        if args.trace:
            print("\n".join(result.trace))
        print(result.summary(), flush=True)
        if not result.ok:
            failed.append(seed)
            print(f"  FAILED: replay with: {replay_command(seed)}", flush=True)
    print(
        f"{len(seeds)} seeds, {len(failed)} failed {failed}, {time.perf_counter() - t0:.1f} s wall"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
