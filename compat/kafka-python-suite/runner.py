"""Run kafka-python's own integration tests (from its PyPI sdist) against wirebroker.

    python compat/kafka-python-suite/runner.py [--update-passing] [-k EXPR]

Steps:
1. `pip download --no-deps --no-binary :all: kafka-python==VERSION` into compat/.cache/ (once).
2. Unpack it into a scratch dir; add `test/__init__.py` (the sdist's `test` folder has none, so
   Python's standard-library `test` package would shadow it) and `test/service.py` (missing
   from the sdist; `service_shim.py` here stands in, see its docstring). Nothing else of the
   suite is changed.
3. Start wirebroker with `server.properties` (the suite's broker settings).
4. `pytest test/integration` with KAFKA_URI=tcp://HOST:PORT, KAFKA_VERSION=4.3.0 (the Kafka
   release whose ApiVersions wirebroker's equal; see KAFKA_VERSION), KAFKA_ROOT=<an empty
   dir> (the fixtures insist it exists; with KAFKA_URI nothing is run from it),
   pytest-timeout per test, a JUnit XML report.
4b. `test/integration/test_sasl_integration.py` again, without KAFKA_URI and with the plugin
   `sasl_shim.py` (a secured wirebroker per test fixture; see its docstring): its outcomes
   replace the first run's (skipped there by the suite itself).
5. Classify every test: passed, failed (failed or errored), skipped by the suite itself
   (its own version conditions), or excluded: a test listed in `excluded.txt` needs
   ZooKeeper, SSL or several brokers, which an external single broker cannot offer; it
   is reported with that reason and not counted as a failure.
6. Write compat/results/kafka-python-suite.json; check the ratchet `passing.txt` (every test
   listed there must pass; exit code 1 otherwise). `--update-passing` adds newly passing tests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMPAT = HERE.parent
sys.path.insert(0, str(COMPAT.parent))

from compat.scenarios.broker import Broker  # noqa: E402

VERSION = "3.0.12"
# The Kafka release whose protocol wirebroker speaks: for every API it serves, its ApiVersions
# answer equals Kafka 4.3's in kafka-python's table (kafka/protocol/broker_version_data.py),
# e.g. DescribeLogDirs up to v5, which 4.2 lacks. The suite adapts its expectations to it.
KAFKA_VERSION = "4.3.0"
TEST_TIMEOUT = 90  # seconds per test (pytest-timeout, signal method: the run goes on)
CACHE = COMPAT / ".cache"
RESULTS = COMPAT / "results" / "kafka-python-suite.json"
#: run a second time, against secured brokers (`run_sasl_tests`, `sasl_shim.py`)
SASL_TESTS = "test/integration/test_sasl_integration.py"


def sdist() -> Path:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"kafka_python-{VERSION}.tar.gz"
    if not path.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                "-d",
                str(CACHE),
                f"kafka-python=={VERSION}",
            ],
            check=True,
        )
    return path


def unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    root = into / f"kafka_python-{VERSION}"
    (root / "test" / "__init__.py").touch()
    shutil.copy(HERE / "service_shim.py", root / "test" / "service.py")
    return root


def read_list(path: Path) -> dict[str, str]:
    """`id  # comment` lines -> {id: comment}; blank and comment-only lines skipped."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        ident, _, note = line.partition("#")
        if ident.strip():
            out[ident.strip()] = note.strip()
    return out


def excluded_reason(test_id: str, excluded: dict[str, str]) -> str | None:
    for prefix, reason in excluded.items():
        if test_id == prefix or test_id.startswith((prefix + "[", prefix + "::")):
            return reason
    return None


def parse_junit(path: Path) -> dict[str, tuple[str, str]]:
    """{test id: (outcome, message)}; outcome passed / failed / skipped."""
    out: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        classname = case.get("classname", "")
        parts = classname.split(".")
        # test.integration.test_x[.TestClass] -> test/integration/test_x.py[::TestClass]
        mod_end = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
        file = "/".join(parts[: mod_end + 1]) + ".py"
        cls = "::".join(parts[mod_end + 1 :])
        test_id = f"{file}::{cls + '::' if cls else ''}{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                message = (
                    (child.get("message") or "").splitlines()[0][:300]
                    if child.get("message")
                    else child.tag
                )
                break
            if child.tag == "skipped":
                outcome, message = "skipped", (child.get("message") or "")[:300]
        if test_id in out and out[test_id][0] == "failed":
            continue  # a teardown error keeps the failure
        out[test_id] = (outcome, message)
    return out


def pytest_cmd(target: str, junit: Path) -> list[str]:
    """The suite's pytest command for `target`, writing a JUnit report to `junit`."""
    return [
        sys.executable,
        "-m",
        "pytest",
        target,
        "-o",
        "addopts=",
        "-o",
        "log_level=WARNING",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rN",
        "--tb=line",
        f"--junitxml={junit}",
        f"--timeout={TEST_TIMEOUT}",
        "--timeout-method=signal",
        "-W",
        "ignore::DeprecationWarning",
        "-W",
        "ignore::pytest.PytestUnraisableExceptionWarning",
    ]


