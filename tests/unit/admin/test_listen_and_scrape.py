"""`admin.listeners` parsing, `--admin-port`, and a scrape that yields to the loop."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from prometheus_client import CollectorRegistry

from wirebroker.admin.listen import parse_admin_listeners
from wirebroker.admin.metrics import BrokerCollector, metrics_route
from wirebroker.admin.routes import Request
from wirebroker.cli import _parser, config_values
from wirebroker.handlers.stats import RequestStats

from .test_metrics import fake_state


def test_admin_listeners_values() -> None:
    assert parse_admin_listeners([]) == []
    assert parse_admin_listeners(["127.0.0.1:9644", ":0", "http://[::1]:80/", "9000"]) == [
        ("127.0.0.1", 9644),
        ("127.0.0.1", 0),
        ("::1", 80),
        ("127.0.0.1", 9000),
    ]
    for bad in ("host:port", "127.0.0.1:70000", "x:-1"):
        with pytest.raises(ValueError):
            parse_admin_listeners([bad])


def test_admin_port_flag_sets_loopback_listener() -> None:
    args = _parser().parse_args(["serve", "--admin-port", "0", "--log-format", "json"])
    assert config_values(args)["admin.listeners"] == "127.0.0.1:0"
    assert args.log_format == "json"
    assert "admin.listeners" not in config_values(_parser().parse_args(["serve"]))


async def test_scrape_yields_between_families() -> None:

    def state() -> dict[str, Any]:
        return fake_state()

    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(state, RequestStats()))
    route = metrics_route(registry)
    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await trio.sleep(0)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        await trio.sleep(0)
        response = await route(Request("GET", "/metrics"))
        done = True
    assert b"wirebroker_group_lag" in response.body
    assert ticks >= 20  # the loop ran other tasks between the families (~25 of them)
