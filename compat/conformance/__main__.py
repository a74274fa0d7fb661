"""The differential conformance harness (compat/conformance/README.md).

    python -m compat.conformance              # play, write compat/CONFORMANCE.md, check the ratchet
    python -m compat.conformance --update     # ... and add newly identical entries to the ratchet
    python -m compat.conformance --only fetch # only scenarios with a step id starting so; prints
                                              # the differences, writes nothing, no ratchet
Exit status: 0, or 1 when the ratchet breaks or a stage-setting action failed (`--strict`:
also when a difference has no reason in reasons.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from compat.conformance import ratchet
from compat.conformance.classify import pairs, reason_for
from compat.conformance.harness import KAFKA, OURS, brokers, compare_run, play_both
from compat.conformance.normalise import Facts
from compat.conformance.report import render, step_details
from compat.conformance.transport import NOT_SENT

REPORT = Path(__file__).resolve().parents[1] / "CONFORMANCE.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="compat/conformance/run", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--update", action="store_true", help="add newly identical entries to identical.txt"
    )
    parser.add_argument(
        "--only", help="only scenarios with a step id starting with this; prints, writes nothing"
    )
    parser.add_argument("--out", type=Path, default=REPORT, help="where to write the report")
    parser.add_argument("--strict", action="store_true", help="fail on unexplained differences too")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with brokers() as (kafka, ours):
        run = play_both(kafka, ours, args.only)
    results = compare_run(run)
    all_pairs = pairs(run.advertised, results)
    names = Facts(names=run.names.reverse())
    failures = sorted(
        f"{label}: {names.name(text)}"
        for label in (KAFKA, OURS)
        for text in run.results[label].failures
    )
    failures += [
        f"both: step {r.step.id} could not be built: {r.outcomes[KAFKA].detail}"
        for r in results
        if all(o.kind == NOT_SENT for o in r.outcomes.values())
    ]
    elapsed = time.monotonic() - started
    if args.only:
        for r in results:
            if not r.identical:
                print("\n".join(step_details(r)))
        same = sum(r.identical for r in results)
        print(f"{same} of {len(results)} steps identical ({elapsed:.0f} s)")
        print("\n".join(failures))
        return 0
    args.out.write_text(render(all_pairs, results, failures))
    identical = ratchet.identical_now(results, all_pairs)
    listed = ratchet.load()
    problems = ratchet.check(listed, identical, ratchet.played_now(results, all_pairs))
    if args.update:
        print(f"identical.txt: {len(ratchet.update(identical))} entries added")
    unexplained = sorted(
        {
            r.step.id
            for r in results
            for d in r.differences
            if reason_for(r, d).kind == "unexplained"
        }
    )
    same = sum(r.identical for r in results)
    print(f"wrote {args.out} ({len(results)} steps, {same} identical) in {elapsed:.0f} s")
    status = 0
    for line in problems:
        print(f"RATCHET: {line}")
        status = 1
    for line in failures:
        print(f"HARNESS: {line}")
        status = 1
    if unexplained:
        print(f"UNEXPLAINED differences in {len(unexplained)} steps: {', '.join(unexplained[:20])}")
        status = 1 if args.strict else status
    return status


if __name__ == "__main__":
    sys.exit(main())
