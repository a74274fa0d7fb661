"""One client connection: frames in, one dispatch at a time, responses out in order.

States (one task per connection, `Connection.run`)::

    READING   waiting for bytes; bytes go to a sans-I/O `FrameDecoder` (a frame of 64 KiB or
              more is received straight into its own buffer once 1/16 of it has arrived:
              `FrameDecoder.receive_buffer`, `transport.receive_into`); as soon as one whole
              frame is buffered -> HANDLING. Deadlines (both `connections.max.idle.ms`):
              no byte of the next request yet: idle time since the last response (or accept);
              a partial request: time since its first byte arrived -- later bytes do not
              extend it, so a client that sends a frame header and then trickles or stops is
              closed (Kafka resets its idle timer on any socket activity, so a trickling client
              stays connected there; wirebroker is stricter to bound slow partial frames)
    HANDLING  the frame goes to the `RequestDispatcher` (net/dispatch.py) and is awaited;
              nothing is read from the socket meanwhile (Kafka mutes the channel), so a client
              cannot make the broker buffer more than one receive beyond the request being
              served -> SENDING (a response) / READING (nothing to send) / CLOSED (the
              dispatcher said close; it logged why) / QUEUED (a reply to await later)
    SENDING   the whole response frame goes out (`transport.send_frame`: one `send_all`, or a
              gather frame's pieces, its file regions by sendfile), which must finish within
              `connections.max.idle.ms` (a client that stops reading is closed) -> READING
              (frames that arrived pipelined are handled from the buffer before reading again)
    QUEUED    the dispatcher's reply has `later` (an acks=all Produce appended and waiting for
              the in-sync replicas): it goes into this connection's reply queue and the
              connection goes back to READING, so the next requests are decoded and handled
              (in order: a later Produce appends after this one) while the first waits for
              replication. A sender task (started with the first such reply, in the
              server's nursery: `spawn`) awaits each queued reply in request order and sends
              it (a Connection made without `spawn` awaits such a reply in place instead, one
              request at a time); while any reply is queued, every
              reply (ready or not) is queued behind it, so responses keep request order. At
              most MAX_QUEUED_REPLIES wait to be sent: a further request waits, unread, until
              one is (the bound on what a client can make the broker hold). A reply that
              closes, a send that fails or times out: the connection closes and the replies
              behind it are dropped (the client retries them, as after any lost connection).
              When reading stops (EOF, idle timeout, shutdown, a request that closes), the
              queued replies are still sent, then the connection closes.
    MUTED     a reply carried a throttle time (client quotas, wirebroker.handlers.throttle):
              after its response is sent (or, with `delay_response`, before: the response
              waits), no further request is handled or read for that long -> READING. A
              shutdown ends the wait.
    CLOSED    reached from any state; the socket is closed

`abort()` (fault injection, `KafkaServer.drop_connections`) cancels the connection task in any
state and resets the socket.

Closes decided here, and what is logged (one line each, with the peer):
    peer EOF / reset, or shutdown while idle         nothing (debug level)
    idle longer than connections.max.idle.ms         info
    a request incomplete, or a response unread, after connections.max.idle.ms    info
    frame size negative or above socket.request.max.bytes      warning
        (the first bytes a TLS ClientHello: the log line says so)
    an unexpected exception while serving            error, with traceback
Why a request closes its connection: `wirebroker.handlers.dispatcher`. A failure in one
connection never touches another.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

import trio

from protocol.exceptions import FrameTooLarge
from protocol.framing import FrameDecoder, GatherFrame
from wirebroker.net.dispatch import DispatchReply, RequestDispatcher
from wirebroker.security.session import ConnectionSession
from wirebroker.transport import receive_into, send_frame

log = logging.getLogger("wirebroker.net")

#: Bytes asked for per receive, at the least. While a larger frame is incomplete the receive
#: asks for the rest of that frame (`FrameDecoder.bytes_wanted`), up to MAX_RECEIVE_SIZE, so a
#: 1 MB Produce request takes a few receives instead of sixteen (its gain: docs/benchmarks.md,
#: "What the data path's design buys"). Never more than RECEIVE_SIZE beyond the frame read.
RECEIVE_SIZE = 65536
MAX_RECEIVE_SIZE = 1 << 20

#: Replies queued per connection at most (the QUEUED state): acks=all Produce requests
#: appended and waiting for replication, and the replies behind them. Kafka handles one request
#: per connection at a time, so an acks=all producer's throughput there is one batch per
#: replication round trip; here up to this many rounds overlap (the followers fetch what the
#: next requests appended while the first ones wait, and leader and followers work at once).
MAX_QUEUED_REPLIES = 5

_Got = TypeVar("_Got")


def _reset_on_close(stream: trio.abc.Stream) -> None:
    """SO_LINGER 0: closing sends RST instead of FIN (the peer sees ECONNRESET)."""
    sock = getattr(stream, "socket", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class _Close(Exception):
    """Internal: stop serving this connection (the reason is already logged)."""


class _ReplyQueue:
    """A connection's QUEUED state, made with its first reply that comes later."""

    def __init__(self, send: trio.MemorySendChannel[DispatchReply]) -> None:
        self.send = send  # to the sender task
        self.scope = trio.CancelScope()  # the sender task's
        self.queued = 0  # replies queued and not sent yet
        self.progress: trio.Event | None = None  # set whenever a queued reply goes out
        self.failed = False  # the sender closed the connection


