"""OAUTHBEARER's server side and Kafka's unsecured JWS validator
(wirebroker/security/oauthbearer.py), with an injected clock; its use by the SASL state machine
(session lifetime bounded by the token) and the broker's own client (security/client.py)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from tests.unit.security.test_sasl_server import _answer, _frame
from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.net.endpoints import sasl_config
from wirebroker.security.client import ClientSecurity, sasl_exchange, unsecured_claims
from wirebroker.security.oauthbearer import (
    OAuthBearerServer,
    TokenRefused,
    UnsecuredOptions,
    UnsecuredValidator,
    initial_response,
    unsecured_token,
)
from wirebroker.security.sasl_server import SaslServerConfig, SaslServerSession, StepKind
from wirebroker.security.scram import ScramError

NOW_MS = 1_700_000_000_000
NOW_S = NOW_MS // 1000
GENERIC = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism OAUTHBEARER"
)


def _token(**claims: Any) -> str:
    return unsecured_token({"sub": "alice", "iat": NOW_S, "exp": NOW_S + 60} | claims)


def _b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _validate(token: str, options: UnsecuredOptions | None = None, now: int = NOW_MS) -> Any:
    return UnsecuredValidator(options).validate(token, now)


def test_a_good_token() -> None:
    token = _validate(_token(scope=["read", " write "]))
    assert token.principal_name == "alice"
    assert token.expires_at_ms == (NOW_S + 60) * 1000
    assert token.scope == {"read", "write"}


@pytest.mark.parametrize(
    "token",
    [
        _token(sub=None),  # no principal
        _token(sub="  "),  # blank
        _token(sub=7),  # not a string
        unsecured_token({"sub": "alice"}),  # no exp
        _token(exp=str(NOW_S + 60)),  # exp not a number
        _token(exp=True),  # a JSON boolean is no number
        _token(exp=NOW_S),  # now >= exp
        _token(exp=NOW_S - 1),
        _token(iat=NOW_S + 10),  # issued in the future
        _token(iat=NOW_S + 60, exp=NOW_S + 60),  # exp not after iat
        _token(iat="yesterday"),
        _token(scope=7),
        f"{_b64({'alg': 'HS256'})}.{_b64({'sub': 'a', 'exp': NOW_S + 9})}.",
        f"{_b64({'typ': 'JWT'})}.{_b64({'sub': 'a', 'exp': NOW_S + 9})}.",  # no alg
        f"{_b64({'alg': 'none'})}.{_b64({'sub': 'a', 'exp': NOW_S + 9})}.c2ln",  # signed
        f"{_b64({'alg': 'none'})}.{_b64({'sub': 'a', 'exp': NOW_S + 9})}",  # two parts
        f"{_b64({'alg': 'none'})}..",
        f"{_b64({'alg': 'none'})}.{_b64(b'not json')}.",
        f"{_b64({'alg': 'none'})}.{_b64([1, 2])}.",  # not an object: no claims
        "abcde.abc.",  # not base64
    ],
)
def test_refused_tokens(token: str) -> None:
    with pytest.raises(TokenRefused) as refused:
        _validate(token)
    assert refused.value.scope is None
    assert refused.value.status_json() == '{"status":"invalid_token"}'


def test_clock_skew_allows_a_just_expired_token_and_an_early_iat() -> None:
    options = UnsecuredOptions.from_jaas({"unsecuredValidatorAllowableClockSkewMs": "5000"})
    assert _validate(_token(iat=None, exp=NOW_S - 4), options).principal_name == "alice"
    assert _validate(_token(iat=NOW_S + 4), options).principal_name == "alice"
    with pytest.raises(TokenRefused):
        _validate(_token(iat=None, exp=NOW_S - 5), options)
    with pytest.raises(TokenRefused):
        _validate(_token(iat=NOW_S + 6), options)


def test_expiry_is_checked_against_the_clock_given() -> None:
    token = _token(exp=NOW_S + 60)
    assert _validate(token, now=NOW_MS + 59_999).principal_name == "alice"
    with pytest.raises(TokenRefused):
        _validate(token, now=NOW_MS + 60_000)


def test_principal_and_scope_claim_names_and_required_scope() -> None:
    options = UnsecuredOptions.from_jaas(
        {
            "unsecuredValidatorPrincipalClaimName": "client_id",
            "unsecuredValidatorScopeClaimName": "scp",
            "unsecuredValidatorRequiredScope": "read  write",
        }
    )
    assert options.required_scope == ("read", "write")
    good = _token(sub=None, client_id="svc", scp=["write", "read", "admin"])
    assert _validate(good, options).principal_name == "svc"
    with pytest.raises(TokenRefused) as refused:
        _validate(_token(client_id="svc", scp="read write"), options)  # one item, as Kafka
    assert refused.value.status_json() == (
        '{"status":"insufficient_scope", "scope":"[read, write]"}'
    )
    with pytest.raises(TokenRefused):
        _validate(_token(scp=["read", "write"]), options)  # no client_id claim


@pytest.mark.parametrize(
    "options",
    [
        {"unsecuredValidatorAllowableClockSkewMs": "-1"},
        {"unsecuredValidatorAllowableClockSkewMs": "soon"},
        {"unsecuredValidatorRequiredScope": 'a"b'},
    ],
)
def test_bad_options(options: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        UnsecuredOptions.from_jaas(options)


def test_the_exchange_success_and_extensions() -> None:
    server = OAuthBearerServer(UnsecuredValidator())
    message = initial_response(_token(), traceId="abc 1")
    assert message == (b"n,,\x01auth=Bearer " + _token().encode() + b"\x01traceId=abc 1\x01\x01")
    assert server.evaluate(message, NOW_MS) == b""
    assert server.complete and server.authorization_id == "alice"
    assert server.extensions == {"traceId": "abc 1"}
    assert server.expires_at_ms == (NOW_S + 60) * 1000


def test_the_error_exchange() -> None:
    server = OAuthBearerServer(UnsecuredValidator())
    challenge = server.evaluate(initial_response(_token(exp=NOW_S - 1)), NOW_MS)
    assert challenge == b'{"status":"invalid_token"}'
    assert not server.complete and "Expiration Time" in server.refusal
    with pytest.raises(ScramError) as refused:
        server.evaluate(b"\x01", NOW_MS)
    assert refused.value.client_message("OAUTHBEARER") == '{"status":"invalid_token"}'


def test_a_new_initial_response_instead_of_the_acknowledgement() -> None:
    server = OAuthBearerServer(UnsecuredValidator())
    assert server.evaluate(initial_response(_token(sub="")), NOW_MS) != b""
    assert server.evaluate(initial_response(_token()), NOW_MS) == b""
    assert server.complete


@pytest.mark.parametrize(
    "message",
    [
        b"\x01",  # an acknowledgement with no error sent
        b"n,,\x01\x01",  # no auth
        b"n,,\x01auth=Basic abc\x01\x01",
        b"n,,\x01auth=Bearer\x01\x01",
        b"n,,\x01auth=Bearer a b\x01\x01",
        b"y,,\x01auth=Bearer abc\x01\x01",
        b"n,,\x01auth=Bearer abc\x01",  # no final %x01
        b"n,,\x01auth=Bearer abc\x011ext=x\x01\x01",  # extension names are letters
    ],
)
def test_malformed_initial_responses_get_kafkas_fixed_text(message: bytes) -> None:
    with pytest.raises(ScramError) as refused:
        OAuthBearerServer(UnsecuredValidator()).evaluate(message, NOW_MS)
    assert refused.value.client_message("OAUTHBEARER") == GENERIC


def test_an_authzid_must_be_the_principal() -> None:
    server = OAuthBearerServer(UnsecuredValidator())
    assert server.evaluate(initial_response(_token(), authzid="alice"), NOW_MS) == b""
    with pytest.raises(ScramError) as refused:
        OAuthBearerServer(UnsecuredValidator()).evaluate(
            initial_response(_token(), authzid="bob"), NOW_MS
        )
    assert refused.value.client_message("OAUTHBEARER") == (
        "Authentication failed: Client requested an authorization id (bob) that is different "
        "from the token's principal name (alice)"
    )


def _authenticate(session: SaslServerSession, message: bytes, now: int) -> Any:
    step = session.on_frame(_frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": message}), now)
    return step, _answer(ApiKey.SASL_AUTHENTICATE, 2, step.response)


@pytest.mark.parametrize("reauth_ms", [0, 10_000, 120_000])
def test_the_session_lifetime_is_bounded_by_the_token(reauth_ms: int) -> None:
    s = SaslServerSession(SaslServerConfig(["OAUTHBEARER"], max_reauth_ms=reauth_ms))
    handshake = s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}), NOW_MS)
    assert handshake.kind is StepKind.REPLY
    step, body = _authenticate(s, initial_response(_token()), NOW_MS)
    assert step.reason == "User:alice" and body.error_code == 0
    lifetime = min(60_000, reauth_ms or 60_000)
    assert body.session_lifetime_ms == lifetime
    assert not s.expired(NOW_MS + lifetime - 1) and s.expired(NOW_MS + lifetime)
    # a re-authentication with a fresh token, at the end of the session
    later = NOW_MS + lifetime
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}), later)
    fresh = _token(iat=later // 1000, exp=later // 1000 + 60)
    step, body = _authenticate(s, initial_response(fresh), later)
    assert s.authenticated and body.session_lifetime_ms == lifetime


def test_a_refused_token_over_the_state_machine() -> None:
    s = SaslServerSession(SaslServerConfig(["OAUTHBEARER"]))
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}), NOW_MS)
    step, body = _authenticate(s, initial_response(_token(sub=None)), NOW_MS)
    assert step.kind is StepKind.REPLY and body.error_code == 0
    assert bytes(body.auth_bytes) == b'{"status":"invalid_token"}'
    step, body = _authenticate(s, b"\x01", NOW_MS)
    assert step.kind is StepKind.FAIL and "No principal name" in step.reason
    assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert body.error_message == '{"status":"invalid_token"}'
    assert not s.authenticated


def test_listener_settings() -> None:
    jaas = (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";'
    )
    config = BrokerConfig(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": jaas,
        }
    )
    sasl = sasl_config(config, "SASL_PLAINTEXT")
    assert sasl.mechanisms == ["OAUTHBEARER"]
    assert sasl.oauthbearer.options.required_scope == ("kafka",)
    other = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
    config.values["listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"] = (
        other
    )
    with pytest.raises(ConfigError, match="unsecured validator"):
        sasl_config(config, "SASL_PLAINTEXT")


def test_the_brokers_own_client_makes_an_unsecured_token() -> None:
    options = {"unsecuredLoginStringClaim_sub": "broker", "unsecuredLoginListClaim_scope": ",a,b"}
    claims = unsecured_claims(options, NOW_MS)
    assert claims == {"sub": "broker", "scope": ["a", "b"], "iat": NOW_S, "exp": NOW_S + 3600}
    exchange = sasl_exchange(ClientSecurity(None, "OAUTHBEARER", oauth_options=options), NOW_MS)
    server = OAuthBearerServer(UnsecuredValidator())
    assert server.evaluate(next(exchange), NOW_MS) == b""
    assert server.authorization_id == "broker"
    with pytest.raises(StopIteration):
        exchange.send(b"")
    with pytest.raises(ValueError):
        unsecured_claims({"unsecuredLoginStringClaim_user": "x"}, NOW_MS)  # no sub
