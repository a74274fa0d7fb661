"""A minimal Kafka client for broker-to-broker requests (trio): one connection, one request at
a time.

`BrokerConnection.open(host, port)` connects (over TCP; a simulation may substitute its network:
`wirebroker.transport`); `request(api_key, version, body)` encodes the
request with `protocol.codec.encode_request` (header v1 or v2 as the API's flexible versions
say), sends it with one `send_all`, reads frames (`protocol.framing.FrameDecoder`, capped at
`max_frame_bytes`; a large one, such as a Fetch answer, received in place:
`transport.receive_into`) until the response arrives, checks its correlation id and returns
the decoded body (a construct Container with the schema's snake_case field names). The caller
bounds the wait (`trio.fail_after`). Any failure (`OSError`, `trio.BrokenResourceError`, an EOF,
a frame that does not decode, a wrong correlation id) raises `BrokerConnectionError`; the
connection is then unusable and is closed.

No ApiVersions exchange: the peers are wirebroker brokers of the same cluster, which serve the
versions this broker sends.

Security: `SECURITY`, the inter-broker listener's client side (`security.client`), which
`wirebroker.broker.Broker` sets in its task (trio copies it into every task it spawns, as the
transport's `ContextVar`): over TLS the stream is wrapped and the handshake done at `open`;
with SASL, `open` authenticates (SaslHandshake v1, then SaslAuthenticate v2 per token) before
the first request. A refused authentication is a `BrokerConnectionError`. `security.client`
(TLS contexts, JKS, SASL mechanisms: ~15 ms) is imported only when a SASL peer is met.

Re-authentication (KIP-368), as Kafka's own clients do it: when the peer answers a session
lifetime (`connections.max.reauth.ms`, an OAUTHBEARER token's expiry), the connection
authenticates again on itself (the same exchange) before its first request sent after
REAUTH_FRACTION of that lifetime (trio's clock), so the peer, which closes a connection whose
session expired at its next request, never closes a replica fetcher's or a marker sender's
connection. A connection idle past the whole lifetime re-authenticates just the same (a
SaslHandshake on an expired session starts a re-authentication, in Kafka too).
"""

from __future__ import annotations

import itertools
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import trio

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.framing import FrameDecoder
from wirebroker.transport import current as current_transport
from wirebroker.transport import receive_into

if TYPE_CHECKING:
    from construct import Container

    from wirebroker.security.client import ClientSecurity

__all__ = ["BrokerConnection", "BrokerConnectionError"]

_RECEIVE_MAX = 1 << 20

#: Re-authenticate after this fraction of the session lifetime (librdkafka's 90%).
REAUTH_FRACTION = 0.9

#: The inter-broker listener's security, client side (None: PLAINTEXT); see the docstring.
SECURITY: ContextVar[ClientSecurity | None] = ContextVar("wirebroker_peer_security", default=None)


class BrokerConnectionError(Exception):
    """The connection failed or the peer answered something unreadable; it is closed."""


