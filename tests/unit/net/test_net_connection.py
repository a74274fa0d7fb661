"""Connection handling: ordering, framing, bad input, handler bugs, idle timeout, shutdown."""

from __future__ import annotations

import logging
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from netwire import (
    MAX_FRAME,
    TIMEOUT_S,
    RunningServer,
    StartServer,
    WireClient,
    frame,
    request_header_v1,
    request_header_v2,
)

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers.registry import HandlerFunc, HandlerSpec, Later, handler


def metadata_body(ctx: Any) -> dict[str, Any]:
    """A minimal valid Metadata response naming the request's correlation id in cluster_id."""
    return {
        "brokers": [{"node_id": 0, "host": "h", "port": 1}],
        "cluster_id": f"c{ctx.header.correlation_id}",
        "controller_id": 0,
        "topics": [],
    }


def register_metadata(registry: dict[int, HandlerSpec], func: HandlerFunc, **versions: int) -> None:
    registry.pop(ApiKey.METADATA, None)
    handler(ApiKey.METADATA, **versions)(func)


async def assert_healthy(address: tuple[str, int]) -> None:
    """A fresh connection still gets ApiVersions answered."""
    client = await WireClient.connect(address)
    try:
        response = await client.call(ApiVersionsRequest[0](), correlation_id=4242)
        assert response.error_code == ErrorCode.NONE
    finally:
        await client.aclose()


async def test_pipelined_requests_are_answered_in_order(running: RunningServer) -> None:
    client = await WireClient.connect(running.address)
    requests = [
        ApiVersionsRequest[v]()
        if v < 3
        else ApiVersionsRequest[v](client_software_name="x", client_software_version="1")
        for v in (0, 3, 1, 4, 2)
    ]
    wire = b"".join(client.encode(r, correlation_id=10 + i) for i, r in enumerate(requests))
    await client.send_raw(wire)
    for i, request in enumerate(requests):
        response = await client.receive(request)
        assert response.header.correlation_id == 10 + i
        assert response.error_code == ErrorCode.NONE


