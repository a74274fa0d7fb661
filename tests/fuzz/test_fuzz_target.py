"""The coverage-guided fuzz target (tools/fuzz/fuzz_protocol.py) and its bounded runner.

The target must accept every seed and any bytes (only `ProtocolError`s are allowed inside it),
must fail loudly when the code under it raises anything else, and `tools/fuzz/run.py` must run
atheris for a bounded time and report no crash.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "fuzz"))

import fuzz_protocol  # noqa: E402

from protocol import codec  # noqa: E402

SEEDS = list(fuzz_protocol.seed_corpus())


def test_seeds_cover_every_mode_and_decode() -> None:
    modes = {seed[0] for seed in SEEDS}
    assert modes == {0, 1, 2, 3}
    requests = [s[1:] for s in SEEDS if s[0] == 1]
    assert len(requests) > 200  # every API and version
    for frame in requests:
        codec.decode_request(frame)  # the seeds are valid, so mutations start deep inside
    for seed in SEEDS:
        fuzz_protocol.one_input(seed)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.binary(max_size=600))
def test_random_bytes(data: bytes) -> None:
    fuzz_protocol.one_input(data)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.sampled_from(SEEDS), pos=st.integers(0, 10_000), patch=st.binary(max_size=4))
def test_mutated_seeds(seed: bytes, pos: int, patch: bytes) -> None:
    pos %= len(seed) + 1
    fuzz_protocol.one_input(seed[:pos] + patch + seed[pos + len(patch) :])


def test_target_reports_foreign_exceptions(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(frame: bytes) -> None:
        raise IndexError("a bug below the protocol layer")

    monkeypatch.setattr(fuzz_protocol.codec, "decode_request", broken)
    with pytest.raises(IndexError):
        fuzz_protocol.one_input(b"\x01" + SEEDS[1][1:])


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["atheris", "hypothesis"])
def test_runner_fuzzes_for_a_bounded_time(engine: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools" / "fuzz" / "run.py"),
            "--seconds",
            "4",
            "--engine",
            engine,
            "--corpus",
            str(tmp_path / "corpus"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith(f"fuzz ({engine}): "), line
    executions = int(line.split(": ")[1].split()[0])
    assert executions > 1000, line
    assert " 0 crashes" in line
