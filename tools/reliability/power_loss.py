#!/usr/bin/env python3
"""Power loss on all three replicas at once, with Kafka's default flush settings and with
`flush.messages=1`: prints what the history checker finds and what the fsyncs cost.

    python tools/reliability/power_loss.py [--load-s 3] [--modes default,1] [--runs 1]

Each run (tests/reliability/powerloss.py, `run_power_loss`): 3 in-process brokers over one
in-memory ZooKeeper, every log file through a `PowerLossFileSystem` (the page cache is the
real files, the device is a model of what was fsynced), topic `power` (3 partitions, RF 3,
min.insync.replicas 2), one idempotent acks=all producer per partition for --load-s seconds,
then the power goes out on every broker at once: unfsynced content and unfsynced directory
entries are thrown away, the brokers restart and the log is read back and checked against
every acknowledgement received before the cut. A mode is `default` (flush.messages and
flush.ms never) or a flush.messages value. Exit status 1 if a run with flush.messages=1
lost an acknowledged record or a run did not recover (leaders, full ISR, equal replicas,
new writes accepted).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from functools import partial
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "reliability"), str(ROOT)]

from powerloss import run_power_loss  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--load-s", type=float, default=3.0, help="seconds of load before the cut")
    ap.add_argument("--modes", default="default,1", help="'default' and/or flush.messages values")
    ap.add_argument("--runs", type=int, default=1, help="runs per mode")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)  # the restart's repairs log at WARNING
    failed = False
    for mode in args.modes.split(","):
        flush = None if mode == "default" else int(mode)
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="wb-power-loss-") as tmp:
                r = trio.run(
                    partial(run_power_loss, Path(tmp), flush_messages=flush, load_s=args.load_s)
                )
            print(r.summary(), flush=True)
            if not r.recovered or (flush == 1 and (r.check.lost or not r.check.ok)):
                failed = True
                print(r.check.summary(), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
