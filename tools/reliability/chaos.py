#!/usr/bin/env python3
"""kill -9 chaos soak: SIGKILL the broker `--kills` times under load and print the figures.

    python tools/reliability/chaos.py [--kills 50] [--seed N] [--update-doc]

Runs `tests/reliability/_chaos.py`'s workload (idempotent acks=all and acks=1 confluent-kafka
producers, a committing two-member consumer group; the broker restarted on the same data dir
and port after every kill, one more kill before the read-back) and its checker. Prints the
seed (replay with --seed) and the figures; with `--update-doc` rewrites the "Process crashes"
section of docs/reliability.md. Exit status 1 when an acknowledged record or commit was lost,
duplicated, moved or reordered.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "reliability"), str(ROOT), str(Path(__file__).parent)]

import _chaos  # noqa: E402
from docsections import update_section  # noqa: E402


def figure_lines(r: _chaos.ChaosReport) -> list[str]:
    faults = f"{r.kills} kill -9 under load + 1 before the read-back"
    ops = f"{r.acked} acknowledged of {r.sends} sends, {faults}"
    return [
        f"acknowledged records lost: {r.lost} ({ops})",
        f"acknowledged records not at their acknowledged offset: {r.misplaced} ({ops})",
        f"duplicates (one payload id at two offsets): {r.duplicates} "
        f"({r.log_records} records in the log, {faults})",
        f"offsets or per-producer sequences out of order: {r.reorders} "
        f"({r.log_records} records in the log, {faults})",
        f"committed offsets that went backwards: {r.commit_regressions} "
        f"({r.commits} acknowledged commits, {r.commit_checks} OffsetFetch checks after "
        f"restarts, {faults})",
        f"acknowledged records the group never received: {r.group_missed} "
        f"({r.acked} acknowledged, {r.member_restarts} member restarts, {faults})",
    ]


def doc_body(r: _chaos.ChaosReport, kills: int) -> str:
    figures = "\n".join(f"- `{line}`" for line in figure_lines(r))
    failed = ", ".join(f"{k} {v}" for k, v in sorted(r.failed.items())) or "none"
    restarts = sorted(r.restart_s)
    median = restarts[len(restarts) // 2] if restarts else 0.0
    return f"""## Process crashes

Produced by `python tools/reliability/chaos.py --kills {kills} --seed {r.seed}`
({r.duration_s:.0f} s; seed {r.seed}). CI runs the same workload with 5 kills and a fresh
seed (`tests/reliability/test_chaos_kill9.py`, printed; replay with
`WIREBROKER_RELIABILITY_SEED`).

Workload (`tests/reliability/_chaos.py`): a broker subprocess, topic of 3 partitions; two
confluent-kafka producers at 300 records/s each, one idempotent with acks=all and one with
acks=1 (Kafka allows idempotence only with acks=all, so the acks=1 producer is a plain one,
with retries off so that any duplicate would be the broker's); a two-member consumer group
(librdkafka) committing synchronously after every batch. The broker is SIGKILLed after a
seeded random 1-3 s, restarted on the same data dir and port, {kills} times; after every
restart the group's committed offsets are fetched and compared with the highest commit
acknowledged before the kill. At the end the producers flush, the group drains, the broker is
killed once more, restarted, and every partition is read back from offset 0. A delivery
callback recorded the offset of every acknowledged send.

{figures}

Sends that failed on the client (never acknowledged, so not counted as lost): {failed}.
Restart to ready: median {median:.2f} s, max {max(restarts, default=0.0):.2f} s.

Client notes: kafka-python 3.0.12's idempotent producer can hang once a retried batch
expires, so the producers here are confluent-kafka; librdkafka's idempotent producer retries
across the restart and the broker deduplicates the retries from the producer state it
rebuilds from its log.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--update-doc", action="store_true")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"chaos seed {seed} (replay: --seed {seed})", flush=True)
    with tempfile.TemporaryDirectory(prefix="wb-chaos-") as tmp:
        r = _chaos.run_chaos(Path(tmp), seed, args.kills, log=lambda s: print(s, flush=True))
    print(r.summary())
    for line in figure_lines(r):
        print(line)
    if args.update_doc:
        update_section("crashes", doc_body(r, args.kills))
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main())
