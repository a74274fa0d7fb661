"""Where a broker's bytes go: TCP (always, in production) or a test's simulated network.

The seam of the deterministic simulation (tests/sim): the broker opens its listeners
(`net.server.KafkaServer`) and its broker-to-broker connections
(`replication.broker_client.BrokerConnection.open`, used by the follower fetchers) through
`current()`, the `Transport` of the running trio task. It is a `ContextVar` whose default is
`TCP`, so a broker started anywhere but inside a simulation uses trio's TCP functions exactly as
before. A simulation sets `TRANSPORT` in its trio run before starting the brokers; trio copies
the context into every task spawned from there, so all the brokers' tasks see it.

A `Transport`:
    listen(host, port)    -> listeners (trio `Listener`s of `Stream`s), already bound
    bound_address(l)      -> (host, port) a listener is bound to (port 0 resolved)
    peer_address(stream)  -> (host, port) of an accepted stream's remote end ("?", 0) unknown
    connect(host, port)   -> a connected `Stream`; OSError when it cannot connect

`receive_into(stream, view)` receives into a caller's buffer: straight from the socket for a
TCP stream (no copy in user space: how a large frame lands in place, `protocol.framing`), through
`receive_some` and one copy for any other stream (a simulation's). On Linux, a TCP receive into
a view of LOWAT_MIN bytes or more (the rest of a large frame) sets SO_RCVLOWAT to that size
(capped at LOWAT_MAX) and waits for readiness before reading, so the reader is woken once when
the rest of the frame is there, not for every part the sender's pushes make readable
(docs/replication.md, "Frames received in place"). Waiting first matters:
a non-blocking read returns whatever is queued whatever the mark, so trying a read before
waiting (as trio's socket methods do) would wake for every part again.

`send_frame(stream, frame)` sends a response frame: `bytes` with `send_all`; a
`protocol.framing.GatherFrame` piece by piece, each region that can (a `FileRegion`: a leader's
slice of its log file for a follower) with `sendfile` from its file straight to a TCP socket --
the bytes never enter the process (on Linux over loopback the kernel does not even copy them on
the sending side) --, any other piece, or any piece to another stream, as bytes. Such a frame
is sent with TCP_CORK on around its header and the region's first bytes, and again around the
region's last `CORKED_TAIL` bytes and the trailer, so that the few header and trailer bytes do
not each leave as a segment of their own (each one a push, and a wake-up of the follower
reading them); the bulk in between, and every wait for room in the socket, uncorked (`_Cork`:
a corked, full socket would wait for the kernel's cork timer; docs/replication.md, "Corked
follower answers").

Nothing here knows about Kafka; the module imports only trio (every layer may use it).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from contextvars import ContextVar
from typing import Protocol, TypeGuard, runtime_checkable

import trio

from protocol.framing import GatherFrame

__all__ = [
    "TCP",
    "TRANSPORT",
    "FileRegion",
    "RegionGone",
    "TcpTransport",
    "Transport",
    "current",
    "receive_into",
    "send_frame",
]

Listener = trio.abc.Listener[trio.abc.Stream]


class Transport(Protocol):
    async def listen(self, host: str, port: int) -> list[Listener]: ...

    def bound_address(self, listener: Listener) -> tuple[str, int]: ...

    def peer_address(self, stream: trio.abc.Stream) -> tuple[str, int]: ...

    async def connect(self, host: str, port: int) -> trio.abc.Stream: ...


class TcpTransport:
    """The real network: trio's TCP listeners and streams."""

    async def listen(self, host: str, port: int) -> list[Listener]:
        return list(await trio.open_tcp_listeners(port, host=host or None))

    def bound_address(self, listener: Listener) -> tuple[str, int]:
        assert isinstance(listener, trio.SocketListener)
        name = listener.socket.getsockname()
        return str(name[0]), int(name[1])

    def peer_address(self, stream: trio.abc.Stream) -> tuple[str, int]:
        try:
            name = stream.socket.getpeername()  # type: ignore[attr-defined]
        except (OSError, AttributeError):
            return ("?", 0)
        if isinstance(name, tuple) and len(name) >= 2:
            return str(name[0]), int(name[1])
        return (str(name), 0)

    async def connect(self, host: str, port: int) -> trio.abc.Stream:
        return await trio.open_tcp_stream(host, port)


TCP = TcpTransport()

#: The transport of the current trio task (and of the tasks it spawns): TCP unless a
#: simulation set another one.
TRANSPORT: ContextVar[Transport] = ContextVar("wirebroker_transport", default=TCP)


def current() -> Transport:
    return TRANSPORT.get()


async def receive_into(stream: trio.abc.ReceiveStream, view: memoryview) -> int:
    """Receive at most len(view) bytes into `view`; the count, 0 at end of stream.

    A `trio.SocketStream` is read with the socket's `recv_into`; its OSErrors become
    `trio.BrokenResourceError`, as `receive_some` raises them. Other streams: `receive_some`
    and one copy."""
    if type(stream) is trio.SocketStream:
        try:
            if _LOWAT and len(view) >= LOWAT_MIN:
                return await _receive_at_least(stream.socket, view)
            return await stream.socket.recv_into(view)
        except OSError as exc:
            raise trio.BrokenResourceError(exc) from exc
    data = await stream.receive_some(len(view))
    n = len(data)
    view[:n] = data
    return n


