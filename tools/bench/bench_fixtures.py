"""The pytest plugin's costs (issue 15): fixture set-up time and a 100-test file.

    .venv/bin/python tools/bench/bench_fixtures.py [--starts 100] [--tests 100]

1. Set-up time of the function-scoped `kafka_broker` fixture, i.e. `BrokerHandle.start()`
   (subprocess: spawn `python -m wirebroker serve --port 0` until its ready line; thread: the
   broker served from a thread of this process), `--starts` times each, p50 / p99 / max, and
   the stop time (SIGTERM, graceful, plus removing the temporary directory).
2. Wall time of `pytest` on one generated file of `--tests` tests, each creating a topic,
   producing one record through the helper and reading the topic to its end, run three ways:
   a fresh subprocess broker per test (the default), a fresh in-thread broker per test
   (`-o kafka_broker_thread=true`), one broker for the session (`--kafka-broker-scope=session`).
   Each is one pytest subprocess (its own start-up included, ~1 s).
Prints a Markdown table. Nothing else runs meanwhile on a quiet machine; on a shared 2-CPU
box the figures move by 10-20 %.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TEST = """
def test_{i}(kafka_broker, kafka_create_topic, kafka_read_to_end):
    topic = kafka_create_topic()
    kafka_broker.produce(topic, [b"x"])
    assert [m.value for m in kafka_read_to_end(topic)] == [b"x"]
"""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def setup_times(starts: int, thread: bool) -> tuple[list[float], list[float]]:
    from wirebroker.testing import BrokerHandle

    up: list[float] = []
    down: list[float] = []
    for _ in range(starts):
        t0 = time.perf_counter()
        broker = BrokerHandle(thread=thread).start()
        t1 = time.perf_counter()
        broker.stop()
        down.append(time.perf_counter() - t1)
        up.append(t1 - t0)
    return up, down


def file_wall(tests: int, args: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-fixtures-") as tmp:
        path = Path(tmp) / "test_many.py"
        path.write_text("".join(TEST.format(i=i) for i in range(tests)))
        (Path(tmp) / "pytest.ini").write_text(
            "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        )
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path), *args]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
        return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=100)
    parser.add_argument("--tests", type=int, default=100)
    args = parser.parse_args()
    print("| fixture set-up (`kafka_broker`, function scope) | p50 | p99 | max | stop p50 |")
    print("|---|---|---|---|---|")
    for label, thread in (("subprocess (default)", False), ("thread", True)):
        up, down = setup_times(args.starts, thread)
        ms = [1000 * v for v in (_pct(up, 0.5), _pct(up, 0.99), max(up), _pct(down, 0.5))]
        print(f"| {label}, {args.starts} starts | " + " | ".join(f"{v:.0f} ms" for v in ms) + " |")
    print()
    print(f"| {args.tests}-test file (topic, produce, read to end per test) | wall | per test |")
    print("|---|---|---|")
    runs = (
        ("fresh subprocess broker per test", []),
        ("fresh in-thread broker per test", ["-o", "kafka_broker_thread=true"]),
        ("one session broker", ["--kafka-broker-scope=session"]),
    )
    for label, extra in runs:
        wall = file_wall(args.tests, extra)
        print(f"| {label} | {wall:.1f} s | {1000 * wall / args.tests:.0f} ms |")


if __name__ == "__main__":
    main()
