"""Shared fixtures for handler unit tests: real services in tmp_path, a fake clock, and a
`call` helper that runs a handler on a request that went through the real codec.

    clock             FakeClock: `clock()` -> ms, `clock.advance(ms)`; starts at 1.7e12
    broker_overrides  dict of server.properties overrides; override the fixture in a test
                      module (or use `make_services(**overrides)`) to change the broker config
    services          Services around a real TopicStore + LogManager + ReplicaManager in
                      tmp_path (loaded, closed at teardown); dynamic broker configs in memory
                      (LocalBrokerConfigs: a change reaches the partitions at once)
    make_services     factory: make_services(**overrides) -> Services (fresh data dir each
                      call; for tests needing several configs)
    make_ctx          make_ctx(api_key, api_version) -> RequestContext
    call_with         await call_with(services, api_key, version, body): the same for
                      services made with `make_services`
    call              await call(api_key, version, body) -> response Container: the body is
                      encoded with protocol.codec.encode_request and decoded again, the
                      registered handler runs, and its dict is encoded with encode_response and
                      decoded with decode_response -- so the test sees what a client would.
                      `call(..., raw=True)` returns the handler's dict instead.
    produce           produce(services, topic, partition, n=1, value=b"v") -> AppendResult:
                      appends one batch of `n` records through ReplicaManager.append

Test modules import the handler module they test (its `@handler` registers it); `call` looks
the API up in the registry and fails when the version is not served.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from protocol.codec import decode_request, decode_response, encode_request, encode_response
from protocol.headers import RequestHeader
from protocol.records import build_batch
from tests.unit.local_metadata import LocalBrokerConfigs, LocalClusterView, LocalTopicAdmin
from wirebroker.config import BrokerConfig
from wirebroker.handlers.context import RequestContext, Services
from wirebroker.handlers.registry import HANDLERS, Later
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.delayed_produce import ProduceWaiters
from wirebroker.replication.fetch_sessions import FetchSessions
from wirebroker.replication.fetch_waiters import FetchWaiters
from wirebroker.replication.producer_ids import ProducerIdManager
from wirebroker.replication.replica_manager import ReplicaManager

START_MS = 1_700_000_000_000


class FakeClock:
    """A settable millisecond clock (Services.clock)."""

    def __init__(self, now_ms: int = START_MS) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        self.now_ms += ms
        return self.now_ms


def build_services(data_dir: Path, clock: FakeClock, overrides: dict[str, str]) -> Services:
    values = {"node.id": "0", "log.dirs": str(data_dir), **overrides}
    config = BrokerConfig(values)
    log_dirs = [Path(d) for d in config.log_dirs]
    for d in log_dirs:
        d.mkdir(parents=True, exist_ok=True)
    topics = TopicStore.open(log_dirs[0])
    logs = LogManager(log_dirs)
    replicas = ReplicaManager(config, logs, topics, node_id=config.node_id)
    replicas.load(clock())
    admin = LocalTopicAdmin(config, topics, logs, node_id=config.node_id, listener=replicas)
    waiters = FetchWaiters()
    replicas.add_data_listener(waiters.notify)
    replicas.add_hw_listener(waiters.notify_hw)
    produce_waiters = ProduceWaiters()
    replicas.add_hw_listener(produce_waiters.notify)
    services = Services(
        config=config,
        logs=logs,
        replicas=replicas,
        admin=admin,
        fetch_waiters=waiters,
        producer_ids=ProducerIdManager(topics),
        node_id=config.node_id,
        cluster_id=topics.cluster_id,
        cluster=cast(Any, None),
        advertised_host="127.0.0.1",
        advertised_port=9092,
        clock=clock,
        produce_waiters=produce_waiters,
        fetch_sessions=FetchSessions.from_config(config),
    )

    def configs_changed(_keys: set[str]) -> None:  # as the broker's _apply_dynamic_change
        for info in topics.all():
            replicas.on_topic_configs_changed(info)
        replicas.quotas.update_rates(config)

    services.broker_configs = LocalBrokerConfigs(config, config.node_id, configs_changed)
    services.cluster = LocalClusterView(
        config.node_id,
        lambda: (services.advertised_host, services.advertised_port),
        replicas,
        topics,
    )
    return services


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {}


@pytest.fixture
def make_services(tmp_path: Path, clock: FakeClock) -> Iterator[Callable[..., Services]]:
    made: list[Services] = []
    counter = itertools.count()

    def make(**overrides: str) -> Services:
        services = build_services(tmp_path / f"data{next(counter)}", clock, overrides)
        made.append(services)
        return services

    yield make
    for services in made:
        services.logs.close()


@pytest.fixture
def services(make_services: Callable[..., Services], broker_overrides: dict[str, str]) -> Services:
    return make_services(**broker_overrides)


@pytest.fixture
def make_ctx(services: Services) -> Callable[[int, int], RequestContext]:
    def make(api_key: int, api_version: int) -> RequestContext:
        return RequestContext(
            header=RequestHeader(api_key, api_version, 1, "test"),
            services=services,
            client_host="127.0.0.1",
        )

    return make


CallFn = Callable[..., Awaitable[Any]]


async def call_handler(
    services: Services, api_key: int, version: int, body: dict[str, Any], *, raw: bool = False
) -> Any:
    """Run the registered handler of `api_key` on `body` as a client would send it."""
    spec = HANDLERS.get(int(api_key))
    assert spec is not None, f"no handler registered for api key {api_key}"
    assert spec.serves(version), f"{spec.name} v{version} is not served"
    frame = encode_request(int(api_key), version, 7, "test-client", body)
    header, request = decode_request(frame[4:])
    ctx = RequestContext(header=header, services=services, client_host="127.0.0.1")
    response = await spec.func(ctx, request)
    if isinstance(response, Later):  # an acks=all Produce waiting for replication
        response = await response.wait()
    if raw or response is None:
        return response
    # a follower's Fetch response is a GatherFrame with file regions: bytes() reads them
    encoded = bytes(encode_response(int(api_key), version, header.correlation_id, response))
    correlation_id, decoded = decode_response(int(api_key), version, encoded[4:])
    assert correlation_id == header.correlation_id
    return decoded


@pytest.fixture
def call_with() -> CallFn:
    """`await call_with(services, api_key, version, body)`: `call` against other services."""
    return call_handler


@pytest.fixture
def call(services: Services) -> CallFn:
    async def run(api_key: int, version: int, body: dict[str, Any], *, raw: bool = False) -> Any:
        return await call_handler(services, api_key, version, body, raw=raw)

    return run


def produce(services: Services, topic: str, partition: int, n: int = 1, value: bytes = b"v") -> Any:
    """Append one batch of `n` records (timestamps from the services' clock)."""
    now = services.clock()
    batch = build_batch([(None, value)] * n, base_timestamp=now)
    return services.replicas.append(
        services.replicas.partition(topic, partition), batch, now_ms=now
    )


@pytest.fixture(name="produce")
def produce_fixture() -> Callable[..., Any]:
    return produce
