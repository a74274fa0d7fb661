"""The pytest plugin shipped with wirebroker (entry point `pytest11`: loaded whenever the
package is installed; `-p no:wirebroker` turns it off).

Fixtures (every broker listens on a free port of 127.0.0.1 and keeps its data in a temporary
directory that is removed afterwards):

    kafka_broker          a fresh broker for each test (`wirebroker.testing.BrokerHandle`:
                          .bootstrap, .create_topic, .produce, .read_to_end, .client(), .pid)
                          Its scope is `function` unless `--kafka-broker-scope` or the ini key
                          `kafka_broker_scope` says `module`/`package`/`session`.
    kafka_broker_session  one broker shared by the whole session
    kafka_bootstrap       kafka_broker.bootstrap: "127.0.0.1:PORT" for bootstrap.servers
    kafka_client_config   kafka_broker.client_config: librdkafka / confluent-kafka settings
                          (bootstrap.servers, and a secured broker's security.protocol,
                          ssl.ca.location, sasl.mechanism, sasl.username, sasl.password;
                          OAUTHBEARER: sasl.oauthbearer.config instead of the last two)
    kafka_python_config   kafka_broker.kafka_python_config: the same as kafka-python keyword
                          arguments (bootstrap_servers, security_protocol, ssl_cafile,
                          sasl_mechanism, sasl_plain_username, sasl_plain_password;
                          OAUTHBEARER: sasl_oauth_token_provider instead of the last two)
    kafka_create_topic    create_topic(name=None, partitions=1, replication_factor=1,
                          configs=None) -> name; on kafka_broker, waits for the leaders; without
                          a name, a unique one derived from the test's name
    kafka_read_to_end     read_to_end(topic) -> [Message(topic, partition, offset, key, value,
                          headers, timestamp)]: everything up to the topic's current end
    kafka_faults          fault control of kafka_broker (`wirebroker.testing.faults.Faults`:
                          .error(api, code, count=1, topic=None, partition=None,
                          client_id=None), .delay(api, ms, ...), .close(api, ...),
                          .unreachable(), .reachable(), .refuse_connections(),
                          .drop_connections(), .move_leader(...), .shrink_isr(...), .list(),
                          .remove(id), .clear()); every fault is cleared after the test
    kafka_cluster         ZooKeeper + 3 replicated brokers for the session
                          (`wirebroker.testing.ClusterHandle`, same helpers); skipped with the
                          reason when ZooKeeper or a JRE is not installed

Per-test broker settings (function scope): `@pytest.mark.kafka_broker(overrides={...},
thread=True, security="SASL_SSL", sasl_mechanism="SCRAM-SHA-256")`. `security` ("SSL",
"SASL_PLAINTEXT", "SASL_SSL") makes a secured broker: a throwaway CA, users alice and bob,
PLAIN, both SCRAMs and OAUTHBEARER (unsecured tokens: librdkafka's
`sasl.oauthbearer.config=principal=alice`, a kafka-python token provider), client
certificates requested (mTLS); `bootstrap` is the secured
listener and the config fixtures carry what a client needs (see
`wirebroker.testing._security`).
Ini keys: `kafka_broker_scope`, `kafka_broker_thread` (true: brokers are served from a thread
of the test process instead of a subprocess: faster to start, less isolated; see
`wirebroker.testing._broker`).

The fixtures are synchronous and the brokers run outside the test's event loop, so they serve
plain, pytest-asyncio, anyio and pytest-trio tests alike, with any Kafka client library.

Import cost: this module imports nothing but pytest at load (wirebroker.testing, trio and the
protocol codecs load when a fixture is first used), so projects that never use a fixture pay
nothing.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from wirebroker.testing import BrokerHandle, ClusterHandle, Message
    from wirebroker.testing.faults import Faults

_SCOPES = ("function", "class", "module", "package", "session")
_MARKER = "kafka_broker"
_topic_ids = itertools.count()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wirebroker", "wirebroker Kafka fixtures")
    group.addoption(
        "--kafka-broker-scope",
        choices=_SCOPES,
        default=None,
        help="scope of the kafka_broker fixture (default: the ini key, else function)",
    )
    parser.addini(
        "kafka_broker_scope", "scope of the kafka_broker fixture (default function)", default=""
    )
    parser.addini(
        "kafka_broker_thread",
        "serve test brokers from a thread instead of a subprocess",
        type="bool",
        default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(overrides=None, thread=None, security=None, sasl_mechanism='PLAIN'): "
        "settings of this test's kafka_broker (function scope)",
    )


def _broker_scope(fixture_name: str, config: pytest.Config) -> Any:
    scope = config.getoption("kafka_broker_scope", None) or config.getini("kafka_broker_scope")
    scope = str(scope or "function")
    if scope not in _SCOPES:
        raise pytest.UsageError(f"kafka_broker_scope: {scope!r} is not one of {_SCOPES}")
    return scope


def _start(config: pytest.Config, **kwargs: Any) -> BrokerHandle:
    from wirebroker.testing import BrokerHandle

    if kwargs.get("thread") is None:
        kwargs["thread"] = bool(config.getini("kafka_broker_thread"))
    return BrokerHandle(**kwargs).start()


@pytest.fixture(scope=_broker_scope)
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[BrokerHandle]:
    """A broker of its own for the test (or per the configured scope)."""
    kwargs: dict[str, Any] = {}
    marker = request.node.get_closest_marker(_MARKER) if request.scope == "function" else None
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.{_MARKER} takes keyword arguments only")
        kwargs.update(marker.kwargs)
    broker = _start(request.config, **kwargs)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_broker_session(request: pytest.FixtureRequest) -> Iterator[BrokerHandle]:
    """One broker for the whole session (use unique topic names: kafka_create_topic does)."""
    broker = _start(request.config)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kafka_bootstrap(kafka_broker: BrokerHandle) -> str:
    """kafka_broker's "HOST:PORT"."""
    return kafka_broker.bootstrap


