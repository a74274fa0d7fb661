"""Shared pytest setup: make the repository root importable (before `pip install -e .`); the
ZooKeeper fixtures of tests/zk_fixtures.py (`zookeeper`, `zk_hosts`) for every test."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from zk_fixtures import zk_hosts, zookeeper  # noqa: E402

__all__ = ["zk_hosts", "zookeeper"]
