"""Run the scenarios against one client and check its ratchet.

    python -m compat.scenarios.runner CLIENT [--cluster] [--oracle] [--only ID ...]
                                             [--group-protocol consumer] [--update-passing]

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

`--group-protocol consumer`: the consumer group protocol's row (KIP-848; the adapter must
list "consumer" in `group_protocols`): the group cases only (`Case.groups`), each member with
`group.protocol=consumer`; its files are those of a row named "consumer" ("cluster-consumer"
with `--cluster`): `passing-consumer.txt`, `results/<CLIENT>-consumer.json`,
`oracle-differs-consumer.txt`, `results/<CLIENT>-consumer-oracle.json`, ...

`--oracle`: the same row against Apache Kafka 4.4 instead of wirebroker (compat/oracle: the
run's shared one, $WIREBROKER_ORACLE, else one started here; with `--cluster` a 3-broker KRaft
Apache Kafka, `ApacheKafkaCluster`), writing `<CLIENT>[-cluster]-oracle.json` with "broker".
Its check: every case of the row's passing file must pass on Kafka too, except those listed in
`compat/<CLIENT>/oracle-differs.txt` (`case  # reason`, each with its reason). A listed case
that passed on Kafka, or that is not in the passing file, fails the check too: the list is
exactly the cases that pass on wirebroker and not on Kafka. Topic, group and transactional ids
carry a random tag of the run (the shared oracle outlives it). Kafka is not restarted: if it
stops answering, every case from then on fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from itertools import count
from pathlib import Path

from compat.oracle.kafka import (
    KAFKA_VERSION,
    SHARED_ENV,
    ApacheKafka,
    ApacheKafkaCluster,
    probe,
)
from compat.scenarios.api import Adapter, Unsupported
from compat.scenarios.broker import Broker
from compat.scenarios.cases import (
    CASES,
    SINGLE_BROKER,
    Ctx,
    ProxiedKafka,
    cases_of,
    group_protocol_of,
    row_of,
)
from compat.scenarios.cluster import Cluster

COMPAT = Path(__file__).resolve().parents[1]
RESULTS = COMPAT / "results"
CASE_TIMEOUT = 150.0
ORACLE_NAME = f"Apache Kafka {KAFKA_VERSION}"


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


def differs_path(client: str, row: str = SINGLE_BROKER) -> Path:
    name = "oracle-differs.txt" if row == SINGLE_BROKER else f"oracle-differs-{row}.txt"
    return COMPAT / client / name


def results_path(client: str, row: str = SINGLE_BROKER, *, oracle: bool = False) -> Path:
    name = client if row == SINGLE_BROKER else f"{client}-{row}"
    return RESULTS / (f"{name}-oracle.json" if oracle else f"{name}.json")


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


def read_differs(client: str, row: str = SINGLE_BROKER) -> dict[str, str]:
    """{case: reason} from the client's oracle-differs file (`case  # reason` a line; `#` lines
    are comments). A case without a reason is a reason of "" (the check refuses it)."""
    path = differs_path(client, row)
    out: dict[str, str] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        case, _, reason = line.partition("#")
        if case.strip():
            out[case.strip()] = reason.strip()
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


def oracle_check(
    passing: list[str],
    differs: dict[str, str],
    results: dict[str, dict[str, object]],
    *,
    partial: bool = False,
    row: str = SINGLE_BROKER,
) -> list[str]:
    """What breaks the oracle's check, one line each: a case of the passing file that did not
    pass on Apache Kafka and is not in the differs file; a differs entry without a reason, not
    in the passing file (or no case of the row), or that passed on Kafka (stale)."""
    known = {c.id for c in cases_of(row)}
    problems = []
    for c in passing:
        if c not in known or c in differs:
            continue
        if c in results and results[c]["status"] != "pass":
            problems.append(f"{c}: passes on wirebroker, {results[c]['status']} on Apache Kafka")
        elif c not in results and not partial:
            problems.append(f"{c}: passes on wirebroker, did not run on Apache Kafka")
    for c, reason in differs.items():
        if not reason:
            problems.append(f"{c}: listed as differing without a reason")
        if c not in known or c not in passing:
            problems.append(f"{c}: listed as differing but not a passing case of the row")
        elif c in results and results[c]["status"] == "pass":
            problems.append(f"{c}: listed as differing but passed on Apache Kafka (remove it)")
    return problems


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


_PORT = re.compile(r"(127\.0\.0\.1|localhost):\d+")
_CLOCK = re.compile(r"\b1\d{9}\.\d{3}\b")  # a log line's epoch seconds (librdkafka: %6|T|...)
_AFTER = re.compile(r"\(after \d+ms in state (\w+)\)")  # librdkafka's "(after 4ms in state UP)"


def stable(detail: str, tag: str = "") -> str:
    """A case's detail as the results file keeps it: without what changes from run to run
    (ports, log timestamps, the run's tag), so that an unchanged outcome leaves the tracked
    file unchanged (the console keeps the full text)."""
    detail = _CLOCK.sub("T", _PORT.sub(r"\1:PORT", detail))
    detail = _AFTER.sub(r"(in state \1)", detail)
    return detail.replace(f"-{tag}-", "-") if tag else detail


class TargetDown(RuntimeError):
    """The broker under test stopped and is not to be replaced (Apache Kafka)."""


class _Target:
    """What the cases run against: one wirebroker, or a cluster (`--cluster`)."""

    oracle = False

    def __init__(self, workdir: Path, cluster: bool) -> None:
        self.workdir = workdir
        self.cluster = Cluster(workdir / "cluster") if cluster else None
        self.broker: Broker | None = None
        self._seq = count(1)

    def describe(self) -> str:
        return "a 3-broker wirebroker cluster" if self.cluster is not None else "wirebroker"

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


class _OracleTarget:
    """Apache Kafka 4.4 as the target (`--oracle`): the run's shared single broker
    ($WIREBROKER_ORACLE) or one started here; with `--cluster` a 3-node KRaft cluster of the
    run's own (`ApacheKafkaCluster`). It is never restarted: a Kafka that stops answering (a
    node that is down between cases) is a failure of every case from then on."""

    oracle = True

    def __init__(self, workdir: Path, cluster: bool = False) -> None:
        self.workdir = workdir
        self.kafka: ApacheKafka | None = None
        self.cluster = ApacheKafkaCluster(workdir / "apache-kafka-cluster") if cluster else None
        self.bootstrap = ""

    def describe(self) -> str:
        if self.cluster is not None:
            return f"a {self.cluster.size}-node {ORACLE_NAME} KRaft cluster"
        how = f"the shared oracle (${SHARED_ENV})" if self.kafka is None else "started here"
        return f"{ORACLE_NAME}, {how}"

    def start(self) -> str:
        shared = os.environ.get(SHARED_ENV)
        if self.cluster is not None:
            self.bootstrap = self.cluster.start()
        elif shared:
            if not probe(shared, timeout=10.0):
                raise TargetDown(f"{SHARED_ENV}={shared} does not answer as a Kafka broker")
            self.bootstrap = shared
        else:
            self.kafka = ApacheKafka(self.workdir / "apache-kafka")
            self.bootstrap = self.kafka.start()
        return self.bootstrap

    def healthy(self) -> bool:
        if self.cluster is not None:
            return self.cluster.is_running()
        return probe(self.bootstrap, timeout=10.0)

    def heal(self) -> str:
        raise TargetDown(f"{ORACLE_NAME} at {self.bootstrap} stopped answering")

    def log_tail(self, lines: int = 15) -> str:
        if self.cluster is not None:
            return self.cluster.log_tail(lines)
        if self.kafka is None:
            return f"(the shared oracle's log: where ${SHARED_ENV} was started)"
        return self.kafka.log_tail(lines)

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        if self.kafka is not None:
            self.kafka.stop()


Target = _Target | _OracleTarget


@dataclass
class _Run:
    """One row's run: the client, the target, where results go."""

    client: str
    adapter_cls: type[Adapter]
    target: Target
    workdir: Path
    row: str
    tag: str = ""  # in front of every name a case makes ("" on wirebroker's fresh brokers)
    bootstrap: str = ""

    def new_adapter(self, bootstrap: str) -> Adapter:
        adapter = self.adapter_cls(bootstrap)
        if self.target.cluster is not None:
            adapter.replication_factor = self.target.cluster.size
        adapter.group_protocol = group_protocol_of(self.row)
        return adapter

    def cases(self, only: list[str] | None) -> dict[str, dict[str, object]]:
        """Run the cases (all of the row, or those whose id starts with one of `only`)."""
        cases = [
            c for c in cases_of(self.row) if only is None or any(c.id.startswith(o) for o in only)
        ]
        seq = count(1)
        bootstrap = self.bootstrap
        adapter = self.new_adapter(bootstrap)
        results: dict[str, dict[str, object]] = {}
        standby = None  # Kafka behind a fault proxy, started ahead of idempotent.retries
        if (
            self.target.oracle
            and any(c.id == "idempotent.retries" for c in cases)
            and "idempotent" in adapter.capabilities
        ):
            standby = ProxiedKafka()
        try:
            for case in cases:
                start = time.monotonic()
                try:
                    if not self.target.healthy():
                        bootstrap = self.target.heal()
                        adapter.close()
                        adapter = self.new_adapter(bootstrap)
                except TargetDown as exc:
                    status, detail = "fail", f"TargetDown: {exc}"
                else:
                    ctx = Ctx(
                        adapter,
                        bootstrap,
                        self.workdir,
                        seq,
                        self.target.cluster,
                        tag=self.tag,
                        oracle=self.target.oracle,
                        standby=standby,
                    )
                    status, detail = run_case(ctx, case.id, case.run)
                took = time.monotonic() - start
                if status == "fail" and detail.startswith("hang"):
                    threading.Thread(target=adapter.close, daemon=True).start()
                    adapter = self.new_adapter(bootstrap)
                first = detail.splitlines()[0] if detail else ""
                results[case.id] = {"status": status, "detail": stable(first, self.tag)[:400]}
                print(f"{status:>5}  {case.id:<34} {took:5.1f}s  {first[:160]}", flush=True)
                if status == "fail":
                    full = detail + "\n--- broker log tail ---\n" + self.target.log_tail(15)
                    print("       " + full.replace("\n", "\n       ")[:3000], flush=True)
        finally:
            adapter.close()
            if standby is not None:
                standby.close()
        return results

    def write(self, results: dict[str, dict[str, object]]) -> None:
        RESULTS.mkdir(exist_ok=True)
        out: dict[str, object] = {
            "client": self.client,
            "version": self.adapter_cls.version,
            "cases": results,
        }
        if self.row != SINGLE_BROKER:
            out["row"] = self.row
        if self.target.oracle:
            out["broker"] = ORACLE_NAME
        path = results_path(self.client, self.row, oracle=self.target.oracle)
        path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


