"""The admin HTTP/1.1 server: h11 (sans-I/O) on the broker's trio loop.

One trio task per connection (no thread), keep-alive, one request at a time per connection.
Bounded: request head (line + headers) <= `max_head_bytes` (h11's incomplete-event limit; a
longer head answers 431), body <= `max_body_bytes` (a larger Content-Length answers 413 before
the body is read; a chunked body that grows past it, too), at most `max_connections` open (the
accept loop waits for a slot, as the Kafka listener's max.connections), and an idle or slow
connection is closed after `idle_timeout_s` without progress. A request h11 cannot parse
answers 400 and closes; a handler that raises answers 500 (logged with its traceback): nothing
a client sends stops the server or the broker.

Lifetime (`AdminServer.run(listen)`, started with `nursery.start`): bind every (host, port)
(port 0: the kernel picks; `task_status.started` gets the bound addresses), serve until
`shutdown()` or cancellation, then close the listeners and every connection at once (the admin
plane has nothing to drain).

This module knows HTTP and the route table only: what is served comes from `Routes`
(wirebroker/admin/routes.py), filled by the composition root and other packages.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from http import HTTPStatus

import h11
import trio

from wirebroker.admin.routes import Request, Response, Routes
from wirebroker.transport import Listener
from wirebroker.transport import current as current_transport

log = logging.getLogger("wirebroker.admin")

_RECEIVE_BYTES = 16384
_SERVER = b"wirebroker-admin"


class AdminServer:
    def __init__(
        self,
        routes: Routes,
        *,
        max_head_bytes: int = 16384,
        max_body_bytes: int = 1 << 20,
        max_connections: int = 64,
        idle_timeout_s: float = 30.0,
    ) -> None:
        self.routes = routes
        self.max_head_bytes = max_head_bytes
        self.max_body_bytes = max_body_bytes
        self.idle_timeout_s = idle_timeout_s if idle_timeout_s > 0 else math.inf
        self._slots = trio.Semaphore(max_connections)
        self._scope = trio.CancelScope()
        #: the bound (host, port) pairs once `run` started
        self.bound: list[tuple[str, int]] = []
        self.requests_served = 0

    def shutdown(self) -> None:
        """Stop serving: listeners and connections close. Idempotent, synchronous."""
        self._scope.cancel()

    async def run(
        self,
        listen: Sequence[tuple[str, int]],
        *,
        task_status: trio.TaskStatus[list[tuple[str, int]]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        transport = current_transport()
        listeners: list[Listener] = []
        try:
            for host, port in listen:
                listeners.extend(await transport.listen(host, port))
        except BaseException:
            for listener in listeners:
                await trio.aclose_forcefully(listener)
            raise
        self.bound = [transport.bound_address(listener) for listener in listeners]
        with self._scope:
            async with trio.open_nursery() as nursery:
                for listener in listeners:
                    nursery.start_soon(self._accept_loop, listener, nursery)
                log.info(
                    "admin HTTP listener on %s",
                    ", ".join(f"http://{_hostport(h, p)}/" for h, p in self.bound),
                )
                task_status.started(self.bound)

    async def _accept_loop(self, listener: Listener, nursery: trio.Nursery) -> None:
        async with listener:
            while True:
                await self._slots.acquire()
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    self._slots.release()
                    log.warning("admin listener: accept failed: %s", exc)
                    await trio.sleep(0.1)
                    continue
                except BaseException:
                    self._slots.release()
                    raise
                nursery.start_soon(self._serve_connection, stream)

    async def _serve_connection(self, stream: trio.abc.Stream) -> None:
        peer = current_transport().peer_address(stream)
        try:
            async with stream:
                await self.serve_stream(stream, peer)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.debug("admin connection from %s: %s", peer, exc)
        except Exception:
            log.exception("admin connection from %s failed", peer)
        finally:
            self._slots.release()

    async def serve_stream(self, stream: trio.abc.Stream, peer: tuple[str, int]) -> None:
        """Serve requests on one connection until it closes (public for tests)."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.max_head_bytes)
        while True:
            try:
                request = await self._read_request(conn, stream, peer)
            except _HttpError as exc:
                if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    await self._send(conn, stream, exc.response(), head_only=False, close=True)
                return
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint
                if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    answer = Response.text(f"{HTTPStatus(status).phrase}: {exc}\n", status)
                    await self._send(conn, stream, answer, head_only=False, close=True)
                return
            if request is None:  # the client closed, or went idle
                return
            response = await self._dispatch(request)
            self.requests_served += 1
            await self._send(conn, stream, response, head_only=request.method == "HEAD")
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            try:
                conn.start_next_cycle()
            except h11.LocalProtocolError:  # the client sent more body than it announced
                return

    async def _read_request(
        self, conn: h11.Connection, stream: trio.abc.Stream, peer: tuple[str, int]
    ) -> Request | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                with trio.move_on_after(self.idle_timeout_s) as idle:
                    data = await stream.receive_some(_RECEIVE_BYTES)
                if idle.cancelled_caught:
                    if head is None and conn.their_state is h11.IDLE:
                        return None  # an idle keep-alive connection: just close it
                    raise _HttpError(HTTPStatus.REQUEST_TIMEOUT, "request too slow")
                conn.receive_data(bytes(data))  # b"" = EOF
                continue
            if isinstance(event, h11.Request):
                head = event
                size = len(event.target) + sum(len(k) + len(v) + 4 for k, v in event.headers)
                if size > self.max_head_bytes:  # h11 bounds only a head still incomplete
                    raise _HttpError(
                        HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                        f"request head over {self.max_head_bytes} bytes",
                    )
                length = _content_length(event)
                if length is not None and length > self.max_body_bytes:
                    raise _HttpError(
                        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                        f"body over {self.max_body_bytes} bytes",
                    )
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > self.max_body_bytes:
                    raise _HttpError(
                        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                        f"body over {self.max_body_bytes} bytes",
                    )
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                target = head.target.decode("ascii", "replace")
                path, _, query = target.partition("?")
                return Request(
                    method=head.method.decode("ascii", "replace").upper(),
                    path=path,
                    query_string=query,
                    headers=tuple(
                        (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in head.headers
                    ),
                    body=bytes(body),
                    peer=peer,
                )
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None

    async def _dispatch(self, request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        handler = self.routes.resolve(method, request.path)
        if handler is None:
            allowed = self.routes.allowed(request.path)
            if allowed:
                if "GET" in allowed:
                    allowed = sorted([*allowed, "HEAD"])
                return Response(
                    405, b"method not allowed\n", headers=(("allow", ", ".join(allowed)),)
                )
            return Response.text("not found\n", 404)
        try:
            return await handler(request)
        except ValueError as exc:  # a body that is not the JSON the route wants, ...
            return Response.text(f"bad request: {exc}\n", 400)
        except Exception:
            log.exception("admin route %s %s failed", request.method, request.path)
            return Response.text("internal error\n", 500)

    async def _send(
        self,
        conn: h11.Connection,
        stream: trio.abc.Stream,
        response: Response,
        *,
        head_only: bool,
        close: bool = False,
    ) -> None:
        headers = [
            (b"content-type", response.content_type.encode("latin-1")),
            (b"content-length", str(len(response.body)).encode()),
            (b"server", _SERVER),
            (b"cache-control", b"no-store"),
        ]
        headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
        if close:
            headers.append((b"connection", b"close"))
        try:
            reason = HTTPStatus(response.status).phrase.encode()
        except ValueError:
            reason = b""
        out = conn.send(h11.Response(status_code=response.status, headers=headers, reason=reason))
        if not head_only and response.body:
            out += conn.send(h11.Data(data=response.body))
        out += conn.send(h11.EndOfMessage())
        await stream.send_all(out)


class _HttpError(Exception):
    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status

    def response(self) -> Response:
        return Response.text(f"{self.status.phrase}: {self}\n", int(self.status))


def _content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)  # h11 already checked it is a valid number
    return None


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
