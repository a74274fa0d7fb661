"""Results and ratchet of the rows that run on both brokers: Kafka's tools and Kafka Streams
(compat/kafka-tools, compat/kafka-streams). Each case has one outcome per side:

    {"status": "pass" | "fail" | "n/a", "detail": "...",        # on wirebroker
     "kafka": {"status": ..., "detail": ...}}                   # on Apache Kafka (the oracle)

The file is `{"tools" or "app": what ran, "cases": {id: outcome}}`, sorted, no timings.

The ratchet (`passing.txt`, one id per line, `#` comments): every listed case must pass on
wirebroker and pass, or be n/a, on Kafka. Whatever is listed, a case that passes on wirebroker
and fails on Kafka is reported as a wrong assertion (what it checks is not what Kafka does),
and fails the run too.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

WIREBROKER = "wirebroker"
KAFKA = "kafka"
Outcome = dict[str, str]


def merge(wirebroker: dict[str, Outcome], kafka: dict[str, Outcome], order: Sequence[str]) -> dict:
    return {cid: {**wirebroker[cid], KAFKA: kafka[cid]} for cid in order if cid in wirebroker}


def read_passing(path: Path) -> list[str]:
    if not path.exists():
        return []
    ids = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [i for i in ids if i]


def write_passing(path: Path, ids: Sequence[str], order: Sequence[str]) -> None:
    lines = path.read_text().splitlines() if path.exists() else []
    header = [line for line in lines if line.startswith("#")]
    rank = {cid: i for i, cid in enumerate(order)}
    body = sorted(set(ids), key=lambda i: rank.get(i, len(rank)))
    path.write_text("\n".join([*header, *body]) + "\n")


def problems(
    results: dict, passing: Sequence[str], known: Sequence[str], partial: bool
) -> list[str]:
    out = []
    for cid, r in results.items():
        if r["status"] == "pass" and r[KAFKA]["status"] == "fail":
            out.append(f"ASSERTION WRONG: {cid} passes on wirebroker and fails on Kafka")
    for cid in passing:
        if cid not in known:
            out.append(f"RATCHET: passing.txt names an unknown case {cid}")
        elif cid in results:
            if results[cid]["status"] != "pass":
                out.append(f"RATCHET: {cid} is listed as passing but did not pass on wirebroker")
            if results[cid][KAFKA]["status"] == "fail":
                out.append(f"RATCHET: {cid} is listed as passing but failed on Kafka")
        elif not partial:
            out.append(f"RATCHET: {cid} is listed as passing but did not run")
    return out


def newly_passing(results: dict, passing: Sequence[str]) -> list[str]:
    return [
        cid
        for cid, r in results.items()
        if cid not in passing and r["status"] == "pass" and r[KAFKA]["status"] != "fail"
    ]


def counts(results: dict, side: str) -> dict[str, int]:
    statuses = [r["status"] if side == WIREBROKER else r[KAFKA]["status"] for r in results.values()]
    return {s: statuses.count(s) for s in ("pass", "fail", "n/a")}


def finish(
    results: dict,
    *,
    what: tuple[str, str],
    results_path: Path,
    passing_path: Path,
    order: Sequence[str],
    partial: bool,
    update_passing: bool,
) -> int:
    """Print the totals, write the results (a full run), check and maybe update the ratchet;
    the exit code."""
    for side in (WIREBROKER, KAFKA):
        c = counts(results, side)
        print(f"{what[1]} on {side}: {c['pass']} passed, {c['fail']} failed, {c['n/a']} n/a")
    if not partial:
        doc = {what[0]: what[1], "cases": results}
        results_path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    passing = read_passing(passing_path)
    found = problems(results, passing, order, partial)
    new = newly_passing(results, passing)
    if new:
        print(f"newly passing (not yet in {passing_path.name}): {' '.join(new)}")
        if update_passing:
            write_passing(passing_path, [*passing, *new], order)
            print(f"{passing_path.name} updated")
    for line in found:
        print(line)
    return 1 if found else 0


def tidy(code: int, workdir: Path) -> int:
    """A run's last step: its work directory removed after a clean run, kept (and named)
    after a failed one; `code`."""
    if code:
        print(f"   (work directory kept for inspection: {workdir})")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return code