async def test_requests_are_handled_one_at_a_time(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    events: list[str] = []
    release = trio.Event()

    async def slow(ctx: Any, req: Any) -> dict[str, Any]:
        cid = ctx.header.correlation_id
        events.append(f"start {cid}")
        if cid == 1:
            await release.wait()
        events.append(f"end {cid}")
        return metadata_body(ctx)

    register_metadata(registry, slow)
    client = await WireClient.connect(running.address)
    first, second = MetadataRequest[2](topics=[]), MetadataRequest[2](topics=[])
    await client.send_raw(client.encode(first, 1) + client.encode(second, 2))
    await trio.testing.wait_all_tasks_blocked()
    assert events == ["start 1"]
    release.set()
    assert (await client.receive(first)).cluster_id == "c1"
    assert (await client.receive(second)).cluster_id == "c2"
    assert events == ["start 1", "end 1", "start 2", "end 2"]


# -- replies that come later (QUEUED) --------------------------------------------------------


def later_metadata(
    events: list[str], releases: dict[int, trio.Event]
) -> Callable[[Any, Any], Awaitable[Any]]:
    """A Metadata handler that answers `Later` for the correlation ids in `releases` (the body
    once that event is set) and at once for the others; `events` records the order."""

    async def handle(ctx: Any, req: Any) -> Any:
        cid = ctx.header.correlation_id
        events.append(f"handled {cid}")
        if cid not in releases:
            return metadata_body(ctx)

        async def wait() -> dict[str, Any]:
            await releases[cid].wait()
            events.append(f"ready {cid}")
            return metadata_body(ctx)

        return Later(wait)

    return handle


async def test_a_later_reply_lets_the_next_requests_be_served_in_order(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    events: list[str] = []
    releases = {1: trio.Event(), 2: trio.Event()}
    register_metadata(registry, later_metadata(events, releases))
    client = await WireClient.connect(running.address)
    requests = [MetadataRequest[2](topics=[]) for _ in range(4)]
    await client.send_raw(b"".join(client.encode(r, i) for i, r in enumerate(requests)))
    await trio.testing.wait_all_tasks_blocked()
    # all four handled; 0 answered; 1 and 2 wait, 3 (ready) waits behind them
    assert events == ["handled 0", "handled 1", "handled 2", "handled 3"]
    assert (await client.receive(requests[0])).cluster_id == "c0"
    releases[2].set()  # the later one first: it still goes out after 1
    await trio.testing.wait_all_tasks_blocked()
    releases[1].set()
    for i in (1, 2, 3):
        assert (await client.receive(requests[i])).cluster_id == f"c{i}"
    assert events[4:] == ["ready 1", "ready 2"]  # awaited in request order
    # then back to answering at once
    assert (await client.call(requests[0], 9)).cluster_id == "c9"


async def test_queued_replies_are_bounded(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    from wirebroker.net.connection import MAX_QUEUED_REPLIES

    events: list[str] = []
    n = MAX_QUEUED_REPLIES + 2
    releases = {i: trio.Event() for i in range(n)}
    register_metadata(registry, later_metadata(events, releases))
    client = await WireClient.connect(running.address)
    requests = [MetadataRequest[2](topics=[]) for _ in range(n)]
    await client.send_raw(b"".join(client.encode(r, i) for i, r in enumerate(requests)))
    await trio.testing.wait_all_tasks_blocked()
    # one being awaited by the sender, MAX_QUEUED_REPLIES - 1 queued, one handled and waiting
    # for room; the last is not read
    assert events == [f"handled {i}" for i in range(MAX_QUEUED_REPLIES + 1)]
    releases[0].set()
    assert (await client.receive(requests[0])).cluster_id == "c0"
    await trio.testing.wait_all_tasks_blocked()
    assert events[-1] == f"handled {n - 1}"
    for i in range(1, n):
        releases[i].set()
        assert (await client.receive(requests[i])).cluster_id == f"c{i}"


async def test_queued_replies_are_sent_before_a_close(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    events: list[str] = []
    releases = {1: trio.Event()}
    register_metadata(registry, later_metadata(events, releases))
    client = await WireClient.connect(running.address)
    request = MetadataRequest[2](topics=[])
    bad = request_header_v1(int(ApiKey.METADATA), 2, 2) + b"\xff"  # truncated body: closes
    await client.send_raw(client.encode(request, 1) + frame(bad))
    await trio.testing.wait_all_tasks_blocked()
    releases[1].set()
    assert (await client.receive(request)).cluster_id == "c1"
    await client.expect_closed()
    await assert_healthy(running.address)


async def test_a_later_reply_that_fails_closes_only_that_connection(
    running: RunningServer, registry: dict[int, HandlerSpec], caplog: pytest.LogCaptureFixture
) -> None:
    async def handle(ctx: Any, req: Any) -> Any:
        async def wait() -> dict[str, Any]:
            raise RuntimeError("boom")

        return Later(wait)

    register_metadata(registry, handle)
    client = await WireClient.connect(running.address)
    with caplog.at_level(logging.ERROR, logger="wirebroker.net"):
        await client.send(MetadataRequest[2](topics=[]), correlation_id=5)
        await client.expect_closed()
    assert "handler failed" in caplog.text
    await assert_healthy(running.address)


async def test_a_frame_sent_byte_by_byte(running: RunningServer) -> None:
    client = await WireClient.connect(running.address)
    request = ApiVersionsRequest[3](client_software_name="slow", client_software_version="1")
    for byte in client.encode(request, correlation_id=31):
        await client.send_raw(bytes([byte]))
    response = await client.receive(request)
    assert response.header.correlation_id == 31
    assert response.error_code == ErrorCode.NONE


async def test_large_frames_are_received_in_place_between_small_ones(
    start_server: StartServer, registry: dict[int, HandlerSpec]
) -> None:
    """Frames of 64 KiB and more go straight into their own buffer (FrameDecoder.
    receive_buffer): several, pipelined with small ones in one stream and sent in uneven
    pieces, are each decoded whole and answered in order."""

    async def count(ctx: Any, req: Any) -> dict[str, Any]:
        body = metadata_body(ctx)
        body["cluster_id"] = f"c{ctx.header.correlation_id}:{len(req['topics'] or [])}"
        return body

    register_metadata(registry, count)
    running = await start_server(max_frame_bytes=1 << 20)
    client = await WireClient.connect(running.address)
    sizes = [3000, 0, 6000, 1, 2500]  # topic names of 40 bytes: 3000 of them ~ 130 KB
    requests = [
        MetadataRequest[4](
            topics=[f"topic-{cid:02d}-{i:031d}" for i in range(n)] if n else None,
            allow_auto_topic_creation=False,
        )
        for cid, n in enumerate(sizes)
    ]
    wire = b"".join(client.encode(r, correlation_id=cid) for cid, r in enumerate(requests))
    assert len(wire) > 3 * 65536
    pos, step = 0, 1
    while pos < len(wire):  # 1, 2, 4, ... byte pieces up to 64 KiB, then 64 KiB
        await client.send_raw(wire[pos : pos + step])
        pos += step
        step = min(step * 2, 65536)
    for cid, (request, n) in enumerate(zip(requests, sizes, strict=True)):
        response = await client.receive(request)
        assert response.header.correlation_id == cid
        assert response.cluster_id == f"c{cid}:{n}"


async def test_a_reset_inside_a_large_frame_is_quiet(
    start_server: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    running = await start_server(max_frame_bytes=1 << 20)
    client = await WireClient.connect(running.address)
    body = request_header_v1(ApiKey.METADATA, 4, 1) + b"\x00" * 200_000
    with caplog.at_level(logging.DEBUG, logger="wirebroker.net"):
        await client.send_raw(frame(body)[:100_000])
        await trio.testing.wait_all_tasks_blocked()
        sock = client.stream.socket
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await client.aclose()  # RST: the server's recv_into fails
        await assert_healthy(running.address)
        await trio.testing.wait_all_tasks_blocked()
    assert not [r for r in caplog.records if r.levelno >= logging.INFO]
    assert "lost" in caplog.text or "closed by the peer" in caplog.text


async def test_flexible_metadata_round_trip(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    async def ok(ctx: Any, req: Any) -> dict[str, Any]:
        assert ctx.api_version == 12
        assert ctx.header.client_id == "netwire"
        assert ctx.client_host == "127.0.0.1"
        assert ctx.services.cluster_id == "test-cluster"
        return metadata_body(ctx)

    register_metadata(registry, ok)
    client = await WireClient.connect(running.address)
    response = await client.call(MetadataRequest[12](topics=None), correlation_id=8)
    assert response.cluster_id == "c8"
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(0, "h", 1)]


async def test_no_response_when_the_handler_returns_none(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    async def silent_for_odd(ctx: Any, req: Any) -> dict[str, Any] | None:
        return None if ctx.header.correlation_id % 2 else metadata_body(ctx)

    register_metadata(registry, silent_for_odd)
    client = await WireClient.connect(running.address)
    request = MetadataRequest[1](topics=[])
    await client.send_raw(
        client.encode(MetadataRequest[1](topics=[]), 1) + client.encode(request, 2)
    )
    response = await client.receive(request)
    assert response.header.correlation_id == 2


# -- bad input: the connection is closed, other connections are unaffected -------------------

BAD_FRAMES = {
    "unknown api key": frame(request_header_v1(9999, 0, 1)),
    "negative api key": frame(request_header_v1(-5, 0, 1)),
    "version outside the schema": frame(request_header_v2(ApiKey.METADATA, 99, 1) + b"\x00"),
    "truncated header": frame(b"\x00\x12\x00"),
    "empty frame": frame(b""),
    "client id longer than the frame": frame(struct.pack(">hhih", 18, 0, 1, 300) + b"abc"),
    "malformed compact string": frame(request_header_v2(ApiKey.API_VERSIONS, 3, 1) + b"\x33ab"),
    "negative frame size": struct.pack(">i", -1) + b"\x00" * 16,
    "frame above the cap": struct.pack(">i", MAX_FRAME + 1),
    "huge frame size": b"\x7f\xff\xff\xff",
}


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
async def test_bad_input_closes_only_that_connection(
    running: RunningServer, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    bystander = await WireClient.connect(running.address)
    client = await WireClient.connect(running.address)
    # a good request first, then the bad frame: the good one is still answered
    good = ApiVersionsRequest[0]()
    with caplog.at_level(logging.INFO, logger="wirebroker.net"):
        await client.send_raw(client.encode(good, 1) + BAD_FRAMES[name])
        assert (await client.receive(good)).error_code == ErrorCode.NONE
        await client.expect_closed()
    closing = [r for r in caplog.records if "closing connection" in r.getMessage()]
    assert len(closing) == 1, [r.getMessage() for r in caplog.records]
    assert closing[0].exc_info is None
    await assert_healthy(running.address)
    assert (await bystander.call(ApiVersionsRequest[1](), 5)).error_code == ErrorCode.NONE


async def test_version_outside_the_served_range_closes(
    running: RunningServer, registry: dict[int, HandlerSpec], caplog: pytest.LogCaptureFixture
) -> None:
    called: list[int] = []

    async def never(ctx: Any, req: Any) -> dict[str, Any]:
        called.append(ctx.api_version)
        return metadata_body(ctx)

    register_metadata(registry, never, min_version=4)
    client = await WireClient.connect(running.address)
    with caplog.at_level(logging.INFO, logger="wirebroker.net"):
        await client.send(MetadataRequest[1](topics=[]), correlation_id=61)
        await client.expect_closed()
    assert called == []
    (record,) = [r for r in caplog.records if "closing connection" in r.getMessage()]
    message = record.getMessage()
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "correlation id 61" in message and "v1" in message and "Metadata" in message
    await assert_healthy(running.address)


def legacy_produce_body(acks: int, topics: dict[str, list[int]]) -> bytes:
    """A Produce v0-2 body (identical layout for the three versions), empty message sets."""
    body = struct.pack(">hii", acks, 1000, len(topics))
    for name, partitions in topics.items():
        body += struct.pack(">h", len(name)) + name.encode() + struct.pack(">i", len(partitions))
        for index in partitions:
            body += struct.pack(">ii", index, 0)
    return body


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_produce_below_version_3_is_answered_unsupported_version(
    running: RunningServer,
    registry: dict[int, HandlerSpec],
    caplog: pytest.LogCaptureFixture,
    version: int,
) -> None:
    """Advertised (KAFKA-18659) but not served: every partition gets UNSUPPORTED_VERSION in the
    version's own response layout, the handler is not called, the connection stays open."""
    registry.pop(ApiKey.PRODUCE, None)
    called: list[int] = []

    @handler(ApiKey.PRODUCE)
    async def produce(ctx: Any, req: Any) -> None:
        called.append(ctx.api_version)

    client = await WireClient.connect(running.address)
    body = legacy_produce_body(1, {"t1": [0, 3], "t2": [1]})
    with caplog.at_level(logging.INFO, logger="wirebroker.net"):
        await client.send_raw(frame(request_header_v1(ApiKey.PRODUCE, version, 77) + body))
        data = await client.read_frame()
    assert data is not None, "connection closed instead of an answer"
    correlation, ntopics = struct.unpack_from(">ii", data, 0)
    assert (correlation, ntopics) == (77, 2)
    pos = 8
    seen = []
    for _ in range(ntopics):
        (n,) = struct.unpack_from(">h", data, pos)
        name = data[pos + 2 : pos + 2 + n].decode()
        pos += 2 + n
        (nparts,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(nparts):
            index, error, base = struct.unpack_from(">ihq", data, pos)
            pos += 14
            if version >= 2:
                (append_time,) = struct.unpack_from(">q", data, pos)
                assert append_time == -1
                pos += 8
            seen.append((name, index, error, base))
    if version >= 1:
        assert struct.unpack_from(">i", data, pos) == (0,)  # throttle_time_ms
        pos += 4
    assert pos == len(data), "trailing bytes in the response"
    unsupported = int(ErrorCode.UNSUPPORTED_VERSION)
    assert seen == [
        ("t1", 0, unsupported, -1),
        ("t1", 3, unsupported, -1),
        ("t2", 1, unsupported, -1),
    ]
    assert called == []
    assert any(
        "UNSUPPORTED_VERSION" in r.getMessage() and f"Produce v{version}" in r.getMessage()
        for r in caplog.records
    )
    # the same connection goes on serving
    response = await client.call(ApiVersionsRequest[0](), correlation_id=78)
    assert response.error_code == ErrorCode.NONE


async def test_acks_0_produce_below_version_3_closes(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    client = await WireClient.connect(running.address)
    body = legacy_produce_body(0, {"t1": [0]})
    await client.send_raw(frame(request_header_v1(ApiKey.PRODUCE, 1, 1) + body))
    await client.expect_closed()
    await assert_healthy(running.address)


async def test_malformed_produce_below_version_3_closes(running: RunningServer) -> None:
    client = await WireClient.connect(running.address)
    body = struct.pack(">hii", 1, 1000, 5)  # five topics announced, none sent
    await client.send_raw(frame(request_header_v1(ApiKey.PRODUCE, 2, 1) + body))
    await client.expect_closed()
    await assert_healthy(running.address)


async def test_api_without_a_handler_closes(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    registry.pop(ApiKey.METADATA, None)
    client = await WireClient.connect(running.address)
    await client.send(MetadataRequest[1](topics=[]), correlation_id=1)
    await client.expect_closed()
    await assert_healthy(running.address)


async def test_a_handler_bug_closes_only_that_connection(
    running: RunningServer, registry: dict[int, HandlerSpec], caplog: pytest.LogCaptureFixture
) -> None:
    async def buggy(ctx: Any, req: Any) -> dict[str, Any]:
        raise RuntimeError("boom in handler")

    register_metadata(registry, buggy)
    bystander = await WireClient.connect(running.address)
    client = await WireClient.connect(running.address)
    with caplog.at_level(logging.ERROR, logger="wirebroker.net"):
        await client.send(MetadataRequest[9](topics=[]), correlation_id=73)
        await client.expect_closed()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is not None and "boom in handler" in str(errors[0].exc_info[1])
    assert "correlation id 73" in errors[0].getMessage()
    await assert_healthy(running.address)
    assert (await bystander.call(ApiVersionsRequest[2](), 6)).error_code == ErrorCode.NONE


async def test_a_response_that_cannot_be_encoded_closes(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    async def bad_body(ctx: Any, req: Any) -> dict[str, Any]:
        return {"brokers": [{"node_id": "not a number"}]}

    register_metadata(registry, bad_body)
    client = await WireClient.connect(running.address)
    await client.send(MetadataRequest[1](topics=[]), correlation_id=1)
    await client.expect_closed()
    await assert_healthy(running.address)


async def test_peer_reset_is_quiet(
    running: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    client = await WireClient.connect(running.address)
    with caplog.at_level(logging.INFO, logger="wirebroker.net"):
        await client.send_raw(frame(request_header_v1(ApiKey.API_VERSIONS, 0, 1))[:7])
        await client.aclose()
        await assert_healthy(running.address)
        await trio.testing.wait_all_tasks_blocked()
    assert not [
        r for r in caplog.records if r.levelno >= logging.INFO and "closing" in r.getMessage()
    ]


# -- idle connections and shutdown -------------------------------------------------------


async def test_idle_connection_is_closed(start_server: StartServer) -> None:
    running = await start_server(idle_timeout_ms=50)
    client = await WireClient.connect(running.address)
    assert (await client.call(ApiVersionsRequest[0](), 1)).error_code == ErrorCode.NONE
    await client.expect_closed()


async def test_a_held_server_serves_only_after_start_serving(
    start_server: StartServer,
) -> None:
    """hold_requests (a cluster broker before it has joined): the port is bound, a client
    may connect (the listen backlog), but its request is read only after start_serving()."""
    running = await start_server(hold_requests=True)
    client = await WireClient.connect(running.address)
    request = ApiVersionsRequest[0]()
    await client.send(request, correlation_id=1)
    await trio.testing.wait_all_tasks_blocked()
    assert not running.server.connections and not running.server.listening
    running.server.start_serving()
    assert (await client.receive(request)).error_code == ErrorCode.NONE


async def test_a_server_stopped_or_cancelled_while_held_closes_its_listeners(
    registry: dict[int, HandlerSpec],
) -> None:
    from netwire import stub_server

    for stop in ("shutdown", "cancel"):
        server = stub_server(registry, hold_requests=True)
        with trio.fail_after(TIMEOUT_S):
            async with trio.open_nursery() as nursery:
                (address,) = await nursery.start(server.run, [("127.0.0.1", 0)])
                if stop == "shutdown":
                    server.shutdown()
                else:
                    nursery.cancel_scope.cancel()
            with pytest.raises(OSError):
                await trio.open_tcp_stream(*address)


async def test_shutdown_lets_the_request_in_flight_finish(
    registry: dict[int, HandlerSpec], clients: list[WireClient]
) -> None:
    from netwire import stub_server

    entered, release = trio.Event(), trio.Event()

    async def slow(ctx: Any, req: Any) -> dict[str, Any]:
        entered.set()
        await release.wait()
        return metadata_body(ctx)

    register_metadata(registry, slow)
    server = stub_server(registry, grace_s=TIMEOUT_S)
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            (address,) = await nursery.start(server.run, [("127.0.0.1", 0)])
            idle = await WireClient.connect(address)
            busy = await WireClient.connect(address)
            request = MetadataRequest[2](topics=[])
            await busy.send(request, correlation_id=3)
            await entered.wait()
            server.shutdown()
            await idle.expect_closed()
            with pytest.raises(OSError):
                await trio.open_tcp_stream(*address)
            release.set()
            assert (await busy.receive(request)).cluster_id == "c3"
            await busy.expect_closed()
        # server.run returned by itself: the nursery closed without being cancelled
        assert not nursery.cancel_scope.cancelled_caught


async def test_shutdown_cancels_requests_after_the_grace_period(
    registry: dict[int, HandlerSpec], clients: list[WireClient]
) -> None:
    from netwire import stub_server

    entered = trio.Event()

    async def stuck(ctx: Any, req: Any) -> dict[str, Any]:
        entered.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    register_metadata(registry, stuck)
    server = stub_server(registry, grace_s=0.05)
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            (address,) = await nursery.start(server.run, [("127.0.0.1", 0)])
            client = await WireClient.connect(address)
            await client.send(MetadataRequest[1](topics=[]), correlation_id=3)
            await entered.wait()
            server.shutdown()
        await client.expect_closed()
    assert not server.connections


async def test_without_a_sender_a_later_reply_is_awaited_in_place() -> None:
    """A Connection built without `spawn` (no nursery for a sender task) serves one request
    at a time: a reply that comes later is awaited before the next request is read."""
    from wirebroker.handlers.dispatcher import Reply
    from wirebroker.net.connection import Connection

    release = trio.Event()
    seen: list[bytes] = []

    class LaterDispatcher:
        async def dispatch(
            self, frame: bytes, client_host: str, peer: str, session: object = None
        ) -> Reply:
            seen.append(frame)

            async def later() -> Reply:
                await release.wait()
                return Reply(b"\x00\x00\x00\x01" + frame[:1])

            later_fn: Callable[[], Awaitable[Reply]] = later
            return Reply(None, later=later_fn)

    client, server = trio.testing.memory_stream_pair()
    conn = Connection(
        server, LaterDispatcher(), max_frame_bytes=MAX_FRAME, idle_timeout_s=TIMEOUT_S
    )
    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.run)
            await client.send_all(frame(b"a") + frame(b"b"))
            await trio.testing.wait_all_tasks_blocked()
            assert seen == [b"a"]  # b is not read while a's reply is awaited
            release.set()
            got = b""
            while len(got) < 10:
                got += await client.receive_some()
            assert got == b"\x00\x00\x00\x01a\x00\x00\x00\x01b"
            assert seen == [b"a", b"b"]
            await client.aclose()
