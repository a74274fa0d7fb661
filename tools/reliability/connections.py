#!/usr/bin/env python3
"""Many connections against a wirebroker subprocess: idle connections and their memory, slow
partial frames, `max.connections` and `max.connections.per.ip`. `python
tools/reliability/connections.py` prints the figures of docs/reliability.md ("Connections");
tests/reliability/test_connections*.py run the same functions with CI-sized numbers.

Functions (each takes a running broker, `BrokerProcess` from tests/integration/_broker.py):

`idle_connections(proc, n)`
    Opens `n` connections (in batches; the last connection of each batch sends ApiVersions, so
    the broker's accept queue never overflows), measures the broker's RSS before and after, then
    sends ApiVersions on a sample (default: every connection) while all stay open, and reports
    RSS per connection and how many were served.

`partial_frames(proc, idle_ms)`
    Clients that stop after a frame header, stop half-way through a body, trickle one byte
    every idle/5 ms, or send nothing -- each must be closed about `connections.max.idle.ms`
    after its first byte (or its connect) -- and a control client sending a whole request every
    idle/3 ms, which must stay open.

`max_connections(proc, limit)` / `per_ip_limit(proc, limit)`
    At `max.connections` a new connection is left waiting (TCP-connected, unanswered) until one
    closes, then served (Kafka's acceptor blocks). Beyond `max.connections.per.ip` it is closed at
    accept; another client address (127.0.0.2) is still served.

The caller raises this process's RLIMIT_NOFILE (`raise_nofile_limit`); the broker raises its
own soft limit to the hard limit at start-up (wirebroker.net.limits), which
`LowFdBroker` lets a test prove: the broker is started with a low soft limit (`ulimit -S -n`)
and must still hold more connections than that.
"""

from __future__ import annotations

