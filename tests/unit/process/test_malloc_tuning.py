"""wirebroker.malloc_tuning: applied on glibc (checked in a child process, whose malloc
settings we may change), skipped when disabled by the environment."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from wirebroker import malloc_tuning

_GLIBC = platform.libc_ver()[0] == "glibc"


def test_disabled_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIREBROKER_MALLOC_TUNING", "0")
    assert malloc_tuning.tune_malloc() is False


def test_applied_on_glibc_in_a_child_process() -> None:
    code = (
        "import sys; from wirebroker.malloc_tuning import tune_malloc; "
        "sys.exit(0 if tune_malloc() else 3)"
    )
    root = Path(__file__).resolve().parents[3]
    status = subprocess.run(
        [sys.executable, "-c", code], cwd=root, check=False, timeout=60
    ).returncode
    assert status == (0 if _GLIBC else 3)
