"""One client connection: frames in, handler calls one at a time, responses out in order.

States (one task per connection, `Connection.run`)::

    READING   waiting for bytes; bytes go to a sans-I/O `FrameDecoder`; as soon as one whole
              frame is buffered -> HANDLING. Deadlines (both `connections.max.idle.ms`):
              no byte of the next request yet: idle time since the last response (or accept);
              a partial request: time since its first byte arrived -- later bytes do not
              extend it, so a client that sends a frame header and then trickles or stops is
              closed (Kafka resets its idle timer on any socket activity, so a trickling client
              stays connected there; wirebroker is stricter to bound slow partial frames)
    HANDLING  the frame is decoded and its handler awaited; nothing is read from the socket
              meanwhile (Kafka mutes the channel), so a client cannot make the broker buffer
              more than one receive beyond the request being served -> SENDING / READING
    SENDING   the whole response frame goes out with one `send_all`, which must finish within
              `connections.max.idle.ms` (a client that stops reading is closed) -> READING
              (frames that arrived pipelined are handled from the buffer before reading again)
    CLOSED    reached from any state; the socket is closed

Why a connection closes, and what is logged (one line each, with peer, API, version and
correlation id when known):
    peer EOF / reset, or shutdown while idle         nothing (debug level)
    idle longer than connections.max.idle.ms         info
    a request incomplete, or a response unread, after connections.max.idle.ms    info
    frame size negative or above socket.request.max.bytes      warning
    unknown API key, API without a handler, version not served, malformed body    warning
    a body decoding into more objects than the decode budget (RequestTooComplex)   warning
    an unexpected exception in a handler or while encoding     error, with traceback
An acks=0 Produce that failed (`ProduceWithoutAckFailed`) closes the connection with an info
line, as Kafka does. An ApiVersions request newer than served is answered (v0
UNSUPPORTED_VERSION, see `wirebroker.handlers.api_versions`) and the connection stays open.
So is a Produce v0-2 request
(advertised but not served, KAFKA-18659): UNSUPPORTED_VERSION for each of its partitions
(`protocol.legacy_produce`; Kafka closes the connection, which leaves the client retrying
blind until its message timeout), except with acks=0, which closes. acks=0 Produce (handler
returns None) sends nothing. A failure in one connection never touches another.

Decode budget: `decode_request` gets `max_decoded_bytes = max(max_frame_bytes, 16 MiB)`
(`decode_budget`). A frame of tiny structs decodes into ~100x its size in Python objects; the
budget makes the frame cap (socket.request.max.bytes) the bound of a request's memory again,
and the 16 MiB floor keeps honest requests made of many small structs (a large Metadata or
OffsetCommit request costs ~15-30x its frame) working when the cap is lowered.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import trio

from protocol.api import ApiKey
from protocol.codec import decode_request, encode_response
from protocol.errors import ErrorCode
from protocol.exceptions import (
    FrameTooLarge,
    MalformedRequest,
    ProtocolError,
    UnknownApiKey,
    UnsupportedVersion,
)
from protocol.framing import FrameDecoder
from protocol.legacy_produce import (
    LEGACY_VERSIONS,
    encode_legacy_produce_error,
    parse_legacy_produce,
)
from wirebroker.handlers.api_versions import unsupported_version_body
from wirebroker.handlers.context import RequestContext, Services
from wirebroker.handlers.produce import ProduceWithoutAckFailed
from wirebroker.handlers.registry import HandlerSpec, api_name

log = logging.getLogger("wirebroker.net")

#: Bytes asked for per receive, at the least. While a larger frame is incomplete the receive
#: asks for the rest of that frame (`FrameDecoder.bytes_wanted`), up to MAX_RECEIVE_SIZE, so a
#: 1 MB Produce request takes a few receives instead of sixteen (perf, tools/bench: ~30% less
#: broker CPU per MB produced). Never more than RECEIVE_SIZE beyond the frame being read.
RECEIVE_SIZE = 65536
MAX_RECEIVE_SIZE = 1 << 20

#: The least decode budget (see the module docstring).
DECODE_BUDGET_FLOOR = 16 << 20


def decode_budget(max_frame_bytes: int) -> int:
    """Bytes of Python objects one request body may decode into."""
    return max(max_frame_bytes, DECODE_BUDGET_FLOOR)


class _Close(Exception):
    """Internal: stop serving this connection (the reason is already logged)."""


def _describe(header: Any) -> str:
    return (
        f"api {api_name(int(header.api_key))} (key {int(header.api_key)}) "
        f"v{int(header.api_version)}, correlation id {int(header.correlation_id)}, "
        f"client id {header.client_id!r}"
    )


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
        self.max_decoded_bytes = decode_budget(max_frame_bytes)
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
        request_started: float | None = None  # when the first byte of a partial request came
        while not self._closing:
            frame = self._next_frame(decoder)
            if frame is None:
                if decoder.buffered_bytes == 0:
                    request_started = None
                    deadline = trio.current_time() + self.idle_timeout_s
                else:
                    if request_started is None:
                        request_started = trio.current_time()
                    deadline = request_started + self.idle_timeout_s
                want = min(max(RECEIVE_SIZE, decoder.bytes_wanted), MAX_RECEIVE_SIZE)
                data = await self._receive(deadline, decoder.buffered_bytes, want)
                if data is None:
                    return
                try:
                    decoder.receive_data(data)
                except FrameTooLarge as exc:
                    log.warning(
                        "closing connection from %s: %s (socket.request.max.bytes=%d)",
                        self.peer,
                        exc,
                        self.max_frame_bytes,
                    )
                    return
                continue
            request_started = None
            response = await self._handle_frame(frame)
            self.requests_handled += 1
            if response is not None and not await self._send(response):
                return

    async def _send(self, response: bytes) -> bool:
        """Send one response; False when the client did not take it within the idle timeout."""
        with trio.move_on_after(self.idle_timeout_s):
            await self.stream.send_all(response)
            return True
        log.info(
            "closing connection from %s: response of %d bytes not read within %d ms",
            self.peer,
            len(response),
            int(self.idle_timeout_s * 1000),
        )
        return False

    def _next_frame(self, decoder: FrameDecoder) -> bytes | None:
        try:
            return decoder.next_frame()
        except FrameTooLarge as exc:
            log.warning(
                "closing connection from %s: %s (socket.request.max.bytes=%d)",
                self.peer,
                exc,
                self.max_frame_bytes,
            )
            raise _Close from exc

    async def _receive(
        self, deadline: float, buffered: int, want: int = RECEIVE_SIZE
    ) -> bytes | None:
        """The next bytes (at most `want`) from the peer, or None: EOF, `deadline` passed, or
        shutdown."""
        with trio.CancelScope() as scope:
            self._read_scope = scope
            scope.deadline = deadline
            if self._closing:
                scope.cancel()
            try:
                data = await self.stream.receive_some(want)
            finally:
                self._read_scope = None
        if scope.cancelled_caught:
            if self._closing:
                pass
            elif buffered:
                log.info(
                    "closing connection from %s: request incomplete (%d bytes received) "
                    "%d ms after its first byte",
                    self.peer,
                    buffered,
                    int(self.idle_timeout_s * 1000),
                )
            else:
                log.info(
                    "closing connection from %s: idle for more than %d ms",
                    self.peer,
                    int(self.idle_timeout_s * 1000),
                )
            return None
        if not data:
            log.debug("connection from %s closed by the peer", self.peer)
            return None
        return bytes(data)

    async def _handle_frame(self, frame: bytes) -> bytes | None:
        """Decode, dispatch and encode one request; raises _Close when the connection must go."""
        try:
            header, request = decode_request(frame, max_decoded_bytes=self.max_decoded_bytes)
        except UnknownApiKey as exc:
            log.warning("closing connection from %s: unknown api key: %s", self.peer, exc)
            raise _Close from exc
        except UnsupportedVersion as exc:
            header = exc.header
            if int(header.api_key) == ApiKey.API_VERSIONS:
                return self._api_versions_unsupported(header)
            if int(header.api_key) == ApiKey.PRODUCE and header.api_version in LEGACY_VERSIONS:
                return self._legacy_produce_unsupported(frame)
            log.warning(
                "closing connection from %s: unsupported version: %s", self.peer, _describe(header)
            )
            raise _Close from exc
        except (MalformedRequest, ProtocolError) as exc:
            log.warning("closing connection from %s: malformed request: %s", self.peer, exc)
            raise _Close from exc
        spec = self.handlers.get(int(header.api_key))
        if spec is None:
            log.warning(
                "closing connection from %s: api not served: %s", self.peer, _describe(header)
            )
            raise _Close
        if not spec.serves(int(header.api_version)):
            if (
                int(header.api_key) == ApiKey.API_VERSIONS
                and int(header.api_version) > spec.max_version
            ):
                return self._api_versions_unsupported(header)
            log.warning(
                "closing connection from %s: unsupported version (served %d-%d): %s",
                self.peer,
                spec.min_version,
                spec.max_version,
                _describe(header),
            )
            raise _Close
        ctx = RequestContext(header=header, services=self.services, client_host=self.peer_host)
        try:
            body = await spec.func(ctx, request)
            if body is None:
                return None
            return encode_response(
                int(header.api_key), int(header.api_version), int(header.correlation_id), body
            )
        except ProduceWithoutAckFailed as exc:
            # Kafka logs this at INFO: closing is how an acks=0 producer learns of the error.
            log.info("closing connection from %s: %s: %s", self.peer, exc, _describe(header))
            raise _Close from exc
        except Exception as exc:
            log.exception(
                "handler failed; closing connection from %s: %s", self.peer, _describe(header)
            )
            raise _Close from exc

    def _legacy_produce_unsupported(self, frame: bytes) -> bytes:
        """Produce v0-2 (advertised, KAFKA-18659, but not served): UNSUPPORTED_VERSION for
        every partition instead of a closed connection, so the client fails fast and says why
        (`protocol.legacy_produce`). acks=0 expects no answer: closed, as for any failed
        acks=0 produce."""
        try:
            request = parse_legacy_produce(frame)
        except ProtocolError as exc:
            log.warning("closing connection from %s: malformed request: %s", self.peer, exc)
            raise _Close from exc
        header = request.header
        if request.acks == 0:
            log.warning(
                "closing connection from %s: acks=0 Produce v%d (message format v0/v1, "
                "removed in Kafka 4.0) is not supported: %s",
                self.peer,
                header.api_version,
                _describe(header),
            )
            raise _Close
        log.warning(
            "answering UNSUPPORTED_VERSION to %s: Produce v%d (message format v0/v1, removed in "
            "Kafka 4.0; the client skipped or ignored ApiVersions): %s",
            self.peer,
            header.api_version,
            _describe(header),
        )
        return encode_legacy_produce_error(request, int(ErrorCode.UNSUPPORTED_VERSION))

    def _api_versions_unsupported(self, header: Any) -> bytes:
        log.info(
            "ApiVersions v%d from %s is newer than served; answering with v0",
            int(header.api_version),
            self.peer,
        )
        return encode_response(
            int(ApiKey.API_VERSIONS), 0, int(header.correlation_id), unsupported_version_body()
        )
