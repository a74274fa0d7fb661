"""BrokerConnection over real loopback sockets: large answers (received in place) and small ones
on one connection, in order; a peer that closes mid-answer."""

from __future__ import annotations

import os
import struct
from typing import Any

import pytest
import trio

from protocol.api import ApiKey
from protocol.codec import decode_request, encode_response
from wirebroker.replication.broker_client import BrokerConnection, BrokerConnectionError


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
