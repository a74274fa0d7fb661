#!/usr/bin/env python3
"""Make `.venv` hold wirebroker (and optionally its extras), using only the standard library.

    python3 tools/bootstrap_venv.py [--extras test]     # prints the venv's python

Used by `tools/wirebroker` (the README's first command), `tools/run-tests` and `.ci/run`, so a
fresh Debian 12 or Ubuntu 24.04 needs nothing but the distribution's `python3`: the system
interpreter is never installed into (PEP 668 forbids it, and it would change global packages).

Steps, each skipped when already done:
1. `python3 -m venv .venv`. Debian and Ubuntu ship `venv` without `ensurepip` unless the
   `python3-venv` package is installed; then the venv is made `--without-pip` and pip's wheel
   is fetched from the package index (`PIP_INDEX_URL`, default PyPI, PEP 691 JSON), checked
   against the index's sha256 and installed from itself (`python pip.whl/pip install pip.whl`).
2. `pip install -c tools/constraints.txt -e .[extras]` into the venv (the constraints pin
   every dependency to the versions CI ran with), when `pyproject.toml` changed since the last
   install or an extra is asked for that was not installed. The stamp
   `.venv/.wirebroker-installed` holds the sha256 of `pyproject.toml` and the installed extras.
`WIREBROKER_VENV` names another venv directory (tests use it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("WIREBROKER_VENV", ROOT / ".venv")).absolute()
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".wirebroker-installed"
CONSTRAINTS = ROOT / "tools" / "constraints.txt"
DEFAULT_INDEX = "https://pypi.org/simple"


def say(message: str) -> None:
    print(f"== {message}", file=sys.stderr, flush=True)


def stamp_hash() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def installed_extras() -> set[str] | None:
    """The extras of the last install, or None when pyproject.toml changed since (or never)."""
    try:
        digest, _, extras = STAMP.read_text().strip().partition(" ")
    except FileNotFoundError:
        return None
    if digest != stamp_hash():
        return None
    return {e for e in extras.split(",") if e}


def write_stamp(extras: set[str]) -> None:
    STAMP.write_text(f"{stamp_hash()} {','.join(sorted(extras))}\n")


def has_pip() -> bool:
    probe = subprocess.run([PYTHON, "-m", "pip", "--version"], capture_output=True, check=False)
    return probe.returncode == 0


def remove_venv() -> None:
    """Remove a broken or partial venv (a symlink or file of that name included)."""
    if VENV.is_symlink() or VENV.is_file():
        VENV.unlink()
    else:
        shutil.rmtree(VENV, ignore_errors=True)


def create_venv(*, force_without_pip: bool = False) -> None:
    say(f"creating {VENV}")
    if not force_without_pip:
        made = subprocess.run(
            [sys.executable, "-m", "venv", VENV], capture_output=True, text=True, check=False
        )
        if made.returncode == 0 and has_pip():
            return
        say("this python has no ensurepip (Debian/Ubuntu without python3-venv): fetching pip")
        if made.returncode != 0:
            say(f"(python3 -m venv said: {made.stderr.strip().splitlines()[-1:]})")
        remove_venv()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", VENV], check=True)
    install_pip_from_index()


def _version_key(filename: str) -> tuple[int, ...]:
    version = filename.split("-")[1]
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))


def install_pip_from_index() -> None:
    """pip's newest universal wheel from the index, verified, installed into the venv."""
    index = os.environ.get("PIP_INDEX_URL", DEFAULT_INDEX).rstrip("/")
    request = urllib.request.Request(
        f"{index}/pip/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    wheels = [
        f
        for f in files
        if f["filename"].endswith("-py3-none-any.whl")
        and not f.get("yanked")
        and "sha256" in f.get("hashes", {})
        and all(p.isdigit() for p in f["filename"].split("-")[1].split("."))
    ]
    best = max(wheels, key=lambda f: _version_key(f["filename"]))
    with tempfile.TemporaryDirectory(prefix="wirebroker-pip-") as tmp:
        wheel = Path(tmp) / best["filename"]
        with urllib.request.urlopen(best["url"], timeout=120) as response:
            wheel.write_bytes(response.read())
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != best["hashes"]["sha256"]:
            raise SystemExit(f"bootstrap: {best['filename']}: sha256 mismatch, not installed")
        pip = wheel / "pip"  # a wheel is a zip: pip runs from it to install itself
        subprocess.run([PYTHON, pip, "install", "--quiet", "--no-index", wheel], check=True)


def ensure(extras: set[str], *, force_without_pip: bool = False) -> Path:
    """The venv's python, with wirebroker and `extras` installed."""
    if not PYTHON.exists() or not has_pip():
        remove_venv()
        create_venv(force_without_pip=force_without_pip)
    have = installed_extras()
    if have is None or not extras <= have:
        wanted = extras | (have or set())
        spec = f".[{','.join(sorted(wanted))}]" if wanted else "."
        say(f"installing wirebroker ({spec}) into {VENV}")
        subprocess.run(
            [PYTHON, "-m", "pip", "install", "--quiet", "-c", CONSTRAINTS, "-e", spec],
            cwd=ROOT,
            check=True,
        )
        write_stamp(wanted)
    return PYTHON


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extras", default="", help="comma-separated extras, e.g. test")
    parser.add_argument(
        "--without-ensurepip",
        action="store_true",
        help="take the no-ensurepip path even where ensurepip works (for tests)",
    )
    args = parser.parse_args()
    extras = {e.strip() for e in args.extras.split(",") if e.strip()}
    print(ensure(extras, force_without_pip=args.without_ensurepip))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
