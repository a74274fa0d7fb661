"""A simulated network for the deterministic simulation: in-memory streams under MockClock.

`SimNetwork` implements `wirebroker.transport.Transport` (listen / connect / addresses), so real
`Broker`s and the simulation's clients talk through it once `wirebroker.transport.TRANSPORT` is
set to it. Every random choice comes from the `random.Random` it is given (derived from the
run's seed); every delay is trio time (MockClock), so a run is a pure function of the seed.

Hosts. Every task runs "on" a `Host` (the context variable `HOST`, set by `run_on`; trio copies
it into every task spawned from there, so all the tasks of a broker incarnation are on its
host). A host has a `node` name ("b0", "b1", "client"...) shared by the incarnations of one
broker (partitions are between nodes) and an `alive` flag (a crashed incarnation is dead: its
listeners are gone, its connections reset, and whatever its leftover tasks try fails).

Connections model TCP as the brokers see it:
    connect       one round trip (the link latency) then a connected pair of `SimStream`s; no
                  listener at (host, port): ECONNREFUSED after the round trip; a partitioned
                  link: the SYN is retransmitted 1, 2, 4, 8, 16, 32 s later (Linux's
                  tcp_syn_retries=6 schedule) and connects at the first retry after the heal,
                  else ETIMEDOUT after 63 s
    byte order    each direction is FIFO: a chunk is delivered at
                  max(send time + latency, delivery time of the chunk before it); latency is
                  `base_latency` uniform plus, with probability `spike_p`, a spike uniform up to
                  `spike_s` (plus a link's `slow` extra while a slow-link fault lasts). Two
                  connections have independent delays, so messages reorder *between* them
                  (a follower's fetch vs. a producer's request), never inside one
    split         `split(node)`: the same between that broker and the other brokers only
                  (clients still reach every broker: an asymmetric partition)
    partition     `partition(node)`: no byte crosses between that node and any other node (the
                  coordination service is not on this network: the broker keeps its ZooKeeper
                  session); bytes sent meanwhile wait and are delivered after `heal()`, as TCP
                  retransmits them; no error is raised (a blackhole, not a reset)
    loss          `cut(conn)`: the connection is reset both ways (pending bytes are dropped,
                  both ends' next receive/send raises BrokenResourceError): what message loss
                  looks like to a TCP application
    close         aclose(): the peer reads EOF after the bytes already sent
    crash         `kill(host)`: the host's listeners close, its connections are reset
"""

from __future__ import annotations

import errno
import math
import random
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import trio

SYN_RETRIES_S = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


@dataclass(eq=False)
class Host:
    node: str
    incarnation: int = 0
    alive: bool = True

    def __repr__(self) -> str:
        return f"{self.node}#{self.incarnation}"


HOST: ContextVar[Host | None] = ContextVar("sim_host", default=None)


async def run_on(host: Host, fn: Callable[..., Awaitable[Any]], *args: Any, **kw: Any) -> Any:
    """Run `fn` (and every task it spawns) on `host`."""
    HOST.set(host)
    return await fn(*args, **kw)


class _Pipe:
    """One direction of a connection."""

    def __init__(self, net: SimNetwork, src: Host, dst: Host) -> None:
        self.net, self.src, self.dst = net, src, dst
        self.chunks: deque[tuple[float, bytearray]] = deque()
        self.last_at = 0.0
        self.eof = False
        self.reset = False
        self.wake = trio.Event()

    def poke(self) -> None:
        self.wake.set()
        self.wake = trio.Event()

    def push(self, data: bytes) -> None:
        at = max(trio.current_time() + self.net.latency(self.src, self.dst), self.last_at)
        self.last_at = at
        self.chunks.append((at, bytearray(data)))
        self.net.bytes_sent += len(data)
        self.poke()

    async def pull(self, max_bytes: int) -> bytes:
        while True:
            if self.reset:
                raise trio.BrokenResourceError("connection reset by peer")
            blocked = self.net.blocked(self.src, self.dst)
            if self.chunks and not blocked:
                at, chunk = self.chunks[0]
                if at <= trio.current_time():
                    out = bytes(chunk[:max_bytes])
                    del chunk[:max_bytes]
                    if not chunk:
                        self.chunks.popleft()
                    return out
            elif not self.chunks and self.eof:
                return b""
            deadline = self.chunks[0][0] if self.chunks and not blocked else math.inf
            wake = self.wake
            with trio.move_on_at(deadline):
                await wake.wait()


