#!/usr/bin/env python3
"""Torn and corrupt files: run the randomised surgery cases and print the figures.

    python tools/reliability/torn_files.py [--cases 200] [--broker-cases 10] [--seed N]
                                           [--update-doc]

Builds the four templates (two written by PartitionLog, two by the real broker from
kafka-python producers; see tests/reliability/torn.py and torn_broker.py), runs `--cases`
cases through `LogManager.load` (spread over the templates) and `--broker-cases` through the
real broker with kafka-python / confluent-kafka reading back, prints the figures and, with
`--update-doc`, rewrites the "Torn and corrupt files" section of docs/reliability.md. The
seed is printed; the same seed replays the same cases. Exit status 1 when a case failed.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "reliability"), str(ROOT), str(Path(__file__).parent)]

import torn  # noqa: E402
import torn_broker  # noqa: E402
from docsections import update_section  # noqa: E402


def _doc(args: argparse.Namespace, seed: int, lines: list[str], s: torn.Summary) -> str:
    cmd = "python tools/reliability/torn_files.py"
    cmd += f" --cases {args.cases} --broker-cases {args.broker_cases} --seed {seed}"
    rows = "\n".join(
        f"| {name} | {n} | {ok} |"
        for name, _, _ in torn.FAULTS
        for n, ok in [s.by_fault[name]]
        if name in s.by_fault
    )
    figures = "\n".join(f"- `{line}`" for line in lines)
    return f"""## Torn and corrupt files

Produced by `{cmd}`
(CI runs the same with a fresh seed: `tests/reliability/test_torn_files.py`).

{figures}

What a case is: a copy of a real partition directory (written by `PartitionLog`, or by the
broker subprocess from kafka-python producers, after a crash or a clean shutdown) damaged by
1-3 faults, then loaded with `LogManager.load`; a sample goes through the real broker and a
real client. The expected outcome comes from an independent scan with `protocol.records`
(tests/reliability/logscan.py): the log must end at the last valid batch before the first
damaged byte, serve exactly the valid prefix, agree with a full scan on every offset and
timestamp lookup, keep every acknowledged record below the damage and accept the next
record at the expected offset.

| fault | cases | recovered |
|---|---|---|
{rows}

Damage below the recovery point of a cleanly shut down log is not scanned at start-up (as in
Kafka); it is found when first read (every batch from before the start is CRC-checked when
served, to a consumer or a follower), the partition goes
offline with KAFKA_STORAGE_ERROR and the next start truncates it ("found at first read").
Not generated: flips of a batch's base offset and leader epoch (outside the CRC in record
batch v2), hand-edited plausible index entries, and a `.timeindex` cut at an entry boundary
(indexes carry no checksum; see tests/reliability/torn.py).
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--broker-cases", type=int, default=10)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--update-doc", action="store_true")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    logging.disable(logging.CRITICAL)  # recovery warnings are expected by the thousand
    warnings.simplefilter("ignore", ResourceWarning)
    print(f"seed {seed}", flush=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="wirebroker-torn-") as tmp:
        work = Path(tmp)
        templates = torn.build_log_templates(work, seed)
        templates += torn_broker.build_broker_templates(work, seed)
        results = [
            torn.run_case(templates[i % len(templates)], seed, i, work) for i in range(args.cases)
        ]
        broker_templates = [t for t in templates if t.name.startswith("broker")]
        broker_results = [
            torn_broker.run_broker_case(broker_templates[i % 2], seed, 100_000 + i, work)
            for i in range(args.broker_cases)
        ]
    s, b = torn.summarize(results), torn.summarize(broker_results)
    lines = torn.figure_lines(s, b)
    for line in lines:
        print(line)
    for failure in s.failures + b.failures:
        print("FAILED", failure)
    print(f"({time.monotonic() - t0:.1f} s)")
    if args.update_doc:
        update_section("torn-files", _doc(args, seed, lines, s))
        print("updated docs/reliability.md")
    return 0 if s.ok == s.cases and b.ok == b.cases else 1


if __name__ == "__main__":
    sys.exit(main())
