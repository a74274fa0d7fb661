"""Connection deadlines on a virtual clock (trio's autojump clock, no real waiting), and the
pure connection-quota bookkeeping.

connections.max.idle.ms (10 s here):
    no byte of a next request      closed 10 s after the last response (or the accept)
    a partial request              closed 10 s after its first byte; later bytes (a trickle) do
                                   not extend it -- Kafka resets on any socket activity, so a
                                   trickler would stay; wirebroker bounds slow partial frames
    a response the client does not read   closed 10 s after the send started
"""

from __future__ import annotations

import resource
import struct

import pytest
import trio
import trio.testing

from protocol import codec
from protocol.api import ApiKey
from tests.unit.net.netwire import stub_services
from wirebroker.handlers.dispatcher import Dispatcher
from wirebroker.handlers.registry import HandlerSpec, load_handlers
from wirebroker.net.connection import Connection
from wirebroker.net.limits import ConnectionQuotas, raise_nofile_limit

IDLE_S = 10.0


HANDLERS: dict[int, HandlerSpec] = {int(ApiKey.API_VERSIONS): load_handlers()[ApiKey.API_VERSIONS]}


def _request(correlation_id: int) -> bytes:
    return codec.encode_request(ApiKey.API_VERSIONS, 0, correlation_id, "deadlines", {})


def _connection(stream: trio.abc.Stream) -> Connection:
    dispatcher = Dispatcher(stub_services(), HANDLERS, max_frame_bytes=4096)
    return Connection(stream, dispatcher, max_frame_bytes=4096, idle_timeout_s=IDLE_S)


async def _read_response(stream: trio.abc.Stream) -> bytes:
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
        chunk = await stream.receive_some()
        assert chunk, "closed instead of answering"
        buf += chunk
    return buf


async def _closed_at(stream: trio.abc.Stream) -> float:
    """Virtual time at which the broker closes the connection (EOF)."""
    while await stream.receive_some():
        pass
    return trio.current_time()


async def test_frame_header_then_silence(autojump_clock: trio.testing.MockClock) -> None:
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_connection(server).run)
        await trio.sleep(4)
        start = trio.current_time()
        await client.send_all(struct.pack(">i", 100))
        assert await _closed_at(client) - start == pytest.approx(IDLE_S)


async def test_trickled_partial_frame_is_closed_after_the_idle_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    client, server = trio.testing.memory_stream_pair()
    closed_at: list[float] = []

    async def watch() -> None:
        closed_at.append(await _closed_at(client))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_connection(server).run)
        nursery.start_soon(watch)
        start = trio.current_time()
        await client.send_all(struct.pack(">i", 100))
        with pytest.raises(trio.BrokenResourceError):
            while True:  # one byte every 2 s: would keep a Kafka connection alive forever
                await trio.sleep(2)
                await client.send_all(b"\x00")
    assert closed_at[0] - start == pytest.approx(IDLE_S)


async def test_whole_requests_keep_the_connection_open(
    autojump_clock: trio.testing.MockClock,
) -> None:
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_connection(server).run)
        for i in range(10):  # 60 s in all, one request every 6 s
            await trio.sleep(6)
            await client.send_all(_request(i))
            await _read_response(client)
        last = trio.current_time()
        assert await _closed_at(client) - last == pytest.approx(IDLE_S)


async def test_partial_frame_after_a_pipelined_request_gets_its_own_window(
    autojump_clock: trio.testing.MockClock,
) -> None:
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_connection(server).run)
        start = trio.current_time()
        await client.send_all(_request(1) + _request(2)[:7])
        await _read_response(client)
        assert await _closed_at(client) - start == pytest.approx(IDLE_S)


async def test_unread_response_is_dropped_after_the_idle_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    client, server = trio.testing.lockstep_stream_pair()
    conn = _connection(server)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.send_all, _request(1))
        start = trio.current_time()
        await conn.run()  # returns when the connection is closed
        assert trio.current_time() - start == pytest.approx(IDLE_S)
        nursery.cancel_scope.cancel()
    assert conn.requests_handled == 1


# -- quotas and the open-file limit ----------------------------------------------------------


def test_quota_per_ip_and_total() -> None:
    quotas = ConnectionQuotas(max_connections=3, max_connections_per_ip=2)
    assert quotas.slot_available()
    assert quotas.try_acquire("10.0.0.1") and quotas.try_acquire("10.0.0.1")
    assert not quotas.try_acquire("10.0.0.1")  # per-IP quota full: nothing counted
    assert quotas.total == 2 and quotas.slot_available()
    assert quotas.try_acquire("10.0.0.2")
    assert not quotas.slot_available()  # broker-wide limit reached: the acceptor waits
    quotas.release("10.0.0.1")
    assert quotas.slot_available() and quotas.per_ip == {"10.0.0.1": 1, "10.0.0.2": 1}
    assert quotas.try_acquire("10.0.0.1")
    quotas.release("10.0.0.2")
    assert quotas.per_ip == {"10.0.0.1": 2} and quotas.total == 2


def test_zero_quota_refuses_everything() -> None:
    quotas = ConnectionQuotas(max_connections=0, max_connections_per_ip=0)
    assert not quotas.slot_available()
    assert not quotas.try_acquire("127.0.0.1")


def test_raise_nofile_limit_goes_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
        before, after = raise_nofile_limit()
        assert before == min(256, hard)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == after
        assert after == hard or hard == resource.RLIM_INFINITY
        assert raise_nofile_limit() == (after, after)  # idempotent
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
