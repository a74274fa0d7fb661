"""Client quotas in the connection (wirebroker.net.connection, MUTED): a reply with a throttle
time is sent, then nothing more is handled from that connection for that long (KIP-219); an
older client's reply waits that long instead; other connections are never held up. MockClock:
no real waiting."""

from __future__ import annotations

import trio
import trio.testing
from netwire import MAX_FRAME, frame

from wirebroker.handlers.dispatcher import Reply
from wirebroker.net.connection import Connection


class Throttling:
    """Answers each frame with its first byte; frames starting with "t" carry 2 s of throttle
    (`delay`: sent after it, as for a client older than KIP-219)."""

    def __init__(self, *, delay: bool = False) -> None:
        self.seen: list[tuple[bytes, float]] = []
        self.delay = delay

    async def dispatch(
        self, frame: bytes, client_host: str, peer: str, session: object = None
    ) -> Reply:
        self.seen.append((bytes(frame), trio.current_time()))
        throttle = 2000 if frame[:1] == b"t" else 0
        return Reply(
            b"\x00\x00\x00\x01" + frame[:1], throttle_ms=throttle, delay_response=self.delay
        )


async def _serve(dispatcher: Throttling) -> tuple[trio.testing.MemoryStreamPair, Connection]:
    client, server = trio.testing.memory_stream_pair()
    conn = Connection(server, dispatcher, max_frame_bytes=MAX_FRAME, idle_timeout_s=60)
    return (client, server), conn  # type: ignore[return-value]


async def receive(client: trio.abc.Stream, size: int) -> bytes:
    got = b""
    while len(got) < size:
        got += await client.receive_some()
    return got


async def test_the_channel_is_muted_after_a_throttled_reply(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dispatcher = Throttling()
    (client, _server), conn = await _serve(dispatcher)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.run)
        start = trio.current_time()
        await client.send_all(frame(b"t") + frame(b"a"))
        assert await receive(client, 5) == b"\x00\x00\x00\x01t"
        assert trio.current_time() - start < 0.5  # the throttled answer went out at once
        assert await receive(client, 5) == b"\x00\x00\x00\x01a"
        (_t, first), (_a, second) = dispatcher.seen
        assert second - first >= 2.0  # the next request waited out the throttle
        await client.aclose()


async def test_an_older_clients_reply_waits_instead(autojump_clock: trio.testing.MockClock) -> None:
    (client, _server), conn = await _serve(Throttling(delay=True))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.run)
        start = trio.current_time()
        await client.send_all(frame(b"t"))
        assert await receive(client, 5) == b"\x00\x00\x00\x01t"
        assert trio.current_time() - start >= 2.0
        await client.aclose()


async def test_shutdown_ends_a_mute(autojump_clock: trio.testing.MockClock) -> None:
    (client, _server), conn = await _serve(Throttling())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.run)
        await client.send_all(frame(b"t"))
        await receive(client, 5)
        start = trio.current_time()
        conn.begin_close()
        with trio.fail_after(1):
            await client.receive_some()  # EOF: closed without waiting out the throttle
        assert trio.current_time() - start < 1