class SimStream(trio.abc.Stream):
    """One end of a simulated TCP connection."""

    def __init__(self, conn: SimConn, inbound: _Pipe, outbound: _Pipe, peer: tuple[str, int]):
        self.conn, self.inbound, self.outbound, self.peer = conn, inbound, outbound, peer
        self.closed = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        if self.closed:
            raise trio.ClosedResourceError
        if self.outbound.reset or not self.outbound.src.alive:
            raise trio.BrokenResourceError("connection reset")
        if data:
            self.outbound.push(bytes(data))

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self.closed:
            await trio.lowlevel.checkpoint()
            raise trio.ClosedResourceError
        data = await self.inbound.pull(max_bytes or 65536)
        await trio.lowlevel.checkpoint()
        return data

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            self.outbound.eof = True
            self.outbound.poke()
            self.inbound.poke()
        await trio.lowlevel.checkpoint()


@dataclass(eq=False)
class SimConn:
    id: int
    client: Host
    server: Host
    address: tuple[str, int]
    up: _Pipe  # client -> server
    down: _Pipe  # server -> client

    def reset(self) -> None:
        for pipe in (self.up, self.down):
            pipe.reset = True
            pipe.chunks.clear()
            pipe.poke()

    @property
    def broken(self) -> bool:
        return self.up.reset or (self.up.eof and self.down.eof)


class SimListener(trio.abc.Listener[trio.abc.Stream]):
    def __init__(self, net: SimNetwork, host: Host, address: tuple[str, int]) -> None:
        self.net, self.host, self.address = net, host, address
        self.send, self.recv = trio.open_memory_channel[SimStream](math.inf)
        self.closed = False

    async def accept(self) -> trio.abc.Stream:
        try:
            return await self.recv.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            # closed by a crash of its host: nothing will ever connect again (the accepting
            # task of a dead incarnation just waits to be cancelled)
            await trio.sleep_forever()
            raise AssertionError("unreachable") from None

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.net.listeners.get(self.address) is self:
            del self.net.listeners[self.address]
        self.recv.close()
        self.send.close()


@dataclass
class LinkFaults:
    """What a link suffers now (set and cleared by the simulation's fault schedule)."""

    partitioned: set[str] = field(default_factory=set)  # nodes cut off from every other node
    split: set[str] = field(default_factory=set)  # nodes cut off from the other brokers only
    slow: dict[frozenset[str], float] = field(default_factory=dict)  # extra seconds per pair


