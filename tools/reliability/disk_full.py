#!/usr/bin/env python3
"""Disk full: fill the broker's data directory with real producers and print the figures.

    python tools/reliability/disk_full.py [--cycles 3] [--seam] [--update-doc]

Runs the scenario of tests/reliability/diskfull.py once: an 8 MiB tmpfs when this process
may mount one (root with CAP_SYS_ADMIN), else -- or with `--seam` -- the storage layer's
FileSystem seam with a byte quota. Prints the figures and, with `--update-doc`, rewrites
the "Disk full" section of docs/reliability.md. Exit status 1 when the contract broke.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "reliability"), str(ROOT), str(Path(__file__).parent)]

import diskfull  # noqa: E402
from docsections import update_section  # noqa: E402


def figure_lines(r: diskfull.DiskFullReport) -> list[str]:
    ops = f"{r.sends} sends, {r.failed} failed"
    storage = r.errors.get("KAFKA_STORAGE_ERROR", 0) + r.errors.get("KafkaStorageError", 0)
    timeouts = r.errors.get("_MSG_TIMED_OUT", 0) + r.errors.get("KafkaTimeoutError", 0)
    return [
        f"acknowledged records missing after freeing space and restarting: {r.lost} "
        f"({r.acked} acknowledged, {ops})",
        f"acknowledged records unreadable while the disk was full: {r.lost_while_full} "
        f"({r.read_while_full} records read back while full, {ops})",
        f"acknowledged records stored twice: {r.duplicates} ({r.acked} acknowledged, {ops})",
        f"sends never resolved: {r.unresolved} ({r.sends} sends; slowest {r.slowest_s:.1f} s "
        f"with bounded retries, {r.failed} failed)",
        f"failed sends by client error: KAFKA_STORAGE_ERROR {storage}, delivery timeout "
        f"{timeouts}, other {r.failed - storage - timeouts} ({ops})",
        f"appends resumed after freeing space, without a restart: {r.resumed_cycles}/{r.cycles} "
        f"cycles (4 producers, {r.failed} failed sends)",
        f"corrupt segments after the restart: {r.corrupt_segments} ({r.segments_checked} "
        f"segments scanned; tools/dump_log.py failed on {r.dump_log_failures}/"
        f"{r.partitions_checked} partitions)",
    ]


def _doc(r: diskfull.DiskFullReport, lines: list[str], cycles: int, seam: bool) -> str:
    cmd = f"python tools/reliability/disk_full.py --cycles {cycles}" + (" --seam" if seam else "")
    figures = "\n".join(f"- `{line}`" for line in lines)
    return f"""## Disk full

Produced by `{cmd}`, space: {r.space}.
CI runs the same scenario (`tests/reliability/test_disk_full.py`); where mounting is not
permitted it falls back to a byte quota on the FileSystem seam
(tests/reliability/quota_broker.py) and prints which one it used.

{figures}

The scenario: topic `full` (2 partitions, internal.segment.bytes 64 KiB so segments roll at
the edge), four producers at once -- kafka-python acks=all without retries, kafka-python
idempotent (retries until space returns), confluent-kafka idempotent
(message.timeout.ms 4000), confluent-kafka acks=1 without retries -- until each sees failed
sends; then Metadata and a consumer read-back while full; {cycles} cycles of freeing 512 KiB
(what is being retried goes first) and filling again; a SIGTERM while full (exit code
{r.stop_exit_code}; the final producer snapshots, the checkpoints and the clean-shutdown
marker may not fit, and then the next start recovers from the last checkpoint); freeing
everything and restarting; scanning every segment and reading everything back.

What the broker does: an append that hits ENOSPC is truncated back (log, index and time
index) and answered with KAFKA_STORAGE_ERROR (retriable); the partition stays online and
serves reads. A segment roll that cannot write its producer snapshot or final time-index
entry is undone the same way. Kafka instead marks the whole log directory offline on the
first IOException, and a broker with no log directory left halts
(`LogManager.handleLogDirFailure`). Here only an I/O error that cannot be undone takes a
partition offline until a restart: a failed truncation or fsync, a leader-epoch checkpoint
that cannot be written, or the writes of a clean shutdown.

Client notes: kafka-python 3.0.12's idempotent producer hangs for good once a retried batch
expires (it resets its producer id but never asks for a new one), with any broker; the
scenario therefore leaves it at the default delivery.timeout.ms (120 s) and lets it retry
until space is freed.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--seam", action="store_true", help="use the FileSystem seam quota")
    parser.add_argument("--update-doc", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ResourceWarning)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="wirebroker-diskfull-") as tmp:
        report = diskfull.run_disk_full(Path(tmp), cycles=args.cycles, force_seam=args.seam)
    lines = figure_lines(report)
    print(f"space: {report.space}")
    for line in lines:
        print(line)
    problems = report.problems()
    for p in problems:
        print("PROBLEM", p)
    print(f"({time.monotonic() - t0:.1f} s)")
    if args.update_doc:
        update_section("disk-full", _doc(report, lines, args.cycles, args.seam))
        print("updated docs/reliability.md")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
