"""The TCP server: listeners, one `Connection` task per client, graceful shutdown.

Lifetime (`KafkaServer.run`, started with `nursery.start`)::

    bind every (host, port) of `listen` (port 0: the kernel picks one)
    task_status.started([(host, port), ...])        the real bound addresses
    hold (only with `hold_requests=True`)           nothing is accepted (clients wait in the
                                                    listen backlog) until `start_serving()`
    accept (trio.serve_listeners) until shutdown() is called
    shutdown: close the listeners; idle connections close at once; a connection handling a
              request finishes it and sends its response, then closes; whatever is still
              running after `grace_s` seconds is cancelled
    return

The hold is Kafka's `startProcessingRequests = false`: a cluster broker must bind first (its
registration carries the port) but must not answer anyone before it has joined the cluster --
a Metadata answer from an empty view lists no brokers, and clients drop every broker missing
from a Metadata answer (librdkafka 2.x decommissions their handles, the transaction
coordinator's included). `wirebroker.broker.Broker` calls `start_serving()` once its cluster
member has registered and mirrored the cluster.

Connections run in their own nursery, so closing the listeners does not cancel them. `run`
itself is not meant to be cancelled for a graceful stop: cancellation stops everything at once
(the caller, `wirebroker.broker.Broker`, turns its own cancellation into `shutdown()`).

Fault injection (`wirebroker.faults.control`): `pause_accepting()` closes the listeners (new
clients are refused by the kernel) until `resume_accepting()` binds the same addresses again;
`drop_connections()` resets every current connection (`Connection.abort`);
`wait_listening(bool)` returns once the listeners are open / closed.

Accepting (one loop per listener, Kafka's `Acceptor`)::

    accept                     EMFILE/ENFILE/ENOBUFS/ENOMEM: log, wait 100 ms, accept again
    max.connections reached    hold the accepted socket and stop accepting until a connection
                               closes (newer clients wait in the listen backlog), as Kafka does
    connection creation rate   broker-wide / listener limit (KIP-612) exceeded: wait the
                               throttle time before taking the connection (newer clients wait
                               in the listen backlog), as Kafka's acceptor blocks
    ip connection_creation_rate  over the client address's quota: do not serve it; close it
                               when the throttle time has passed (Kafka's delayed close)
    max.connections.per.ip     over the quota: close the socket at once (one info line)
    otherwise                  start a `Connection` task; its slot is released when it ends

The rates are `wirebroker.security.connection_rates.ConnectionRates` (pure); each throttling
episode is one INFO line (the connections throttled meanwhile: DEBUG), and counted per
listener and reason (`connection_rates.rows()`, /metrics).

Listeners and accepted streams come from `wirebroker.transport.current()`: trio's TCP, except
inside a deterministic simulation (tests/sim), which substitutes its in-memory network.

Start-up raises the soft RLIMIT_NOFILE to the hard limit (`limits.raise_nofile_limit`).
`max.connections` and `max.connections.per.ip` come from the `KafkaServer` arguments (Kafka's
default, 2**31-1, when not given). Requests go to the `RequestDispatcher` the server is given
(net/dispatch.py); net imports no handler module.
"""

from __future__ import annotations

import errno
import logging
import math
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from wirebroker.net.connection import Connection
from wirebroker.net.dispatch import RequestDispatcher
from wirebroker.net.limits import ConnectionQuotas, raise_nofile_limit
from wirebroker.security.auth_stats import AuthenticationStats
from wirebroker.security.connection_rates import ConnectionRates
from wirebroker.security.session import ConnectionSession
from wirebroker.transport import Listener
from wirebroker.transport import current as current_transport

if TYPE_CHECKING:
    from wirebroker.security.sasl_server import SaslServerConfig

log = logging.getLogger("wirebroker.net")

#: accept() errors that mean "out of a resource right now": wait and accept again.
_ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
_ACCEPT_RETRY_S = 0.1

#: Kafka's default max.connections and max.connections.per.ip.
_UNLIMITED = 2**31 - 1


@dataclass(frozen=True)
class Endpoint:
    """One listener to bind: its name, address and security (see the module docstring)."""

    name: str
    host: str
    port: int
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslServerConfig | None = None


def _endpoint(item: Endpoint | tuple[str, int]) -> Endpoint:
    return item if isinstance(item, Endpoint) else Endpoint("PLAINTEXT", item[0], item[1])


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


async def _close_after(stream: trio.abc.Stream, delay_s: float) -> None:
    """Close a throttled connection, unread, after `delay_s` (at shutdown: at once)."""
    try:
        await trio.sleep(delay_s)
    finally:
        await trio.aclose_forcefully(stream)


