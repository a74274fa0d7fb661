#!/usr/bin/env python3
"""Exactly-once soak: a transactional consume-transform-produce app while brokers are killed -9.

    python tools/reliability/eos.py [--kills 20] [--cluster-kills 10] [--seed N] [--update-doc]

Runs `tests/reliability/_eos.py`'s workload and checker twice: against one broker killed
`--kills` times, and against a 3-broker ZooKeeper cluster whose transaction coordinator's
broker is killed `--cluster-kills` times (0 skips the row; needs Debian's zookeeper + a JRE).
Prints the seed (replay with --seed) and the figures; with `--update-doc` rewrites the
"Exactly once" section of docs/reliability.md. Exit status 1 when an input is missing from the
read_committed output, in it twice, out of order, or the group's offsets do not end at the end.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [
    str(ROOT / "tests" / "reliability"),
    str(ROOT / "tests"),
    str(ROOT),
    str(Path(__file__).parent),
]

import _eos  # noqa: E402
from docsections import update_section  # noqa: E402


def figure_lines(r: _eos.EosReport) -> list[str]:
    faults = f"{r.kills - 1} kill -9 of the {'coordinator' if r.mode == 'cluster' else 'broker'}"
    faults += " during the run + 1 before the read-back"
    return [
        f"inputs missing from the read_committed output: {r.missing} ({r.inputs} inputs, {faults})",
        f"inputs in the read_committed output more than once: {r.duplicates} "
        f"({r.output} output records)",
        f"output records out of input order or naming no input: {r.reorders + r.foreign}",
        f"group offsets at the end of the input: {'yes' if r.offsets_ok else 'NO'}",
        f"transactions committed {r.txns_committed}, aborted {r.txns_aborted} "
        f"(producers replaced {r.producers_replaced}, commit retries {r.commit_retries}, "
        f"rewinds {r.rewinds}); aborted records a read_uncommitted consumer sees: "
        f"{r.aborted_seen}",
    ]


def row(title: str, command: str, r: _eos.EosReport) -> str:
    restarts = sorted(r.restart_s)
    median = restarts[len(restarts) // 2] if restarts else 0.0
    figures = "\n".join(f"- `{line}`" for line in figure_lines(r))
    return (
        f"### {title}\n\n`{command}` ({r.duration_s:.0f} s; seed {r.seed}); kill to ready again:"
        f" median {median:.2f} s, max {max(restarts, default=0.0):.2f} s.\n\n{figures}\n"
    )


def doc_body(rows: list[str]) -> str:
    return """## Exactly once

CI runs the short version with a fresh seed (`tests/reliability/test_eos_kill9.py`: 5 kills of
one broker; 3 kills of the transaction coordinator's broker in a 3-broker cluster; replay with
`WIREBROKER_RELIABILITY_SEED`).

Workload (`tests/reliability/_eos.py`): an idempotent feeder writes numbered inputs to
`eos-in` (3 partitions) at 200 records/s; the application is one librdkafka group consumer
(read_committed) and one transactional producer: per transaction it takes up to 50 inputs,
writes one output per input (naming the input's partition and offset) to the same partition of
`eos-out`, sends the consumed positions to the transaction and commits. On errors it follows
Kafka's rules (retry a retriable commit, abort on an abortable error, replace the producer on a
fatal one) and rewinds to the group's committed offsets after every abort. The broker (in the
cluster: whichever broker is the app's transaction coordinator at that moment) is SIGKILLed
after a seeded random 1-3 s and restarted on its data dir and port. Afterwards the feeder
stops, the app drains, the broker is killed once more and restarted, and `eos-in` and
`eos-out` are read back.

""" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--cluster-kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--update-doc", action="store_true")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"eos seed {seed} (replay: --seed {seed})", flush=True)
    rows, ok = [], True

    def log(line: str) -> None:
        print(line, flush=True)

    with tempfile.TemporaryDirectory(prefix="wb-eos-") as tmp:
        single = _eos.SingleBroker(Path(tmp) / "single")
        try:
            r = _eos.run_eos(single, seed, args.kills, log=log)
        finally:
            single.close()
        print(r.summary(), flush=True)
        ok = ok and r.ok
        command = f"python tools/reliability/eos.py --kills {args.kills} --seed {seed}"
        rows.append(row(f"One broker, {args.kills} kills", command, r))
        if args.cluster_kills:
            from wirebroker.coordination.zk_server import ZooKeeperServer

            zk = ZooKeeperServer()
            zk.start()
            try:
                cluster = _eos.ClusterBrokers(Path(tmp) / "cluster", zk.connect_string)
                try:
                    r = _eos.run_eos(cluster, seed, args.cluster_kills, min_gap=1.5, log=log)
                finally:
                    cluster.close()
            finally:
                zk.stop()
            print(r.summary(), flush=True)
            ok = ok and r.ok
            command += f" --cluster-kills {args.cluster_kills}"
            rows.append(
                row(f"3-broker cluster, {args.cluster_kills} kills of the coordinator", command, r)
            )
    for text in rows:
        print(text)
    if args.update_doc:
        update_section("eos", doc_body(rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