#: A receive into a view of at least LOWAT_MIN bytes (the rest of a large frame, received in
#: place) waits until min(len(view), LOWAT_MAX) bytes have arrived instead of taking whatever
#: is there. LOWAT_MAX bounds the receive buffer the kernel grows for it (about twice that).
LOWAT_MIN = 65536
LOWAT_MAX = 1 << 20
_LOWAT = sys.platform.startswith("linux")  # where SO_RCVLOWAT is honoured by poll and recv


async def _receive_at_least(sock: trio.socket.SocketType, view: memoryview) -> int:
    """SO_RCVLOWAT set to min(len(view), LOWAT_MAX), wait until readable (the kernel wakes the
    reader only when that much is queued, or at end of stream or an error), read what is
    there; the mark is put back to 1 (the default) in any case."""
    fd = sock.fileno()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, min(len(view), LOWAT_MAX))
    try:
        while True:
            await trio.lowlevel.wait_readable(fd)
            try:
                return os.readv(fd, [view])
            except BlockingIOError:
                continue
    finally:
        with contextlib.suppress(OSError):  # closed meanwhile: nothing to reset, and no
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)  # error to mask


class RegionGone(trio.BrokenResourceError):
    """A region's bytes changed or went away before it was sent (its file was truncated or
    deleted): the connection must close, as after any failed send (the peer asks again)."""


@runtime_checkable
class FileRegion(Protocol):
    """A region of a file that can be sent with sendfile (`protocol.framing.GatherFrame`)."""

    def __len__(self) -> int: ...
    def __bytes__(self) -> bytes: ...

    def sendfile(self, out_fd: int, done: int, count: int) -> int:
        """One `os.sendfile` of at most `count` of the region's bytes from `done` on to
        `out_fd`: the count sent; raises BlockingIOError when the socket is full, RegionGone
        when the region's bytes are no longer what they were."""
        ...


async def send_frame(stream: trio.abc.SendStream, frame: bytes | GatherFrame) -> None:
    """Send one whole frame (see the module docstring). Raises what `send_all` raises, and
    RegionGone."""
    if not isinstance(frame, GatherFrame):
        await stream.send_all(frame)
        return
    parts = frame.parts
    if type(stream) is not trio.SocketStream or not any(map(_sendable, parts)):
        for part in parts:
            await stream.send_all(part if type(part) is bytes else bytes(part))
        return
    sock = stream.socket
    cork = _Cork(sock)
    try:
        for part in parts:
            if _sendable(part):
                await _sendfile(sock, part, cork)
            else:
                await _send_corked(stream, sock, part if type(part) is bytes else bytes(part), cork)
    finally:
        cork.set(False)


def _sendable(part: object) -> TypeGuard[FileRegion]:
    """A `FileRegion` (checked by type, not with the runtime Protocol's isinstance, which
    walks the Protocol's members at every call: docs/replication.md, "Corked follower
    answers")."""
    return type(part) is not bytes and hasattr(type(part), "sendfile")


async def _send_corked(
    stream: trio.SocketStream, sock: trio.socket.SocketType, data: bytes, cork: _Cork
) -> None:
    """`data` into the corked socket if it has room now; otherwise uncorked, by `send_all`
    (which waits for room, see `_Cork`)."""
    await trio.lowlevel.checkpoint_if_cancelled()
    try:
        n = os.write(sock.fileno(), data)
    except BlockingIOError:
        n = 0
    except OSError as exc:
        raise trio.BrokenResourceError(exc) from exc
    if n < len(data):
        cork.set(False)
        await stream.send_all(memoryview(data)[n:])


CORKED_TAIL = 32 << 10


class _Cork:
    """TCP_CORK around one frame: its header, file region and trailer leave in full segments
    instead of three pushes (and three wake-ups of the reader). Released while the frame waits
    for room in the socket: a corked socket holds its last partial segment, and when that
    segment is all the send buffer holds, room would only come with the kernel's 200 ms cork
    timer."""

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self._sock = sock
        self._on = False
        self._usable = sock.family in (socket.AF_INET, socket.AF_INET6)
        self.set(True)

    def set(self, on: bool) -> None:
        if self._usable and on != self._on:
            try:
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, int(on))
            except OSError:
                self._usable = False
                return
            self._on = on


async def _sendfile(sock: trio.socket.SocketType, region: FileRegion, cork: _Cork) -> None:
    """The region by sendfile: all but its last CORKED_TAIL bytes uncorked once the first
    call has taken the frame's header along, the tail corked with the trailer to come."""
    size, done = len(region), 0
    tail_from = size - CORKED_TAIL
    await trio.lowlevel.checkpoint_if_cancelled()
    while done < size:
        if done < tail_from:
            count = tail_from - done
            if done > 0:
                cork.set(False)
        else:
            count = size - done
            cork.set(True)
        try:
            n = region.sendfile(sock.fileno(), done, count)
        except BlockingIOError:
            cork.set(False)
            await trio.lowlevel.wait_writable(sock)
            continue
        except RegionGone:
            raise
        except OSError as exc:
            raise trio.BrokenResourceError(exc) from exc
        if n <= 0:
            raise RegionGone(f"file region ended after {done} of {size} bytes")
        done += n
