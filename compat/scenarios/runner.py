"""Run the scenarios against one client and check its ratchet.

    python -m compat.scenarios.runner CLIENT [--cluster] [--only ID ...] [--update-passing]

CLIENT is a folder `compat/<CLIENT>/` with `adapter.py` (defining `ADAPTER`, an `Adapter`
subclass) and `passing.txt`. The runner starts one wirebroker (defaults; a scratch data dir),
or with `--cluster` a 3-broker cluster and its ZooKeeper (`cluster.py`; the adapter's
`replication_factor` is then 3), runs every case of that row (`cases.cases_of`, or `--only`),
each in a worker thread bounded by CASE_TIMEOUT seconds (a hang is a failure; the adapter is
then rebuilt), and writes

    compat/results/<CLIENT>.json          {"client", "version", "cases": {id: {status, detail}}}
    compat/results/<CLIENT>-cluster.json  the same for the cluster row, plus "row": "cluster"
                                   (tracked, so no timings: a run that changes nothing leaves the
                                   work tree clean; times are in the run's log lines)

status: "pass", "fail" or "n/a" (the client cannot express the case; the detail says why).
A case that does not apply to the row (`Case.not_in`) is not run and not in the file.

Ratchet: every id listed in `compat/<CLIENT>/passing.txt` (cluster row:
`passing-cluster.txt`; one per line, `#` comments) must pass, else the exit code is 1 and the
regressions are printed. `--update-passing` adds the newly passing cases to the file (it never
removes one: a case leaves the list only by hand, with a FINDINGS.md entry saying why).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import threading
import time
import traceback
from itertools import count
from pathlib import Path

from compat.scenarios.api import Adapter, Unsupported
from compat.scenarios.broker import Broker
from compat.scenarios.cases import CASES, CLUSTER, SINGLE_BROKER, Ctx, cases_of
from compat.scenarios.cluster import Cluster

COMPAT = Path(__file__).resolve().parents[1]
RESULTS = COMPAT / "results"
CASE_TIMEOUT = 150.0


def load_adapter(client: str) -> type[Adapter]:
    path = COMPAT / client / "adapter.py"
    spec = importlib.util.spec_from_file_location(
        f"compat_adapter_{client.replace('-', '_')}", path
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"no adapter at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    adapter: type[Adapter] = module.ADAPTER
    return adapter


def passing_path(client: str, row: str = SINGLE_BROKER) -> Path:
    name = "passing.txt" if row == SINGLE_BROKER else f"passing-{row}.txt"
    return COMPAT / client / name


def results_path(client: str, row: str = SINGLE_BROKER) -> Path:
    name = f"{client}.json" if row == SINGLE_BROKER else f"{client}-{row}.json"
    return RESULTS / name


def read_passing(client: str, row: str = SINGLE_BROKER) -> list[str]:
    path = passing_path(client, row)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def write_passing(client: str, ids: list[str], row: str = SINGLE_BROKER) -> None:
    path = passing_path(client, row)
    header = [
        line
        for line in (path.read_text().splitlines() if path.exists() else [])
        if line.startswith("#")
    ]
    order = {c.id: i for i, c in enumerate(CASES)}
    body = sorted(set(ids), key=lambda i: (order.get(i, len(order)), i))
    path.write_text("\n".join([*header, *body]) + "\n")


def ratchet(
    passing: list[str],
    results: dict[str, dict[str, object]],
    *,
    partial: bool = False,
    row: str = SINGLE_BROKER,
) -> tuple[list[str], list[str], list[str]]:
    """(regressions, unknown, new): listed cases that ran and did not pass (or, in a full run,
    did not run at all), listed ids that are no case of the row, and passing cases not yet
    listed."""
    known = {c.id for c in cases_of(row)}
    regressions = [
        c
        for c in passing
        if c in known and (results[c]["status"] != "pass" if c in results else not partial)
    ]
    unknown = [c for c in passing if c not in known]
    new = [c for c, r in results.items() if r["status"] == "pass" and c not in passing]
    return regressions, unknown, new


def run_case(ctx: Ctx, case_id: str, fn: object) -> tuple[str, str]:
    result: list[tuple[str, str]] = []

    def target() -> None:
        try:
            note = fn(ctx)  # type: ignore[operator]
            result.append(("pass", str(note)))
        except Unsupported as exc:
            result.append(("n/a", str(exc)))
        except AssertionError as exc:
            result.append(("fail", f"AssertionError: {exc}"))
        except Exception as exc:
            tb = traceback.format_exception(exc)
            result.append(("fail", f"{type(exc).__name__}: {exc}\n{''.join(tb[-3:])}"))

    thread = threading.Thread(target=target, name=case_id, daemon=True)
    thread.start()
    thread.join(CASE_TIMEOUT)
    if thread.is_alive():
        return "fail", f"hang: no outcome within {CASE_TIMEOUT:.0f} s"
    return result[0]


class _Target:
    """What the cases run against: one broker, or a cluster (`--cluster`)."""

    def __init__(self, workdir: Path, cluster: bool) -> None:
        self.workdir = workdir
        self.cluster = Cluster(workdir / "cluster") if cluster else None
        self.broker: Broker | None = None
        self._seq = count(1)

    def start(self) -> str:
        if self.cluster is not None:
            return self.cluster.start()
        self.broker = Broker(self.workdir / "broker")
        return self.broker.start()

    def healthy(self) -> bool:
        if self.cluster is not None:
            return self.cluster.is_running()
        return self.broker is not None and self.broker.is_running()

    def heal(self) -> str:
        """A broker died (a crash, or a case that did not restart what it killed): restart
        it (cluster) or start a new one (single broker); the bootstrap to use from now on."""
        if self.cluster is not None:
            for i, b in enumerate(self.cluster.brokers):
                if not b.is_running():
                    print(f"   (broker {i} is down; restarting it)", flush=True)
                    self.cluster.restart(i)
            return self.cluster.bootstrap
        print("   (broker died; restarting)", flush=True)
        self.broker = Broker(self.workdir / f"broker-{next(self._seq)}")
        return self.broker.start()

    def log_tail(self, lines: int = 15) -> str:
        if self.cluster is not None:
            return self.cluster.log_tail(lines)
        return self.broker.log_tail(lines) if self.broker is not None else ""

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        elif self.broker is not None:
            self.broker.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("client")
    parser.add_argument("--only", nargs="*", default=None, help="case ids (prefixes) to run")
    parser.add_argument("--cluster", action="store_true", help="the 3-broker row")
    parser.add_argument("--update-passing", action="store_true")
    parser.add_argument("--no-results", action="store_true", help="do not write results JSON")
    args = parser.parse_args(argv)

    row = CLUSTER if args.cluster else SINGLE_BROKER
    adapter_cls = load_adapter(args.client)
    cases = [
        c for c in cases_of(row) if args.only is None or any(c.id.startswith(o) for o in args.only)
    ]
    workdir = Path(tempfile.mkdtemp(prefix=f"compat-{args.client}-{row}-"))
    target = _Target(workdir, args.cluster)
    start = time.monotonic()
    bootstrap = target.start()
    what = "a 3-broker wirebroker cluster" if args.cluster else "wirebroker"
    print(
        f"== {args.client} {adapter_cls.version} against {what} at {bootstrap} "
        f"(data {workdir}; up in {time.monotonic() - start:.1f} s)",
        flush=True,
    )
    seq = count(1)

    def new_adapter() -> Adapter:
        adapter = adapter_cls(bootstrap)
        if target.cluster is not None:
            adapter.replication_factor = target.cluster.size
        return adapter

    adapter = new_adapter()
    results: dict[str, dict[str, object]] = {}
    try:
        for case in cases:
            if not target.healthy():
                bootstrap = target.heal()
                adapter.close()
                adapter = new_adapter()
            ctx = Ctx(adapter, bootstrap, workdir, seq, target.cluster)
            start = time.monotonic()
            status, detail = run_case(ctx, case.id, case.run)
            took = time.monotonic() - start
            if status == "fail" and detail.startswith("hang"):
                threading.Thread(target=adapter.close, daemon=True).start()
                adapter = new_adapter()
            first = detail.splitlines()[0] if detail else ""
            results[case.id] = {"status": status, "detail": first[:400]}
            print(f"{status:>5}  {case.id:<34} {took:5.1f}s  {first[:160]}", flush=True)
            if status == "fail":
                full = detail + "\n--- broker log tail ---\n" + target.log_tail(15)
                print("       " + full.replace("\n", "\n       ")[:3000], flush=True)
    finally:
        try:
            adapter.close()
        finally:
            target.stop()
    if any(r["status"] == "fail" for r in results.values()):
        print(f"   (work directory kept for inspection: {workdir})", flush=True)
    else:
        shutil.rmtree(workdir, ignore_errors=True)

    counts = {
        s: sum(1 for r in results.values() if r["status"] == s) for s in ("pass", "fail", "n/a")
    }
    label = f"{args.client} ({row})" if args.cluster else args.client
    print(
        f"{label}: {counts['pass']} passed, {counts['fail']} failed, {counts['n/a']} n/a",
        flush=True,
    )
    if not args.no_results and args.only is None:
        RESULTS.mkdir(exist_ok=True)
        out: dict[str, object] = {
            "client": args.client,
            "version": adapter_cls.version,
            "cases": results,
        }
        if args.cluster:
            out["row"] = row
        results_path(args.client, row).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")

    passing_file = passing_path(args.client, row).name
    passing = read_passing(args.client, row)
    regressions, unknown, new = ratchet(passing, results, partial=args.only is not None, row=row)
    if new:
        print(f"newly passing (not yet in {passing_file}): {' '.join(new)}")
        if args.update_passing:
            write_passing(args.client, passing + new, row)
            print(f"{passing_file} updated")
    if unknown:
        print(f"RATCHET: {passing_file} names unknown cases: {' '.join(unknown)}")
    if regressions:
        print(f"RATCHET: listed as passing but did not pass: {' '.join(regressions)}")
    return 1 if regressions or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
