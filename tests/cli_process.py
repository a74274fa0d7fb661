"""`wirebroker` run as a user runs it: `python -m wirebroker ARGS` in a subprocess from the
repository root (shared by tests/integration/test_cli_commands.py and
tests/cluster/test_cluster_cli.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def run_cli(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wirebroker", *argv],
        cwd=REPO_ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
