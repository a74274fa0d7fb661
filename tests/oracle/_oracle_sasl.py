"""The brokers of the oracle's SASL tests: an Apache Kafka 4.4 of its own and a wirebroker, each
with a SASL_PLAINTEXT listener beside PLAINTEXT and the same listener `settings` (mechanisms,
JAAS configs, reauthentication...), and Wire connections opened during a test and closed after
it. Used by test_scram_authentication.py, test_oauthbearer_authentication.py and
test_sasl_session_expiry.py."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from compat.oracle.kafka import ApacheKafka, free_ports
from compat.scenarios.wire import Wire
from wirebroker.testing import BrokerHandle


@contextlib.contextmanager
def kafka_with_sasl(settings: dict[str, str]) -> Iterator[tuple[str, ApacheKafka]]:
    """(the SASL_PLAINTEXT address, the Kafka: its `bootstrap` is the PLAINTEXT one)."""
    port, controller, sasl = free_ports(3)
    overrides = settings | {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl},"
        f"CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
    }
    with ApacheKafka(overrides=overrides, ports=(port, controller)) as kafka:
        yield f"127.0.0.1:{sasl}", kafka


@contextlib.contextmanager
def wirebroker_with_sasl(
    settings: dict[str, str], **handle: Any
) -> Iterator[tuple[str, BrokerHandle]]:
    """(the SASL_PLAINTEXT address, the broker's handle); `handle`: more BrokerHandle
    arguments (e.g. log_level)."""
    (sasl,) = free_ports(1)
    listeners = f"PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{sasl}"
    with BrokerHandle(
        overrides=settings | {"listeners": listeners}, admin=False, **handle
    ) as broker:
        yield f"127.0.0.1:{sasl}", broker


@contextlib.contextmanager
def wire_opener(address: str) -> Iterator[Callable[[], Wire]]:
    """A function that opens a new Wire connection to `address`; all are closed at exit."""
    with contextlib.ExitStack() as stack:
        yield lambda: stack.enter_context(Wire(address))
