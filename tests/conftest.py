"""Shared pytest setup: make the repository root importable (before `pip install -e .`); the
ZooKeeper fixtures of tests/zk_fixtures.py (`zookeeper`, `zk_hosts`) for every test; the
fixture `finalize_leaked_sockets` of tests/leaked_sockets.py; and, for every test, the
workaround for kafka-python's group-join race (compat/kafka_python_join.py); and
`apache_kafka`, the bootstrap of a real Apache Kafka 4.4 (compat/oracle: the run's shared one
when tools/run-tests started it, else one started for this session)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

import leaked_sockets  # noqa: E402
from zk_fixtures import zk_hosts, zookeeper  # noqa: E402

from compat.kafka_python_join import unstick_join  # noqa: E402

__all__ = ["zk_hosts", "zookeeper"]


@pytest.fixture
def finalize_leaked_sockets() -> Iterator[None]:
    """After the test, collect the sockets kafka-python leaked (see tests/leaked_sockets.py)."""
    yield
    leaked_sockets.collect()


@pytest.fixture(scope="session")
def apache_kafka() -> Iterator[str]:
    """ "host:port" of a single-node KRaft Apache Kafka 4.4 (compat/oracle/kafka.py): the one
    `tools/run-tests` shares through $WIREBROKER_ORACLE, else one started for the session.
    Topics made on it outlive the test: give them unique names."""
    from compat.oracle.kafka import shared_or_new

    with shared_or_new() as bootstrap:
        yield bootstrap


@pytest.fixture(autouse=True)
def _kafka_python_join_race(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `KafkaConsumer.poll` in a test is followed by `unstick_join`: kafka-python 3.0.12
    can keep a group member's stale (empty) assignment forever when a rebalance outlasts one
    poll (compat/kafka_python_join.py). That is a client bug, not the broker's; without this,
    a test with short polls fails at random on a loaded machine (CI did, 2026-12-05)."""
    from kafka import KafkaConsumer

    poll = KafkaConsumer.poll

    def poll_then_unstick(self: KafkaConsumer, *args: Any, **kwargs: Any) -> Any:
        records = poll(self, *args, **kwargs)
        unstick_join(self)
        return records

    monkeypatch.setattr(KafkaConsumer, "poll", poll_then_unstick)
