#!/usr/bin/env python3
"""The machine's own replication floor: a kernel-only pipeline, no protocol (not a test).

    python tools/bench/_pipeline.py [--mb 1000] [--rounds 3]

What a replicated write costs on this machine when nothing but the unavoidable copies is
done, so that the broker's figures can be read against it (issue 12's "acks=all RF 3 >= 0.5x
one broker's acks=1"). Each run moves `total` bytes in 1 MiB pieces over loopback TCP:

    client --send--> leader --os.write--> its file
                       |  --os.sendfile of the new range--> follower i (replicas - 1 of them)
                       |                                    --os.write--> its file
                       <-- 1 byte from every follower once it has written everything
    client <-- 1 byte (the "acks=all" answer)

Every party is its own process (fork), as brokers are. RF 1 is the same without followers
(the "acks=1" broker). The leader reads nothing back and checks nothing; a follower writes
what it receives as it comes. That is less work than any broker does (Kafka included: it
parses requests, checks CRCs, keeps indexes), so the RF 3 / RF 1 ratio of this pipeline is
an upper bound for what a broker's replicated path can show against its single path on the
same CPUs and the same memory, in the same minute.

Returned per run: MB/s from the client's first send to the answer, and the CPU seconds
(user + system, all processes) per 100 MB. Files are deleted after each run: the freed pages
are reused by the next run (see docs/replication.md on this VM's page-cache memory).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

CHUNK = 1 << 20


def _listen() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock, sock.getsockname()[1]


def _receive_and_write(
    conn: socket.socket, fd: int, total: int, then: Callable[[int], None] | None = None
) -> int:
    """Receive up to `total` bytes and write each piece to `fd`; `then(written so far)` after
    each write. Returns the bytes written (fewer at an early end of stream)."""
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    got = 0
    while got < total:
        n = conn.recv_into(view, min(CHUNK, total - got))
        if not n:
            break
        os.write(fd, view[:n])
        got += n
        if then is not None:
            then(got)
    return got


def _follower(ready: Connection, path: str, total: int) -> None:
    listener, port = _listen()
    ready.send(port)
    conn, _ = listener.accept()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        _receive_and_write(conn, fd, total)
        conn.sendall(b"k")
    finally:
        os.close(fd)
        conn.close()


def _leader(ready: Connection, path: str, total: int, followers: list[int]) -> None:
    listener, port = _listen()
    outs = [socket.create_connection(("127.0.0.1", p)) for p in followers]
    ready.send(port)
    client, _ = listener.accept()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    sent = [0] * len(outs)

    def replicate(written: int) -> None:  # the followers' fetches: the new range, zero-copy
        for i, out in enumerate(outs):
            while sent[i] < written:
                sent[i] += os.sendfile(out.fileno(), fd, sent[i], written - sent[i])

    try:
        if _receive_and_write(client, fd, total, replicate) < total:
            return
        for out in outs:
            out.recv(1)
        client.sendall(b"k")
    finally:
        os.close(fd)
        for out in outs:
            out.close()
        client.close()


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def run(replicas: int, total: int, directory: Path) -> dict[str, float]:
    """One run with `replicas` copies of `total` bytes: {"mb_s", "cpu_per_100mb"}."""
    ctx = multiprocessing.get_context("fork")
    procs: list[Any] = []
    ports: list[int] = []
    cpu0 = _cpu(resource.RUSAGE_CHILDREN) + _cpu(resource.RUSAGE_SELF)
    try:
        for i in range(replicas - 1):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(target=_follower, args=(theirs, str(directory / f"f{i}"), total))
            p.start()
            procs.append(p)
            ports.append(mine.recv())
        mine, theirs = ctx.Pipe()
        p = ctx.Process(target=_leader, args=(theirs, str(directory / "leader"), total, ports))
        p.start()
        procs.append(p)
        client = socket.create_connection(("127.0.0.1", mine.recv()))
        data = os.urandom(CHUNK)
        t0 = time.perf_counter()
        sent = 0
        while sent < total:
            client.sendall(data[: min(CHUNK, total - sent)])
            sent += CHUNK
        if client.recv(1) != b"k":
            raise RuntimeError("the pipeline's leader did not answer")
        seconds = time.perf_counter() - t0
        client.close()
        for p in procs:
            p.join(30)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        for f in directory.iterdir():
            f.unlink()
    cpu = _cpu(resource.RUSAGE_CHILDREN) + _cpu(resource.RUSAGE_SELF) - cpu0
    return {"mb_s": total / seconds / 1e6, "cpu_per_100mb": cpu / (total / 1e8)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=1000, help="MB per run (default 1000)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pipeline-") as tmp:
        for k in range(args.rounds):
            one = run(1, args.mb * 1_000_000, Path(tmp))
            three = run(3, args.mb * 1_000_000, Path(tmp))
            print(
                f"round {k + 1}: RF 1 {one['mb_s']:.0f} MB/s ({one['cpu_per_100mb']:.3f} CPU s "
                f"per 100 MB), RF 3 {three['mb_s']:.0f} MB/s ({three['cpu_per_100mb']:.3f}), "
                f"ratio {three['mb_s'] / one['mb_s']:.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
