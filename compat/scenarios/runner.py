"""Run the scenarios against one client and check its ratchet.

    python -m compat.scenarios.runner CLIENT [--only ID ...] [--update-passing]

CLIENT is a folder `compat/<CLIENT>/` with `adapter.py` (defining `ADAPTER`, an `Adapter`
subclass) and `passing.txt`. The runner starts one wirebroker (defaults; a scratch data dir),
runs every case in `cases.CASES` (or `--only`), each in a worker thread bounded by
CASE_TIMEOUT seconds (a hang is a failure; the adapter is then rebuilt), and writes

    compat/results/<CLIENT>.json   {"client", "version", "cases": {id: {status, detail}}}
                                   (tracked, so no timings: a run that changes nothing leaves the
                                   work tree clean; times are in the run's log lines)

status: "pass", "fail" or "n/a" (the client cannot express the case; the detail says why).

Ratchet: every id listed in `compat/<CLIENT>/passing.txt` (one per line, `#` comments) must
pass, else the exit code is 1 and the regressions are printed. `--update-passing` adds the
newly passing cases to the file (it never removes one: a case leaves the list only by hand,
with a FINDINGS.md entry saying why).
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
from compat.scenarios.cases import CASES, Ctx

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


def read_passing(client: str) -> list[str]:
    path = COMPAT / client / "passing.txt"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def write_passing(client: str, ids: list[str]) -> None:
    path = COMPAT / client / "passing.txt"
    header = [
        line
        for line in (path.read_text().splitlines() if path.exists() else [])
        if line.startswith("#")
    ]
    order = {c.id: i for i, c in enumerate(CASES)}
    body = sorted(set(ids), key=lambda i: (order.get(i, len(order)), i))
    path.write_text("\n".join([*header, *body]) + "\n")


def ratchet(
    passing: list[str], results: dict[str, dict[str, object]], *, partial: bool = False
) -> tuple[list[str], list[str], list[str]]:
    """(regressions, unknown, new): listed cases that ran and did not pass (or, in a full run,
    did not run at all), listed ids that are no case, and passing cases not yet listed."""
    known = {c.id for c in CASES}
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("client")
    parser.add_argument("--only", nargs="*", default=None, help="case ids (prefixes) to run")
    parser.add_argument("--update-passing", action="store_true")
    parser.add_argument("--no-results", action="store_true", help="do not write results JSON")
    args = parser.parse_args(argv)

    adapter_cls = load_adapter(args.client)
    cases = [c for c in CASES if args.only is None or any(c.id.startswith(o) for o in args.only)]
    workdir = Path(tempfile.mkdtemp(prefix=f"compat-{args.client}-"))
    broker = Broker(workdir / "broker")
    bootstrap = broker.start()
    print(
        f"== {args.client} {adapter_cls.version} against wirebroker at {bootstrap} "
        f"(data {workdir})",
        flush=True,
    )
    seq = count(1)
    adapter = adapter_cls(bootstrap)
    results: dict[str, dict[str, object]] = {}
    try:
        for case in cases:
            if not broker.is_running():
                print("   (broker died; restarting)", flush=True)
                broker = Broker(workdir / f"broker-{next(seq)}")
                bootstrap = broker.start()
                adapter.close()
                adapter = adapter_cls(bootstrap)
            ctx = Ctx(adapter, bootstrap, workdir, seq)
            start = time.monotonic()
            status, detail = run_case(ctx, case.id, case.run)
            took = time.monotonic() - start
            if status == "fail" and detail.startswith("hang"):
                threading.Thread(target=adapter.close, daemon=True).start()
                adapter = adapter_cls(bootstrap)
            first = detail.splitlines()[0] if detail else ""
            results[case.id] = {"status": status, "detail": first[:400]}
            print(f"{status:>5}  {case.id:<34} {took:5.1f}s  {first[:160]}", flush=True)
            if status == "fail":
                full = detail + "\n--- broker log tail ---\n" + broker.log_tail(15)
                print("       " + full.replace("\n", "\n       ")[:3000], flush=True)
    finally:
        try:
            adapter.close()
        finally:
            broker.stop()
    if any(r["status"] == "fail" for r in results.values()):
        print(f"   (work directory kept for inspection: {workdir})", flush=True)
    else:
        shutil.rmtree(workdir, ignore_errors=True)

    counts = {
        s: sum(1 for r in results.values() if r["status"] == s) for s in ("pass", "fail", "n/a")
    }
    print(
        f"{args.client}: {counts['pass']} passed, {counts['fail']} failed, {counts['n/a']} n/a",
        flush=True,
    )
    if not args.no_results and args.only is None:
        RESULTS.mkdir(exist_ok=True)
        out = {"client": args.client, "version": adapter_cls.version, "cases": results}
        (RESULTS / f"{args.client}.json").write_text(
            json.dumps(out, indent=1, sort_keys=True) + "\n"
        )

    passing = read_passing(args.client)
    regressions, unknown, new = ratchet(passing, results, partial=args.only is not None)
    if new:
        print(f"newly passing (not yet in passing.txt): {' '.join(new)}")
        if args.update_passing:
            write_passing(args.client, passing + new)
            print("passing.txt updated")
    if unknown:
        print(f"RATCHET: passing.txt names unknown cases: {' '.join(unknown)}")
    if regressions:
        print(f"RATCHET: listed as passing but did not pass: {' '.join(regressions)}")
    return 1 if regressions or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
