"""Runs one of the kafkajs 2.2.4 (Node) scripts in `js/` for a test: one JSON request in argv,
one JSON result on stdout (the last non-empty line), a watchdog inside the script
(`timeoutMs`, exit code 2) and a timeout outside (10 s later).

Needs `node` (>= 14) and `npm ci --prefix tests/integration/js` (kafkajs pinned in
package-lock.json). Missing either is a FAILURE, not a skip: the test would otherwise pass
vacuously in CI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

JS_DIR = Path(__file__).resolve().parent / "js"


def node() -> str:
    """The `node` binary; fails the test when node or kafkajs is not installed."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("`node` is not on PATH: install Node.js (>= 14) to run the kafkajs tests")
    if not (JS_DIR / "node_modules" / "kafkajs" / "package.json").exists():
        pytest.fail(f"kafkajs is not installed: run `npm ci --prefix {JS_DIR}`")
    return found


def run_script(script: str, request: dict[str, Any], timeout_ms: int) -> dict[str, Any]:
    """`node js/<script> '<request + timeoutMs>'` -> its result; asserts exit code 0 and no
    `error` in the result."""
    proc = subprocess.run(
        [node(), str(JS_DIR / script), json.dumps({"timeoutMs": timeout_ms, **request})],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=timeout_ms / 1000 + 10,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0 and lines, (
        f"node exited {proc.returncode}\n"
        f"stdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}"
    )
    result: dict[str, Any] = json.loads(lines[-1])
    assert "error" not in result, result
    return result
