"""SASL/OAUTHBEARER, the server side (RFC 7628), with Kafka's unsecured JWS validator: a pure
state machine, no I/O, no trio, the clock given to each call.

    validator = UnsecuredValidator(UnsecuredOptions.from_jaas(jaas_options))
    server = OAuthBearerServer(validator)
    server.evaluate(initial_response, now_ms)   # b"" (success) or a JSON error challenge
    server.evaluate(b"\\x01", now_ms)            # after an error challenge: raises ScramError
    server.complete, server.authorization_id, server.expires_at_ms

The client's initial response (RFC 7628 section 3.1, Kafka's OAuthBearerClientInitialResponse)
is `n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[key=value\\x01]...\\x01`. A response that is
not one, or whose `auth` is missing or not a Bearer token, is refused with Kafka's fixed text
(`ScramError`, not client-visible: "Authentication failed during authentication due to invalid
credentials with SASL mechanism OAUTHBEARER"). Extensions are accepted (the unsecured
validator accepts every extension, as Kafka's does).

A token the validator refuses is not an error yet (RFC 7628 section 3.2.2): the server answers
a JSON status as its challenge, `{"status":"invalid_token"}` or, when only the required scope
is missing, `{"status":"insufficient_scope", "scope":"[a, b]"}` (Kafka's text, its Java list
of the required scope). The client acknowledges it with a single `\\x01`, which the server
refuses with that JSON as the (client-visible) error message. Anything else instead of the
`\\x01` is a new initial response, as in Kafka.

Kafka's OAuthBearerUnsecuredValidatorCallbackHandler semantics (checked against Kafka 4.4:
tests/oracle/test_oauthbearer_authentication.py). The token is an unsecured JWS compact
serialization, `base64url(header).base64url(claims).` with:
- no `..`, exactly three dot-separated parts, the last (signature) empty;
- header and claims JSON objects (anything else reads as an empty object), `alg` "none"
  (a header without `alg` is refused as invalid_token; Kafka 4.4 fails on it and closes the
  connection without an answer);
- `exp` a number (seconds), required; the token is refused when
  `now - unsecuredValidatorAllowableClockSkewMs >= exp * 1000`;
- the principal claim (`unsecuredValidatorPrincipalClaimName`, default `sub`) a non-blank
  string; the principal is `User:<it>`;
- `iat` optional, a number; refused when `iat * 1000 > now + skew`, or when `exp <= iat`;
- the scope claim (`unsecuredValidatorScopeClaimName`, default `scope`) a string (one scope
  item, as Kafka reads it) or a list of strings; every item of
  `unsecuredValidatorRequiredScope` (space-delimited) must be in it.
An authorization id, if given, must equal the principal name (Kafka's client-visible text).
The session lifetime (KIP-368) is bounded by the token: `expires_at_ms` is `exp` in ms
(rounded as Java's Math.round).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wirebroker.security.scram import ScramError

__all__ = [
    "MECHANISM",
    "OAuthBearerServer",
    "TokenRefused",
    "UnsecuredOptions",
    "UnsecuredToken",
    "UnsecuredValidator",
    "initial_response",
    "unsecured_token",
]

MECHANISM = "OAUTHBEARER"
_SEP = "\x01"
# Kafka's grammar (its OAuthBearerClientInitialResponse): SASL names without ',' and '='.
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01)*"
_INITIAL = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01")
_AUTH = re.compile(r"(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_.a-zA-Z0-9]+)")
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


class TokenRefused(Exception):
    """The validator refused a token: `reason` for the log, `scope` (Kafka's text of the
    required scope) when only the scope is missing."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.scope = scope

    def status_json(self) -> str:
        """Kafka's JSON error challenge (its own formatting: ", " between members)."""
        if self.scope is None:
            return '{"status":"invalid_token"}'
        return '{"status":"insufficient_scope", "scope":' + json.dumps(self.scope) + "}"


