"""OAUTHBEARER exchanges over SaslHandshake v1 / SaslAuthenticate v2 with Kafka's unsecured
tokens: the same messages to Apache Kafka 4.4 (a Kafka of its own with a SASL_PLAINTEXT
listener for OAUTHBEARER, its default unsecured validator, `unsecuredValidatorRequiredScope`
set) and to a wirebroker with the same listener settings, with the same assertions: success
(and the session lifetime KIP-368 derives from the token's exp, with
connections.max.reauth.ms unset), the error exchange for an expired token, a token without
`sub`, a signed token and one missing the required scope (the JSON status as the challenge,
then, after the client's %x01, SASL_AUTHENTICATION_FAILED with that JSON as the message), a
malformed initial response and an authorization id that is not the token's principal
(Kafka's texts), malformed tokens (exp not a number, scope of the wrong type, not base64).
Two differences are asserted as such, where Kafka fails on its own (an exception it does not
catch) and closes the connection without an answer: a scheme other than Bearer (wirebroker
answers the fixed text) and a JWS header without `alg` (wirebroker: invalid_token)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _oracle_sasl import kafka_with_sasl, wire_opener, wirebroker_with_sasl

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.security.oauthbearer import initial_response, unsecured_token

JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";'
)
GENERIC = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism OAUTHBEARER"
)
INVALID = '{"status":"invalid_token"}'
SCOPE = '{"status":"insufficient_scope", "scope":"[kafka]"}'
FAILED = ErrorCode.SASL_AUTHENTICATION_FAILED


def _listener_settings() -> dict[str, str]:
    return {
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "0",
    }


@pytest.fixture(scope="module")
def kafka_oauth() -> Iterator[str]:
    with kafka_with_sasl(_listener_settings()) as (address, _kafka):
        yield address


@pytest.fixture(scope="module")
def wirebroker_oauth() -> Iterator[str]:
    with wirebroker_with_sasl(_listener_settings()) as (address, _handle):
        yield address


Send = Callable[[bytes], tuple[int, str | None, bytes, int]]


@pytest.fixture(params=["apache-kafka", "wirebroker"])
def exchange(request: pytest.FixtureRequest) -> Iterator[Callable[[], Send]]:
    fixture = "kafka_oauth" if request.param == "apache-kafka" else "wirebroker_oauth"
    with wire_opener(str(request.getfixturevalue(fixture))) as open_wire:

        def open_exchange() -> Send:
            wire = open_wire()
            answer = wire.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
            assert (answer.error_code, list(answer.mechanisms)) == (0, ["OAUTHBEARER"])

            def send(message: bytes) -> tuple[int, str | None, bytes, int]:
                a = wire.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": message})
                return a.error_code, a.error_message, bytes(a.auth_bytes), a.session_lifetime_ms

            return send

        yield open_exchange


def _token(**claims: Any) -> str:
    now = int(time.time())
    base = {"sub": "alice", "iat": now, "exp": now + 120, "scope": ["kafka", "other"]}
    return unsecured_token({k: v for k, v in (base | claims).items() if v is not None})


def test_a_good_token(exchange: Callable[[], Send]) -> None:
    code, message, auth, lifetime = exchange()(initial_response(_token()))
    assert (code, message, auth) == (0, "", b"")
    assert 100_000 < lifetime <= 120_000  # the token's remaining lifetime


def test_a_single_string_scope_is_one_item(exchange: Callable[[], Send]) -> None:
    code, message, auth, _ = exchange()(initial_response(_token(scope="kafka")))
    assert (code, message, auth) == (0, "", b"")


@pytest.mark.parametrize(
    ("claims", "status"),
    [
        ({"exp": int(time.time()) - 10, "iat": int(time.time()) - 100}, INVALID),
        ({"sub": None}, INVALID),
        ({"exp": None}, INVALID),
        ({"scope": ["other"]}, SCOPE),
        ({"scope": "kafka other"}, SCOPE),  # one item "kafka other"
    ],
)
def test_a_refused_token_and_the_error_exchange(
    exchange: Callable[[], Send], claims: dict[str, Any], status: str
) -> None:
    send = exchange()
    code, message, auth, _ = send(initial_response(_token(**claims)))
    assert (code, message, auth.decode()) == (0, "", status)
    code, message, auth, _ = send(b"\x01")
    assert (code, message, auth) == (FAILED, status, b"")


def test_a_signed_token_is_invalid(exchange: Callable[[], Send]) -> None:
    send = exchange()
    signed = _token() + "c2lnbmF0dXJl"
    assert send(initial_response(signed))[:3] == (0, "", INVALID.encode())


@pytest.mark.parametrize(
    "message", [b"n,,\x01\x01", b"\x01", b"n,,\x01auth=Bearer a b\x01\x01", b"y,,\x01\x01"]
)
def test_a_malformed_initial_response(exchange: Callable[[], Send], message: bytes) -> None:
    assert exchange()(message)[:3] == (FAILED, GENERIC, b"")


def test_a_scheme_other_than_bearer(
    exchange: Callable[[], Send], request: pytest.FixtureRequest
) -> None:
    """The one difference: Kafka 4.4 fails while it formats its refusal (it asks a matcher
    for a group of another pattern) and closes the connection without an answer; wirebroker
    answers the fixed text, as Kafka does for every other malformed initial response."""
    send = exchange()
    if "apache-kafka" in request.node.callspec.id:
        with pytest.raises(ConnectionError):
            send(b"n,,\x01auth=Basic abc\x01\x01")
    else:
        assert send(b"n,,\x01auth=Basic abc\x01\x01")[:3] == (FAILED, GENERIC, b"")


def test_an_authorization_id_other_than_the_principal(exchange: Callable[[], Send]) -> None:
    code, message, _, _ = exchange()(initial_response(_token(), authzid="bob"))
    assert (code, message) == (
        FAILED,
        "Authentication failed: Client requested an authorization id (bob) that is different "
        "from the token's principal name (alice)",
    )


def _part(value: Any) -> str:
    raw = json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


NO_ALG = [
    f"{_part({'typ': 'JWT'})}.{_part({'sub': 'alice', 'exp': 4102444800})}.",
    f"{_part([1])}.{_part({'sub': 'alice', 'exp': 4102444800})}.",  # header not an object
]


@pytest.mark.parametrize(
    ("token", "status"),
    [
        (f"{_part({'alg': 'none'})}.{_part({'sub': 'alice', 'exp': '4102444800'})}.", INVALID),
        (
            f"{_part({'alg': 'none'})}.{_part({'sub': 'a', 'exp': 4102444800, 'scope': 7})}.",
            INVALID,
        ),
        (
            f"{_part({'alg': 'none'})}.{_part({'sub': 'a', 'exp': 4102444800, 'scope': [7]})}.",
            SCOPE,
        ),
        ("abcde.abc.", INVALID),
    ],
)
def test_malformed_tokens(exchange: Callable[[], Send], token: str, status: str) -> None:
    send = exchange()
    assert send(initial_response(token))[:3] == (0, "", status.encode())
    assert send(b"\x01")[:3] == (FAILED, status, b"")


@pytest.mark.parametrize("token", NO_ALG)
def test_a_header_without_alg(
    exchange: Callable[[], Send], request: pytest.FixtureRequest, token: str
) -> None:
    """The other difference: Kafka 4.4 fails on a header without `alg` (or not an object) and
    closes the connection without an answer; wirebroker refuses the token (invalid_token)."""
    send = exchange()
    if "apache-kafka" in request.node.callspec.id:
        with pytest.raises(ConnectionError):
            send(initial_response(token))
    else:
        assert send(initial_response(token))[:3] == (0, "", INVALID.encode())
