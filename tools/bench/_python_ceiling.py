#!/usr/bin/env python3
"""The most a replicated Python broker gets on this machine (not a test, not a broker).

    python tools/bench/_python_ceiling.py --replicas 3 --dir DIR   # prints its port; runs
                                                                   # until killed

Issue 12 asks for acks=all with 3 replicas at >= 0.5x one broker's acks=1 on the same
machine. `_pipeline.py` gives the machine's floor without a client; this gives the best a
Python broker can do with the real client workload: the least work that still takes an
unmodified Kafka producer's acks=all writes and keeps three copies.

    leader (this process; one thread per connection, no event loop, no request framework)
      ApiVersions, Metadata (any topic: 1 partition, led here), Produce; nothing else
      Produce: check each batch's CRC-32C, stamp its base offset, os.write the records to
               its file and push the new range to every follower (4-byte length, then
               os.sendfile), under one lock; the answer is queued
      one sender thread: answers in arrival order, each Produce answer once every follower
               has acknowledged its range
    follower i (forked): receive a range, check its CRCs, os.write it, send an 8-byte ack

Everything Kafka's replication adds is left out: follower Fetch requests and their answers,
the high watermark and ISR bookkeeping, indexes, leader epochs. A broker that follows Kafka's
protocol (wirebroker) does strictly more Python work per byte, so the ratio of this process
group's acks=all throughput to wirebroker's single broker, measured in the same minute with
the same client (`bench_failover.py`, the "minimal Python broker" row), bounds what a Python
broker's 10 KiB ratio can be here. Only the bench's workload is supported: one partition,
magic v2 batches, no compression checks, no transactions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from protocol.codec import decode_request, encode_response  # noqa: E402
from protocol.crc32c import crc32c  # noqa: E402

_LEN = struct.Struct(">i")
_CRC = struct.Struct(">I")
_OFFSET = struct.Struct(">q")
_ACK = 8

# ApiVersions: what this process answers (Produce v3-7, Metadata v1, ApiVersions v0-3), and
# Fetch v4-11, never served: librdkafka writes magic v2 batches only to a broker that has both
# Produce v3+ and Fetch v4+ (without it, v0 message sets)
_APIS = [
    {"api_key": 0, "min_version": 3, "max_version": 7},
    {"api_key": 1, "min_version": 4, "max_version": 11},
    {"api_key": 3, "min_version": 1, "max_version": 1},
    {"api_key": 18, "min_version": 0, "max_version": 3},
]


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            raise EOFError
        got += k
    return buf


def _check_batches(records: memoryview, base_offset: int | None) -> int:
    """CRC-check every batch of `records` (magic v2 layout: base offset 0-7, length 8-11,
    CRC 17-20 over 21..end, last offset delta 23-26); with `base_offset`, stamp the base
    offsets. Returns the number of records."""
    pos, count, size = 0, 0, len(records)
    while pos < size:
        (length,) = _LEN.unpack_from(records, pos + 8)
        end = pos + 12 + length
        if crc32c(records[pos + 21 : end]) != _CRC.unpack_from(records, pos + 17)[0]:
            raise ValueError(f"corrupt batch at byte {pos}")
        if base_offset is not None:
            _OFFSET.pack_into(records, pos, base_offset + count)
        count += _LEN.unpack_from(records, pos + 23)[0] + 1
        pos = end
    return count


def _follower(sock: socket.socket, path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    ack = b"\0" * _ACK
    while True:
        (n,) = _LEN.unpack(_recv_exact(sock, 4))
        view = memoryview(_recv_exact(sock, n))
        _check_batches(view, None)
        os.write(fd, view)
        sock.sendall(ack)


class _Leader:
    def __init__(self, followers: list[socket.socket], directory: Path, port: int) -> None:
        self.followers = followers
        self.port = port
        self.fd = os.open(directory / "leader", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self.next_offset = 0
        self.file_end = 0
        self.lock = threading.Lock()
        # (connection or None, answer or None, pushed to the followers?) in arrival order
        self.answers: queue.SimpleQueue[tuple[socket.socket | None, bytes | None, bool]] = (
            queue.SimpleQueue()
        )

    def send_answers(self) -> None:
        while True:
            conn, answer, pushed = self.answers.get()
            if pushed:
                for follower in self.followers:
                    _recv_exact(follower, _ACK)
            if conn is not None and answer is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(answer)

    def _append(self, records: memoryview) -> int:
        """Under the lock: stamp, write, push; queue nothing. Returns the base offset."""
        base = self.next_offset
        self.next_offset += _check_batches(records, base)
        start = self.file_end
        os.write(self.fd, records)
        self.file_end += len(records)
        for follower in self.followers:
            follower.sendall(_LEN.pack(len(records)))
            offset = start
            while offset < self.file_end:
                offset += os.sendfile(follower.fileno(), self.fd, offset, self.file_end - offset)
        return base

    def _metadata(self, body: object) -> dict[str, object]:
        topics = getattr(body, "topics", None) or []
        partition = {
            "error_code": 0,
            "partition_index": 0,
            "leader_id": 0,
            "replica_nodes": [0],
            "isr_nodes": [0],
        }
        return {
            "brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.port, "rack": None}],
            "controller_id": 0,
            "topics": [
                {"error_code": 0, "name": t.name, "is_internal": False, "partitions": [partition]}
                for t in topics
            ],
        }

    def serve(self, conn: socket.socket) -> None:
        try:
            while True:
                (n,) = _LEN.unpack(_recv_exact(conn, 4))
                header, body = decode_request(_recv_exact(conn, n))
                key, version, cid = header.api_key, header.api_version, header.correlation_id
                if key == 18:  # a newer version than 3: answered in v0 with
                    # UNSUPPORTED_VERSION, and the client asks again (as Kafka does)
                    v, error = (version, 0) if version <= 3 else (0, 35)
                    answer = {"error_code": error, "api_keys": _APIS, "throttle_time_ms": 0}
                    self.answers.put((conn, encode_response(18, v, cid, answer), False))
                elif key == 3:
                    self.answers.put(
                        (conn, encode_response(3, version, cid, self._metadata(body)), False)
                    )
                elif key == 0:
                    self._produce(conn, version, cid, body)
                else:
                    raise SystemExit(f"API key {key} is not served here")
        except (EOFError, OSError):
            conn.close()

    def _produce(self, conn: socket.socket, version: int, cid: int, body: object) -> None:
        topics = []
        with self.lock:
            for t in body.topic_data:  # type: ignore[attr-defined]
                parts = []
                for p in t.partition_data:
                    base = self._append(memoryview(p.records))
                    parts.append(
                        {
                            "index": p.index,
                            "error_code": 0,
                            "base_offset": base,
                            "log_append_time_ms": -1,
                            "log_start_offset": 0,
                            "record_errors": [],
                            "error_message": None,
                        }
                    )
                topics.append({"name": t.name, "partition_responses": parts})
            answer = encode_response(0, version, cid, {"responses": topics, "throttle_time_ms": 0})
            acks = body.acks  # type: ignore[attr-defined]
            self.answers.put((conn if acks != 0 else None, answer, True))


class CeilingProcess:
    """This program as a child process group, for the bench: `bootstrap`, `stop()`."""

    def __init__(self, directory: Path, replicas: int = 3) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--replicas", str(replicas), "--dir", str(directory)],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # the followers are forked into its process group
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"{__file__} did not start (printed {line!r})")
        self.bootstrap = f"127.0.0.1:{line}"

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--dir", type=Path, required=True, help="the replicas' files go here")
    args = parser.parse_args(argv)
    followers = []
    for i in range(args.replicas - 1):
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        if os.fork() == 0:
            listener.close()
            try:
                _follower(socket.create_connection(("127.0.0.1", port)), args.dir / f"f{i}")
            finally:
                os._exit(0)
        sock, _ = listener.accept()
        listener.close()
        followers.append(sock)
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    leader = _Leader(followers, args.dir, port)
    threading.Thread(target=leader.send_answers, daemon=True).start()
    print(port, flush=True)
    while True:
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=leader.serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
