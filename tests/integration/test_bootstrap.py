"""The README's first command on a python without ensurepip (stock Debian/Ubuntu python3).

Regression test (issue 11, defect 2): `pip install -e .` failed there (PEP 668) and elsewhere
installed into the system interpreter. `tools/wirebroker serve` sets up its own venv through
`tools/bootstrap_venv.py`; here the no-ensurepip path (pip fetched from the index) is forced,
into a temporary venv, and the broker it installed must start and answer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _broker import READY_PREFIX, REPO_ROOT

pytestmark = pytest.mark.slow


def test_bootstrap_without_ensurepip_installs_a_working_broker(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["WIREBROKER_VENV"] = str(venv)
    done = subprocess.run(
        [sys.executable, "tools/bootstrap_venv.py", "--without-ensurepip"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(venv / "bin" / "python")
    assert "fetching pip" not in done.stderr  # forced: no ensurepip attempt was made
    where = subprocess.run(
        [venv / "bin" / "python", "-c", "import trio, pip; print(trio.__file__, pip.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(p.startswith(str(venv)) for p in where.stdout.split())  # not the system's

    with subprocess.Popen(
        [venv / "bin" / "wirebroker", "serve", "--port", "0", "--data-dir", tmp_path / "data"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith(READY_PREFIX), line
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