@dataclass(frozen=True)
class UnsecuredOptions:
    """The validator's JAAS options (Kafka's names in `from_jaas`)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    @classmethod
    def from_jaas(cls, options: Mapping[str, str]) -> UnsecuredOptions:
        """From OAuthBearerLoginModule's options; ValueError names a bad one (Kafka finds it
        at the first login and refuses every token; wirebroker refuses to start)."""
        principal = options.get("unsecuredValidatorPrincipalClaimName", "sub").strip() or "sub"
        scope_claim = options.get("unsecuredValidatorScopeClaimName", "scope").strip() or "scope"
        required = []
        for item in options.get("unsecuredValidatorRequiredScope", "").split(" "):
            if item and not _SCOPE_ITEM.fullmatch(item):
                raise ValueError(f"unsecuredValidatorRequiredScope: invalid scope value: {item}")
            if item:
                required.append(item)
        raw_skew = options.get("unsecuredValidatorAllowableClockSkewMs", "").strip() or "0"
        try:
            skew = int(raw_skew)
        except ValueError:
            skew = -1
        if skew < 0:
            raise ValueError(
                f"unsecuredValidatorAllowableClockSkewMs={raw_skew}: not a non-negative integer"
            )
        return cls(principal, scope_claim, tuple(required), skew)


@dataclass(frozen=True)
class UnsecuredToken:
    """A validated token."""

    principal_name: str
    #: exp, in ms
    expires_at_ms: int
    scope: frozenset[str]
    claims: Mapping[str, Any]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _java_round_ms(seconds: float) -> int:
    return math.floor(seconds * 1000 + 0.5)


def _json_object(part: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise TokenRefused("malformed Base64 URL encoded value") from None
    if len(part) % 4 == 1:
        raise TokenRefused("malformed Base64 URL encoded value")
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TokenRefused("malformed JSON") from None
    return value if isinstance(value, dict) else {}  # Kafka reads a non-object's fields: none


def _claim(claims: Mapping[str, Any], name: str, kind: str) -> Any:
    value = claims.get(name)
    if value is None:
        return None
    ok = (
        _is_number(value)
        if kind == "Number"
        else isinstance(value, str if kind == "String" else list)
    )
    if not ok:
        raise TokenRefused(f"The '{name}' claim was not of type {kind}")
    return value


class UnsecuredValidator:
    """Kafka's unsecured JWS validation (see the module docstring)."""

    def __init__(self, options: UnsecuredOptions | None = None) -> None:
        self.options = options or UnsecuredOptions()

    def validate(self, token: str, now_ms: int) -> UnsecuredToken:
        """The token, or `TokenRefused`."""
        opts = self.options
        if ".." in token:
            raise TokenRefused("Malformed compact serialization contains '..'")
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenRefused(
                "Unsecured JWS compact serializations must have 3 dot-separated "
                "Base64URL-encoded values"
            )
        header, claims = _json_object(parts[0]), _json_object(parts[1])
        if header.get("alg") is None:
            raise TokenRefused("JWS header must have an Algorithm value")
        if header["alg"] != "none":
            raise TokenRefused("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise TokenRefused("Unsecured JWS must not contain a digital signature")
        scope = self._scope(claims)
        exp = _claim(claims, "exp", "Number")
        if exp is None:
            raise TokenRefused("No expiration time in JWT")
        principal = _claim(claims, opts.principal_claim, "String")
        if principal is None or not principal.strip():
            raise TokenRefused(f"No principal name in JWT claim: {opts.principal_claim}")
        iat = _claim(claims, "iat", "Number")
        skew = opts.allowable_clock_skew_ms
        if iat is not None and 1000 * iat > now_ms + skew:
            raise TokenRefused(
                f"The Issued At value ({iat} seconds) was after the indicated time "
                f"({now_ms} ms) plus allowable clock skew ({skew} ms)"
            )
        if now_ms - skew >= 1000 * exp:
            raise TokenRefused(
                f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was "
                f"on or after the Expiration Time value ({exp} seconds)"
            )
        if iat is not None and exp <= iat:
            raise TokenRefused(
                f"The Expiration Time time ({exp} seconds) was not after the Issued At time "
                f"({iat} seconds)"
            )
        for item in opts.required_scope:
            if item not in scope:
                required = "[" + ", ".join(opts.required_scope) + "]"
                raise TokenRefused(
                    f"The provided scope ({sorted(scope)}) was missing a required scope "
                    f"({item}). All required scope elements: {required}",
                    scope=required,
                )
        return UnsecuredToken(principal, _java_round_ms(exp), frozenset(scope), claims)

    def _scope(self, claims: Mapping[str, Any]) -> set[str]:
        name = self.options.scope_claim
        value = claims.get(name)
        if isinstance(value, str):
            return {value.strip()} if value.strip() else set()
        items = _claim(claims, name, "List") or []
        # items that are not strings are no scope (Kafka 4.4 passes them over too)
        return {item.strip() for item in items if isinstance(item, str) and item.strip()}


class OAuthBearerServer:
    """One OAUTHBEARER exchange (see the module docstring)."""

    def __init__(self, validator: UnsecuredValidator) -> None:
        self.validator = validator
        self.complete = False
        self.authorization_id: str | None = None
        #: the token's expiry (ms), once complete
        self.expires_at_ms: int | None = None
        self.extensions: dict[str, str] = {}
        self._error: str | None = None  # the JSON status sent, awaiting the client's %x01

    def evaluate(self, message: bytes, now_ms: int) -> bytes:
        if message == b"\x01" and self._error is not None:
            raise ScramError(self._error, client_visible=True)
        self._error = None
        text = message.decode("utf-8", "replace")
        match = _INITIAL.fullmatch(text)
        if match is None:
            raise ScramError("Invalid OAUTHBEARER client first message")
        pairs: dict[str, str] = {}
        for pair in match["kvpairs"].split(_SEP):
            if pair:
                key, _, value = pair.partition("=")
                pairs[key] = value
        auth = pairs.pop("auth", None)
        if auth is None:
            raise ScramError("Invalid OAUTHBEARER client first message: 'auth' not specified")
        bearer = _AUTH.fullmatch(auth)
        if bearer is None:
            raise ScramError("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if bearer["scheme"].lower() != "bearer":
            raise ScramError(f"Invalid scheme in OAUTHBEARER client first message: {auth}")
        try:
            token = self.validator.validate(bearer["token"], now_ms)
        except TokenRefused as refusal:
            self._error = refusal.status_json()
            self.refusal = refusal.reason
            return self._error.encode()
        authzid = match["authzid"] or ""
        if authzid and authzid != token.principal_name:
            raise ScramError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that "
                f"is different from the token's principal name ({token.principal_name})",
                client_visible=True,
            )
        self.extensions = pairs
        self.authorization_id = token.principal_name
        self.expires_at_ms = token.expires_at_ms
        self.complete = True
        return b""

    #: the validator's reason for the last refused token (for the log)
    refusal: str = ""


def unsecured_token(claims: Mapping[str, Any]) -> str:
    """An unsecured JWS (`alg` none) with these claims, as Kafka's unsecured login module and
    librdkafka's `sasl.oauthbearer.config` make them (for tests and the broker's own client)."""

    def part(value: Mapping[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}."


def initial_response(token: str, authzid: str = "", **extensions: str) -> bytes:
    """The client's initial response carrying `token` (RFC 7628 section 3.1)."""
    ext = "".join(f"{k}={v}{_SEP}" for k, v in extensions.items())
    gs2 = f"n,a={authzid}," if authzid else "n,,"
    return f"{gs2}{_SEP}auth=Bearer {token}{_SEP}{ext}{_SEP}".encode()
