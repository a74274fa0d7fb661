"""What `wirebroker.net` needs from the layer that serves requests: one call per frame.

net moves bytes; it knows nothing of APIs, versions or handlers. The composition root
(`wirebroker.broker`) hands the server an object with this shape
(`wirebroker.handlers.dispatcher.Dispatcher`); net never imports it.
"""

from __future__ import annotations

from typing import Protocol


class DispatchReply(Protocol):
    """What the connection does after one request: send `response` (None: nothing), or close
    (`close`; the reason is already logged)."""

    @property
    def response(self) -> bytes | None: ...

    @property
    def close(self) -> bool: ...


class RequestDispatcher(Protocol):
    """Serves one request frame (without its size prefix) at a time, per connection."""

    async def dispatch(self, frame: bytes, client_host: str, peer: str) -> DispatchReply:
        """The outcome of `frame` from `client_host` (`peer`, host:port, is for log lines)."""
        ...