def run_sasl_tests(
    root: Path, env: dict[str, str], work: Path, k: str | None
) -> dict[str, tuple[str, str]]:
    """kafka-python's SASL tests, a second pytest run without KAFKA_URI and with `sasl_shim.py`
    (see its docstring): each test gets a wirebroker with the SASL mechanism it asks for.
    Their outcomes by test id (none when -k selects none of them)."""
    junit = work / "junit-sasl.xml"
    cmd = [*pytest_cmd(SASL_TESTS, junit), "-p", "sasl_shim"]
    if k:
        cmd += ["-k", k]
    sasl_env = {key: v for key, v in env.items() if key != "KAFKA_URI"}
    sasl_env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(HERE), str(COMPAT.parent)])
    print(f"== kafka-python {VERSION} SASL tests against secured wirebrokers", flush=True)
    proc = subprocess.run(
        cmd,
        cwd=root,
        env=sasl_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    (work / "pytest-sasl.out").write_text(proc.stdout + proc.stderr)
    if not junit.exists():
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        return {}
    return parse_junit(junit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-passing", action="store_true")
    parser.add_argument("-k", default=None, help="pytest -k expression (no results file)")
    args = parser.parse_args(argv)

    archive = sdist()
    work = Path(tempfile.mkdtemp(prefix="kafka-python-suite-"))
    root = unpack(archive, work)
    kafka_root = work / "kafka-root"
    kafka_root.mkdir()
    broker = Broker(work / "broker", config_file=HERE / "server.properties")
    bootstrap = broker.start()
    junit = work / "junit.xml"
    env = dict(os.environ)
    env.update(
        KAFKA_URI=f"tcp://{bootstrap}",
        KAFKA_VERSION=KAFKA_VERSION,
        KAFKA_ROOT=str(kafka_root),
        PYTHONPATH=str(root),
        PYTHONDONTWRITEBYTECODE="1",
    )
    cmd = pytest_cmd("test/integration", junit)
    if args.k:
        cmd += ["-k", args.k]
    print(
        f"== kafka-python {VERSION} integration suite against wirebroker at {bootstrap}", flush=True
    )
    try:
        proc = subprocess.run(
            cmd,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        broker.stop()
    (work / "pytest.out").write_text(proc.stdout + proc.stderr)
    if not junit.exists():
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        print("kafka-python-suite: pytest wrote no report")
        return 1
    outcomes = parse_junit(junit) | run_sasl_tests(root, env, work, args.k)

    excluded = read_list(HERE / "excluded.txt")
    results = {}
    for test_id, (outcome, message) in sorted(outcomes.items()):
        reason = excluded_reason(test_id, excluded)
        status = outcome
        if reason is not None:
            status, message = "excluded", reason
        results[test_id] = {"status": status, "detail": message}
        print(f"{status:>8}  {test_id}  {message[:140] if status != 'passed' else ''}")
    counts = {
        s: sum(1 for r in results.values() if r["status"] == s)
        for s in ("passed", "failed", "skipped", "excluded")
    }
    print(
        # Worded so no CI log reader mistakes it for this repo's own test summary line.
        f"kafka-python's own suite against wirebroker: pass={counts['passed']} "
        f"fail={counts['failed']} (ratchet: compat/kafka-python-suite/passing.txt) "
        f"skipped-by-suite={counts['skipped']} excluded={counts['excluded']}",
        flush=True,
    )
    if args.k is None:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(
            json.dumps(
                {
                    "client": "kafka-python-suite",
                    "version": VERSION,
                    "kafka_version": KAFKA_VERSION,
                    "tests": results,
                },
                indent=1,
                sort_keys=True,
            )
            + "\n"
        )

    passing_path = HERE / "passing.txt"
    passing = read_list(passing_path)
    regressions = [t for t in passing if t in results and results[t]["status"] != "passed"]
    missing = [t for t in passing if t not in results] if args.k is None else []
    new = [t for t, r in results.items() if r["status"] == "passed" and t not in passing]
    if new:
        print(f"newly passing (not yet in passing.txt): {len(new)}")
        if args.update_passing:
            header = (
                [ln for ln in passing_path.read_text().splitlines() if ln.startswith("#")]
                if passing_path.exists()
                else []
            )
            passing_path.write_text("\n".join([*header, *sorted(set(passing) | set(new))]) + "\n")
            print("passing.txt updated")
    if regressions or missing:
        print(f"RATCHET: listed as passing but did not pass: {' '.join(regressions + missing)}")
        print(f"(work directory kept for inspection: {work})")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
