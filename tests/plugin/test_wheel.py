"""Packaging: build the wheel, install it into a fresh venv with pytest and kafka-python (from
the same package index as this venv: tools/constraints.txt pins the versions), and run the
README's ten-line example there. The plugin must arrive through the wheel's `pytest11` entry
point alone: no source checkout on sys.path, no conftest. ~20 s (wheel 4 s, venv 5 s,
install 6 s, pytest 3 s)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

EXAMPLE = """
from kafka import KafkaProducer

def test_order_is_published(kafka_bootstrap, kafka_create_topic, kafka_read_to_end):
    topic = kafka_create_topic(partitions=3)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    producer.send(topic, key=b"order-1", value=b"paid").get(timeout=10)
    producer.close()
    [message] = kafka_read_to_end(topic)
    assert (message.key, message.value) == (b"order-1", b"paid")

def test_installed_from_the_wheel():
    import wirebroker.pytest_plugin
    assert "site-packages" in wirebroker.pytest_plugin.__file__
"""


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    if proc.returncode:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


@pytest.mark.slow
def test_plugin_from_the_wheel(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    src = tmp_path / "src"  # a copy: an in-tree build would write build/ into the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, src / name)
    for package in ("wirebroker", "protocol"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w"]
    _run([*pip_wheel, str(dist)], tmp_path, env)
    (wheel,) = dist.glob("wirebroker-*.whl")
    venv = tmp_path / "venv"
    # --without-pip, then this venv's pip installs into it (`pip --python`): a distribution
    # python without ensurepip (Debian/Ubuntu without python3-venv) can run this test too
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    python = str(venv / "bin" / "python")
    constraints = str(ROOT / "tools" / "constraints.txt")
    pip_install = [sys.executable, "-m", "pip", "--python", python, "install", "-q"]
    pip_install += ["-c", constraints]
    _run([*pip_install, str(wheel), "pytest", "kafka-python"], tmp_path, env)
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_orders.py").write_text(EXAMPLE)
    out = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], project, env)
    assert "2 passed" in out, out
