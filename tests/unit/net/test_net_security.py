"""The trio side of TLS and SASL listeners (net/server.py `_tls_handshake`, net/sasl.py
`SaslGate`) over in-memory streams under trio's MockClock: the handshake timeout and the
delayed answer to a failed authentication, without sockets or real waiting."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from wirebroker.config import BrokerConfig
from wirebroker.net.sasl import SaslGate
from wirebroker.net.server import Endpoint, KafkaServer
from wirebroker.security.auth_stats import AuthenticationStats
from wirebroker.security.sasl_server import SaslServerConfig, SaslServerSession
from wirebroker.security.selfsigned import generate
from wirebroker.security.session import ConnectionSession
from wirebroker.security.tls import server_context


class _Inner:
    def __init__(self) -> None:
        self.seen: list[ConnectionSession | None] = []

    async def dispatch(
        self, frame: bytes | bytearray, host: str, peer: str, session: Any = None
    ) -> Any:
        self.seen.append(session)
        return None


def _frame(key: ApiKey, version: int, body: dict[str, Any]) -> bytes:
    return bytes(encode_request(int(key), version, 1, "t", body))[4:]


@pytest.fixture(scope="module")
def ssl_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Endpoint:
    files = generate(tmp_path_factory.mktemp("certs"))
    context = server_context(BrokerConfig(files.broker_settings("SSL")), "SSL")
    return Endpoint("SSL", "127.0.0.1", 0, "SSL", ssl_context=context)


async def test_a_silent_tls_client_is_closed_after_the_handshake_timeout(
    ssl_endpoint: Endpoint, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="wirebroker.net")
    server = KafkaServer(_Inner(), tls_handshake_timeout_s=7.0)
    _client, stream = trio.testing.memory_stream_pair()
    start = trio.current_time()
    assert await server._tls_handshake(stream, ssl_endpoint, ("127.0.0.1", 5)) is None
    assert trio.current_time() - start == pytest.approx(7.0)
    assert "no TLS handshake within 7 s" in caplog.text


async def test_a_plaintext_client_on_a_tls_listener_is_closed_with_one_line(
    ssl_endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="wirebroker.net")
    server = KafkaServer(_Inner())
    client, stream = trio.testing.memory_stream_pair()
    await client.send_all(b"\x00\x00\x00\x0a" + b"\x00" * 10)  # a Kafka frame, not TLS
    assert await server._tls_handshake(stream, ssl_endpoint, ("127.0.0.1", 5)) is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "TLS handshake failed" in lines[0]


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


async def test_failed_authentication_is_answered_after_the_delay(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    inner = _Inner()
    session = ConnectionSession("SASL_PLAINTEXT", "SASL_PLAINTEXT")
    sasl = SaslServerSession(SaslServerConfig(["PLAIN"], plain_users={"alice": "pw"}))
    gate = SaslGate(
        inner,
        sasl,
        session,
        max_frame_bytes=1 << 20,
        failure_delay_ms=100,
        clock_ms=lambda: int(trio.current_time() * 1000),
    )
    assert gate.frame_limit() == 524288
    await gate.dispatch(_frame(ApiKey.API_VERSIONS, 0, {}), "h", "p")
    assert inner.seen == [session]  # ApiVersions served before authentication
    await gate.dispatch(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), "h", "p")
    start = trio.current_time()
    auth = _frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0bad"})
    reply = await gate.dispatch(auth, "h", "p")
    assert trio.current_time() - start == pytest.approx(0.1)
    assert reply.close and reply.response is not None
    _corr, body = decode_response(int(ApiKey.SASL_AUTHENTICATE), 2, reply.response[4:])
    assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    failures = [r for r in caplog.records if "Failed authentication" in r.getMessage()]
    assert len(failures) == 1 and session.principal == "User:ANONYMOUS"
    assert gate.stats.rows() == [
        {"listener": "SASL_PLAINTEXT", "mechanism": "PLAIN", "successful": 0, "failed": 1}
    ]


async def test_a_handshake_for_a_mechanism_not_enabled_counts_as_unsupported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    stats = AuthenticationStats()
    sasl = SaslServerSession(SaslServerConfig(["PLAIN"]))
    gate = SaslGate(
        _Inner(),
        sasl,
        ConnectionSession("SASL_PLAINTEXT", "SASL_PLAINTEXT"),
        max_frame_bytes=1 << 20,
        failure_delay_ms=0,
        clock_ms=lambda: 0,
        stats=stats,
    )
    handshake = _frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "made-up\nname"})
    assert (await gate.dispatch(handshake, "h", "p")).close
    assert [(r["mechanism"], r["failed"]) for r in stats.rows()] == [("unsupported", 1)]


async def test_successful_authentication_sets_the_principal_and_lifts_the_cap(
    tmp_path: Path,
) -> None:
    inner = _Inner()
    session = ConnectionSession("SASL_SSL", "SASL_SSL")
    sasl = SaslServerSession(SaslServerConfig(["PLAIN"], plain_users={"alice": "pw"}))
    gate = SaslGate(
        inner, sasl, session, max_frame_bytes=1 << 20, failure_delay_ms=100, clock_ms=lambda: 0
    )
    await gate.dispatch(_frame(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), "h", "p")
    auth = _frame(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0pw"})
    reply = await gate.dispatch(auth, "h", "p")
    assert not reply.close and session.principal == "User:alice"
    assert gate.frame_limit() == 1 << 20
    await gate.dispatch(_frame(ApiKey.METADATA, 12, {"topics": None}), "h", "p")
    assert inner.seen == [session]
    assert [(r["listener"], r["successful"], r["failed"]) for r in gate.stats.rows()] == [
        ("SASL_SSL", 1, 0)
    ]


async def test_a_large_frame_before_authentication_closes_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from wirebroker.net.connection import Connection

    session = ConnectionSession("SASL_PLAINTEXT", "SASL_PLAINTEXT")
    sasl = SaslServerSession(SaslServerConfig(["PLAIN"]))
    gate = SaslGate(
        _Inner(), sasl, session, max_frame_bytes=1 << 20, failure_delay_ms=0, clock_ms=lambda: 0
    )
    client, stream = trio.testing.memory_stream_pair()
    conn = Connection(
        stream, gate, max_frame_bytes=1 << 20, idle_timeout_s=10, frame_limit=gate.frame_limit
    )
    await client.send_all((600_000).to_bytes(4, "big"))  # within 1 MiB, above 512 KiB
    with trio.fail_after(5):
        await conn.run()
    assert await client.receive_some(10) == b""  # closed
    assert "sasl.server.max.receive.size, before authentication=524288" in caplog.text
