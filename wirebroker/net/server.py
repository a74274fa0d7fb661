"""The TCP server: listeners, one `Connection` task per client, graceful shutdown.

Lifetime (`KafkaServer.run`, started with `nursery.start`)::

    bind every (host, port) of `listen` (port 0: the kernel picks one)
    task_status.started([(host, port), ...])        the real bound addresses
    accept (trio.serve_listeners) until shutdown() is called
    shutdown: close the listeners; idle connections close at once; a connection handling a
              request finishes it and sends its response, then closes; whatever is still
              running after `grace_s` seconds is cancelled
    return

Connections run in their own nursery (the `handler_nursery` of `trio.serve_listeners`), so
closing the listeners does not cancel them. `run` itself is not meant to be cancelled for a
graceful stop: cancellation stops everything at once (the caller, `wirebroker.broker.Broker`,
turns its own cancellation into `shutdown()`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from functools import partial

import trio

from wirebroker.handlers.context import Services
from wirebroker.handlers.registry import HandlerSpec
from wirebroker.net.connection import Connection

log = logging.getLogger("wirebroker.net")


class KafkaServer:
    """Serves the Kafka protocol on one or more TCP listeners."""

    def __init__(
        self,
        services: Services,
        handlers: Mapping[int, HandlerSpec],
        *,
        max_frame_bytes: int = 104857600,
        idle_timeout_ms: int = 600000,
        grace_s: float = 5.0,
    ) -> None:
        self.services = services
        self.handlers = handlers
        self.max_frame_bytes = max_frame_bytes
        self.idle_timeout_s = idle_timeout_ms / 1000 if idle_timeout_ms >= 0 else math.inf
        self.grace_s = grace_s
        self.connections: set[Connection] = set()
        self._stop = trio.Event()

    def shutdown(self) -> None:
        """Stop accepting and drain (see the module docstring). Idempotent, synchronous."""
        self._stop.set()

    async def run(
        self,
        listen: Sequence[tuple[str, int]],
        *,
        task_status: trio.TaskStatus[list[tuple[str, int]]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        listeners: list[trio.SocketListener] = []
        try:
            for host, port in listen:
                listeners.extend(await trio.open_tcp_listeners(port, host=host or None))
        except BaseException:
            for listener in listeners:
                await trio.aclose_forcefully(listener)
            raise
        bound = [_bound_address(listener) for listener in listeners]
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as acceptors:
                acceptors.start_soon(
                    partial(trio.serve_listeners, self._serve_connection, listeners,
                            handler_nursery=connections))
                log.info("listening on %s", ", ".join(f"{h}:{p}" for h, p in bound))
                task_status.started(bound)
                await self._stop.wait()
                acceptors.cancel_scope.cancel()  # serve_listeners closes the listeners
            if self.connections:
                log.info("shutting down: %d connection(s) to drain", len(self.connections))
            for conn in list(self.connections):
                conn.begin_close()
            connections.cancel_scope.deadline = trio.current_time() + self.grace_s

    async def _serve_connection(self, stream: trio.SocketStream) -> None:
        peer = _peer_address(stream)
        conn = Connection(stream, self.services, self.handlers,
                          max_frame_bytes=self.max_frame_bytes,
                          idle_timeout_s=self.idle_timeout_s, peer=peer)
        self.connections.add(conn)
        try:
            if self._stop.is_set():
                conn.begin_close()
            log.debug("connection from %s", conn.peer)
            await conn.run()
        finally:
            self.connections.discard(conn)


def _bound_address(listener: trio.SocketListener) -> tuple[str, int]:
    name = listener.socket.getsockname()
    return str(name[0]), int(name[1])


def _peer_address(stream: trio.SocketStream) -> tuple[str, int]:
    try:
        name = stream.socket.getpeername()
    except OSError:
        return ("?", 0)
    if isinstance(name, tuple) and len(name) >= 2:
        return str(name[0]), int(name[1])
    return (str(name), 0)
