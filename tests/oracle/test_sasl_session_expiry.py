"""KIP-368's expired session, with a client that does not re-authenticate: the same raw
requests to Apache Kafka 4.4 (a Kafka of its own with a SASL_PLAINTEXT listener for PLAIN and
`connections.max.reauth.ms=1000`) and to a wirebroker with the same settings, with the same
assertions.

A raw socket plays the client (kafka-python 3.0.12 and librdkafka re-authenticate by
themselves; tests/integration/test_sasl_reauthentication.py has them): SaslHandshake v1, then
SaslAuthenticate PLAIN (v1 and v2, which answer the session lifetime: 1000; v0, which cannot),
then nothing until past the lifetime. What both brokers do: the idle connection is not closed
when its session ends (the socket stays silent and open past the lifetime); its next request
that is not a SaslHandshake (Metadata) closes it without an answer; a connection authenticated
later on the same listener is served meanwhile; a SaslHandshake after the expiry starts a
re-authentication, which succeeds, and the connection is served again. wirebroker logs the
close once (INFO, "... the SASL session of User:alice expired ..."). Also Kafka's rules for a
re-authentication (SCRAM-SHA-256 enabled too, without users): at most one may start a second
(a handshake sooner: ILLEGAL_SASL_STATE, and the session goes on); another user is refused
with Kafka's text and closed; another mechanism's handshake is answered, and its next frame
closes the connection without an answer.

No sleep: the wait past the lifetime is a `select` on the socket with that deadline, which is
itself an assertion (nothing arrives, the broker does not close it early).
"""

from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _oracle_sasl import kafka_with_sasl, wirebroker_with_sasl

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from wirebroker.testing import BrokerHandle

LIFETIME_MS = 1000
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice-secret";'
)
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
MECHANISMS = ["PLAIN", "SCRAM-SHA-256"]
EXPIRED = "the SASL session of User:alice expired"
METADATA = {"topics": [], "allow_auto_topic_creation": False}


def _settings() -> dict[str, str]:
    return {
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "connections.max.reauth.ms": str(LIFETIME_MS),
        "connection.failed.authentication.delay.ms": "0",
    }


@pytest.fixture(scope="module")
def kafka_reauth() -> Iterator[str]:
    with kafka_with_sasl(_settings()) as (address, _kafka):
        yield address


@pytest.fixture(scope="module")
def wirebroker_reauth() -> Iterator[tuple[str, BrokerHandle]]:
    with wirebroker_with_sasl(_settings(), log_level="INFO") as broker:
        yield broker


@pytest.fixture(params=["apache-kafka", "wirebroker"])
def broker(request: pytest.FixtureRequest) -> tuple[str, BrokerHandle | None]:
    """(the SASL_PLAINTEXT address, the wirebroker's handle or None for Kafka)"""
    if request.param == "apache-kafka":
        return str(request.getfixturevalue("kafka_reauth")), None
    address, handle = request.getfixturevalue("wirebroker_reauth")
    return str(address), handle


