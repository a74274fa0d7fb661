"""`transport.send_frame`: bytes, and gather frames whose file regions go out by sendfile."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import trio
import trio.testing
from netwire import tcp_pair

from protocol.framing import GatherFrame
from wirebroker.transport import CORKED_TAIL, FileRegion, RegionGone, send_frame


class _Region:
    """`length` bytes at `position` of a file; `gone` makes the next send refuse."""

    def __init__(self, path: Path, position: int, length: int) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        self.position, self.length = position, length
        self.gone = False
        self.calls = 0

    def __len__(self) -> int:
        return self.length

    def __bytes__(self) -> bytes:
        if self.gone:
            raise RegionGone("gone")
        return os.pread(self.fd, self.length, self.position)

    def sendfile(self, out_fd: int, done: int, count: int) -> int:
        if self.gone:
            raise RegionGone("gone")
        self.calls += 1
        return os.sendfile(out_fd, self.fd, self.position + done, min(count, self.length - done))


@pytest.fixture
def data_file(tmp_path: Path) -> tuple[Path, bytes]:
    data = os.urandom(3 << 20)
    path = tmp_path / "data"
    path.write_bytes(data)
    return path, data


async def _read_all(stream: trio.abc.ReceiveStream, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = await stream.receive_some(n - len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def test_a_gather_frame_joins_adjacent_bytes(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    region = _Region(path, 10, 100)
    frame = GatherFrame([b"ab", bytearray(b"cd"), b"", region, memoryview(b"ef"), b"g"])
    assert frame.parts == [b"abcd", region, b"efg"]
    assert len(frame) == 107
    assert bytes(frame) == b"abcd" + data[10:110] + b"efg"
    assert isinstance(region, FileRegion)


async def test_regions_go_out_by_sendfile_on_tcp(data_file: tuple[Path, bytes]) -> None:
    """A region larger than the socket buffers: sendfile waits for the socket and goes on."""
    path, data = data_file
    big, small = _Region(path, 0, len(data)), _Region(path, 7, 5)
    frame = GatherFrame([b"head", big, b"mid", small])
    client, server = await tcp_pair()
    async with client, server:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_frame, server, frame)
            got = await _read_all(client, len(frame))
        assert got == b"head" + data + b"mid" + data[7:12]
        assert big.calls >= 1 and small.calls == 1
        await send_frame(server, b"plain")  # bytes: one send_all
        assert await _read_all(client, 5) == b"plain"


async def test_other_streams_get_the_regions_bytes(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    region = _Region(path, 100, 1000)
    send, receive = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_frame, send, GatherFrame([b"x", region, b"y"]))
        got = await _read_all(receive, 1002)
    assert got == b"x" + data[100:1100] + b"y" and region.calls == 0


async def test_a_region_gone_before_it_is_sent_fails_the_send(
    data_file: tuple[Path, bytes],
) -> None:
    """RegionGone, and the socket is left uncorked (the frame's cork released)."""
    path, _data = data_file
    region = _Region(path, 0, 100)
    region.gone = True
    client, server = await tcp_pair()
    async with client, server:
        with pytest.raises(RegionGone):
            await send_frame(server, GatherFrame([b"head", region]))
        assert _cork(server) == 0
        assert isinstance(RegionGone("x"), trio.BrokenResourceError)


async def test_a_region_that_ends_early_fails_the_send(data_file: tuple[Path, bytes]) -> None:
    """sendfile returning 0 (the file is shorter than the region): RegionGone, not a loop."""
    path, data = data_file
    region = _Region(path, len(data) - 10, 100)
    client, server = await tcp_pair()
    async with client, server:
        with pytest.raises(RegionGone):
            await send_frame(server, GatherFrame([region]))


class _CorkProbe(_Region):
    """Records TCP_CORK of `sock` at every call, sends in 4 KiB steps, and refuses once (a full
    socket) at each offset in `refuse_at`."""

    def __init__(
        self, path: Path, length: int, sock: trio.socket.SocketType, refuse_at: set[int]
    ) -> None:
        super().__init__(path, 0, length)
        self.sock = sock
        self.seen: list[tuple[int, int, int]] = []  # (done, count, TCP_CORK)
        self.refuse_at = refuse_at

    def sendfile(self, out_fd: int, done: int, count: int) -> int:
        self.seen.append((done, count, self.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK)))
        if done in self.refuse_at:
            self.refuse_at.discard(done)
            raise BlockingIOError
        return super().sendfile(out_fd, done, min(count, 4096))


def _cork(stream: trio.SocketStream) -> int:
    return stream.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK)


async def test_the_frame_is_corked_around_its_header_and_its_tail(
    data_file: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header goes out with the region's first bytes and the trailer with its last
    CORKED_TAIL bytes (TCP_CORK on); the rest, and every wait for room, uncorked (a corked
    socket whose buffer holds only a partial segment would wait for the 200 ms cork timer);
    uncorked when the frame is sent."""
    path, data = data_file
    size = 4 * CORKED_TAIL
    tail_from = size - CORKED_TAIL
    client, server = await tcp_pair()
    corked_while_waiting: list[int] = []
    wait_writable = trio.lowlevel.wait_writable

    async def recording_wait(sock: trio.socket.SocketType) -> None:
        corked_while_waiting.append(_cork(server))
        await wait_writable(sock)

    monkeypatch.setattr(trio.lowlevel, "wait_writable", recording_wait)
    async with client, server:
        region = _CorkProbe(path, size, server.socket, {8192, tail_from + 4096})
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_frame, server, GatherFrame([b"head", region, b"tail"]))
            got = await _read_all(client, size + 8)
        assert got == b"head" + data[:size] + b"tail"
        assert _cork(server) == 0
    assert corked_while_waiting == [0, 0]
    first = region.seen[0]
    assert first[0] == 0 and first[2] == 1
    body = [s for s in region.seen[1:] if s[0] < tail_from]
    tail = [s for s in region.seen if s[0] >= tail_from]
    assert body and all(cork == 0 and done + count <= tail_from for done, count, cork in body)
    assert len(tail) > 2 and all(cork == 1 for _done, _count, cork in tail)