import argparse
import resource
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
for _p in (str(REPO_ROOT), str(REPO_ROOT / "tests" / "integration")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _broker import BrokerProcess  # noqa: E402

from protocol import codec  # noqa: E402
from protocol.api import ApiKey  # noqa: E402

API_VERSIONS_V3 = {"client_software_name": "connections", "client_software_version": "1"}


def api_versions_request(correlation_id: int) -> bytes:
    return codec.encode_request(
        ApiKey.API_VERSIONS, 3, correlation_id, "connections", API_VERSIONS_V3
    )


def read_frame(sock: socket.socket) -> bytes | None:
    """One response frame (without its size), or None when the broker closed the socket."""
    head = _read(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _read(sock, size)


def _read(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def api_versions_ok(sock: socket.socket, correlation_id: int = 1) -> bool:
    """Send ApiVersions v3 on `sock` and check the answer (False on close or error)."""
    try:
        sock.sendall(api_versions_request(correlation_id))
        frame = read_frame(sock)
    except OSError:
        return False
    if frame is None:
        return False
    cid, body = codec.decode_response(ApiKey.API_VERSIONS, 3, frame)
    return cid == correlation_id and int(body.error_code) == 0


def connect(address: tuple[str, int], *, source: str | None = None, timeout: float = 10.0):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    if source is not None:
        sock.bind((source, 0))
    sock.connect(address)
    return sock


def address_of(proc: Any) -> tuple[str, int]:
    host, _, port = proc.bootstrap.rpartition(":")
    return host, int(port)


# -- process limits and memory -----------------------------------------------------------------


def raise_nofile_limit(needed: int) -> int:
    """Raise this process's soft RLIMIT_NOFILE to the hard limit; returns it. Raises when even
    the hard limit is below `needed`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < needed:
        raise RuntimeError(f"RLIMIT_NOFILE hard limit {hard} is below the {needed} fds needed")
    return target


class LowFdBroker(BrokerProcess):
    """A broker subprocess started with soft RLIMIT_NOFILE `soft` (its hard limit unchanged),
    as from a shell with the usual `ulimit -n 1024`."""

    def __init__(self, *args: Any, soft_nofile: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.soft_nofile = soft_nofile

    def command(self, port: int = 0) -> list[str]:
        script = f'ulimit -S -n {int(self.soft_nofile)} && exec "$@"'
        return ["sh", "-c", script, "sh", *super().command(port)]


def process_nofile_soft_limit(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise RuntimeError("no 'Max open files' line")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


# -- idle connections ---------------------------------------------------------------------------


@dataclass
class IdleFigures:
    connections: int = 0
    sampled: int = 0
    served: int = 0  # sampled connections whose ApiVersions was answered
    rss_before: int = 0
    rss_connected: int = 0
    rss_after_requests: int = 0
    rss_after_close: int = 0
    broker_fds: int = 0
    connect_seconds: float = 0.0
    request_seconds: float = 0.0

    @property
    def rss_per_connection(self) -> float:
        return (self.rss_connected - self.rss_before) / max(self.connections, 1)


def idle_connections(
    proc: Any, n: int, *, sample: int | None = None, batch: int = 250
) -> IdleFigures:
    """See the module docstring. `sample`: how many connections get ApiVersions (default all)."""
    address = address_of(proc)
    pid = proc.pid
    figures = IdleFigures()
    warm = connect(address)
    try:
        api_versions_ok(warm)  # the first request's imports and caches are not per-connection
    finally:
        warm.close()
    time.sleep(0.2)
    figures.rss_before = rss_bytes(pid)
    socks: list[socket.socket] = []
    try:
        start = time.monotonic()
        while len(socks) < n:
            for _ in range(min(batch, n - len(socks))):
                socks.append(connect(address))
            if not api_versions_ok(socks[-1], correlation_id=len(socks)):
                raise RuntimeError(f"connection {len(socks)} not served")
        figures.connect_seconds = time.monotonic() - start
        figures.connections = len(socks)
        time.sleep(0.5)
        figures.rss_connected = rss_bytes(pid)
        figures.broker_fds = open_fds(pid)
        step = max(len(socks) // (sample or len(socks)), 1)
        chosen = socks[::step][: sample or len(socks)]
        start = time.monotonic()
        for i, sock in enumerate(chosen):
            sock.sendall(api_versions_request(100000 + i))
        for i, sock in enumerate(chosen):
            frame = read_frame(sock)
            if frame is not None:
                cid, body = codec.decode_response(ApiKey.API_VERSIONS, 3, frame)
                figures.served += cid == 100000 + i and int(body.error_code) == 0
        figures.request_seconds = time.monotonic() - start
        figures.sampled = len(chosen)
        figures.rss_after_requests = rss_bytes(pid)
    finally:
        for sock in socks:
            sock.close()
    time.sleep(1.0)
    figures.rss_after_close = rss_bytes(pid)
    return figures


# -- slow partial frames ------------------------------------------------------------------------


@dataclass
class PartialFigures:
    idle_ms: int
    closed_after_ms: dict[str, list[float]] = field(default_factory=dict)
    not_closed: list[str] = field(default_factory=list)
    control_open: bool = False
    control_requests: int = 0

    @property
    def closed(self) -> int:
        return sum(len(v) for v in self.closed_after_ms.values())


def _wait_closed(sock: socket.socket, deadline: float, trickle_every: float | None) -> bool:
    """Wait for the broker to close `sock`, sending one byte every `trickle_every` s."""
    while time.monotonic() < deadline:
        wait = deadline - time.monotonic()
        if trickle_every is not None:
            wait = min(wait, trickle_every)
        sock.settimeout(max(wait, 0.001))
        try:
            data = sock.recv(4096)
            if not data:
                return True
        except TimeoutError:
            if trickle_every is not None:
                try:
                    sock.sendall(b"\x00")
                except OSError:
                    return True
        except OSError:
            return True
    return False


def _partial_client(
    address: tuple[str, int], kind: str, idle_s: float, out: PartialFigures, lock: threading.Lock
) -> None:
    sock = connect(address)
    try:
        body = api_versions_request(1)[4:]
        head = struct.pack(">i", len(body) + 100)  # the frame never completes
        first_byte = time.monotonic()
        trickle = None
        if kind == "frame header, then silence":
            sock.sendall(head)
        elif kind == "half a frame, then silence":
            sock.sendall(head + body[: len(body) // 2])
        elif kind == "frame header, then 1 byte every idle/5":
            sock.sendall(head)
            trickle = idle_s / 5
        elif kind != "connect, then silence":
            raise ValueError(kind)
        closed = _wait_closed(sock, first_byte + 3 * idle_s + 5, trickle)
        elapsed_ms = (time.monotonic() - first_byte) * 1000
        with lock:
            if closed:
                out.closed_after_ms.setdefault(kind, []).append(elapsed_ms)
            else:
                out.not_closed.append(kind)
    finally:
        sock.close()


PARTIAL_KINDS = (
    "frame header, then silence",
    "half a frame, then silence",
    "frame header, then 1 byte every idle/5",
    "connect, then silence",
)


def partial_frames(proc: Any, idle_ms: int, *, per_kind: int = 5) -> PartialFigures:
    """See the module docstring (the broker runs with connections.max.idle.ms = `idle_ms`)."""
    address = address_of(proc)
    idle_s = idle_ms / 1000
    figures = PartialFigures(idle_ms)
    lock = threading.Lock()
    threads = [
        threading.Thread(target=_partial_client, args=(address, kind, idle_s, figures, lock))
        for kind in PARTIAL_KINDS
        for _ in range(per_kind)
    ]
    control = connect(address)
    try:
        for t in threads:
            t.start()
        end = time.monotonic() + 2.5 * idle_s
        ok = True
        while ok and time.monotonic() < end:
            figures.control_requests += 1
            ok = api_versions_ok(control, figures.control_requests)
            time.sleep(idle_s / 3)
        figures.control_open = ok and api_versions_ok(control, 999)
        for t in threads:
            t.join()
    finally:
        control.close()
    return figures


# -- max.connections and max.connections.per.ip -------------------------------------------------


@dataclass
class LimitFigures:
    limit: int
    served_under_limit: int = 0
    extra_answered_while_full: bool = False
    extra_served_after_a_close: bool = False
    extra_closed_at_accept: bool = False
    other_address_served: bool | None = None
    served_again_after_a_close: bool = False


def _answered_within(sock: socket.socket, seconds: float, correlation_id: int) -> bool | None:
    """True: answered; False: not within `seconds`; None: the broker closed the socket."""
    try:
        sock.sendall(api_versions_request(correlation_id))
    except OSError:
        return None
    sock.settimeout(seconds)
    try:
        frame = read_frame(sock)
    except TimeoutError:
        return False
    except OSError:
        return None
    finally:
        sock.settimeout(10)
    return None if frame is None else True


def max_connections(proc: Any, limit: int) -> LimitFigures:
    """The broker runs with max.connections = `limit`."""
    address = address_of(proc)
    figures = LimitFigures(limit)
    socks = [connect(address) for _ in range(limit)]
    try:
        figures.served_under_limit = sum(api_versions_ok(s, i) for i, s in enumerate(socks))
        extra = connect(address)  # completes in the kernel's backlog
        socks.append(extra)
        figures.extra_answered_while_full = _answered_within(extra, 1.0, 7) is True
        socks.pop(0).close()
        if not figures.extra_answered_while_full:
            extra.settimeout(10)
            frame = read_frame(extra)
            figures.extra_served_after_a_close = frame is not None
    finally:
        for sock in socks:
            sock.close()
    return figures


def per_ip_limit(proc: Any, limit: int) -> LimitFigures:
    """The broker runs with max.connections.per.ip = `limit`."""
    address = address_of(proc)
    figures = LimitFigures(limit)
    socks = [connect(address) for _ in range(limit)]
    try:
        figures.served_under_limit = sum(api_versions_ok(s, i) for i, s in enumerate(socks))
        extra = connect(address)
        figures.extra_closed_at_accept = _answered_within(extra, 5.0, 7) is None
        extra.close()
        try:
            other = connect(address, source="127.0.0.2")
        except OSError:
            figures.other_address_served = None  # no 127.0.0.2 here
        else:
            figures.other_address_served = api_versions_ok(other)
            other.close()
        socks.pop().close()
        again = None
        for _ in range(50):  # the broker notices the close asynchronously
            again = connect(address)
            if api_versions_ok(again):
                figures.served_again_after_a_close = True
                break
            again.close()
            again = None
            time.sleep(0.05)
        if again is not None:
            socks.append(again)
    finally:
        for sock in socks:
            sock.close()
    return figures


# -- command line -------------------------------------------------------------------------------


def _kib(n: float) -> str:
    return f"{n / 1024:.1f} KiB"


def _mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


#: What the "Connections" section says besides the figures.
NOTES = """\
How to read these:

- The broker is started with a soft RLIMIT_NOFILE of 1024 (as from a shell) and raises it to
  the hard limit itself at start-up (`wirebroker.net.limits.raise_nofile_limit`, logged).
- RSS per idle connection: the broker's RSS growth while the connections were opened, divided
  by their number (a trio task, a socket and a `Connection` each; no receive buffer is kept
  while idle). CPython keeps freed memory in its arenas, so RSS does not fall back after
  the connections close.
- `connections.max.idle.ms`: a connection with no byte of a next request is closed that long
  after its last response; a *partial* request must be complete that long after its first
  byte, and later bytes do not extend the deadline. Kafka resets its idle timer on any socket
  activity, so a client trickling one byte at a time would stay connected to Kafka; wirebroker
  closes it. A response the client does not read within the same time closes the connection.
- `max.connections` (Kafka semantics): at the limit the broker stops accepting; new clients
  wait (TCP-connected, unanswered) and are served as soon as a connection closes.
  `max.connections.per.ip`: a connection beyond it is closed at accept ("Rejected connection
  from ..." at INFO), other addresses are unaffected.
- Out of descriptors anyway (EMFILE at accept): logged once, accept retried every 100 ms; the
  clients queued meanwhile are served as soon as descriptors free up
  (`tests/reliability/test_connections.py`).
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=10000)
    parser.add_argument("--sample", type=int, default=None, help="default: every connection")
    parser.add_argument("--idle-ms", type=int, default=2000)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--update-doc", action="store_true", help="rewrite docs/reliability.md")
    args = parser.parse_args(argv)
    lines: list[str] = []

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    raise_nofile_limit(args.connections + 200)
    command = " ".join(["python tools/reliability/connections.py", *(argv or sys.argv[1:])])
    command = command.replace(" --update-doc", "")
    ok = True
    with tempfile.TemporaryDirectory(prefix="wb-conns-") as tmp:
        root = Path(tmp)

        proc = LowFdBroker(root / "idle", log_path=root / "idle.log", soft_nofile=1024)
        try:
            proc.start()
            assert proc.pid is not None
            broker_limit = process_nofile_soft_limit(proc.pid)
            idle = idle_connections(proc, args.connections, sample=args.sample)
        finally:
            proc.close()
        n = idle.connections
        emit(
            f"- broker soft RLIMIT_NOFILE after start-up (started with 1024): {broker_limit} "
            f"(1 operations, 0 faults)"
        )
        emit(
            f"- idle connections held open and served ApiVersions: {idle.served}/{idle.sampled} "
            f"sampled of {n} open ({idle.sampled} operations, 0 faults)"
        )
        emit(
            f"- broker RSS per idle connection: {_kib(idle.rss_per_connection)} "
            f"(RSS {_mib(idle.rss_before)} -> {_mib(idle.rss_connected)} with {n} open; "
            f"{_mib(idle.rss_after_requests)} after one request each; "
            f"{_mib(idle.rss_after_close)} after closing them) ({n} operations, 0 faults)"
        )
        emit(
            f"- {n} connections opened in {idle.connect_seconds:.1f} s; "
            f"{idle.sampled} ApiVersions answered in {idle.request_seconds:.1f} s"
        )
        ok &= idle.served == idle.sampled and idle.connections == args.connections

        proc = BrokerProcess(
            root / "partial",
            log_path=root / "partial.log",
            overrides={"connections.max.idle.ms": str(args.idle_ms)},
        )
        try:
            proc.start()
            partial = partial_frames(proc, args.idle_ms)
        finally:
            proc.close()
        total = partial.closed + len(partial.not_closed)
        times = [t for v in partial.closed_after_ms.values() for t in v]
        emit(
            f"- slow partial frames and silent clients closed after connections.max.idle.ms="
            f"{args.idle_ms}: {partial.closed}/{total}, closed {min(times):.0f}-{max(times):.0f} "
            f"ms after their first byte (median {statistics.median(times):.0f} ms) "
            f"({total} operations, {total} faults)"
        )
        for kind, values in partial.closed_after_ms.items():
            emit(f"  - {kind}: {', '.join(f'{v:.0f}' for v in values)} ms")
        emit(
            f"- a client sending a whole request every idle/3 stayed open for 2.5 x idle: "
            f"{partial.control_open} ({partial.control_requests} operations, 0 faults)"
        )
        ok &= not partial.not_closed and partial.control_open

        proc = BrokerProcess(
            root / "max",
            log_path=root / "max.log",
            overrides={"max.connections": str(args.limit)},
        )
        try:
            proc.start()
            limited = max_connections(proc, args.limit)
        finally:
            proc.close()
        emit(
            f"- max.connections={args.limit}: {limited.served_under_limit}/{args.limit} served; "
            f"connection {args.limit + 1} answered while full: "
            f"{limited.extra_answered_while_full}; served once one closed: "
            f"{limited.extra_served_after_a_close} ({args.limit + 1} operations, 1 faults)"
        )
        ok &= (
            limited.served_under_limit == args.limit
            and not limited.extra_answered_while_full
            and limited.extra_served_after_a_close
        )

        per_ip = max(args.limit // 10, 2)
        proc = BrokerProcess(
            root / "perip",
            log_path=root / "perip.log",
            overrides={"max.connections.per.ip": str(per_ip)},
        )
        try:
            proc.start()
            limited = per_ip_limit(proc, per_ip)
        finally:
            proc.close()
        emit(
            f"- max.connections.per.ip={per_ip}: {limited.served_under_limit}/{per_ip} served; "
            f"connection {per_ip + 1} closed at accept: {limited.extra_closed_at_accept}; "
            f"127.0.0.2 served meanwhile: {limited.other_address_served}; served again after a "
            f"close: {limited.served_again_after_a_close} ({per_ip + 3} operations, 1 faults)"
        )
        ok &= limited.extra_closed_at_accept and limited.served_again_after_a_close
    if args.update_doc:
        from docsections import update_section

        text = "\n".join(["## Connections", "", "```sh", command, "```", "", *lines, "", NOTES])
        update_section("connections", text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