class SimNetwork:
    """The `Transport` of a simulation (see the module docstring)."""

    def __init__(
        self,
        rng: random.Random,
        *,
        base_latency: tuple[float, float] = (0.0002, 0.002),
        spike_p: float = 0.02,
        spike_s: float = 0.2,
    ) -> None:
        self.rng = rng
        self.base_latency = base_latency
        self.spike_p = spike_p
        self.spike_s = spike_s
        self.listeners: dict[tuple[str, int], SimListener] = {}
        self.conns: list[SimConn] = []
        self.faults = LinkFaults()
        self.changed = trio.Event()
        self._ids = 0
        self.bytes_sent = 0
        self.connects = 0
        self.refused = 0

    # -- link state ----------------------------------------------------------------------------
    def blocked(self, a: Host, b: Host) -> bool:
        if a.node == b.node:
            return False
        p, split = self.faults.partitioned, self.faults.split
        if a.node in p or b.node in p:
            return True
        brokers = a.node.startswith("b") and b.node.startswith("b")
        return brokers and (a.node in split or b.node in split)

    def latency(self, a: Host, b: Host) -> float:
        lo, hi = self.base_latency
        d = self.rng.uniform(lo, hi)
        if self.rng.random() < self.spike_p:
            d += self.rng.uniform(0, self.spike_s)
        return d + self.faults.slow.get(frozenset((a.node, b.node)), 0.0)

    def _poke_all(self) -> None:
        for conn in self.conns:
            conn.up.poke()
            conn.down.poke()
        self.changed.set()
        self.changed = trio.Event()

    def partition(self, node: str) -> None:
        self.faults.partitioned.add(node)
        self._poke_all()

    def split(self, node: str) -> None:
        """`node` cannot reach the other brokers (nor they it); clients still reach all."""
        self.faults.split.add(node)
        self._poke_all()

    def heal(self) -> None:
        self.faults.partitioned.clear()
        self.faults.split.clear()
        self.faults.slow.clear()
        self._poke_all()

    def slow(self, a: str, b: str, extra_s: float) -> None:
        self.faults.slow[frozenset((a, b))] = extra_s

    def live_conns(self) -> list[SimConn]:
        self.conns = [c for c in self.conns if not c.broken]
        return list(self.conns)

    def cut(self, conn: SimConn) -> None:
        conn.reset()

    def kill(self, host: Host) -> None:
        """A crash: `host` is gone; its listeners close and its connections reset."""
        host.alive = False
        for listener in [li for li in self.listeners.values() if li.host is host]:
            listener.close()
        for conn in self.conns:
            if conn.client is host or conn.server is host:
                conn.reset()
        self._poke_all()

    # -- Transport -----------------------------------------------------------------------------
    def _host(self) -> Host:
        host = HOST.get()
        if host is None:
            raise RuntimeError("a simulated network operation outside any host (run_on)")
        return host

    async def listen(self, host: str, port: int) -> list[trio.abc.Listener[trio.abc.Stream]]:
        await trio.lowlevel.checkpoint()
        me = self._host()
        address = (host, port)
        if not me.alive:
            raise OSError(errno.EADDRNOTAVAIL, "host is down")
        if address in self.listeners:
            raise OSError(errno.EADDRINUSE, f"{host}:{port} in use")
        listener = self.listeners[address] = SimListener(self, me, address)
        return [listener]

    def bound_address(self, listener: trio.abc.Listener[trio.abc.Stream]) -> tuple[str, int]:
        assert isinstance(listener, SimListener)
        return listener.address

    def peer_address(self, stream: trio.abc.Stream) -> tuple[str, int]:
        assert isinstance(stream, SimStream)
        return stream.peer

    async def connect(self, host: str, port: int) -> trio.abc.Stream:
        me = self._host()
        address = (host, port)
        self.connects += 1
        rtt = self.latency(me, me) * 2
        await trio.sleep(rtt)
        listener = self.listeners.get(address)
        if listener is not None and self.blocked(me, listener.host):
            for wait in SYN_RETRIES_S:
                await trio.sleep(wait)
                listener = self.listeners.get(address)
                if listener is None or not self.blocked(me, listener.host):
                    break
            else:
                raise OSError(errno.ETIMEDOUT, f"connect to {host}:{port} timed out")
        if not me.alive:
            raise OSError(errno.ENETDOWN, "host is down")
        if listener is None or listener.closed:
            self.refused += 1
            raise ConnectionRefusedError(errno.ECONNREFUSED, f"{host}:{port} refused")
        self._ids += 1
        up = _Pipe(self, me, listener.host)
        down = _Pipe(self, listener.host, me)
        conn = SimConn(self._ids, me, listener.host, address, up, down)
        self.conns.append(conn)
        client_end = SimStream(conn, down, up, address)
        server_end = SimStream(conn, up, down, (me.node, 40000 + self._ids))
        listener.send.send_nowait(server_end)
        return client_end
