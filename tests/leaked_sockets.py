"""kafka-python 3.0.12 leaks sockets: of every refused reconnect (a dead or unreachable
broker), of a fatally failed or fenced transactional producer. Left to the garbage collector,
they are finalized during some later test, which then fails on the ResourceWarning (warnings
are errors in this suite).

A test module that leaks them adds `MARKS` to its `pytestmark`: the warning is ignored in its
tests, and the fixture `finalize_leaked_sockets` (tests/conftest.py) collects the sockets after
each test, while the warning is still ignored. `collect()` is that collection, for fixtures that
do it themselves (tests/cluster/conftest.py).
"""

from __future__ import annotations

import gc
import warnings

import pytest

__all__ = ["IGNORE", "MARKS", "collect"]

IGNORE = "ignore:unclosed <socket.socket:ResourceWarning"
MARKS = [pytest.mark.filterwarnings(IGNORE), pytest.mark.usefixtures("finalize_leaked_sockets")]


def collect() -> None:
    """Finalize the leaked sockets now, their ResourceWarning ignored."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "unclosed <socket.socket", ResourceWarning)
        gc.collect()
