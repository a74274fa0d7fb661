"""The admin HTTP server over an in-memory stream pair: keep-alive, limits, bad requests.

Every malformed or oversized request gets a 4xx answer and its connection closes; the server
itself (the listener test at the end) keeps serving.
"""

from __future__ import annotations

import trio
import trio.testing

from wirebroker.admin import AdminServer, Request, Response, Routes


async def echo(request: Request) -> Response:
    return Response.json(
        {
            "method": request.method,
            "path": request.path,
            "query": request.query_string,
            "body": request.body.decode(),
        }
    )


async def boom(request: Request) -> Response:
    raise RuntimeError("handler bug")


async def wants_json(request: Request) -> Response:
    return Response.json(request.json())


def make_server(**limits: int) -> AdminServer:
    routes = Routes()
    routes.add("GET", "/echo", echo)
    routes.add("POST", "/echo", echo)
    routes.add("GET", "/boom", boom)
    routes.add("POST", "/json", wants_json)
    return AdminServer(routes, **limits)  # type: ignore[arg-type]


async def exchange(server: AdminServer, raw: bytes) -> bytes:
    """Send `raw`, half-close, and return everything the server wrote before closing."""
    client, remote = trio.testing.memory_stream_pair()
    out = bytearray()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_then_close, server, remote)
        await client.send_all(raw)
        await client.send_eof()
        while True:
            data = await client.receive_some(65536)
            if not data:
                break
            out += data
    return bytes(out)


async def serve_then_close(server: AdminServer, stream: trio.abc.Stream) -> None:
    async with stream:
        await server.serve_stream(stream, ("test", 1))


def responses(raw: bytes) -> list[tuple[int, dict[bytes, bytes], bytes]]:
    """Split the server's bytes into (status, headers, body); every response has a length."""
    out = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        status_line, *lines = head.split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines)
        length = int(headers[b"content-length"])
        body, raw = rest[:length], rest[length:]
        out.append((int(status_line.split()[1]), headers, body))
    return out


async def test_keep_alive_serves_several_requests_on_one_connection() -> None:
    server = make_server()
    raw = (
        b"GET /echo?a=1 HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
        b"HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    got = responses(await exchange(server, raw))
    assert [s for s, _, _ in got] == [200, 200, 200]
    assert got[0][2] == b'{"body":"","method":"GET","path":"/echo","query":"a=1"}'
    assert b'"body":"hello"' in got[1][2]
    assert got[2][2] == b""  # HEAD: the GET handler's headers, no body
    assert got[0][1][b"content-type"] == b"application/json"
    assert server.requests_served == 3


async def test_unknown_path_404_and_wrong_method_405_with_allow() -> None:
    server = make_server()
    raw = b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\nDELETE /echo HTTP/1.1\r\nHost: x\r\n\r\n"
    (s1, _, _), (s2, h2, _) = responses(await exchange(server, raw))
    assert (s1, s2) == (404, 405)
    assert h2[b"allow"] == b"get, head, post"  # (the test parser lowercases)


async def test_garbage_answers_400_and_closes() -> None:
    for raw in (
        b"\x00\x01\x02 garbage\r\n\r\n",
        b"GET /echo HTTP/1.1\r\n\r\n",  # HTTP/1.1 without Host
        b"GET /echo HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
        b"GET /echo HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    ):
        got = responses(await exchange(make_server(), raw))
        assert [s for s, _, _ in got] == [400], raw
        assert got[0][1][b"connection"] == b"close"


async def test_oversized_head_431_and_body_413() -> None:
    server = make_server(max_head_bytes=1024, max_body_bytes=100)
    long_head = b"GET /echo HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4096 + b"\r\n\r\n"
    assert [s for s, _, _ in responses(await exchange(server, long_head))] == [431]
    declared = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n" + b"x" * 101
    assert [s for s, _, _ in responses(await exchange(server, declared))] == [413]
    chunk = b"%x\r\n%s\r\n" % (60, b"y" * 60)
    chunked = (
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunk * 2
        + b"0\r\n\r\n"
    )
    assert [s for s, _, _ in responses(await exchange(server, chunked))] == [413]
    assert server.requests_served == 0


async def test_handler_failure_is_500_and_bad_json_400_connection_stays_up() -> None:
    server = make_server()
    raw = (
        b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n{"
        b"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    got = responses(await exchange(server, raw))
    assert [s for s, _, _ in got] == [500, 400, 200]


async def test_idle_connection_closes_after_timeout(autojump_clock: trio.abc.Clock) -> None:
    server = make_server()
    server.idle_timeout_s = 5.0
    _client, remote = trio.testing.memory_stream_pair()
    with trio.fail_after(6):
        await server.serve_stream(remote, ("test", 1))  # returns: idle, nothing sent
    slow_client, slow_remote = trio.testing.memory_stream_pair()
    await slow_client.send_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nabc")
    with trio.fail_after(6):
        await server.serve_stream(slow_remote, ("test", 1))
    got = responses(bytes(await slow_client.receive_some(65536)))
    assert [s for s, _, _ in got] == [408]


async def test_listener_survives_bad_clients_and_reports_bound_port() -> None:
    server = make_server()
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(server.run, [("127.0.0.1", 0)])
        host, port = bound[0]
        assert port != 0 and server.bound == bound
        for raw in (b"\xff\xfe\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"):
            stream = await trio.open_tcp_stream(host, port)
            await stream.send_all(raw)
            data = await stream.receive_some(65536)
            assert data.startswith(b"HTTP/1.1 4")
            await stream.aclose()
        stream = await trio.open_tcp_stream(host, port)
        await stream.send_all(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 200")
        await stream.aclose()
        server.shutdown()
