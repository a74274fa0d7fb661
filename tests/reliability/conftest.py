"""Fixtures of the reliability tests (tests/reliability/).

    reliability_seed   the run's seed: $WIREBROKER_RELIABILITY_SEED, else a fresh random one;
                       printed (even under capture) so a failing run can be replayed

The helper modules here (logscan, torn, torn_broker, diskfull, quota_broker) are imported by
name: pytest puts this directory on sys.path, and tools/reliability/ does the same.
"""

from __future__ import annotations

import gc
import os
import random
import warnings
from collections.abc import Iterator

import pytest

SEED_ENV = "WIREBROKER_RELIABILITY_SEED"


@pytest.fixture(scope="session")
def reliability_seed(pytestconfig: pytest.Config) -> int:
    raw = os.environ.get(SEED_ENV)
    seed = int(raw) if raw else random.SystemRandom().randrange(1 << 32)
    capman = pytestconfig.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        with capman.global_and_fixture_disabled():
            print(f"\nreliability seed {seed} (replay: {SEED_ENV}={seed})")
    return seed


@pytest.fixture
def collect_leaked_sockets() -> Iterator[None]:
    """kafka-python leaks sockets on some error paths; collect them here, with their
    ResourceWarning ignored, rather than in whichever later test the collector runs."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
