"""A TCP proxy that loses chosen Produce responses, to make producers retry.

    client <-> FaultProxy (127.0.0.1:P) <-> broker

The broker is started with `advertised.listeners=PLAINTEXT://127.0.0.1:P`, so every
connection a client opens (bootstrap and the leader connection from Metadata) goes through
the proxy. The proxy forwards bytes unchanged and watches the Kafka frames:

    client -> broker   [int32 size][int16 api_key][int16 api_version][int32 correlation_id]...
    broker -> client   [int32 size][int32 correlation_id]...

It remembers the correlation ids of Produce requests (api key 0) per connection. The n-th
Produce response overall (1-based) whose n is in `drop` is not delivered: the proxy closes
both sides of that connection instead. The broker has appended that batch, the client never
learns it: an idempotent producer must resend it with the same sequence numbers, and the
broker must acknowledge the resend without writing the records twice.

`dropped` counts the responses lost, so a scenario can tell that a retry really happened.
Threads: one accept loop, two pumps per connection; `close()` stops them all.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading


class FaultProxy:
    def __init__(self, drop: set[int]) -> None:
        self.drop = set(drop)
        self.upstream: tuple[str, int] | None = None
        self.produce_responses = 0
        self.dropped = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            for s in self._socks:
                _shut(s)

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.upstream is None:
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._socks += [client, server]
            produce_ids: set[int] = set()
            threading.Thread(
                target=self._requests, args=(client, server, produce_ids), daemon=True
            ).start()
            threading.Thread(
                target=self._responses, args=(server, client, produce_ids), daemon=True
            ).start()

    def _requests(self, src: socket.socket, dst: socket.socket, produce_ids: set[int]) -> None:
        try:
            while True:
                frame = _read_frame(src)
                if frame is None:
                    break
                if len(frame) >= 12:
                    api_key, _version, correlation = struct.unpack_from(">hhi", frame, 4)
                    if api_key == 0:
                        produce_ids.add(correlation)
                dst.sendall(frame)
        except OSError:
            pass
        _shut(src)
        _shut(dst)

    def _responses(self, src: socket.socket, dst: socket.socket, produce_ids: set[int]) -> None:
        try:
            while True:
                frame = _read_frame(src)
                if frame is None:
                    break
                if len(frame) >= 8:
                    (correlation,) = struct.unpack_from(">i", frame, 4)
                    if correlation in produce_ids:
                        produce_ids.discard(correlation)
                        with self._lock:
                            self.produce_responses += 1
                            lose = self.produce_responses in self.drop
                            if lose:
                                self.dropped += 1
                        if lose:
                            break
                dst.sendall(frame)
        except OSError:
            pass
        _shut(src)
        _shut(dst)


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    if size < 0 or size > 256 * 1024 * 1024:
        return None
    body = _read_exact(sock, size)
    return None if body is None else head + body


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
