"""Shared pytest setup: make the repository root importable (before `pip install -e .`); the
ZooKeeper fixtures of tests/zk_fixtures.py (`zookeeper`, `zk_hosts`) for every test; the
fixture `finalize_leaked_sockets` of tests/leaked_sockets.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

import leaked_sockets  # noqa: E402
from zk_fixtures import zk_hosts, zookeeper  # noqa: E402

__all__ = ["zk_hosts", "zookeeper"]


@pytest.fixture
def finalize_leaked_sockets() -> Iterator[None]:
    """After the test, collect the sockets kafka-python leaked (see tests/leaked_sockets.py)."""
    yield
    leaked_sockets.collect()