def _check_ratchet(
    client: str, row: str, results: dict[str, dict[str, object]], partial: bool, update: bool
) -> int:
    passing_file = passing_path(client, row).name
    passing = read_passing(client, row)
    regressions, unknown, new = ratchet(passing, results, partial=partial, row=row)
    if new:
        print(f"newly passing (not yet in {passing_file}): {' '.join(new)}")
        if update:
            write_passing(client, passing + new, row)
            print(f"{passing_file} updated")
    if unknown:
        print(f"RATCHET: {passing_file} names unknown cases: {' '.join(unknown)}")
    if regressions:
        print(f"RATCHET: listed as passing but did not pass: {' '.join(regressions)}")
    return 1 if regressions or unknown else 0


def _check_oracle(
    client: str, row: str, results: dict[str, dict[str, object]], partial: bool
) -> int:
    differs = read_differs(client, row)
    problems = oracle_check(read_passing(client, row), differs, results, partial=partial, row=row)
    for c in sorted(differs):
        if c in results:
            print(f"differs from Kafka (listed): {c}  # {differs[c]}")
    for line in problems:
        print(
            f"ORACLE CHECK ({passing_path(client, row).name}, {differs_path(client, row).name}): "
            f"{line}"
        )
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("client")
    parser.add_argument("--only", nargs="*", default=None, help="case ids (prefixes) to run")
    parser.add_argument("--cluster", action="store_true", help="the 3-broker row")
    parser.add_argument("--oracle", action="store_true", help="against Apache Kafka 4.4")
    parser.add_argument(
        "--group-protocol",
        choices=("classic", "consumer"),
        default="classic",
        help="the group members' group.protocol (consumer: KIP-848, the group cases only)",
    )
    parser.add_argument("--update-passing", action="store_true")
    parser.add_argument("--no-results", action="store_true", help="do not write results JSON")
    args = parser.parse_args(argv)
    if args.oracle and args.update_passing:
        parser.error("--update-passing is wirebroker's ratchet; it does not go with --oracle")

    row = row_of(args.cluster, args.group_protocol)
    adapter_cls = load_adapter(args.client)
    if args.group_protocol not in adapter_cls.group_protocols:
        parser.error(f"{args.client}'s members have no group.protocol={args.group_protocol}")
    suffix = "-oracle" if args.oracle else ""
    workdir = Path(tempfile.mkdtemp(prefix=f"compat-{args.client}-{row}{suffix}-"))
    target: Target = (
        _OracleTarget(workdir, args.cluster) if args.oracle else _Target(workdir, args.cluster)
    )
    run = _Run(args.client, adapter_cls, target, workdir, row)
    if args.oracle:
        run.tag = secrets.token_hex(3)
    start = time.monotonic()
    try:
        run.bootstrap = target.start()
        print(
            f"== {args.client} {run.adapter_cls.version} against {target.describe()} at "
            f"{run.bootstrap} (data {workdir}; up in {time.monotonic() - start:.1f} s)",
            flush=True,
        )
        results = run.cases(args.only)
    finally:
        target.stop()
    expected = read_differs(args.client, row) if args.oracle else {}  # listed differences
    if any(r["status"] == "fail" and c not in expected for c, r in results.items()):
        print(f"   (work directory kept for inspection: {workdir})", flush=True)
    else:
        shutil.rmtree(workdir, ignore_errors=True)

    counts = {
        s: sum(1 for r in results.values() if r["status"] == s) for s in ("pass", "fail", "n/a")
    }
    label = args.client + (f" ({row})" if row != SINGLE_BROKER else "")
    label += " on Kafka" if suffix else ""
    print(
        f"{label}: {counts['pass']} passed, {counts['fail']} failed, {counts['n/a']} n/a",
        flush=True,
    )
    if not args.no_results and args.only is None:
        run.write(results)
    partial = args.only is not None
    if args.oracle:
        return _check_oracle(args.client, row, results, partial)
    return _check_ratchet(args.client, row, results, partial, args.update_passing)


if __name__ == "__main__":
    sys.exit(main())
