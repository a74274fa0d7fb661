"""The SASL gate of a SASL_PLAINTEXT / SASL_SSL connection: the trio side of
`wirebroker.security.sasl_server.SaslServerSession` (the pure state machine).

It stands between the connection and the dispatcher (it is a `RequestDispatcher` itself):
each frame goes to the state machine first, whose step is applied here:

    FORWARD   the dispatcher serves the frame (ApiVersions before authentication; everything
              once authenticated), with the connection's session (listener, principal)
    REPLY     the SASL answer is sent; on success the principal is set and logged (info)
              and the listener's successful authentications counted (`AuthenticationStats`)
    FAIL      counted as a failed authentication, one warning line ("Failed authentication
              with <peer> (<reason>)"), then
              `connection.failed.authentication.delay.ms` later the answer (if any) is sent and
              the connection closed, as Kafka delays the close of a failed authentication;
              the wait is trio's clock (a test's MockClock moves it)
    CLOSE     one warning line, closed at once (a request that is not allowed before
              authentication, "Unexpected Kafka request of type METADATA during SASL handshake.")

A session past its lifetime (KIP-368, `connections.max.reauth.ms`) is closed at its next
request that does not start a re-authentication (one info line).
While authenticating, frames are capped at 512 KiB (`frame_limit`, Kafka's
sasl.server.max.receive.size); the connection asks after each request.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import NamedTuple

import trio

from protocol.framing import GatherFrame
from wirebroker.net.dispatch import DispatchReply, RequestDispatcher
from wirebroker.security.auth_stats import AuthenticationStats
from wirebroker.security.sasl_server import SaslServerSession, StepKind
from wirebroker.security.session import ConnectionSession

log = logging.getLogger("wirebroker.net")


class _Reply(NamedTuple):
    response: bytes | GatherFrame | None
    close: bool = False
    later: Callable[[], Awaitable[DispatchReply]] | None = None
    throttle_ms: int = 0
    delay_response: bool = False


class SaslGate:
    """One connection's SASL gate (see the module docstring)."""

    def __init__(
        self,
        inner: RequestDispatcher,
        sasl: SaslServerSession,
        session: ConnectionSession,
        *,
        max_frame_bytes: int,
        failure_delay_ms: int,
        clock_ms: Callable[[], int],
        stats: AuthenticationStats | None = None,
    ) -> None:
        self.inner = inner
        self.sasl = sasl
        self.session = session
        self.max_frame_bytes = max_frame_bytes
        self.failure_delay_ms = failure_delay_ms
        self.clock_ms = clock_ms
        self.stats = stats if stats is not None else AuthenticationStats()

    def frame_limit(self) -> int:
        cap = self.sasl.max_frame_bytes
        return self.max_frame_bytes if cap is None else min(cap, self.max_frame_bytes)

    async def dispatch(
        self,
        frame: bytes | bytearray,
        client_host: str,
        peer: str,
        session: ConnectionSession | None = None,
    ) -> DispatchReply:
        now = self.clock_ms()
        was_authenticated = self.sasl.authenticated
        step = self.sasl.on_frame(frame, now)
        if step.kind is StepKind.FORWARD:
            if was_authenticated and self.sasl.expired(now):
                log.info(
                    "closing connection from %s: the SASL session of %s expired "
                    "(connections.max.reauth.ms) and the client did not re-authenticate",
                    peer,
                    self.session.principal,
                )
                return _Reply(None, close=True)
            return await self.inner.dispatch(frame, client_host, peer, self.session)
        if step.kind is StepKind.REPLY:
            if step.reason:
                self.session.principal = step.reason
                self.stats.success(self.session.listener, self.sasl.mechanism)
                log.info(
                    "authenticated %s on listener %s from %s",
                    step.reason,
                    self.session.listener,
                    peer,
                )
            return _Reply(step.response)
        if step.kind is StepKind.FAIL:
            self.stats.failure(self.session.listener, self.sasl.mechanism)
            log.warning("Failed authentication with %s (%s)", peer, step.reason)
            await trio.sleep(max(self.failure_delay_ms, 0) / 1000)
            return _Reply(step.response, close=True)
        log.warning("closing connection from %s: %s", peer, step.reason)
        return _Reply(None, close=True)
