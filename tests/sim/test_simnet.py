"""The simulated network of the deterministic simulation (tests/sim/_simnet.py)."""

from __future__ import annotations

import random

import pytest
import trio
import trio.testing
from _simnet import Host, SimNetwork, run_on

from wirebroker import transport


async def _pair(
    net: SimNetwork, nursery: trio.Nursery, a: Host, b: Host
) -> tuple[trio.abc.Stream, trio.abc.Stream]:
    transport.TRANSPORT.set(net)
    listeners = await run_on(b, net.listen, "b", 1)
    client = await run_on(a, net.connect, "b", 1)
    server = await listeners[0].accept()
    return client, server


async def _read(stream: trio.abc.Stream, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = await stream.receive_some(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


async def test_bytes_keep_their_order(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(1), spike_p=0.5, spike_s=1.0)
    async with trio.open_nursery() as nursery:
        client, server = await _pair(net, nursery, Host("a"), Host("b"))
        for i in range(50):
            await client.send_all(b"%03d" % i)
        assert await _read(server, 150) == b"".join(b"%03d" % i for i in range(50))


async def test_partition_holds_bytes_until_the_heal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    net = SimNetwork(random.Random(2))
    async with trio.open_nursery() as nursery:
        client, server = await _pair(net, nursery, Host("a"), Host("b"))
        net.partition("b")
        await client.send_all(b"hello")
        with trio.move_on_after(30):
            await server.receive_some(5)
            pytest.fail("bytes crossed a partition")
        net.heal()
        assert await _read(server, 5) == b"hello"


async def test_cut_resets_both_ends(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(3))
    async with trio.open_nursery() as nursery:
        client, server = await _pair(net, nursery, Host("a"), Host("b"))
        await client.send_all(b"lost")
        net.cut(net.live_conns()[0])
        with pytest.raises(trio.BrokenResourceError):
            await server.receive_some(4)
        with pytest.raises(trio.BrokenResourceError):
            await client.send_all(b"x")


async def test_no_listener_refuses_and_a_dead_host_is_gone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    net = SimNetwork(random.Random(4))
    a, b = Host("a"), Host("b")
    async with trio.open_nursery() as nursery:
        with pytest.raises(ConnectionRefusedError):
            await run_on(a, net.connect, "b", 1)
        client, _server = await _pair(net, nursery, a, b)
        net.kill(b)
        with pytest.raises(trio.BrokenResourceError):
            await client.receive_some(1)
        with pytest.raises(ConnectionRefusedError):
            await run_on(a, net.connect, "b", 1)
