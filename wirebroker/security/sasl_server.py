"""SASL on a SASL_PLAINTEXT / SASL_SSL connection, before (and during re-) authentication:
a pure state machine, Kafka's SaslServerAuthenticator. No I/O, no trio: frames in, steps out;
`wirebroker.net.sasl` applies them (sends, waits the failure delay, closes, forwards).

States (Kafka's names)::

    HANDSHAKE_OR_VERSIONS   ApiVersions -> FORWARD (the dispatcher answers it, as Kafka's
                            authenticator answers it itself), stays; SaslHandshake -> below
    HANDSHAKE               (after one ApiVersions) SaslHandshake only
    AUTHENTICATE            v1 handshake: SaslAuthenticate requests carry the tokens;
                            v0 handshake: each frame *is* a raw token (no request header) and
                            each answer a size-prefixed raw token, as Kafka serves old clients
    COMPLETE                authenticated: every frame goes to the dispatcher (`FORWARD`),
                            but a SaslHandshake, which starts a re-authentication (KIP-368)
    REAUTH_BAD_MECHANISM    a re-authentication's handshake named another (enabled)
                            mechanism: answered as any handshake, then the next frame fails
                            without an answer (Kafka's state of that name)
    FAILED                  nothing more is read

Any other request before COMPLETE ("Metadata before authentication") is refused as Kafka does:
the connection is closed with one log line, "Unexpected Kafka request of type METADATA during
SASL handshake." A handshake naming a mechanism not enabled is answered
UNSUPPORTED_SASL_MECHANISM with the enabled list, then closed. A refused token is answered
SASL_AUTHENTICATION_FAILED (v1; nothing with v0 tokens) and the connection closed, both
after `connection.failed.authentication.delay.ms` (`SaslStep.FAIL`; the runtime waits).

Mechanisms: PLAIN (users and passwords from the JAAS `user_<name>="<password>"` entries, as
Kafka's PlainLoginModule; compared with `hmac.compare_digest`), SCRAM-SHA-256 / -512
(`wirebroker.security.scram.ScramServer` over a credential lookup) and OAUTHBEARER
(`wirebroker.security.oauthbearer.OAuthBearerServer`, Kafka's unsecured validator). The
principal is "User:" + the authenticated name. A success's error_message is "" (Kafka's).

Re-authentication (KIP-368), as Kafka's ReauthInfo: SaslAuthenticate v1+ answers
session_lifetime_ms, the least of `connections.max.reauth.ms` (when > 0) and the credential's
remaining lifetime (an OAUTHBEARER token's exp; even with connections.max.reauth.ms unset);
the session expires at authentication + lifetime, and a SaslHandshake (even after the expiry)
starts a re-authentication; `expired(now_ms)` tells the runtime to close the connection at the
next request that is not a re-authentication. Without either, 0 and no expiry. As Kafka's
KafkaChannel: a re-authentication may start at most once a second (MIN_REAUTH_INTERVAL_MS
after the previous one started), a handshake sooner is forwarded (the handler answers
ILLEGAL_SASL_STATE, as without re-authentication) and the session goes on; the principal may
not change ("Cannot change principals during re-authentication from User.alice: User.bob",
SASL_AUTHENTICATION_FAILED) nor the mechanism (the handshake is answered, the next frame fails
without an answer: REAUTH_BAD_MECHANISM); both close the connection.
"""

from __future__ import annotations

import enum
import hmac
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.api import ApiKey
from protocol.codec import decode_request, encode_response
from protocol.errors import ErrorCode
from protocol.exceptions import ProtocolError, UnsupportedVersion
from protocol.headers import RequestHeader
from wirebroker.security.oauthbearer import MECHANISM as OAUTHBEARER
from wirebroker.security.oauthbearer import OAuthBearerServer, UnsecuredValidator
from wirebroker.security.scram import ScramCredential, ScramError, ScramMechanism, ScramServer

#: Kafka's sasl.server.max.receive.size: the frame cap before authentication.
MAX_RECEIVE_SIZE = 524288

