"""Secured throwaway brokers shared by a test module: one `BrokerHandle` per (security protocol,
SASL mechanism), started on first use and stopped when the module is done
(tests/integration/test_security.py, test_security_kafkajs.py)."""

from __future__ import annotations

from collections.abc import Iterator

from wirebroker.testing import BrokerHandle

Secured = dict[tuple[str, str], BrokerHandle]


def secured_brokers() -> Iterator[Secured]:
    """The body of a module-scoped `brokers` fixture: the handles started, stopped at the end."""
    started: Secured = {}
    try:
        yield started
    finally:
        for handle in started.values():
            handle.stop()
