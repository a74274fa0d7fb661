"""Run Kafka's own command-line tools against wirebroker and against Apache Kafka.

    python compat/kafka-tools/runner.py [--only ID...] [--update-passing]
    python compat/kafka-tools/runner.py --kafka-cluster [--only ID...]

Every case (cases.py) runs twice in one run, with the same code and the same assertions:
against wirebroker (one `wirebroker serve`, or a 3-broker wirebroker cluster for the cluster
cases) and against Apache Kafka 4.4 (the oracle: $WIREBROKER_ORACLE when set, else one started
here). The two sides run side by side, each two cases at a time ($KAFKA_TOOLS_WORKERS); the
cluster cases run one at a time after wirebroker's single-broker ones, on a cluster started
meanwhile.

A case that passes on wirebroker and fails on Kafka asserts something Kafka does not do: the
run fails ("assertion wrong") until the case is corrected. A cluster case that cannot run on
a single-node Kafka is n/a on that side, with the reason. `--kafka-cluster` checks those
against a 3-broker Apache Kafka instead (four more JVMs: by hand, not in CI; nothing written).

Writes compat/results/kafka-tools.json (no timings, no addresses or run ids: a run that
changes nothing leaves it unchanged; a run with --only writes nothing) and checks the ratchet
passing.txt: every case listed must pass on wirebroker and pass (or be n/a) on Kafka.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import count
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from cases import CASES, Case  # noqa: E402
from target import KAFKA, WIREBROKER, Target  # noqa: E402

from compat.oracle.kafka import KAFKA_VERSION, shared_or_new  # noqa: E402
from compat.scenarios import twosided  # noqa: E402
from compat.scenarios.broker import Broker  # noqa: E402
from compat.scenarios.cluster import Cluster  # noqa: E402
from compat.scenarios.jvm import Background  # noqa: E402
from compat.scenarios.runner import run_case  # noqa: E402

RESULTS = HERE.parent / "results" / "kafka-tools.json"
PASSING = HERE / "passing.txt"
# No automatic preferred-leader rebalancing (Kafka's default runs it every 300 s): the
# leader-election case moves leaders away and elects them back itself.
CLUSTER_OVERRIDES = {"auto.leader.rebalance.enable": "false"}
# Single-broker cases run two at a time on each side (they share nothing but the broker);
# the cluster cases one at a time (they stop and start brokers).
WORKERS = int(os.environ.get("KAFKA_TOOLS_WORKERS", "2"))
Outcome = twosided.Outcome


def _run(target: Target, case: Case) -> Outcome:
    start = time.monotonic()
    status, detail = run_case(target, case.id, case.fn)  # type: ignore[arg-type]
    first = detail.splitlines()[0] if detail else ""
    took = time.monotonic() - start
    text = f"{status:>5}  {target.side:<10} {case.id:<44} {took:5.1f}s  {first[:150]}"
    if status == "fail":
        text += "\n       " + detail.replace("\n", "\n       ")[:2500]
    print(text, flush=True)
    return {"status": status, "detail": normalize(first, target.run_id)[:500]}


def normalize(detail: str, run_id: str) -> str:
    """A failure's detail without what changes from run to run (addresses, the run id)."""
    detail = re.sub(r"\[\d{4}-\d\d-\d\d [\d:,]+\] ", "", detail)
    return re.sub(r"127\.0\.0\.1:\d+", "HOST:PORT", detail).replace(run_id, "RUN")


def _side(target: Target, cases: list[Case], out: dict[str, Outcome], workers: int = 1) -> None:
    """Run `cases` against one target, `workers` at a time; each case gets its own copy of
    the target (its names numbered from 1, so a run names the same things every time)."""

    def one(case: Case) -> None:
        if target.side == KAFKA and case.kafka_na:
            out[case.id] = {"status": "n/a", "detail": case.kafka_na}
            return
        out[case.id] = _run(dataclasses.replace(target, seq=count(1)), case)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, cases))


class _ClusterStart:
    """The cluster, started in the background while the single-broker cases run."""

    def __init__(self, workdir: Path) -> None:
        self.cluster = Cluster(workdir / "cluster", overrides=CLUSTER_OVERRIDES)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._start, daemon=True)
        self.thread.start()

    def _start(self) -> None:
        try:
            self.cluster.start()
        except BaseException as exc:
            self.error = exc

    def ready(self) -> Cluster:
        self.thread.join()
        if self.error is not None:
            raise self.error
        print(f"== a 3-broker wirebroker cluster at {self.cluster.bootstrap}", flush=True)
        return self.cluster