class BrokerConnection:
    def __init__(
        self,
        stream: trio.abc.Stream,
        address: tuple[str, int],
        *,
        client_id: str,
        max_frame_bytes: int,
    ) -> None:
        self.stream = stream
        self.address = address
        self.client_id = client_id
        self._decoder = FrameDecoder(max_frame_bytes)
        self._ids = itertools.count(1)
        self.closed = False
        self._security: ClientSecurity | None = None
        #: trio time after which the next request re-authenticates first (None: never)
        self.reauthenticate_at: float | None = None
        #: authentications done on this connection (the first one included)
        self.authentications = 0

    @classmethod
    async def open(
        cls, host: str, port: int, *, client_id: str, max_frame_bytes: int
    ) -> BrokerConnection:
        security = SECURITY.get()
        try:
            stream: trio.abc.Stream = await current_transport().connect(host, port)
        except OSError as exc:
            raise BrokerConnectionError(f"cannot connect to {host}:{port}: {exc}") from exc
        if security is not None and security.ssl_context is not None:
            tls = trio.SSLStream(stream, security.ssl_context, server_hostname=host)
            try:
                await tls.do_handshake()
            except (trio.BrokenResourceError, OSError) as exc:
                await trio.aclose_forcefully(stream)
                cause = exc.__cause__ or exc
                raise BrokerConnectionError(f"TLS to {host}:{port} failed: {cause}") from exc
            stream = tls
        conn = cls(stream, (host, port), client_id=client_id, max_frame_bytes=max_frame_bytes)
        if security is not None and security.sasl_mechanism is not None:
            await conn._authenticate(security)
        return conn

    async def _authenticate(self, security: ClientSecurity) -> None:
        """SaslHandshake v1 + SaslAuthenticate v2 per token; BrokerConnectionError if refused."""
        mechanism = security.sasl_mechanism
        self._security, self.reauthenticate_at = security, None
        answer = await self.request(int(ApiKey.SASL_HANDSHAKE), 1, {"mechanism": mechanism})
        if answer.error_code:
            await self.aclose()
            raise BrokerConnectionError(
                f"{self._peer()}: SASL mechanism {mechanism} refused "
                f"(error {answer.error_code}, enabled {list(answer.mechanisms)})"
            )
        from wirebroker.security.client import sasl_exchange  # SASL peers only (start-up)

        tokens = sasl_exchange(security)
        try:
            token = next(tokens)
            while True:
                answer = await self.request(int(ApiKey.SASL_AUTHENTICATE), 2, {"auth_bytes": token})
                if answer.error_code:
                    raise BrokerConnectionError(
                        f"{self._peer()}: SASL authentication as {security.username} failed: "
                        f"{answer.error_message}"
                    )
                token = tokens.send(bytes(answer.auth_bytes))
        except StopIteration:
            self.authentications += 1
            lifetime_ms = int(answer.session_lifetime_ms)
            if lifetime_ms > 0:
                self.reauthenticate_at = trio.current_time() + REAUTH_FRACTION * lifetime_ms / 1000
            return
        except (BrokerConnectionError, ValueError) as exc:
            await self.aclose()
            raise BrokerConnectionError(str(exc)) from exc

    async def request(self, api_key: int, version: int, body: dict[str, Any]) -> Container:
        """Send one request and return its decoded response body."""
        if self.closed:
            raise BrokerConnectionError("connection closed")
        due = self.reauthenticate_at
        if due is not None and self._security is not None and trio.current_time() >= due:
            await self._authenticate(self._security)  # KIP-368: the session is ending
        correlation_id = next(self._ids) & 0x7FFFFFFF
        frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        try:
            await self.stream.send_all(frame)
            payload = await self._read_frame()
            got, response = decode_response(api_key, version, payload)
        except BrokerConnectionError:
            await self.aclose()
            raise
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            await self.aclose()
            raise BrokerConnectionError(f"{self._peer()}: {exc}") from exc
        except Exception as exc:  # an undecodable answer
            await self.aclose()
            raise BrokerConnectionError(f"{self._peer()}: bad response: {exc!r}") from exc
        if got != correlation_id:
            await self.aclose()
            raise BrokerConnectionError(
                f"{self._peer()}: correlation id {got}, expected {correlation_id}"
            )
        return response

    async def _read_frame(self) -> bytes | bytearray:
        while True:
            frame = self._decoder.next_frame()
            if frame is not None:
                return frame
            into = self._decoder.receive_buffer()  # a large answer lands in place
            if into is not None:
                try:
                    got = await receive_into(self.stream, into)
                finally:
                    into.release()  # no view may outlive the frame (its reuse)
                if not got:
                    raise BrokerConnectionError(f"{self._peer()}: connection closed by the peer")
                self._decoder.received_into(got)
                continue
            want = min(max(self._decoder.bytes_wanted, 65536), _RECEIVE_MAX)
            data = await self.stream.receive_some(want)
            if not data:
                raise BrokerConnectionError(f"{self._peer()}: connection closed by the peer")
            self._decoder.receive_data(bytes(data))  # no copy: a socket gives bytes

    def _peer(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            with trio.CancelScope(shield=True):
                await self.stream.aclose()