class Connection:
    """Serves one accepted stream until EOF, error, idle timeout or shutdown."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        dispatcher: RequestDispatcher,
        *,
        max_frame_bytes: int,
        idle_timeout_s: float,
        peer: tuple[str, int] = ("?", 0),
        spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None,
        session: ConnectionSession | None = None,
        frame_limit: Callable[[], int] | None = None,
    ) -> None:
        self.stream = stream
        #: the listener and principal of this connection (handed to the dispatcher)
        self.session = session
        #: the frame cap right now (a SASL connection's is small until it authenticates)
        self._frame_limit = frame_limit
        self.dispatcher = dispatcher
        self.max_frame_bytes = max_frame_bytes
        self.idle_timeout_s = idle_timeout_s
        self.peer_host, self.peer_port = peer
        host = f"[{self.peer_host}]" if ":" in self.peer_host else self.peer_host
        #: host:port, for log lines
        self.peer = f"{host}:{self.peer_port}"
        self.requests_handled = 0
        self._closing = False
        self._read_scope: trio.CancelScope | None = None
        # QUEUED (all created with the first reply that comes later): `spawn` starts the
        # sender task (in the server's nursery: no nursery per connection); without it a
        # reply that comes later is awaited in place, one request at a time
        self._spawn = spawn
        self._q: _ReplyQueue | None = None
        # abort(): the whole connection task is cancelled and the socket reset
        self._run_scope = trio.CancelScope()
        self._reset = False
        #: MUTED until this trio time (client quotas)
        self._muted_until = 0.0

    def begin_close(self) -> None:
        """Shutdown: close now if waiting for a request, else right after the current response
        (and the queued ones)."""
        self._closing = True
        if self._read_scope is not None:
            self._read_scope.cancel()

    def abort(self) -> None:
        """Drop the connection now, as a network failure would (fault injection): whatever it
        is doing is cancelled, nothing more is sent, the socket is reset (RST)."""
        self._reset = True
        self._run_scope.cancel()

    async def run(self) -> None:
        try:
            with self._run_scope:
                await self._serve()
                q = self._q
                while q is not None and q.queued and not q.failed:  # queued replies go out
                    q.progress = trio.Event()
                    await q.progress.wait()
        except _Close:
            pass
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("connection from %s lost: %s", self.peer, exc)
        except Exception:
            log.exception("unexpected error on the connection from %s; closing it", self.peer)
        finally:
            if self._q is not None:
                self._q.scope.cancel()
            if self._reset:
                _reset_on_close(self.stream)
            if self.session is not None:
                self.session.closed()
            await trio.aclose_forcefully(self.stream)

    async def _enqueue(self, reply: DispatchReply) -> None:
        """QUEUED: hand `reply` to the sender task (started on first use); waits while
        MAX_QUEUED_REPLIES are queued."""
        q = self._q
        if q is None:
            assert self._spawn is not None
            send, receive = trio.open_memory_channel[DispatchReply](MAX_QUEUED_REPLIES - 1)
            q = self._q = _ReplyQueue(send)
            self._spawn(partial(self._send_queued, q, receive))
        q.queued += 1
        await q.send.send(reply)

    async def _send_queued(
        self, q: _ReplyQueue, queue: trio.MemoryReceiveChannel[DispatchReply]
    ) -> None:
        """The sender task: each queued reply, awaited in request order, then sent. It runs
        in the server's nursery, so nothing may escape it; a failure closes the connection."""
        with q.scope:
            try:
                async for reply in queue:
                    later = reply.later
                    if later is not None:
                        reply = await later()
                    if reply.close:
                        break
                    if not await self._deliver(reply):
                        break
                    q.queued -= 1
                    if q.progress is not None:
                        q.progress.set()
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                log.debug("connection from %s lost: %s", self.peer, exc)
            except Exception:
                log.exception("unexpected error on the connection from %s; closing it", self.peer)
            # a reply closed the connection, or sending failed: stop reading too
            q.failed = self._closing = True
            if self._read_scope is not None:
                self._read_scope.cancel()
            if q.progress is not None:
                q.progress.set()
            await queue.aclose()  # a reader waiting to queue gets BrokenResourceError

    async def _serve(self) -> None:
        decoder = FrameDecoder(self.max_frame_bytes)
        if self._frame_limit is not None:
            decoder.max_frame_bytes = self._frame_limit()
        request_started: float | None = None  # when the first byte of a partial request came
        while not self._closing:
            if self._muted_until > trio.current_time():
                await self._muted()
                continue
            frame = self._next_frame(decoder)
            if frame is None:
                if decoder.buffered_bytes == 0:
                    request_started = None
                    deadline = trio.current_time() + self.idle_timeout_s
                else:
                    if request_started is None:
                        request_started = trio.current_time()
                    deadline = request_started + self.idle_timeout_s
                try:
                    into = decoder.receive_buffer()  # a large frame: received in place
                    if into is not None:
                        read_into = partial(receive_into, self.stream, into)
                        try:
                            got = await self._receive(deadline, decoder.buffered_bytes, read_into)
                        finally:
                            into.release()  # no view may outlive the frame (its reuse)
                        if got is None:
                            return
                        decoder.received_into(got)
                        continue
                    want = min(max(RECEIVE_SIZE, decoder.bytes_wanted), MAX_RECEIVE_SIZE)
                    data = await self._receive(
                        deadline, decoder.buffered_bytes, partial(self.stream.receive_some, want)
                    )
                    if data is None:
                        return
                    decoder.receive_data(bytes(data))
                except FrameTooLarge as exc:
                    raise self._frame_too_large(exc) from exc
                continue
            request_started = None
            reply = await self.dispatcher.dispatch(frame, self.peer_host, self.peer, self.session)
            if self._frame_limit is not None:
                decoder.max_frame_bytes = self._frame_limit()
            q = self._q
            if q is not None and q.failed:
                raise _Close
            if (q is not None and q.queued) or (reply.later is not None and self._spawn):
                await self._enqueue(reply)  # QUEUED (behind earlier replies, or awaited)
                if reply.close:
                    return
                self.requests_handled += 1
                continue
            if reply.later is not None:
                reply = await reply.later()  # no sender task: awaited in place
            if reply.close:
                if reply.response is not None:  # an answer that closes (failed SASL)
                    await self._send(reply.response)
                raise _Close
            self.requests_handled += 1
            if not await self._deliver(reply):
                raise _Close

    async def _deliver(self, reply: DispatchReply) -> bool:
        """Send a reply's response (if any), applying its throttle (MUTED); False: the client
        did not take it."""
        throttle_s = reply.throttle_ms / 1000.0
        if throttle_s > 0 and reply.delay_response:
            await trio.sleep(throttle_s)  # an older client: the answer itself waits
            throttle_s = 0.0
        if reply.response is not None and not await self._send(reply.response):
            return False
        if throttle_s > 0:
            self._muted_until = max(self._muted_until, trio.current_time() + throttle_s)
        return True

    async def _muted(self) -> None:
        """MUTED: wait until the throttle is over (a shutdown ends it)."""
        with trio.CancelScope(deadline=self._muted_until) as scope:
            self._read_scope = scope
            try:
                if self._closing:
                    scope.cancel()
                await trio.sleep_forever()
            finally:
                self._read_scope = None

    async def _send(self, response: bytes | GatherFrame) -> bool:
        """Send one response; False when the client did not take it within the idle timeout."""
        with trio.move_on_after(self.idle_timeout_s):
            await send_frame(self.stream, response)
            return True
        log.info(
            "closing connection from %s: response of %d bytes not read within %d ms",
            self.peer,
            len(response),
            int(self.idle_timeout_s * 1000),
        )
        return False

    def _next_frame(self, decoder: FrameDecoder) -> bytes | bytearray | None:
        try:
            return decoder.next_frame()
        except FrameTooLarge as exc:
            raise self._frame_too_large(exc) from exc

    def _frame_too_large(self, exc: FrameTooLarge) -> _Close:
        if self.requests_handled == 0 and (exc.size >> 24) == 0x16 and (exc.size >> 16) & 0xFF == 3:
            log.warning(
                "closing connection from %s: it sent a TLS handshake to a listener without "
                "TLS (client uses SSL / SASL_SSL on a PLAINTEXT / SASL_PLAINTEXT listener?)",
                self.peer,
            )
            return _Close()
        cap = "socket.request.max.bytes"
        if exc.limit < self.max_frame_bytes:  # a SASL connection not authenticated yet
            cap = "sasl.server.max.receive.size, before authentication"
        log.warning("closing connection from %s: %s (%s=%d)", self.peer, exc, cap, exc.limit)
        return _Close()

    async def _receive(
        self, deadline: float, buffered: int, read: Callable[[], Awaitable[_Got]]
    ) -> _Got | None:
        """What `read` got from the peer (bytes, or a count received in place), or None:
        EOF (nothing got), `deadline` passed, or shutdown."""
        with trio.CancelScope() as scope:
            self._read_scope = scope
            scope.deadline = deadline
            if self._closing:
                scope.cancel()
            try:
                data = await read()
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
        return data
