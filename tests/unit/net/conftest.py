"""Fixtures for the network-layer tests: a `KafkaServer` on 127.0.0.1 port 0.

The server gets stub services (no storage): these tests exercise framing, dispatch, ordering
and connection handling. Test handlers are added to the real registry for one test only
(`registry` fixture restores it).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import wirebroker.handlers.api_versions  # noqa: F401  (registers ApiVersions)
from wirebroker.handlers.registry import HANDLERS, HandlerSpec, load_handlers

sys.path.insert(0, str(Path(__file__).parent))

from netwire import (
    MAX_FRAME,
    RunningServer,
    StartServer,
    WireClient,
    stub_server,
)


@pytest.fixture
async def clients() -> AsyncIterator[list[WireClient]]:
    """Closes every WireClient a test opened (no ResourceWarning for forgotten sockets)."""
    WireClient.OPEN.clear()
    yield WireClient.OPEN
    for client in WireClient.OPEN:
        await client.aclose()
    WireClient.OPEN.clear()


@pytest.fixture
def registry() -> Iterator[dict[int, HandlerSpec]]:
    """The live handler registry; whatever a test registers is removed afterwards. Every
    real handler is loaded first: one registered while a test runs (a broker it starts
    imports them) would otherwise be removed for good -- its module stays imported, so
    nothing registers it again, and later tests in the process lose that API."""
    load_handlers()
    saved = dict(HANDLERS)
    try:
        yield HANDLERS
    finally:
        HANDLERS.clear()
        HANDLERS.update(saved)


@pytest.fixture
async def start_server(
    nursery: trio.Nursery, registry: dict[int, HandlerSpec], clients: list[WireClient]
) -> AsyncIterator[StartServer]:
    async def start(**kwargs: Any) -> RunningServer:
        kwargs.setdefault("max_frame_bytes", MAX_FRAME)
        server = stub_server(registry, **kwargs)
        bound = await nursery.start(server.run, [("127.0.0.1", 0)])
        return RunningServer(server, bound[0])

    yield start


@pytest.fixture
async def running(start_server: StartServer) -> RunningServer:
    return await start_server()