#: Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS, in ms.
MIN_REAUTH_INTERVAL_MS = 1000

PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = (PLAIN, "SCRAM-SHA-256", "SCRAM-SHA-512", OAUTHBEARER)

#: Objects a request decoded before authentication may make (its frame is at most 512 KiB).
_DECODE_BUDGET = 16 << 20

_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_jaas_options(text: str) -> dict[str, str]:
    """The `key="value"` options of a JAAS entry (`<LoginModule> required k="v" ...;`)."""
    return {key: value.replace('\\"', '"') for key, value in _JAAS_OPTION.findall(text)}


def jaas_users(text: str) -> dict[str, str]:
    """The `user_<name>="<password>"` entries of a PlainLoginModule JAAS config."""
    return {
        k[5:]: v for k, v in parse_jaas_options(text).items() if k.startswith("user_") and k[5:]
    }


class StepKind(enum.Enum):
    FORWARD = "forward"  # hand the frame to the dispatcher (ApiVersions; after authentication)
    REPLY = "reply"  # send `response`, read on
    FAIL = "fail"  # wait the failure delay, send `response` if any, close
    CLOSE = "close"  # close now


@dataclass(frozen=True)
class SaslStep:
    kind: StepKind
    response: bytes | None = None
    #: for the log: why the connection closes (FAIL, CLOSE) or who authenticated (REPLY)
    reason: str = ""


@dataclass
class SaslServerConfig:
    """What a SASL listener accepts."""

    mechanisms: Sequence[str]
    plain_users: Mapping[str, str] = field(default_factory=dict)
    #: SCRAM credentials: lookup(mechanism) -> (username -> credential | None)
    scram_lookup: Callable[[ScramMechanism], Callable[[str], ScramCredential | None]] | None = None
    #: connections.max.reauth.ms (0: sessions never expire but with their token's expiry)
    max_reauth_ms: int = 0
    #: OAUTHBEARER's token validator (Kafka's unsecured one, with the listener's options)
    oauthbearer: UnsecuredValidator = field(default_factory=UnsecuredValidator)


class _State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS"
    HANDSHAKE = "HANDSHAKE"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"
    FAILED = "FAILED"


