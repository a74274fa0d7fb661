#!/usr/bin/env python3
"""Run the protocol fuzz target (tools/fuzz/fuzz_protocol.py) for a bounded time.

    python tools/fuzz/run.py [--seconds 60] [--corpus DIR] [--engine auto|atheris|hypothesis]

atheris (coverage-guided, libFuzzer) when it is installed -- it is in the test extra: the
target runs in a subprocess with `-max_total_time`, a seed corpus (valid requests of every
API/version and valid record batches of every codec, written to the corpus directory first) and
crash artifacts written under `<corpus>/../artifacts/`. Without atheris (`--engine hypothesis`,
or `auto` when it cannot be imported) the same target is driven by hypothesis for the same
time: random bytes and mutated seeds.

Prints one summary line, `fuzz (<engine>): <N> executions in <S> s, <K> crashes[, coverage]`,
and exits 1 when the target crashed (the crashing input is saved and its path printed).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fuzz_protocol  # noqa: E402


def write_seeds(corpus: Path) -> int:
    corpus.mkdir(parents=True, exist_ok=True)
    n = 0
    for seed in fuzz_protocol.seed_corpus():
        (corpus / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        n += 1
    return n


def run_atheris(seconds: int, corpus: Path, artifacts: Path) -> tuple[int, int, str]:
    """(executions, crashes, coverage note) of a libFuzzer run of `seconds`."""
    artifacts.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        str(HERE / "atheris_main.py"),
        f"-max_total_time={seconds}",
        "-max_len=8192",
        "-rss_limit_mb=2048",
        "-timeout=10",
        "-print_final_stats=1",
        f"-artifact_prefix={artifacts}/",
        str(corpus),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    out = proc.stdout + proc.stderr
    execs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", out)
    cov = re.findall(r"cov: (\d+) ft: (\d+)", out)
    crashes = len(list(artifacts.glob("crash-*"))) + len(list(artifacts.glob("timeout-*")))
    if proc.returncode != 0 and crashes == 0:
        crashes = 1
    if proc.returncode != 0:
        print(out[-6000:], file=sys.stderr)
    note = f"coverage {cov[-1][0]} edges, {cov[-1][1]} features" if cov else "coverage n/a"
    return int(execs[-1]) if execs else 0, crashes, note


def run_hypothesis(seconds: int, artifacts: Path) -> tuple[int, int, str]:
    """The same target driven by hypothesis for `seconds` (fallback without atheris)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    seeds = list(fuzz_protocol.seed_corpus())
    count = 0

    def mutated(seed: bytes) -> st.SearchStrategy[bytes]:
        edits = st.lists(st.tuples(st.integers(0, len(seed)), st.binary(max_size=4)), max_size=4)

        def apply(ed: list[tuple[int, bytes]]) -> bytes:
            out = bytearray(seed)
            for pos, patch in ed:
                out[pos : pos + len(patch)] = patch
            return bytes(out)

        return edits.map(apply)

    inputs = st.one_of(st.binary(max_size=512), st.sampled_from(seeds).flatmap(mutated))

    @settings(
        max_examples=2000,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(inputs)
    def batch(data: bytes) -> None:
        nonlocal count
        count += 1
        try:
            fuzz_protocol.one_input(data)
        except BaseException:
            artifacts.mkdir(parents=True, exist_ok=True)
            (artifacts / f"crash-{hashlib.sha1(data).hexdigest()}").write_bytes(data)
            raise

    deadline = time.monotonic() + seconds
    crashes = 0
    while time.monotonic() < deadline:
        try:
            batch()
        except Exception as exc:
            print(f"crash: {exc!r}", file=sys.stderr)
            crashes += 1
            break
    return count, crashes, "no coverage guidance"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto")
    args = parser.parse_args(argv)
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if importlib.util.find_spec("atheris") else "hypothesis"
    with tempfile.TemporaryDirectory(prefix="wb-fuzz-") as tmp:
        corpus = args.corpus or Path(tmp) / "corpus"
        artifacts = corpus.parent / "artifacts"
        seeds = write_seeds(corpus)
        start = time.monotonic()
        if engine == "atheris":
            execs, crashes, note = run_atheris(args.seconds, corpus, artifacts)
        else:
            execs, crashes, note = run_hypothesis(args.seconds, artifacts)
        elapsed = time.monotonic() - start
        saved = sorted(artifacts.glob("*")) if artifacts.exists() else []
        print(
            f"fuzz ({engine}): {execs} executions in {elapsed:.0f} s, {crashes} crashes, "
            f"{seeds} seeds, {note}"
        )
        for path in saved:
            print(f"  crashing input: {path} ({path.read_bytes()[:64]!r}...)")
            if args.corpus is None:
                keep = Path.cwd() / path.name
                keep.write_bytes(path.read_bytes())
                print(f"  kept as {keep}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
