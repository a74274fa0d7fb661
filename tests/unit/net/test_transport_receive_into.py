"""`transport.receive_into`: straight from a TCP socket, through receive_some otherwise."""

from __future__ import annotations

import socket
import struct

import pytest
import trio
import trio.testing
from netwire import tcp_pair

from wirebroker.transport import receive_into


async def test_a_tcp_stream_is_received_into_the_buffer() -> None:
    client, server = await tcp_pair()
    async with client, server:
        await client.send_all(b"abcdefgh")
        buf = bytearray(5)
        n = await receive_into(server, memoryview(buf)[1:])
        assert 1 <= n <= 4 and buf[1 : 1 + n] == b"abcd"[:n] and buf[0] == 0
        await client.aclose()
        rest = bytearray(16)
        got = 0
        while True:
            k = await receive_into(server, memoryview(rest)[got:])
            if not k:
                break  # end of stream: 0
            got += k
        assert bytes(rest[:got]) == b"abcdefgh"[n:]


async def test_a_reset_is_a_broken_resource() -> None:
    client, server = await tcp_pair()
    async with server:
        client.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await client.aclose()
        with pytest.raises(trio.BrokenResourceError):
            await receive_into(server, memoryview(bytearray(10)))


async def test_another_stream_goes_through_receive_some() -> None:
    send, receive = trio.testing.memory_stream_pair()
    await send.send_all(b"0123456789")
    buf = bytearray(4)
    assert await receive_into(receive, memoryview(buf)) == 4
    assert buf == b"0123"
    await send.aclose()
    buf = bytearray(100)
    assert await receive_into(receive, memoryview(buf)) == 6
    assert buf[:6] == b"456789"
    assert await receive_into(receive, memoryview(buf)) == 0
