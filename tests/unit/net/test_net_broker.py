"""The in-process `Broker`: start on port 0, answer, shut down gracefully on cancellation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from netwire import TIMEOUT_S, WireClient

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.broker import Broker
from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.handlers.registry import HandlerSpec, handler
from wirebroker.listeners import connectable_host
from wirebroker.log.log_manager import CLEAN_SHUTDOWN_FILE


async def serve_cancellable(
    broker: Broker, *, task_status: trio.TaskStatus[tuple[trio.CancelScope, list[tuple[str, int]]]]
) -> None:
    """Run `broker.serve` under its own cancel scope, handed to the caller with the addresses."""
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(broker.serve)
            task_status.started((scope, bound))


def make_config(tmp_path: Path, **values: str) -> BrokerConfig:
    base = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data")}
    return BrokerConfig({**base, **values})


async def test_serve_answers_and_closes_the_logs_on_cancel(
    tmp_path: Path, registry: dict[int, HandlerSpec], clients: list[WireClient]
) -> None:
    broker = Broker(make_config(tmp_path))
    data = tmp_path / "data"
    assert data.is_dir()
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(broker.serve)
            assert bound == broker.bound and len(bound) == 1
            host, port = bound[0]
            assert port != 0
            assert (broker.services.advertised_host, broker.services.advertised_port) == (
                "127.0.0.1",
                port,
            )
            assert not (data / CLEAN_SHUTDOWN_FILE).exists()
            client = await WireClient.connect((host, port))
            response = await client.call(
                ApiVersionsRequest[4](client_software_name="t", client_software_version="1")
            )
            assert response.error_code == ErrorCode.NONE
            assert sorted(k.api_key for k in response.api_keys) == sorted(broker.handlers)
            nursery.cancel_scope.cancel()
    assert (data / CLEAN_SHUTDOWN_FILE).exists()
    with pytest.raises(OSError):
        await trio.open_tcp_stream(host, port)


async def test_cancel_lets_the_request_in_flight_finish_before_closing_logs(
    tmp_path: Path, registry: dict[int, HandlerSpec], clients: list[WireClient]
) -> None:
    entered, release = trio.Event(), trio.Event()
    data = tmp_path / "data"
    seen_marker: list[bool] = []

    async def slow(ctx: Any, req: Any) -> dict[str, Any]:
        entered.set()
        await release.wait()
        seen_marker.append((data / CLEAN_SHUTDOWN_FILE).exists())
        return {"brokers": [], "cluster_id": "slow", "controller_id": -1, "topics": []}

    registry.pop(ApiKey.METADATA, None)
    handler(ApiKey.METADATA)(slow)
    broker = Broker(make_config(tmp_path), grace_s=TIMEOUT_S)
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            scope, (address,) = await nursery.start(serve_cancellable, broker)
            client = await WireClient.connect(address)
            request = MetadataRequest[4](topics=[])
            await client.send(request, correlation_id=12)
            await entered.wait()
            scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            # the broker is draining: new connections are refused, the handler still runs
            with pytest.raises(OSError):
                await trio.open_tcp_stream(*address)
            release.set()
            response = await client.receive(request)
            assert response.cluster_id == "slow"
            await client.expect_closed()
    assert seen_marker == [False]
    assert (data / CLEAN_SHUTDOWN_FILE).exists()


async def test_advertised_listeners_and_wildcards(
    tmp_path: Path, registry: dict[int, HandlerSpec]
) -> None:
    config = make_config(
        tmp_path,
        **{
            "listeners": "PLAINTEXT://0.0.0.0:0,CONTROLLER://127.0.0.1:0",
            "controller.listener.names": "CONTROLLER",
            "advertised.listeners": "PLAINTEXT://broker.example:0",
        },
    )
    broker = Broker(config)
    assert [(e.host, e.port) for e in broker.endpoints.endpoints] == [("0.0.0.0", 0)]
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            (bound,) = await nursery.start(broker.serve)
            assert bound[0] == "0.0.0.0"
            assert broker.services.advertised_host == "broker.example"
            assert broker.services.advertised_port == bound[1]
            nursery.cancel_scope.cancel()


async def test_wildcard_without_advertised_listeners_advertises_loopback(
    tmp_path: Path, registry: dict[int, HandlerSpec]
) -> None:
    broker = Broker(make_config(tmp_path, listeners="PLAINTEXT://:0"))
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(broker.serve)
            assert broker.services.advertised_host in ("127.0.0.1", "::1")
            assert broker.services.advertised_port == bound[0][1]
            nursery.cancel_scope.cancel()


def test_tls_listeners_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        Broker(make_config(tmp_path, listeners="SSL://127.0.0.1:0"))


@pytest.mark.parametrize(
    ("host", "expected"),
    [("", "127.0.0.1"), ("0.0.0.0", "127.0.0.1"), ("::", "::1"), ("10.1.2.3", "10.1.2.3")],
)
def test_connectable_host(host: str, expected: str) -> None:
    assert connectable_host(host) == expected
