"""A raw Kafka-protocol test client over a trio socket.

Requests are encoded and responses decoded with kafka-python's message classes, an
implementation independent of wirebroker's `protocol` package, so these tests check the
broker's bytes against a second opinion. Raw bytes (`send_raw`) cover malformed input.
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import trio

from wirebroker.config import BrokerConfig
from wirebroker.handlers.context import Services
from wirebroker.handlers.dispatcher import Dispatcher
from wirebroker.handlers.registry import HandlerSpec
from wirebroker.net.server import KafkaServer

#: Bound on every wait in these tests: a hang fails instead of blocking the suite.
TIMEOUT_S = 10

#: socket.request.max.bytes of the test servers.
MAX_FRAME = 4096


@dataclass
class RunningServer:
    server: KafkaServer
    address: tuple[str, int]


StartServer = Callable[..., Awaitable[RunningServer]]


def stub_services() -> Services:
    """Services without storage: enough for ApiVersions and test handlers."""
    none = cast(Any, None)
    return Services(
        config=BrokerConfig(),
        logs=none,
        replicas=none,
        admin=none,
        fetch_waiters=none,
        producer_ids=none,
        node_id=0,
        cluster_id="test-cluster",
        cluster=none,
        advertised_host="127.0.0.1",
        advertised_port=9092,
    )


def stub_server(handlers: dict[int, HandlerSpec], **kwargs: Any) -> KafkaServer:
    """A `KafkaServer` dispatching to `handlers` with `stub_services()`."""
    max_frame_bytes = kwargs.setdefault("max_frame_bytes", 104857600)
    dispatcher = Dispatcher(stub_services(), handlers, max_frame_bytes=max_frame_bytes)
    return KafkaServer(dispatcher, **kwargs)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request_header_v1(
    api_key: int, version: int, correlation_id: int, client_id: str = "netwire"
) -> bytes:
    cid = client_id.encode()
    return struct.pack(">hhih", api_key, version, correlation_id, len(cid)) + cid


def request_header_v2(
    api_key: int, version: int, correlation_id: int, client_id: str = "netwire"
) -> bytes:
    return request_header_v1(api_key, version, correlation_id, client_id) + b"\x00"


class WireClient:
    #: every client connected and not yet closed; the `clients` fixture closes them
    OPEN: list[WireClient] = []

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    @classmethod
    async def connect(cls, address: tuple[str, int]) -> WireClient:
        client = cls(await trio.open_tcp_stream(*address))
        cls.OPEN.append(client)
        return client

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    def encode(self, request: Any, correlation_id: int, client_id: str = "netwire") -> bytes:
        request.with_header(correlation_id=correlation_id, client_id=client_id)
        return bytes(request.encode(header=True, framed=True))

    async def send(self, request: Any, correlation_id: int, client_id: str = "netwire") -> None:
        await self.send_raw(self.encode(request, correlation_id, client_id))

    async def read_frame(self) -> bytes | None:
        """The next response frame (without its size), or None at EOF/reset."""
        with trio.fail_after(TIMEOUT_S):
            while True:
                if len(self.buffer) >= 4:
                    (size,) = struct.unpack_from(">i", self.buffer)
                    if len(self.buffer) >= 4 + size:
                        out = bytes(self.buffer[4 : 4 + size])
                        del self.buffer[: 4 + size]
                        return out
                try:
                    data = await self.stream.receive_some(65536)
                except trio.BrokenResourceError:
                    return None
                if not data:
                    return None
                self.buffer += data

    async def receive(self, request: Any) -> Any:
        """Decode the next frame as the response to `request` (sent with `send`)."""
        data = await self.read_frame()
        assert data is not None, "connection closed instead of a response"
        response_class = request.header.get_response_class()
        return response_class.decode(data, header=True)

    async def call(self, request: Any, correlation_id: int = 1) -> Any:
        await self.send(request, correlation_id)
        response = await self.receive(request)
        assert response.header.correlation_id == correlation_id
        return response

    async def expect_closed(self) -> None:
        """Assert the broker closes the connection without sending anything more."""
        data = await self.read_frame()
        assert data is None, f"expected the connection to be closed, got a frame {data!r}"


async def tcp_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    """A connected (client, server) pair of TCP streams on loopback."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        accepted: list[trio.SocketStream] = []

        async def accept() -> None:
            accepted.append(await listeners[0].accept())

        nursery.start_soon(accept)
        client = await trio.open_tcp_stream("127.0.0.1", port)
    await listeners[0].aclose()
    return client, accepted[0]
