"""The reliability tools of tools/reliability/ (hostile.py, connections.py) and the broker
subprocess runner of tests/integration/_broker.py, importable from the tests here: the tests
run the tools' code with CI-sized numbers."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
for _path in (_ROOT / "tools" / "reliability", _ROOT / "tests" / "integration"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import connections  # noqa: E402
import hostile  # noqa: E402
from _broker import BrokerProcess  # noqa: E402

__all__ = ["BrokerProcess", "connections", "hostile"]
