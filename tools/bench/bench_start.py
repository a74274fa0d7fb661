#!/usr/bin/env python3
"""Start-up A/B: `wirebroker serve` of two checkouts, started alternately, as bench_broker times it.

Not a test. Each start is a fresh broker in a fresh data directory, with the bytecode cache
bench_broker uses (`_peers.bytecode_env`; one untimed start per checkout fills it). Timed from
the spawn of the process:

  ready line        `wirebroker ready on HOST:PORT` printed
  first answer      first ApiVersions answered on a new connection (polled every 2 ms)
  first produce     a 100 B acks=1 Produce to a new topic acknowledged (`_raw.first_produce`:
                    Metadata with auto-creation, then Produce, retried at once on refusal)
  broker CPU        the broker process's user + system CPU seconds when that produce was
                    acknowledged: what the start costs, less disturbed than the wall-clock
                    figures by whatever else runs on the machine

    python tools/bench/bench_start.py --starts 7 [--root DIR ...]

With no --root it measures this checkout only; each --root adds a checkout (a worktree of
another commit, for before/after). Starts alternate between the checkouts (A B A B ...).
Prints per checkout the median and the range (min-max) of each figure, then, for each further
checkout, the median of its paired differences from the first (the two starts of a pair run
back to back, so a load that comes and goes on a shared machine touches both alike).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

import _raw
from _peers import REPO_ROOT, free_port, start_wirebroker

FIGURES = ("ready line", "first answer", "first produce", "broker CPU")


def one_start(root: Path) -> dict[str, float]:
    """One start of the broker at `root`: the three figures, in seconds."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-start-"))
    try:
        broker = start_wirebroker(workdir, [], port=free_port(), bytecode_cache=True, root=root)
        try:
            produce = _raw.first_produce(broker.port, "first", broker.spawned_at)
            cpu = broker.cpu_seconds()
            return {
                "ready line": broker.ready_line_s or float("nan"),
                "first answer": broker.answer_s or float("nan"),
                "first produce": produce,
                "broker CPU": cpu,
            }
        finally:
            broker.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--starts", type=int, default=7, help="timed starts per checkout")
    parser.add_argument("--root", type=Path, action="append", help="a checkout (repeatable)")
    args = parser.parse_args()
    roots = [r.resolve() for r in (args.root or [REPO_ROOT])]
    for root in roots:  # untimed: fills the bytecode cache
        one_start(root)
    samples: dict[Path, dict[str, list[float]]] = {r: {f: [] for f in FIGURES} for r in roots}
    for i in range(args.starts):
        for root in roots if i % 2 == 0 else roots[::-1]:
            for figure, value in one_start(root).items():
                samples[root][figure].append(value)
    for root in roots:
        print(root)
        for figure in FIGURES:
            values = samples[root][figure]
            print(
                f"  {figure:14} median {statistics.median(values):.3f} s "
                f"({min(values):.3f}-{max(values):.3f}) "
                f"[{' '.join(f'{v:.3f}' for v in values)}]"
            )
    first = roots[0]
    for root in roots[1:]:
        print(f"{root} - {first}, paired")
        for figure in FIGURES:
            pairs = zip(samples[first][figure], samples[root][figure], strict=True)
            diffs = [b - a for a, b in pairs]
            print(
                f"  {figure:14} median {statistics.median(diffs):+.3f} s "
                f"({min(diffs):+.3f} to {max(diffs):+.3f})"
            )


if __name__ == "__main__":
    main()