class Raw:
    """One client connection speaking the protocol by hand."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=20)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, api: ApiKey, version: int, body: dict[str, Any]) -> None:
        self.correlation += 1
        self.sock.sendall(encode_request(int(api), version, self.correlation, "raw", body))

    def answer(self, api: ApiKey, version: int) -> Any:
        """The next answer; ConnectionError if the broker closed the connection instead."""
        (size,) = struct.unpack(">i", self._exact(4))
        correlation, body = decode_response(int(api), version, self._exact(size))
        assert correlation == self.correlation
        return body

    def call(self, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
        self.send(api, version, body)
        return self.answer(api, version)

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return out

    def handshake(self, mechanism: str = "PLAIN") -> int:
        shake = self.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        if shake.error_code == 0:
            assert sorted(shake.mechanisms) == MECHANISMS
        return int(shake.error_code)

    def authenticate(self, version: int, user: str = "alice") -> int:
        """SaslHandshake v1 + SaslAuthenticate PLAIN as alice; the session lifetime answered
        (-1 for v0, which has no such field)."""
        assert self.handshake() == 0
        token = f"\0{user}\0{user}-secret".encode()
        auth = self.call(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})
        assert (auth.error_code, auth.error_message) == (0, "")
        return int(auth.session_lifetime_ms) if version > 0 else -1

    def silent_until(self, deadline: float) -> bool:
        """Wait until `deadline` (time.monotonic()) for the broker to send or close; True if
        nothing came (the connection is still open and quiet)."""
        readable, _, _ = select.select([self.sock], [], [], max(deadline - time.monotonic(), 0))
        return not readable

    def metadata(self) -> Any:
        return self.call(ApiKey.METADATA, 12, METADATA)


def _log(handle: BrokerHandle, text: str, count: int) -> str:
    assert handle.log_path is not None
    deadline = time.monotonic() + 20
    while True:
        log = handle.log_path.read_text(errors="replace")
        if log.count(text) >= count or time.monotonic() > deadline:
            return log
        time.sleep(0.05)  # polling a file another process writes: no event to wait on


@pytest.mark.parametrize("version", [0, 1, 2])
def test_an_expired_session_is_closed_at_its_next_request(
    broker: tuple[str, BrokerHandle | None], version: int
) -> None:
    address, handle = broker
    before = _log(handle, EXPIRED, 0).count(EXPIRED) if handle is not None else 0
    expiring = Raw(address)
    try:
        start = time.monotonic()
        lifetime = expiring.authenticate(version)
        assert lifetime in (LIFETIME_MS, -1)
        assert expiring.metadata().throttle_time_ms == 0  # served within the lifetime
        # past the lifetime (and a margin): the broker neither answers nor closes by itself
        assert expiring.silent_until(start + 1.5 * LIFETIME_MS / 1000)
        other = Raw(address)  # a connection of its own, authenticated since
        try:
            other.authenticate(2)
            expiring.send(ApiKey.METADATA, 12, METADATA)
            with pytest.raises(ConnectionError):
                expiring.answer(ApiKey.METADATA, 12)  # closed without an answer
            assert other.metadata().throttle_time_ms == 0  # unaffected
        finally:
            other.close()
    finally:
        expiring.close()
    if handle is not None:
        log = _log(handle, EXPIRED, before + 1)
        lines = [line for line in log.splitlines() if EXPIRED in line]
        assert len(lines) == before + 1
        assert "did not re-authenticate" in lines[-1]


def test_a_late_reauthentication_is_accepted(broker: tuple[str, BrokerHandle | None]) -> None:
    address, _ = broker
    conn = Raw(address)
    try:
        start = time.monotonic()
        assert conn.authenticate(1) == LIFETIME_MS
        assert conn.silent_until(start + 1.5 * LIFETIME_MS / 1000)
        # expired, but a SaslHandshake starts a re-authentication (KIP-368), as on time
        assert conn.authenticate(2) == LIFETIME_MS
        assert conn.metadata().throttle_time_ms == 0
    finally:
        conn.close()


def test_a_reauthentication_as_another_user_is_refused_and_closed(
    broker: tuple[str, BrokerHandle | None],
) -> None:
    conn = Raw(broker[0])
    try:
        conn.authenticate(2)
        assert conn.handshake() == 0
        token = b"\0admin\0admin-secret"  # a good password, but another principal
        auth = conn.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        assert (auth.error_code, auth.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            "Cannot change principals during re-authentication from User.alice: User.admin",
        )
        with pytest.raises(ConnectionError):
            conn.metadata()
    finally:
        conn.close()


def test_a_reauthentication_with_another_mechanism_fails_at_its_next_frame(
    broker: tuple[str, BrokerHandle | None],
) -> None:
    """The handshake naming another enabled mechanism is answered as any handshake; the
    next frame closes the connection without an answer."""
    conn = Raw(broker[0])
    try:
        conn.authenticate(2)
        assert conn.handshake("SCRAM-SHA-256") == 0
        conn.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"n,,n=alice,r=abcdef"})
        with pytest.raises(ConnectionError):
            conn.answer(ApiKey.SASL_AUTHENTICATE, 2)
    finally:
        conn.close()


def test_reauthentication_starts_at_most_once_a_second(
    broker: tuple[str, BrokerHandle | None],
) -> None:
    """A second re-authentication within a second of the first one's start: the handshake is
    answered ILLEGAL_SASL_STATE (as without re-authentication) and the session goes on."""
    conn = Raw(broker[0])
    try:
        conn.authenticate(2)
        start = time.monotonic()
        assert conn.authenticate(2) == LIFETIME_MS  # the first re-authentication
        assert conn.handshake() == ErrorCode.ILLEGAL_SASL_STATE
        assert time.monotonic() - start < 1.0  # (else this test proves nothing)
        assert conn.metadata().throttle_time_ms == 0  # still served
    finally:
        conn.close()