@pytest.fixture
def kafka_client_config(kafka_broker: BrokerHandle) -> dict[str, str]:
    """librdkafka / confluent-kafka settings for kafka_broker (security included)."""
    return kafka_broker.client_config


@pytest.fixture
def kafka_python_config(kafka_broker: BrokerHandle) -> dict[str, Any]:
    """kafka-python keyword arguments for kafka_broker (security included)."""
    return kafka_broker.kafka_python_config


def _topic_name(request: pytest.FixtureRequest) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-.")[:180] or "topic"
    return f"{base}-{next(_topic_ids)}"


@pytest.fixture
def kafka_create_topic(
    request: pytest.FixtureRequest, kafka_broker: BrokerHandle
) -> Callable[..., str]:
    """create_topic(name=None, partitions=1, replication_factor=1, configs=None) -> name."""

    def create(
        name: str | None = None,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: dict[str, str] | None = None,
    ) -> str:
        return kafka_broker.create_topic(
            name or _topic_name(request), partitions, replication_factor, configs
        )

    return create


@pytest.fixture
def kafka_read_to_end(kafka_broker: BrokerHandle) -> Callable[[str], list[Message]]:
    """read_to_end(topic) -> every record up to the topic's current end."""
    return kafka_broker.read_to_end


@pytest.fixture
def kafka_faults(kafka_broker: BrokerHandle) -> Iterator[Faults]:
    """kafka_broker's fault control; the faults a test leaves are removed (and undone)."""
    faults = kafka_broker.faults
    try:
        yield faults
    finally:
        if kafka_broker.port:
            faults.clear()


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[ClusterHandle]:
    """ZooKeeper + 3 replicated brokers for the session (skipped without ZooKeeper/java)."""
    from wirebroker.testing import ClusterHandle, ZooKeeperMissing

    cluster = ClusterHandle(3)
    try:
        cluster.start()
    except ZooKeeperMissing as exc:
        pytest.skip(str(exc))
    try:
        yield cluster
    finally:
        cluster.stop()
