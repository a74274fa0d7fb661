"""What `wirebroker.net` needs from the layer that serves requests: one call per frame.

net moves bytes; it knows nothing of APIs, versions or handlers. The composition root
(`wirebroker.broker`) hands the server an object with this shape
(`wirebroker.handlers.dispatcher.Dispatcher`); net never imports it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from protocol.framing import GatherFrame
from wirebroker.security.session import ConnectionSession


class DispatchReply(Protocol):
    """What the connection does after one request: send `response` (None: nothing; a
    `GatherFrame` goes out with `transport.send_frame`, its regions by sendfile), or close
    (`close`; the reason is already logged), or, when `later` is set, await `later()` for
    the reply to act on in this request's place; the connection may serve the next requests
    meanwhile and keeps the responses in request order (net/connection.py, QUEUED)."""

    @property
    def response(self) -> bytes | GatherFrame | None: ...

    @property
    def close(self) -> bool: ...

    @property
    def later(self) -> Callable[[], Awaitable[DispatchReply]] | None: ...

    @property
    def throttle_ms(self) -> int:
        """Client quotas: read no further request from this connection for this long after
        sending `response` (KIP-219), or, with `delay_response`, wait that long before
        sending it (older clients)."""
        ...

    @property
    def delay_response(self) -> bool: ...


class RequestDispatcher(Protocol):
    """Serves one request frame (without its size prefix) at a time, per connection."""

    async def dispatch(
        self,
        frame: bytes | bytearray,
        client_host: str,
        peer: str,
        session: ConnectionSession | None = None,
    ) -> DispatchReply:
        """The outcome of `frame` from `client_host` (`peer`, host:port, is for log lines) on
        a connection whose listener and principal are `session` (None: PLAINTEXT, anonymous)."""
        ...