class PlainServer:
    """SASL/PLAIN (RFC 4616), as Kafka's PlainSaslServer, over a user -> password map."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.authorization_id: str | None = None

    def evaluate(self, message: bytes) -> bytes:
        parts = message.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise ScramError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, user, password = parts
        if not user:
            raise ScramError("Authentication failed: username not specified", client_visible=True)
        if not password:
            raise ScramError("Authentication failed: password not specified", client_visible=True)
        if authzid and authzid != user:
            raise ScramError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username",
                client_visible=True,
            )
        expected = self._users.get(user)
        # compare even for an unknown user, so that both take the same time
        ok = hmac.compare_digest((expected or "\0").encode(), password.encode())
        if expected is None or not ok:
            raise ScramError(
                "Authentication failed: Invalid username or password", client_visible=True
            )
        self.authorization_id = user
        return b""


class SaslServerSession:
    """One connection's SASL state (see the module docstring)."""

    def __init__(self, config: SaslServerConfig) -> None:
        self.config = config
        self._state = _State.HANDSHAKE_OR_VERSIONS
        self._raw_tokens = False  # v0 handshake: tokens without Kafka framing
        self._mechanism = ""
        self._server: PlainServer | ScramServer | OAuthBearerServer | None = None
        self._reauthenticating = False
        self._reauth_started_ms: int | None = None
        self._bad_mechanism = ""  # REAUTH_BAD_MECHANISM: Kafka's text, for the log
        #: "User:<name>" once authenticated
        self.principal: str | None = None
        #: when the session expires (KIP-368), None: never
        self.expires_at_ms: int | None = None

    @property
    def mechanism(self) -> str:
        """The mechanism of the (last) handshake accepted, "" before one."""
        return self._mechanism

    @property
    def authenticated(self) -> bool:
        return self._state is _State.COMPLETE

    @property
    def max_frame_bytes(self) -> int | None:
        """The frame cap while authenticating (None: the listener's own, once authenticated)."""
        return None if self._state is _State.COMPLETE else MAX_RECEIVE_SIZE

    def expired(self, now_ms: int) -> bool:
        return self.expires_at_ms is not None and now_ms >= self.expires_at_ms

    def on_frame(self, frame: bytes | bytearray, now_ms: int) -> SaslStep:
        """What to do with the next frame received."""
        state = self._state
        if state is _State.AUTHENTICATE and self._raw_tokens:
            return self._token(bytes(frame), None, now_ms)
        if state is _State.REAUTH_BAD_MECHANISM:
            self._state = _State.FAILED
            return SaslStep(StepKind.FAIL, None, reason=self._bad_mechanism)
        try:
            header, body = decode_request(frame, max_decoded_bytes=_DECODE_BUDGET)
        except UnsupportedVersion as exc:
            if int(exc.header.api_key) == ApiKey.API_VERSIONS and state is not _State.AUTHENTICATE:
                return SaslStep(StepKind.FORWARD)  # answered v0 UNSUPPORTED_VERSION there
            return self._closed(f"unsupported request during SASL {self._phase()}: {exc}")
        except ProtocolError as exc:
            return self._closed(f"invalid request during SASL {self._phase()}: {exc}")
        key = int(header.api_key)
        if state is _State.COMPLETE:
            if key != ApiKey.SASL_HANDSHAKE or not self._may_reauthenticate(now_ms):
                return SaslStep(StepKind.FORWARD)
            self._reauthenticating, self._reauth_started_ms = True, now_ms
            self._state = _State.HANDSHAKE
        if key == ApiKey.API_VERSIONS and self._state is _State.HANDSHAKE_OR_VERSIONS:
            self._state = _State.HANDSHAKE
            return SaslStep(StepKind.FORWARD)
        if key == ApiKey.SASL_HANDSHAKE and self._state in (
            _State.HANDSHAKE_OR_VERSIONS,
            _State.HANDSHAKE,
        ):
            return self._handshake(header, str(body.mechanism))
        if key == ApiKey.SASL_AUTHENTICATE and self._state is _State.AUTHENTICATE:
            return self._token(bytes(body.auth_bytes), header, now_ms)
        name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
        return self._closed(f"Unexpected Kafka request of type {name} during SASL {self._phase()}.")

    def _may_reauthenticate(self, now_ms: int) -> bool:
        """A session with a lifetime, and no re-authentication started within the last second
        (Kafka's KafkaChannel.maybeBeginServerReauthentication)."""
        if self.expires_at_ms is None:
            return False
        last = self._reauth_started_ms
        return last is None or now_ms - last >= MIN_REAUTH_INTERVAL_MS

    def _phase(self) -> str:
        return "authentication" if self._state is _State.AUTHENTICATE else "handshake"

    def _closed(self, reason: str) -> SaslStep:
        self._state = _State.FAILED
        return SaslStep(StepKind.CLOSE, reason=reason)

    def _handshake(self, header: RequestHeader, mechanism: str) -> SaslStep:
        version, correlation = int(header.api_version), int(header.correlation_id)
        enabled = list(self.config.mechanisms)
        error = ErrorCode.NONE if mechanism in enabled else ErrorCode.UNSUPPORTED_SASL_MECHANISM
        response = _encode(
            ApiKey.SASL_HANDSHAKE,
            version,
            correlation,
            {"error_code": int(error), "mechanisms": enabled},
        )
        if error != ErrorCode.NONE:
            self._state = _State.FAILED
            return SaslStep(
                StepKind.FAIL,
                response,
                reason=f"Unsupported SASL mechanism {mechanism} (enabled: {', '.join(enabled)})",
            )
        if self._reauthenticating and mechanism != self._mechanism:
            self._state = _State.REAUTH_BAD_MECHANISM
            self._bad_mechanism = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._mechanism}'"
            )
            return SaslStep(StepKind.REPLY, response)
        self._mechanism = mechanism
        self._raw_tokens = version == 0
        self._server = self._mechanism_server(mechanism)
        self._state = _State.AUTHENTICATE
        return SaslStep(StepKind.REPLY, response)

    def _mechanism_server(self, mechanism: str) -> PlainServer | ScramServer | OAuthBearerServer:
        if mechanism == PLAIN:
            return PlainServer(self.config.plain_users)
        if mechanism == OAUTHBEARER:
            return OAuthBearerServer(self.config.oauthbearer)
        scram = ScramMechanism.from_name(mechanism)
        assert scram is not None
        lookup = self.config.scram_lookup
        return ScramServer(scram, lookup(scram) if lookup else (lambda _user: None))

    def _token(self, token: bytes, header: RequestHeader | None, now_ms: int) -> SaslStep:
        server = self._server
        assert server is not None
        try:
            if isinstance(server, OAuthBearerServer):
                challenge = server.evaluate(token, now_ms)
            else:
                challenge = server.evaluate(token)
        except ScramError as exc:
            self._state = _State.FAILED
            message = exc.client_message(self._mechanism, reauthentication=self._reauthenticating)
            response = None
            if header is not None:
                response = self._authenticate_response(
                    header, ErrorCode.SASL_AUTHENTICATION_FAILED, message, b"", 0
                )
            reason = exc.message
            if isinstance(server, OAuthBearerServer) and server.refusal:
                reason = f"{exc.message}: {server.refusal}"
            return SaslStep(StepKind.FAIL, response, reason=reason)
        done = server.authorization_id is not None and (
            isinstance(server, PlainServer) or server.complete
        )
        lifetime = 0
        if done:
            name = server.authorization_id
            if self._reauthenticating and self.principal != f"User:{name}":
                self._state = _State.FAILED
                reason = (
                    "Cannot change principals during re-authentication from "
                    f"{(self.principal or '').replace(':', '.', 1)}: User.{name}"
                )
                response = None
                if header is not None:
                    response = self._authenticate_response(
                        header, ErrorCode.SASL_AUTHENTICATION_FAILED, reason, b"", 0
                    )
                return SaslStep(StepKind.FAIL, response, reason=reason)
            self.principal = f"User:{name}"
            self._state = _State.COMPLETE
            self._reauthenticating = False
            lifetime = self._session_lifetime(server, now_ms)
        if header is None:
            response = len(challenge).to_bytes(4, "big") + challenge
        else:
            response = self._authenticate_response(header, ErrorCode.NONE, "", challenge, lifetime)
        return SaslStep(StepKind.REPLY, response, reason=(self.principal or "") if done else "")

    def _session_lifetime(
        self, server: PlainServer | ScramServer | OAuthBearerServer, now_ms: int
    ) -> int:
        """KIP-368, as Kafka's ReauthInfo: the least of connections.max.reauth.ms (if > 0) and
        the credential's remaining lifetime (a token's exp), never negative; 0 and no expiry
        when there is neither."""
        bounds = [self.config.max_reauth_ms] if self.config.max_reauth_ms > 0 else []
        credential_expiry = getattr(server, "expires_at_ms", None)
        if credential_expiry is not None:
            bounds.append(max(credential_expiry - now_ms, 0))
        if not bounds:
            self.expires_at_ms = None
            return 0
        lifetime = min(bounds)
        self.expires_at_ms = now_ms + lifetime
        return lifetime

    @staticmethod
    def _authenticate_response(
        header: RequestHeader,
        error: ErrorCode,
        message: str | None,
        auth_bytes: bytes,
        lifetime: int,
    ) -> bytes:
        return _encode(
            ApiKey.SASL_AUTHENTICATE,
            int(header.api_version),
            int(header.correlation_id),
            {
                "error_code": int(error),
                "error_message": message,
                "auth_bytes": auth_bytes,
                "session_lifetime_ms": lifetime,
            },
        )


def _encode(key: ApiKey, version: int, correlation_id: int, body: dict[str, Any]) -> bytes:
    frame = encode_response(int(key), version, correlation_id, body)
    assert isinstance(frame, bytes)  # no file regions in a SASL answer
    return frame
