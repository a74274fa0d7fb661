"""`transport.receive_into`: straight from a TCP socket, through receive_some otherwise."""

from __future__ import annotations

import socket
import struct

import pytest
import trio
import trio.testing
from netwire import tcp_pair

from wirebroker.transport import LOWAT_MAX, LOWAT_MIN, receive_into


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


def _lowat(stream: trio.SocketStream) -> int:
    return int(stream.socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT))


async def test_a_large_receive_waits_until_all_of_it_has_arrived() -> None:
    """A view of LOWAT_MIN or more (the rest of a large frame) is not woken for a part: one
    read takes the whole view, and the socket's low-water mark is back to 1 after it."""
    client, server = await tcp_pair()
    size = 4 * LOWAT_MIN
    data = bytes(range(256)) * (size // 256)
    buf = bytearray(size)
    got: list[int] = []

    async def receive() -> None:
        got.append(await receive_into(server, memoryview(buf)))

    async with client, server:
        async with trio.open_nursery() as nursery:
            await client.send_all(data[: size // 3])
            nursery.start_soon(receive)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []  # a third has arrived: still waiting
            await client.send_all(data[size // 3 :])
        assert got == [size]
        assert buf == data
        assert _lowat(server) == 1


async def test_a_large_receive_returns_what_came_before_the_end_of_stream() -> None:
    client, server = await tcp_pair()
    async with server:
        await client.send_all(b"x" * 1000)
        await client.aclose()
        buf = bytearray(2 * LOWAT_MIN)
        assert await receive_into(server, memoryview(buf)) == 1000
        assert await receive_into(server, memoryview(buf)[1000:]) == 0


async def test_a_cancelled_large_receive_leaves_the_low_water_mark_at_one() -> None:
    client, server = await tcp_pair()
    async with client, server:
        await client.send_all(b"x" * 1000)
        async with trio.open_nursery() as nursery:

            async def receive() -> None:
                await receive_into(server, memoryview(bytearray(LOWAT_MAX + 1)))

            nursery.start_soon(receive)
            await trio.testing.wait_all_tasks_blocked()
            assert _lowat(server) == LOWAT_MAX  # capped
            nursery.cancel_scope.cancel()
        assert _lowat(server) == 1
        n = await receive_into(server, memoryview(bytearray(100)))
        assert n == 100  # a small receive takes what is there


async def test_a_large_receive_on_a_stream_closed_meanwhile_says_closed() -> None:
    """Another task closing the stream wakes the wait with ClosedResourceError, which no
    failing reset of the mark (the socket is gone) may replace."""
    client, server = await tcp_pair()
    raised: list[BaseException] = []

    async def receive() -> None:
        try:
            await receive_into(server, memoryview(bytearray(LOWAT_MIN)))
        except (trio.ClosedResourceError, trio.BrokenResourceError) as exc:
            raised.append(exc)

    async with client, trio.open_nursery() as nursery:
        nursery.start_soon(receive)
        await trio.testing.wait_all_tasks_blocked()
        await server.aclose()
    assert len(raised) == 1 and type(raised[0]) is trio.ClosedResourceError