class KafkaServer:
    """Serves the Kafka protocol on one or more TCP listeners."""

    def __init__(
        self,
        dispatcher: RequestDispatcher,
        *,
        max_frame_bytes: int = 104857600,
        idle_timeout_ms: int = 600000,
        grace_s: float = 5.0,
        max_connections: int = _UNLIMITED,
        max_connections_per_ip: int = _UNLIMITED,
        hold_requests: bool = False,
        tls_handshake_timeout_s: float = 10.0,
        failed_authentication_delay_ms: int = 100,
        clock_ms: Callable[[], int] = _wall_clock_ms,
        connection_rates: ConnectionRates | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        #: connection creation rate limits (KIP-612); read by the admin plane
        self.connection_rates = connection_rates or ConnectionRates()
        #: the end of the current throttling episode per address / listener (for the log)
        self._throttled_until: dict[str, int] = {}
        self.tls_handshake_timeout_s = tls_handshake_timeout_s
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
        self.clock_ms = clock_ms
        #: SASL authentications per listener and mechanism (read by the admin plane)
        self.authentications = AuthenticationStats()
        #: listener name -> its first bound (host, port), once bound
        self.bound_by_listener: dict[str, tuple[str, int]] = {}
        self.max_frame_bytes = max_frame_bytes
        self.idle_timeout_s = idle_timeout_ms / 1000 if idle_timeout_ms >= 0 else math.inf
        self.grace_s = grace_s
        self.quotas = ConnectionQuotas(max_connections, max_connections_per_ip)
        self.connections: set[Connection] = set()
        #: the addresses bound at start (resume_accepting binds them again)
        self.bound: list[tuple[str, int]] = []
        self.accepting = True  # asked for (pause_accepting / resume_accepting)
        self.listening = False  # the listeners are open (what `accepting` asks, once applied)
        self._changed = trio.Event()  # stop, pause or resume asked for
        self._listening_changed = trio.Event()
        self._stop = trio.Event()
        self._slot_freed = trio.Event()
        self._accept_blocked = False
        #: False until `start_serving()` when built with hold_requests=True
        self.serving = not hold_requests

    def start_serving(self) -> None:
        """End the start-up hold: accept (and so serve) clients from now on. Idempotent."""
        if not self.serving:
            self.serving = True
            self._changed.set()

    def shutdown(self) -> None:
        """Stop accepting and drain (see the module docstring). Idempotent, synchronous."""
        self._stop.set()
        self._changed.set()

    # -- fault injection (wirebroker.faults.control) ------------------------------------------
    def pause_accepting(self) -> None:
        """Close the listeners: new clients get "connection refused" until resume_accepting
        binds the same addresses again. Current connections are kept."""
        if self.accepting:
            self.accepting = False
            self._changed.set()

    def resume_accepting(self) -> None:
        if not self.accepting:
            self.accepting = True
            self._changed.set()

    async def wait_listening(self, listening: bool) -> None:
        """Return once the listeners are open (True) or closed (False), or at shutdown."""
        while self.listening != listening and not self._stop.is_set():
            await self._listening_changed.wait()

    def _set_listening(self, listening: bool) -> None:
        self.listening = listening
        self._listening_changed.set()
        self._listening_changed = trio.Event()

    def drop_connections(self) -> int:
        """Reset every current connection at once (`Connection.abort`); how many there were."""
        connections = list(self.connections)
        for conn in connections:
            conn.abort()
        return len(connections)

    async def run(
        self,
        listen: Sequence[Endpoint | tuple[str, int]],
        *,
        task_status: trio.TaskStatus[list[tuple[str, int]]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        before, after = raise_nofile_limit()
        if after != before:
            log.info("raised the open-file limit (RLIMIT_NOFILE) from %d to %d", before, after)
        transport = current_transport()  # TCP, except inside a simulation (tests/sim)
        listeners: list[tuple[Listener, Endpoint]] = []
        try:
            for ep in map(_endpoint, listen):
                listeners.extend((ls, ep) for ls in await transport.listen(ep.host, ep.port))
        except BaseException:
            for listener, _ep in listeners:
                await trio.aclose_forcefully(listener)
            raise
        rebind = [(transport.bound_address(ls), ep) for ls, ep in listeners]
        bound = self.bound = [addr for addr, _ep in rebind]
        for addr, ep in rebind:
            self.bound_by_listener.setdefault(ep.name, addr)
        async with trio.open_nursery() as connections:
            log.info("listening on %s", ", ".join(f"{h}:{p}" for h, p in bound))
            task_status.started(bound)
            held = False  # the hold ended by start_serving()
            try:
                while not (self.serving or self._stop.is_set()):
                    await self._wait_changed()
                held = not self._stop.is_set()
            finally:
                if not held:  # stopped or cancelled while holding: nothing was accepted
                    for listener, _ep in listeners:
                        await trio.aclose_forcefully(listener)
            while not self._stop.is_set():
                self._set_listening(True)
                await self._serve_listeners(listeners, connections)
                listeners = []
                self._set_listening(False)
                if self._stop.is_set():
                    break
                log.warning("not accepting connections (listeners closed)")
                while not (self.accepting or self._stop.is_set()):
                    await self._wait_changed()
                if self._stop.is_set():
                    break
                for (host, port), ep in rebind:
                    listeners.extend((ls, ep) for ls in await transport.listen(host, port))
                log.warning("accepting connections again on %s", bound)
            if self.connections:
                log.info("shutting down: %d connection(s) to drain", len(self.connections))
            for conn in list(self.connections):
                conn.begin_close()
            connections.cancel_scope.deadline = trio.current_time() + self.grace_s

    async def _wait_changed(self) -> None:
        await self._changed.wait()
        self._changed = trio.Event()

    async def _serve_listeners(
        self, listeners: list[tuple[Listener, Endpoint]], connections: trio.Nursery
    ) -> None:
        """Accept on `listeners` until shutdown or pause_accepting; closes them."""
        async with trio.open_nursery() as acceptors:
            for listener, ep in listeners:
                acceptors.start_soon(self._accept_loop, listener, ep, connections)
            while self.accepting and not self._stop.is_set():
                await self._wait_changed()
            acceptors.cancel_scope.cancel()  # each accept loop closes its listener

    async def _accept_loop(
        self, listener: Listener, ep: Endpoint, connections: trio.Nursery
    ) -> None:
        """Accept on one listener until cancelled, applying the connection quotas."""
        failing = False  # in a streak of capacity errors: logged once, at its start
        async with listener:
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                        raise
                    log.log(
                        logging.DEBUG if failing else logging.ERROR,
                        "accept failed: %s; retrying every %d ms until it succeeds",
                        exc,
                        int(_ACCEPT_RETRY_S * 1000),
                    )
                    failing = True
                    await trio.sleep(_ACCEPT_RETRY_S)
                    continue
                if failing:
                    log.info("accepting connections again")
                    failing = False
                try:
                    await self._wait_for_slot()
                except BaseException:
                    await trio.aclose_forcefully(stream)
                    raise
                try:
                    await self._creation_rate_delay(ep)
                except BaseException:
                    await trio.aclose_forcefully(stream)
                    raise
                peer = current_transport().peer_address(stream)
                if self._ip_throttled(stream, peer, ep, connections):
                    continue
                if not self.quotas.try_acquire(peer[0]):
                    log.info(
                        "Rejected connection from %s, address already has the configured "
                        "maximum of %d connections (max.connections.per.ip)",
                        peer[0],
                        self.quotas.max_connections_per_ip,
                    )
                    await trio.aclose_forcefully(stream)
                    continue
                connections.start_soon(self._serve_connection, stream, peer, connections, ep)

    def _episode(self, key: str, now: int, throttle_ms: int) -> int:
        """The log level of a throttling of `key`: INFO when it starts an episode."""
        level = logging.DEBUG if now < self._throttled_until.get(key, 0) else logging.INFO
        self._throttled_until[key] = max(self._throttled_until.get(key, 0), now + throttle_ms)
        if len(self._throttled_until) > 10000:
            self._throttled_until = {k: t for k, t in self._throttled_until.items() if t > now}
        return level

    async def _creation_rate_delay(self, ep: Endpoint) -> None:
        """Wait out the broker-wide / listener connection creation rate (KIP-612)."""
        now = self.clock_ms()
        try:
            delay = self.connection_rates.accept_delay_ms(ep.name, now)
        except Exception:  # a bug here must not stop the accept loop
            log.exception("connection creation rate check failed; accepting at once")
            return
        if delay > 0:
            log.log(
                self._episode(f"listener:{ep.name}", now, delay),
                "listener %s: max.connection.creation.rate exceeded; accepting the next "
                "connection in %d ms",
                ep.name,
                delay,
            )
            await trio.sleep(delay / 1000)

    def _ip_throttled(
        self,
        stream: trio.abc.Stream,
        peer: tuple[str, int],
        ep: Endpoint,
        connections: trio.Nursery,
    ) -> bool:
        """True when the address is over its connection_creation_rate: the connection is
        not served, and closed after the throttle time (Kafka's delayed close)."""
        now = self.clock_ms()
        try:
            throttle = self.connection_rates.ip_throttle_ms(peer[0], now, ep.name)
        except Exception:  # a bug here must not stop the accept loop
            log.exception("connection creation rate check failed; serving the connection")
            return False
        if throttle <= 0:
            return False
        log.log(
            self._episode(f"ip:{peer[0]}", now, throttle),
            "connection from %s on listener %s throttled: connection_creation_rate of %g/s "
            "exceeded; closing it unserved in %d ms",
            peer[0],
            ep.name,
            self.connection_rates.ip_quota(peer[0]) or 0,
            throttle,
        )
        connections.start_soon(_close_after, stream, throttle / 1000)
        return True

    def set_connection_limits(self, max_connections: int, max_connections_per_ip: int) -> None:
        """New max.connections / max.connections.per.ip (a dynamic broker config change):
        they apply to the next connection accepted; open connections stay."""
        self.quotas.max_connections = max_connections
        self.quotas.max_connections_per_ip = max_connections_per_ip
        self._slot_freed.set()  # a raised limit may let a waiting accept through
        self._slot_freed = trio.Event()

    async def _wait_for_slot(self) -> None:
        """Return once one more connection fits under max.connections (Kafka's acceptor blocks)."""
        while not self.quotas.slot_available():
            if not self._accept_blocked:
                self._accept_blocked = True
                log.info(
                    "max.connections=%d reached: accepting again when a connection closes",
                    self.quotas.max_connections,
                )
            await self._slot_freed.wait()
        self._accept_blocked = False

    def _release_slot(self, host: str) -> None:
        self.quotas.release(host)
        self._slot_freed.set()
        self._slot_freed = trio.Event()

    async def _serve_connection(
        self,
        stream: trio.abc.Stream,
        peer: tuple[str, int],
        nursery: trio.Nursery,
        ep: Endpoint | None = None,
    ) -> None:
        ep = ep or Endpoint("PLAINTEXT", "", 0)
        session = ConnectionSession(ep.name, ep.protocol)
        try:
            if ep.ssl_context is not None:
                tls = await self._tls_handshake(stream, ep, peer)
                if tls is None:
                    self._release_slot(peer[0])
                    return
                stream = tls
                from wirebroker.security.tls import principal_from_certificate  # TLS only

                der = tls.getpeercert(binary_form=True)
                session.principal = principal_from_certificate(der)
                if der:
                    log.info(
                        "TLS client %s on listener %s from %s",
                        session.principal,
                        ep.name,
                        _show(peer),
                    )
        except BaseException:
            self._release_slot(peer[0])
            raise
        dispatcher: RequestDispatcher = self.dispatcher
        frame_limit = None
        if ep.sasl is not None:  # SASL's modules only for a SASL listener (start-up)
            from wirebroker.net.sasl import SaslGate
            from wirebroker.security.sasl_server import SaslServerSession

            gate = SaslGate(
                self.dispatcher,
                SaslServerSession(ep.sasl),
                session,
                max_frame_bytes=self.max_frame_bytes,
                failure_delay_ms=self.failed_authentication_delay_ms,
                clock_ms=self.clock_ms,
                stats=self.authentications,
            )
            dispatcher, frame_limit = gate, gate.frame_limit
        conn = Connection(
            stream,
            dispatcher,
            max_frame_bytes=self.max_frame_bytes,
            idle_timeout_s=self.idle_timeout_s,
            peer=peer,
            spawn=nursery.start_soon,  # its reply sender, if it needs one (QUEUED)
            session=session,
            frame_limit=frame_limit,
        )
        self.connections.add(conn)
        try:
            if self._stop.is_set():
                conn.begin_close()
            log.debug("connection from %s", conn.peer)
            await conn.run()
        finally:
            self.connections.discard(conn)
            self._release_slot(peer[0])

    async def _tls_handshake(
        self, stream: trio.abc.Stream, ep: Endpoint, peer: tuple[str, int]
    ) -> trio.SSLStream[trio.abc.Stream] | None:
        """The TLS stream after a handshake of at most `tls_handshake_timeout_s` in this
        connection's own task (no other connection waits for it); None when it failed: one
        info line, the socket closed."""
        assert ep.ssl_context is not None
        tls = trio.SSLStream(stream, ep.ssl_context, server_side=True)
        reason = ""
        with trio.move_on_after(self.tls_handshake_timeout_s) as scope:
            try:
                await tls.do_handshake()
                return tls
            except trio.BrokenResourceError as exc:
                cause = exc.__cause__ or exc
                reason = f"TLS handshake failed: {cause}"
                if isinstance(cause, ssl.SSLError) and "WRONG_VERSION" in str(cause).upper():
                    reason += " (a client without TLS on an SSL / SASL_SSL listener?)"
        if scope.cancelled_caught:
            reason = f"no TLS handshake within {self.tls_handshake_timeout_s:g} s"
        log.info("closing connection from %s on listener %s: %s", _show(peer), ep.name, reason)
        await trio.aclose_forcefully(stream)
        return None


def _show(peer: tuple[str, int]) -> str:
    host = f"[{peer[0]}]" if ":" in peer[0] else peer[0]
    return f"{host}:{peer[1]}"
