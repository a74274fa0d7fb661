"""The SASL authenticator's state machine (wirebroker/security/sasl_server.py): real request
frames in, steps out; no sockets."""

from __future__ import annotations

from typing import Any

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from wirebroker.security.sasl_server import (
    MAX_RECEIVE_SIZE,
    SaslServerConfig,
    SaslServerSession,
    StepKind,
    jaas_users,
)

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a\\"b";'
)


def _frame(key: ApiKey, version: int, body: dict[str, Any], correlation: int = 7) -> bytes:
    return bytes(encode_request(int(key), version, correlation, "test", body))[4:]


def _answer(key: ApiKey, version: int, response: bytes | None) -> Any:
    assert response is not None
    correlation, body = decode_response(int(key), version, response[4:])
    assert correlation == 7
    return body


def _session(reauth_ms: int = 0) -> SaslServerSession:
    return SaslServerSession(
        SaslServerConfig(["PLAIN"], plain_users=jaas_users(JAAS), max_reauth_ms=reauth_ms)
    )


def _plain(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def test_jaas_users_are_the_user_entries() -> None:
    assert jaas_users(JAAS) == {"admin": "admin-secret", "alice": 'a"b'}


def test_plain_v1_authenticates_after_api_versions() -> None:
    s = _session()
    assert s.max_frame_bytes == MAX_RECEIVE_SIZE
    assert s.on_frame(_frame(ApiKey.API_VERSIONS, 3, {}), 0).kind is StepKind.FORWARD
    step = s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 0)
    assert step.kind is StepKind.REPLY
    assert _answer(ApiKey.SASL_HANDSHAKE, 1, step.response).mechanisms == ["PLAIN"]
    auth = _frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": _plain("alice", 'a"b')})
    step = s.on_frame(auth, 0)
    assert step.kind is StepKind.REPLY and step.reason == "User:alice"
    body = _answer(ApiKey.SASL_AUTHENTICATE, 2, step.response)
    assert (body.error_code, body.session_lifetime_ms) == (0, 0)
    assert s.authenticated and s.principal == "User:alice" and s.max_frame_bytes is None
    assert s.on_frame(_frame(ApiKey.METADATA, 12, {}), 0).kind is StepKind.FORWARD


def test_wrong_password_and_unknown_user_fail_with_kafkas_text() -> None:
    for user, password in (("alice", "nope"), ("mallory", "x")):
        s = _session()
        s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 0)
        auth = _frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": _plain(user, password)})
        step = s.on_frame(auth, 0)
        assert step.kind is StepKind.FAIL
        body = _answer(ApiKey.SASL_AUTHENTICATE, 1, step.response)
        assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert body.error_message == "Authentication failed: Invalid username or password"
        assert not s.authenticated


def test_metadata_before_authentication_closes() -> None:
    s = _session()
    step = s.on_frame(_frame(ApiKey.METADATA, 12, {"topics": None}), 0)
    assert step.kind is StepKind.CLOSE
    assert step.reason == "Unexpected Kafka request of type METADATA during SASL handshake."
    s = _session()
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 0)
    step = s.on_frame(_frame(ApiKey.METADATA, 12, {"topics": None}), 0)
    assert step.reason.endswith("during SASL authentication.")


def test_unsupported_mechanism_is_answered_then_closed() -> None:
    s = _session()
    step = s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"}), 0)
    assert step.kind is StepKind.FAIL
    body = _answer(ApiKey.SASL_HANDSHAKE, 1, step.response)
    assert (body.error_code, body.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["PLAIN"])


def test_v0_handshake_then_raw_tokens() -> None:
    s = _session()
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}), 0)
    step = s.on_frame(_plain("admin", "admin-secret"), 0)  # no request header
    assert step.kind is StepKind.REPLY and step.response == b"\0\0\0\0"
    assert s.principal == "User:admin"
    s = _session()
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}), 0)
    step = s.on_frame(_plain("admin", "wrong"), 0)
    assert step.kind is StepKind.FAIL and step.response is None


def test_reauthentication_lifetime_and_expiry() -> None:
    s = _session(reauth_ms=1000)
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 0)
    step = s.on_frame(
        _frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", 'a"b')}), 5000
    )
    assert _answer(ApiKey.SASL_AUTHENTICATE, 1, step.response).session_lifetime_ms == 1000
    assert not s.expired(5999) and s.expired(6000)
    # a new handshake on the authenticated connection re-authenticates (KIP-368)
    step = s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 6000)
    assert step.kind is StepKind.REPLY
    step = s.on_frame(
        _frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", 'a"b')}), 6000
    )
    assert step.kind is StepKind.REPLY and not s.expired(6999) and s.authenticated


def test_reauthentication_as_another_user_fails() -> None:
    s = _session(reauth_ms=1000)
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 0)
    s.on_frame(_frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", 'a"b')}), 0)
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 0)
    step = s.on_frame(
        _frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("admin", "admin-secret")}), 0
    )
    assert step.kind is StepKind.FAIL
    body = _answer(ApiKey.SASL_AUTHENTICATE, 1, step.response)
    assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert body.error_message == (  # Kafka's text
        "Cannot change principals during re-authentication from User.alice: User.admin"
    )


def _authenticated(mechanisms: list[str], reauth_ms: int = 1000) -> SaslServerSession:
    s = SaslServerSession(
        SaslServerConfig(mechanisms, plain_users=jaas_users(JAAS), max_reauth_ms=reauth_ms)
    )
    s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), 0)
    step = s.on_frame(
        _frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", 'a"b')}), 0
    )
    assert step.reason == "User:alice" and s.authenticated
    return s


def test_reauthentication_with_another_mechanism_fails_at_the_next_frame() -> None:
    """As Kafka (REAUTH_BAD_MECHANISM): the handshake is answered as any other, the next
    frame fails without an answer, with Kafka's text in the log."""
    s = _authenticated(["PLAIN", "SCRAM-SHA-256"])
    step = s.on_frame(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}), 500)
    assert step.kind is StepKind.REPLY
    body = _answer(ApiKey.SASL_HANDSHAKE, 1, step.response)
    assert (body.error_code, body.mechanisms) == (0, ["PLAIN", "SCRAM-SHA-256"])
    step = s.on_frame(_frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"n,,n=alice,r=x"}), 500)
    assert (step.kind, step.response) == (StepKind.FAIL, None)
    assert step.reason == (
        "SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for "
        "re-authentication of mechanism 'PLAIN'"
    )


def test_reauthentication_starts_at_most_once_a_second() -> None:
    """Kafka's KafkaChannel: a handshake within a second of the last re-authentication's
    start is served as without re-authentication (the handler's ILLEGAL_SASL_STATE); the
    session goes on."""
    s = _authenticated(["PLAIN"])
    shake = _frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    auth = _frame(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": _plain("alice", 'a"b')})
    assert s.on_frame(shake, 100).kind is StepKind.REPLY  # the first: no earlier one
    assert s.on_frame(auth, 100).reason == "User:alice"
    assert s.on_frame(shake, 1099).kind is StepKind.FORWARD  # 999 ms after the last start
    assert s.authenticated and not s.expired(1099)
    assert s.on_frame(shake, 1100).kind is StepKind.REPLY  # a second after it
    assert s.on_frame(auth, 1100).reason == "User:alice" and s.expires_at_ms == 2100
