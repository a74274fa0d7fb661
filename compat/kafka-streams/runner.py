"""A Kafka Streams 4.4 exactly-once application against wirebroker and Apache Kafka.

    python compat/kafka-streams/runner.py [--only ID...] [--update-passing]

Cases (README.md says what each proves):
    wordcount.exactly_once       both sides, side by side: a fixed input, the app runs, the
                                 committed output gives exactly the expected counts
    wordcount.kill9_broker       wirebroker: the broker is killed with SIGKILL while the app
                                 processes and restarted on the same data dir and port
    wordcount.kill9_cluster_broker   the 3-broker wirebroker cluster: one broker (the leader
                                 of an output partition) is killed with SIGKILL mid-stream
                                 and restarted
The crash cases are n/a on Kafka: the oracle is one shared broker, never restarted.

Writes compat/results/kafka-streams.json and checks passing.txt (compat/scenarios/twosided.py).
"""

from __future__ import annotations

import argparse
import itertools
import re
import secrets
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from app import App, committed, committed_output, compile_app, open_transaction  # noqa: E402

from compat.oracle.kafka import KAFKA_VERSION, shared_or_new  # noqa: E402
from compat.scenarios import twosided  # noqa: E402
from compat.scenarios.broker import Broker  # noqa: E402
from compat.scenarios.cluster import Cluster  # noqa: E402
from compat.scenarios.wire import Wire  # noqa: E402
from protocol.records import RecordSpec  # noqa: E402

RESULTS = HERE.parent / "results" / "kafka-streams.json"
PASSING = HERE / "passing.txt"
PARTITIONS = 3
VOCABULARY = [
    *("kafka", "stream", "topic", "broker", "record", "offset", "leader", "replica"),
    *("commit", "abort", "partition", "group", "consumer", "producer", "batch", "fetch"),
    *("marker", "epoch", "store", "changelog", "window", "count", "word", "exactly"),
]
LINES = [
    " ".join(VOCABULARY[(i * 7 + j * 11) % len(VOCABULARY)] for j in range(1 + i % 6))
    for i in range(1200)
]
EXPECTED = Counter(word for line in LINES for word in line.split())
CHUNK = 40  # lines per produce round; the crash comes after half of them
FINAL_S = 240.0


@dataclass
class Run:
    """One side's run of the app: where, and what a crash does (None: no crash)."""

    bootstrap: str
    workdir: Path
    run_id: str
    replication_factor: int = 1
    crash: Callable[[], None] | None = None
    crash_note: str = ""
    open_at_crash: tuple[str, int, int, int] | None = None


def _produce(bootstrap: str, topic: str, first: int, lines: list[str], rf: int) -> None:
    """One chunk of input, idempotent: a chunk goes in while a broker is killed and a retried
    batch must not be appended twice (the crash cases count every word)."""
    with Wire(bootstrap, replication_factor=rf) as w:
        by_partition: dict[int, list[RecordSpec]] = {}
        for n, line in enumerate(lines, start=first):
            by_partition.setdefault(n % PARTITIONS, []).append(RecordSpec(None, line.encode()))
        for p, specs in sorted(by_partition.items()):
            w.produce(topic, p, specs, idempotent=True)


def _output(bootstrap: str, topic: str, rf: int) -> list[tuple[str, int, bool]]:
    with Wire(bootstrap, replication_factor=rf) as w:
        return committed_output(w, topic, PARTITIONS)


def _finals(output: list[tuple[str, int, bool]]) -> dict[str, int]:
    return {word: count for word, count, _ in output}


def _input_lines(run: Run, source: str) -> int:
    """How many lines the input topic holds (len(LINES) unless an input write was doubled)."""
    with Wire(run.bootstrap, replication_factor=run.replication_factor) as w:
        return len(committed_output_values(w, source))


def _wait_final(run: Run, topic: str, app: App, source: str) -> list[tuple[str, int, bool]]:
    deadline = time.monotonic() + FINAL_S
    while True:
        output = _output(run.bootstrap, topic, run.replication_factor)
        if _finals(output) == EXPECTED:
            return output
        if app.proc.poll() is not None:
            raise AssertionError(f"the Streams app exited: {app.tail()}")
        if time.monotonic() > deadline:
            short = {
                w: (c, _finals(output).get(w))
                for w, c in EXPECTED.items()
                if _finals(output).get(w) != c
            }
            raise AssertionError(
                f"counts not final after {FINAL_S:.0f} s: {list(short.items())[:5]}; the "
                f"input holds {_input_lines(run, source)} of {len(LINES)} lines"
            )
        time.sleep(0.5)