def _cluster_side(start: _ClusterStart, cases: list[Case], out: dict, run_id: str) -> None:
    try:
        cluster = start.ready()
    except Exception as exc:
        for case in cases:
            out[case.id] = {"status": "fail", "detail": f"the cluster did not start: {exc}"}
        return
    target = Target(
        WIREBROKER, cluster.bootstrap, start.cluster.workdir.parent / "cl", run_id, cluster
    )
    _side(target, cases, out)


def run(cases: list[Case], workdir: Path) -> dict[str, dict[str, Outcome]]:
    """The single-broker cases on wirebroker, then its cluster cases (the cluster starting
    meanwhile), beside every case on Kafka."""
    run_id = secrets.token_hex(3)
    single = [c for c in cases if not c.cluster]
    clustered = [c for c in cases if c.cluster]
    wb: dict[str, Outcome] = {}
    ka: dict[str, Outcome] = {}
    broker = Broker(workdir / "broker")
    cluster = _ClusterStart(workdir) if clustered else None
    try:
        broker.start()
        with shared_or_new() as oracle:
            print(f"== wirebroker {broker.bootstrap}, Apache Kafka {KAFKA_VERSION} {oracle}")
            t_wb = Target(WIREBROKER, broker.bootstrap, workdir / "wb", run_id)
            t_ka = Target(KAFKA, oracle, workdir / "kafka", run_id)
            other = threading.Thread(target=_side, args=(t_ka, single + clustered, ka, WORKERS))
            other.start()
            _side(t_wb, single, wb, WORKERS)
            broker.stop()
            if cluster is not None:
                _cluster_side(cluster, clustered, wb, run_id)
            other.join()
    finally:
        broker.stop()
        if cluster is not None:
            cluster.thread.join()
            cluster.cluster.stop()
        Background.kill_all()
    return twosided.merge(wb, ka, [c.id for c in cases])


def against_kafka_cluster(cases: list[Case], workdir: Path) -> int:
    """The cluster cases on the 3-broker wirebroker cluster and on a 3-broker Apache Kafka
    (`kafka_cluster.py`), one after the other; printed only, no results written."""
    from kafka_cluster import KafkaCluster

    run_id = secrets.token_hex(3)
    wb: dict[str, Outcome] = {}
    ka: dict[str, Outcome] = {}
    _cluster_side(_ClusterStart(workdir), cases, wb, run_id)
    kafka = KafkaCluster(workdir / "kafka-cluster")
    try:
        print(f"== a 3-broker Apache Kafka {KAFKA_VERSION} at {kafka.start()}", flush=True)
        target = Target(KAFKA, kafka.bootstrap, workdir / "kc", run_id, kafka)  # type: ignore[arg-type]
        _side(target, [dataclasses.replace(c, kafka_na="") for c in cases], ka)
    finally:
        kafka.stop()
        Background.kill_all()
    wrong = [c.id for c in cases if wb[c.id]["status"] == "pass" and ka[c.id]["status"] != "pass"]
    for cid in wrong:
        print(f"ASSERTION WRONG: {cid} passes on wirebroker and not on a 3-broker Kafka")
    return 1 if wrong else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="case ids (prefixes)")
    parser.add_argument("--update-passing", action="store_true")
    parser.add_argument(
        "--kafka-cluster",
        action="store_true",
        help="the cluster cases on wirebroker's and on a 3-broker Apache Kafka (not in CI)",
    )
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.only is None or any(c.id.startswith(o) for o in args.only)]
    workdir = Path(tempfile.mkdtemp(prefix="compat-kafka-tools-"))
    if args.kafka_cluster:
        code = against_kafka_cluster([c for c in cases if c.cluster], workdir)
        if not code:
            shutil.rmtree(workdir, ignore_errors=True)
        return code
    started = time.monotonic()
    results = run(cases, workdir)
    print(f"== {len(cases)} cases in {time.monotonic() - started:.0f} s", flush=True)
    code = twosided.finish(
        results,
        what=("tools", f"Apache Kafka {KAFKA_VERSION} tools"),
        results_path=RESULTS,
        passing_path=PASSING,
        order=[c.id for c in CASES],
        partial=args.only is not None,
        update_passing=args.update_passing,
    )
    # the known failures (not in passing.txt) are in the results already
    return twosided.tidy(code, workdir)


if __name__ == "__main__":
    sys.exit(main())
