"""Headless Chromium (Debian's `chromium` package) for the web-view tests.

`require_chromium()` skips the test when no chromium is installed, and fails it when CI is set
(CI installs it: .ci/run), as `require_zookeeper` does. `dump_dom(url)` is the DOM after the
page's scripts ran (`--virtual-time-budget` lets timers and fetches finish); `screenshot(url,
path)` writes a PNG. `--no-sandbox`: CI runs as root, where Chromium's sandbox refuses to start.
Setting WIREBROKER_SCREENSHOT_DIR makes `keep_screenshot` copy a test's screenshot there (how
docs/img/web-view*.png are made: see docs/admin.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["dump_dom", "keep_screenshot", "require_chromium", "screenshot"]

_NAMES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "apt-get install -y chromium"


def chromium_binary() -> str | None:
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    binary = chromium_binary()
    if binary is None:
        message = f"headless Chromium not installed: {INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return binary


def _run(args: list[str], *, timeout: float = 60) -> str:
    binary = require_chromium()
    proc = subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def dump_dom(url: str) -> str:
    return _run(["--dump-dom", url])


def screenshot(url: str, path: Path, *, width: int = 1280, height: int = 900) -> Path:
    _run([f"--screenshot={path}", f"--window-size={width},{height}", url])
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def keep_screenshot(path: Path, name: str) -> None:
    target = os.environ.get("WIREBROKER_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(target) / name)
