"""One client connection: frames in, handler calls one at a time, responses out in order.

States (one task per connection, `Connection.run`)::

    READING   waiting for bytes (at most `connections.max.idle.ms`); bytes go to a sans-I/O
              `FrameDecoder`; as soon as one whole frame is buffered -> HANDLING
    HANDLING  the frame is decoded and its handler awaited; nothing is read from the socket
              meanwhile (Kafka mutes the channel), so a client cannot make the broker buffer
              more than one receive beyond the request being served -> SENDING / READING
    SENDING   the whole response frame goes out with one `send_all` -> READING
              (frames that arrived pipelined are handled from the buffer before reading again)
    CLOSED    reached from any state; the socket is closed

Why a connection closes, and what is logged (one line each, with peer, API, version and
correlation id when known):
    peer EOF / reset, or shutdown while idle         nothing (debug level)
    idle longer than connections.max.idle.ms         info
    frame size negative or above socket.request.max.bytes      warning
    unknown API key, API without a handler, version not served, malformed body    warning
    an unexpected exception in a handler or while encoding     error, with traceback
An ApiVersions request newer than served is answered (v0 UNSUPPORTED_VERSION, see
`wirebroker.handlers.api_versions`) and the connection stays open. acks=0 Produce (handler
returns None) sends nothing. A failure in one connection never touches another.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import trio

from protocol.api import ApiKey
from protocol.codec import decode_request, encode_response
from protocol.exceptions import (
    FrameTooLarge,
    MalformedRequest,
    ProtocolError,
    UnknownApiKey,
    UnsupportedVersion,
)
from protocol.framing import FrameDecoder
from wirebroker.handlers.api_versions import unsupported_version_body
from wirebroker.handlers.context import RequestContext, Services
from wirebroker.handlers.registry import HandlerSpec, api_name

log = logging.getLogger("wirebroker.net")

#: Bytes asked for per receive. A frame larger than this is assembled over several receives.
RECEIVE_SIZE = 65536


class _Close(Exception):
    """Internal: stop serving this connection (the reason is already logged)."""


def _describe(header: Any) -> str:
    return (f"api {api_name(int(header.api_key))} (key {int(header.api_key)}) "
            f"v{int(header.api_version)}, correlation id {int(header.correlation_id)}, "
            f"client id {header.client_id!r}")


class Connection:
    """Serves one accepted stream until EOF, error, idle timeout or shutdown."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        services: Services,
        handlers: Mapping[int, HandlerSpec],
        *,
        max_frame_bytes: int,
        idle_timeout_s: float,
        peer: tuple[str, int] = ("?", 0),
    ) -> None:
        self.stream = stream
        self.services = services
        self.handlers = handlers
        self.max_frame_bytes = max_frame_bytes
        self.idle_timeout_s = idle_timeout_s
        self.peer_host, self.peer_port = peer
        self.requests_handled = 0
        self._closing = False
        self._read_scope: trio.CancelScope | None = None

    @property
    def peer(self) -> str:
        host = f"[{self.peer_host}]" if ":" in self.peer_host else self.peer_host
        return f"{host}:{self.peer_port}"

    def begin_close(self) -> None:
        """Shutdown: close now if waiting for a request, else right after the current response."""
        self._closing = True
        if self._read_scope is not None:
            self._read_scope.cancel()

    async def run(self) -> None:
        try:
            await self._serve()
        except _Close:
            pass
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("connection from %s lost: %s", self.peer, exc)
        except Exception:
            log.exception("unexpected error on the connection from %s; closing it", self.peer)
        finally:
            await trio.aclose_forcefully(self.stream)

    async def _serve(self) -> None:
        decoder = FrameDecoder(self.max_frame_bytes)
        while not self._closing:
            frame = self._next_frame(decoder)
            if frame is None:
                data = await self._receive()
                if data is None:
                    return
                try:
                    decoder.receive_data(data)
                except FrameTooLarge as exc:
                    log.warning("closing connection from %s: %s (socket.request.max.bytes=%d)",
                                self.peer, exc, self.max_frame_bytes)
                    return
                continue
            response = await self._handle_frame(frame)
            self.requests_handled += 1
            if response is not None:
                await self.stream.send_all(response)

    def _next_frame(self, decoder: FrameDecoder) -> bytes | None:
        try:
            return decoder.next_frame()
        except FrameTooLarge as exc:
            log.warning("closing connection from %s: %s (socket.request.max.bytes=%d)",
                        self.peer, exc, self.max_frame_bytes)
            raise _Close from exc

    async def _receive(self) -> bytes | None:
        """The next bytes from the peer, or None: EOF, idle timeout or shutdown."""
        with trio.CancelScope() as scope:
            self._read_scope = scope
            scope.deadline = trio.current_time() + self.idle_timeout_s
            if self._closing:
                scope.cancel()
            try:
                data = await self.stream.receive_some(RECEIVE_SIZE)
            finally:
                self._read_scope = None
        if scope.cancelled_caught:
            if not self._closing:
                log.info("closing connection from %s: idle for more than %d ms",
                         self.peer, int(self.idle_timeout_s * 1000))
            return None
        if not data:
            log.debug("connection from %s closed by the peer", self.peer)
            return None
        return bytes(data)

    async def _handle_frame(self, frame: bytes) -> bytes | None:
        """Decode, dispatch and encode one request; raises _Close when the connection must go."""
        try:
            header, request = decode_request(frame)
        except UnknownApiKey as exc:
            log.warning("closing connection from %s: unknown api key: %s", self.peer, exc)
            raise _Close from exc
        except UnsupportedVersion as exc:
            header = exc.header
            if int(header.api_key) == ApiKey.API_VERSIONS:
                return self._api_versions_unsupported(header)
            log.warning("closing connection from %s: unsupported version: %s",
                        self.peer, _describe(header))
            raise _Close from exc
        except (MalformedRequest, ProtocolError) as exc:
            log.warning("closing connection from %s: malformed request: %s", self.peer, exc)
            raise _Close from exc
        spec = self.handlers.get(int(header.api_key))
        if spec is None:
            log.warning("closing connection from %s: api not served: %s",
                        self.peer, _describe(header))
            raise _Close
        if not spec.serves(int(header.api_version)):
            if (int(header.api_key) == ApiKey.API_VERSIONS
                    and int(header.api_version) > spec.max_version):
                return self._api_versions_unsupported(header)
            log.warning("closing connection from %s: unsupported version (served %d-%d): %s",
                        self.peer, spec.min_version, spec.max_version, _describe(header))
            raise _Close
        ctx = RequestContext(header=header, services=self.services, client_host=self.peer_host)
        try:
            body = await spec.func(ctx, request)
            if body is None:
                return None
            return encode_response(int(header.api_key), int(header.api_version),
                                   int(header.correlation_id), body)
        except Exception as exc:
            log.exception("handler failed; closing connection from %s: %s",
                          self.peer, _describe(header))
            raise _Close from exc

    def _api_versions_unsupported(self, header: Any) -> bytes:
        log.info("ApiVersions v%d from %s is newer than served; answering with v0",
                 int(header.api_version), self.peer)
        return encode_response(int(ApiKey.API_VERSIONS), 0, int(header.correlation_id),
                               unsupported_version_body())