def _drive(run: Run, names: tuple[str, str, str]) -> tuple[list[tuple[str, int, bool]], App]:
    app_id, source, sink = names
    with Wire(run.bootstrap, replication_factor=run.replication_factor) as w:
        w.create_topic(source, PARTITIONS)
        w.create_topic(sink, PARTITIONS)
    app = App(compile_app(), run.bootstrap, app_id, (source, sink), run.workdir / "app")
    try:
        app.wait_running()
        crashed = run.crash is None
        half = len(LINES) // 2
        for first in range(0, len(LINES), CHUNK):
            if run.crash is not None and first == half:
                _wait_for_output(run, sink)  # mid-stream: results already committed
            chunk = LINES[first : first + CHUNK]
            _produce(run.bootstrap, source, first, chunk, run.replication_factor)
            if not crashed and first >= half:
                crashed = _crash_mid_transaction(run, [sink, f"{app_id}-words-repartition"])
        assert crashed, "the app was never caught mid-stream with a transaction open: no crash"
        output = _wait_final(run, sink, app, source)
    finally:
        code = app.stop()
    assert code in (0, 143), f"the app exited {code}: {app.tail()}"
    return output, app


def _wait_for_output(run: Run, sink: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not _output(run.bootstrap, sink, run.replication_factor):
        if time.monotonic() > deadline:
            raise AssertionError(f"no committed output within {timeout:.0f} s")
        time.sleep(0.2)


def _crash_mid_transaction(run: Run, topics: list[str]) -> bool:
    """Crash (run.crash) as soon as one of `topics` has a transaction open (its last stable
    offset below its high watermark: the app is writing results it has not committed yet),
    watching for up to a second after a chunk of input; False when none was seen."""
    assert run.crash is not None
    deadline = time.monotonic() + 1.0
    with Wire(run.bootstrap, replication_factor=run.replication_factor) as w:
        while (found := open_transaction(w, topics, PARTITIONS)) is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
    start = time.monotonic()
    run.crash()
    run.open_at_crash = found
    print(
        f"   (killed with {found[0]}-{found[1]} open at {found[2]}..{found[3]}; back in "
        f"{time.monotonic() - start:.1f} s)",
        flush=True,
    )
    return True


def _check_output(output: list[tuple[str, int, bool]]) -> None:
    assert all(tx for _, _, tx in output), "output records outside transactions"
    updates: dict[str, list[int]] = {}
    for word, count, _ in output:
        updates.setdefault(word, []).append(count)
    for word, counts in updates.items():
        bad = [(a, b) for a, b in itertools.pairwise(counts) if b <= a]
        assert not bad, f"{word}: count updates not strictly increasing {bad[:3]} (duplicates)"
    assert _finals(output) == EXPECTED


def _check_internal(run: Run, app_id: str) -> None:
    repartition, changelog = f"{app_id}-words-repartition", f"{app_id}-counts-changelog"
    with Wire(run.bootstrap, replication_factor=run.replication_factor) as w:
        topics = w.topics([repartition, changelog])
        assert topics == {repartition: PARTITIONS, changelog: PARTITIONS}, topics
        assert w.topic_configs(changelog)["cleanup.policy"] == "compact"
        words = committed_output_values(w, repartition)
        assert Counter(words) == EXPECTED, "the repartition topic does not hold each word once"
        stored = {word: count for word, count, _ in committed_output(w, changelog, PARTITIONS)}
    assert stored == EXPECTED, "the changelog's latest counts differ"


def _crash_outcome(run: Run, at: tuple[str, int, int, int]) -> str:
    """How the transaction open at the crash ended (log only: it varies from run to run)."""
    topic, p, stable, _high = at
    with Wire(run.bootstrap, replication_factor=run.replication_factor) as w:
        records, markers = w.read_log(topic, p, stable)
    first = records[0] if records else None
    ends = [m for m in markers if first is not None and m.producer_id == first.producer_id]
    if not ends:
        return "the transaction open at the crash: no marker found"
    kind = "COMMIT" if ends[0].commit else "ABORT"
    return f"the transaction open at the crash ended with {kind} at offset {ends[0].offset}"


def _app_story(app: App) -> str:
    states = [line.split()[1] for line in app.lines if line.startswith("STATE ")]
    return f"states {' > '.join(states)}, {len(app.thread_errors())} stream thread(s) replaced"


def committed_output_values(w: Wire, topic: str) -> list[str]:
    """The committed values of a String-valued topic (the repartition topic: one per word)."""
    out = []
    for p in range(PARTITIONS):
        records, markers = w.read_log(topic, p)
        out += [(r.value or b"").decode() for r in committed(records, markers)]
    return out


def wordcount(run: Run) -> str:
    names = (f"wc-{run.run_id}", f"wc-{run.run_id}-in", f"wc-{run.run_id}-out")
    output, _app = _drive(run, names)
    _check_output(output)
    _check_internal(run, names[0])
    if run.open_at_crash is not None:
        print(f"   ({_crash_outcome(run, run.open_at_crash)}; app: {_app_story(_app)})", flush=True)
    return (
        f"{len(LINES)} lines, {sum(EXPECTED.values())} words: the committed output (read as "
        "read_committed) ends at exactly the expected counts, every count update of a word "
        "strictly increasing (no duplicate, no lost update), all in transactions; the "
        "repartition topic holds each word once, the compacted changelog the final counts"
        + run.crash_note
    )


# -- the crash cases ---------------------------------------------------------------------------
def kill9_broker(workdir: Path, run_id: str) -> str:
    broker = Broker(workdir / "crash-broker")
    bootstrap = broker.start()

    def crash() -> None:
        broker.kill9()
        broker.start(port=int(bootstrap.rpartition(":")[2]))

    try:
        note = (
            "; the broker was killed with SIGKILL mid-stream (half the input in, results "
            "committed) while a transaction of the app was open, and restarted on its data dir "
            "and port"
        )
        return wordcount(Run(bootstrap, workdir / "crash", run_id + "k", 1, crash, note))
    finally:
        broker.stop()


def kill9_cluster_broker(workdir: Path, run_id: str) -> str:
    cluster = Cluster(workdir / "cluster")
    cluster.start()
    sink = f"wc-{run_id}c-out"

    def crash() -> None:
        with Wire(cluster.bootstrap, replication_factor=3) as w:
            victim = w.leader(sink, 0)
        cluster.kill9(victim)
        cluster.restart(victim)

    try:
        note = (
            "; on 3 brokers (RF 3, min.insync.replicas 2), the leader of an output partition "
            "was killed with SIGKILL while a transaction of the app was open, and restarted"
        )
        return wordcount(Run(cluster.bootstrap, workdir / "cl", run_id + "c", 3, crash, note))
    finally:
        cluster.stop()


CASES = ["wordcount.exactly_once", "wordcount.kill9_broker", "wordcount.kill9_cluster_broker"]
NOT_ON_KAFKA = "the oracle is one broker shared by the whole test run: it is never killed"


CASE_TIMEOUT = 420.0


def _outcome(fn: Callable[[], str]) -> twosided.Outcome:
    """Run one case in a thread bounded by CASE_TIMEOUT: pass (its note), fail (the error)."""
    out: list[twosided.Outcome] = []

    def target() -> None:
        try:
            out.append({"status": "pass", "detail": fn()})
        except Exception as exc:
            print(traceback.format_exc(), flush=True)
            detail = re.sub(r"127\.0\.0\.1:\d+", "HOST:PORT", f"{type(exc).__name__}: {exc}")
            out.append(
                {"status": "fail", "detail": re.sub(r"wc-[0-9a-f]+", "wc-RUN", detail)[:500]}
            )

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(CASE_TIMEOUT)
    return out[0] if out else {"status": "fail", "detail": f"hang: over {CASE_TIMEOUT:.0f} s"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="case ids (prefixes)")
    parser.add_argument("--update-passing", action="store_true")
    args = parser.parse_args(argv)
    chosen = [c for c in CASES if args.only is None or any(c.startswith(o) for o in args.only)]
    workdir = Path(tempfile.mkdtemp(prefix="compat-kafka-streams-"))
    run_id = secrets.token_hex(3)
    started = time.monotonic()
    compile_app()
    print(f"== WordCount compiled ({time.monotonic() - started:.1f} s)", flush=True)
    wb: dict[str, twosided.Outcome] = {}
    ka: dict[str, twosided.Outcome] = {c: {"status": "n/a", "detail": NOT_ON_KAFKA} for c in chosen}
    with shared_or_new() as oracle:
        broker = Broker(workdir / "broker")
        bootstrap = broker.start()
        try:
            if "wordcount.exactly_once" in chosen:
                kafka_side = threading.Thread(
                    target=lambda: ka.update(
                        {
                            "wordcount.exactly_once": _outcome(
                                lambda: wordcount(Run(oracle, workdir / "kafka", run_id))
                            )
                        }
                    )
                )
                kafka_side.start()
                wb["wordcount.exactly_once"] = _outcome(
                    lambda: wordcount(Run(bootstrap, workdir / "wb", run_id + "w"))
                )
                kafka_side.join()
        finally:
            broker.stop()
    if "wordcount.kill9_broker" in chosen:
        wb["wordcount.kill9_broker"] = _outcome(lambda: kill9_broker(workdir, run_id))
    if "wordcount.kill9_cluster_broker" in chosen:
        wb["wordcount.kill9_cluster_broker"] = _outcome(
            lambda: kill9_cluster_broker(workdir, run_id)
        )
    for cid in chosen:
        print(f"{wb[cid]['status']:>5}  wirebroker {cid:<34} {wb[cid]['detail'][:140]}")
        print(f"{ka[cid]['status']:>5}  kafka      {cid:<34} {ka[cid]['detail'][:140]}")
    print(f"== {len(chosen)} cases in {time.monotonic() - started:.0f} s", flush=True)
    code = twosided.finish(
        twosided.merge(wb, ka, CASES),
        what=("app", f"Kafka Streams {KAFKA_VERSION} WordCount (exactly_once_v2, RocksDB)"),
        results_path=RESULTS,
        passing_path=PASSING,
        order=CASES,
        partial=args.only is not None,
        update_passing=args.update_passing,
    )
    return twosided.tidy(code, workdir)


if __name__ == "__main__":
    sys.exit(main())
