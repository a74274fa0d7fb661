"""BrokerConnection over real loopback sockets: large answers (received in place) and small ones
on one connection, in order; a peer that closes mid-answer; KIP-368 re-authentication against
the broker's own SASL state machine (a peer that closes a connection whose session expired),
on trio's MockClock moved by hand."""

from __future__ import annotations

import os
import struct
from typing import Any

import pytest
import trio

from protocol.api import ApiKey
from protocol.codec import decode_request, encode_response
from wirebroker.replication.broker_client import SECURITY, BrokerConnection, BrokerConnectionError
from wirebroker.security.client import ClientSecurity
from wirebroker.security.sasl_server import SaslServerConfig, SaslServerSession, StepKind


def _fetch_body(records: bytes) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 10,
                        "last_stable_offset": 10,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": records,
                    }
                ],
            }
        ],
    }


async def _read_request(stream: trio.SocketStream, buf: bytearray) -> Any | None:
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buf += data
    size = struct.unpack(">i", buf[:4])[0]
    header, _ = decode_request(bytes(buf[4 : 4 + size]))
    del buf[: 4 + size]
    return header


async def _serve(answers: list[bytes], cut: int | None, stream: trio.SocketStream) -> None:
    """Answer each Fetch with the next of `answers` (records), sent in uneven pieces; with
    `cut`, the last answer stops after that many bytes and the connection closes."""
    async with stream:
        buf = bytearray()
        for i, records in enumerate(answers):
            header = await _read_request(stream, buf)
            if header is None:
                return
            assert header.api_key == ApiKey.FETCH
            wire = encode_response(ApiKey.FETCH, 12, header.correlation_id, _fetch_body(records))
            if cut is not None and i == len(answers) - 1:
                wire = wire[:cut]
            pos, step = 0, 3
            while pos < len(wire):
                await stream.send_all(wire[pos : pos + step])
                pos += step
                step = min(step * 3, 200_000)


def _request() -> dict[str, Any]:
    return {
        "replica_id": 1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0}]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


async def _connect(
    nursery: trio.Nursery, answers: list[bytes], cut: int | None = None
) -> BrokerConnection:
    listeners = await nursery.start(trio.serve_tcp, lambda s: _serve(answers, cut, s), 0)
    port = listeners[0].socket.getsockname()[1]
    return await BrokerConnection.open(
        "127.0.0.1", port, client_id="test-replica", max_frame_bytes=4 << 20
    )


async def test_large_and_small_answers_in_order(nursery: trio.Nursery) -> None:
    answers = [os.urandom(700_000), b"", os.urandom(100), os.urandom(2_000_000), b"x" * 70_000]
    conn = await _connect(nursery, answers)
    try:
        for records in answers:
            with trio.fail_after(10):
                body = await conn.request(ApiKey.FETCH, 12, _request())
            [topic] = body.responses
            [part] = topic.partitions
            assert bytes(part.records) == records
            assert part.high_watermark == 10
    finally:
        await conn.aclose()
    nursery.cancel_scope.cancel()


@pytest.mark.parametrize("cut", [2, 100, 300_000])
async def test_a_peer_closing_inside_an_answer_fails_the_request(
    nursery: trio.Nursery, cut: int
) -> None:
    conn = await _connect(nursery, [os.urandom(500_000)], cut)
    with trio.fail_after(10), pytest.raises(BrokerConnectionError, match="closed by the peer"):
        await conn.request(ApiKey.FETCH, 12, _request())
    assert conn.closed
    nursery.cancel_scope.cancel()


async def _read_frame(stream: trio.SocketStream, buf: bytearray) -> bytes | None:
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buf += data
    size = struct.unpack(">i", buf[:4])[0]
    frame = bytes(buf[4 : 4 + size])
    del buf[: 4 + size]
    return frame


async def _sasl_peer(seen: list[int], stream: trio.SocketStream) -> None:
    """A peer with `connections.max.reauth.ms=1000` and wirebroker's SASL state machine in
    front, as the broker's SaslGate applies it: answers ApiVersions once authenticated, closes a
    connection whose session expired at its next request that is not a re-authentication."""
    sasl = SaslServerSession(SaslServerConfig(["PLAIN"], {"alice": "pw"}, max_reauth_ms=1000))
    async with stream:
        buf = bytearray()
        while (frame := await _read_frame(stream, buf)) is not None:
            header, _ = decode_request(frame)
            seen.append(int(header.api_key))
            now = int(trio.current_time() * 1000)
            was_authenticated = sasl.authenticated
            step = sasl.on_frame(frame, now)
            if step.kind is StepKind.FORWARD:
                if was_authenticated and sasl.expired(now):
                    return
                body = {"error_code": 0, "api_keys": [], "throttle_time_ms": 0}
                await stream.send_all(
                    encode_response(ApiKey.API_VERSIONS, 3, header.correlation_id, body)
                )
            elif step.kind is StepKind.REPLY and step.response is not None:
                await stream.send_all(step.response)
            else:
                return


async def _sasl_connection(nursery: trio.Nursery, seen: list[int]) -> BrokerConnection:
    listeners = await nursery.start(trio.serve_tcp, lambda s: _sasl_peer(seen, s), 0)
    port = listeners[0].socket.getsockname()[1]
    token = SECURITY.set(ClientSecurity(sasl_mechanism="PLAIN", username="alice", password="pw"))
    try:
        return await BrokerConnection.open(
            "127.0.0.1", port, client_id="test-replica", max_frame_bytes=1 << 20
        )
    finally:
        SECURITY.reset(token)


HANDSHAKE, AUTHENTICATE, VERSIONS = ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, 18


async def test_the_connection_reauthenticates_before_its_session_ends(
    nursery: trio.Nursery, mock_clock: trio.testing.MockClock
) -> None:
    seen: list[int] = []
    conn = await _sasl_connection(nursery, seen)
    assert seen == [HANDSHAKE, AUTHENTICATE] and conn.authentications == 1
    with trio.fail_after(10):
        await conn.request(ApiKey.API_VERSIONS, 3, {})
        mock_clock.jump(0.85)  # before 90% of the 1000 ms lifetime: no re-authentication
        await conn.request(ApiKey.API_VERSIONS, 3, {})
        assert conn.authentications == 1
        mock_clock.jump(0.1)  # past 90%: the next request re-authenticates first
        await conn.request(ApiKey.API_VERSIONS, 3, {})
        assert conn.authentications == 2
        mock_clock.jump(5)  # idle past the whole lifetime: a late re-authentication is accepted
        await conn.request(ApiKey.API_VERSIONS, 3, {})
    assert conn.authentications == 3 and not conn.closed
    assert (
        seen
        == [HANDSHAKE, AUTHENTICATE, VERSIONS, VERSIONS]
        + [
            HANDSHAKE,
            AUTHENTICATE,
            VERSIONS,
        ]
        * 2
    )
    await conn.aclose()
    nursery.cancel_scope.cancel()


async def test_without_reauthentication_the_peer_closes_the_expired_session(
    nursery: trio.Nursery, mock_clock: trio.testing.MockClock
) -> None:
    seen: list[int] = []
    conn = await _sasl_connection(nursery, seen)
    conn.reauthenticate_at = None  # as the connection was before KIP-368 here
    mock_clock.jump(1.0)
    with trio.fail_after(10), pytest.raises(BrokerConnectionError, match="closed by the peer"):
        await conn.request(ApiKey.API_VERSIONS, 3, {})
    assert conn.closed
    nursery.cancel_scope.cancel()
