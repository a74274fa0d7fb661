"""Throwaway ZooKeeper servers for `wirebroker cluster` and the tests (never a system service).

Needs Debian's `zookeeper` package (its jars in /usr/share/java) and a Java runtime:
`apt-get install zookeeper default-jre-headless`. Nothing of the `zookeeperd` service is used.

`ZooKeeperServer()` runs one standalone server (`ZooKeeperServerMain`); `ZooKeeperEnsemble(n)`
runs n quorum peers (`QuorumPeerMain`) on 127.0.0.1. Each member lives in its own directory
under one temporary directory (removed by `stop()`):

    <tmp>/<i>/zoo.cfg    generated configuration (below)
    <tmp>/<i>/data/      dataDir (snapshots, transaction log; `myid` for quorum peers)
    <tmp>/<i>/server.log the JVM's stdout and stderr (slf4j-simple when installed)

zoo.cfg: tickTime=100 ms by default, with minSessionTimeout=1000 and maxSessionTimeout=60000
explicit (the server clamps a client's requested session timeout to them; without them it would
be 2..20 ticks, 0.2..2 s). The tick is small because ZooKeeper expires sessions in tick-sized
buckets: a session whose last heartbeat was at t expires in (t + timeout, t + timeout + tick],
so a dead broker's registration goes at most one tick after its session timeout (it was up to
0.5 s later with Kafka's usual 500 ms+ ticks, a third of the 1 s that issue 12 allows a
failover after the timeout). A tick costs the server nothing when idle (its session tracker
wakes at bucket boundaries that hold sessions; quorum peers ping each other every half tick).
clientPort is a free port picked at start (ZooKeeper refuses port 0); admin server off (it
would take :8080); maxClientCnxns=0 (no limit per client IP); only the four-letter words `ruok`
and `srvr` enabled; forceSync=no and a small preAllocSize (a throwaway server needs no fsync and
no 64 MB log preallocation). Ensemble members also get initLimit/syncLimit and
`server.N=127.0.0.1:<peer>:<election>` lines, ids 1..n; the limits are counted in ticks, so
they are derived from fixed durations (a follower gets 10 s to connect and sync with the
leader, 5 s of silence before it is dropped) whatever the tick.

`start()` returns once every member serves: its `srvr` answer has `Mode: standalone`, `leader`
or `follower` (a peer outside a quorum answers "not currently serving requests"), within
`start_timeout_s`; otherwise it stops everything and raises ZooKeeperError with each member's
log tail. A member that exits during start because a picked port got taken meanwhile is
retried with new ports. `stop()` sends SIGTERM, then SIGKILL after `stop_timeout_s`. `kill(i)`
SIGKILLs member i (a crash), `restart(i)` starts it again on the same ports and data and waits
until it serves. `connect_string` is "127.0.0.1:p1,127.0.0.1:p2,..." (append "/chroot" for a
chrooted client). Both classes are context managers (start on enter, stop on exit).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    "INSTALL_HINT",
    "ZooKeeperEnsemble",
    "ZooKeeperError",
    "ZooKeeperServer",
    "find_java",
    "zookeeper_available",
    "zookeeper_classpath",
]

INSTALL_HINT = "apt-get install zookeeper default-jre-headless"
JAVA_DIR = Path("/usr/share/java")
STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_SERVING_MODES = ("standalone", "leader", "follower")
_PORT_RETRIES = 3
#: Session timeouts the throwaway server grants (ms); wirebroker's default is 6000.
MIN_SESSION_TIMEOUT_MS = 1_000
MAX_SESSION_TIMEOUT_MS = 60_000
#: initLimit / syncLimit of an ensemble, as durations (ms): converted to ticks in zoo.cfg.
INIT_LIMIT_MS = 10_000
SYNC_LIMIT_MS = 5_000


class ZooKeeperError(Exception):
    """A throwaway ZooKeeper could not be started (or is not installed)."""


def find_java() -> str | None:
    """The `java` to run: $JAVA_HOME/bin/java, else `java` on PATH, else None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def zookeeper_classpath() -> str | None:
    """The server's classpath, or None when Debian's zookeeper package is not installed.

    zookeeper.jar's manifest Class-Path names its dependencies in /usr/share/java, so the jar
    alone suffices; slf4j-simple (from libslf4j-java, a dependency of the package) is added so
    the server logs to stderr (without a binding slf4j drops every line)."""
    jar = JAVA_DIR / "zookeeper.jar"
    if not jar.is_file():
        return None
    parts = [str(jar)]
    simple = JAVA_DIR / "slf4j-simple.jar"
    if simple.is_file():
        parts.append(str(simple))
    return os.pathsep.join(parts)


def zookeeper_available() -> bool:
    return find_java() is not None and zookeeper_classpath() is not None


def _require() -> tuple[str, str]:
    java, classpath = find_java(), zookeeper_classpath()
    if java is None or classpath is None:
        missing = "java" if java is None else f"{JAVA_DIR / 'zookeeper.jar'}"
        raise ZooKeeperError(f"ZooKeeper server not available ({missing} missing): {INSTALL_HINT}")
    return java, classpath


def _free_ports(count: int) -> list[int]:
    """`count` distinct ports free right now on 127.0.0.1 (the OS picks them)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def four_letter_word(port: int, word: str, timeout_s: float = 1.0) -> str:
    """Send a four-letter command to 127.0.0.1:port and return the whole answer ("" on error)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def server_mode(port: int) -> str | None:
    """ "standalone", "leader" or "follower" when the server on `port` serves, else None."""
    for line in four_letter_word(port, "srvr").splitlines():
        if line.startswith("Mode: "):
            mode = line.removeprefix("Mode: ").strip()
            return mode if mode in _SERVING_MODES else None
    return None


@dataclass
class _Member:
    myid: int
    directory: Path
    client_port: int = 0
    peer_port: int = 0
    election_port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


_LIVE: weakref.WeakSet[_ZooKeeperProcesses] = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    """A test run or CLI that died without stop() still leaves no JVM behind."""
    for servers in list(_LIVE):
        with contextlib.suppress(Exception):
            servers.stop()


class _ZooKeeperProcesses:
    """Members of one standalone server or ensemble (see the module docstring)."""

    _main_class = STANDALONE_MAIN

    def __init__(
        self,
        count: int,
        *,
        tick_time_ms: int = 100,
        start_timeout_s: float = 60.0,
        stop_timeout_s: float = 10.0,
        java_options: Sequence[str] = ("-Xms16m", "-Xmx256m", "-XX:+UseSerialGC"),
    ) -> None:
        self._count = count
        self.tick_time_ms = tick_time_ms
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.java_options = list(java_options)
        self._tmp: Path | None = None
        self.members: list[_Member] = []

    # -- configuration -------------------------------------------------------------------
    def _config(self, member: _Member) -> str:
        lines = [
            f"tickTime={self.tick_time_ms}",
            f"minSessionTimeout={max(MIN_SESSION_TIMEOUT_MS, 2 * self.tick_time_ms)}",
            f"maxSessionTimeout={max(MAX_SESSION_TIMEOUT_MS, 2 * self.tick_time_ms)}",
            f"dataDir={member.directory / 'data'}",
            f"clientPort={member.client_port}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr",
            "forceSync=no",
            "preAllocSize=4096",
            "autopurge.purgeInterval=0",
        ]
        if self._main_class == QUORUM_MAIN:
            ticks = self.tick_time_ms
            lines += [
                f"initLimit={max(2, -(-INIT_LIMIT_MS // ticks))}",
                f"syncLimit={max(2, -(-SYNC_LIMIT_MS // ticks))}",
            ]
            lines += [
                f"server.{m.myid}=127.0.0.1:{m.peer_port}:{m.election_port}" for m in self.members
            ]
        return "\n".join(lines) + "\n"

    def _pick_ports(self) -> None:
        ports = _free_ports(3 * len(self.members))
        for i, member in enumerate(self.members):
            member.client_port, member.peer_port, member.election_port = ports[3 * i : 3 * i + 3]

    def _write_configs(self) -> None:
        for member in self.members:
            data = member.directory / "data"
            data.mkdir(parents=True, exist_ok=True)
            if self._main_class == QUORUM_MAIN:
                (data / "myid").write_text(f"{member.myid}\n")
            (member.directory / "zoo.cfg").write_text(self._config(member))

    # -- processes -----------------------------------------------------------------------
    def _spawn(self, member: _Member) -> None:
        java, classpath = _require()
        log = member.log_path.open("ab")
        try:
            member.process = subprocess.Popen(
                [
                    java,
                    *self.java_options,
                    "-Dzookeeper.admin.enableServer=false",
                    "-Dzookeeper.jmx.log4j.disable=true",
                    "-cp",
                    classpath,
                    self._main_class,
                    str(member.directory / "zoo.cfg"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=member.directory,
                start_new_session=True,  # a Ctrl-C of the test run reaches it via stop() only
            )
        finally:
            log.close()

    def _wait_serving(self, members: Sequence[_Member], deadline: float) -> _Member | None:
        """None once every member serves; the first member that exited meanwhile otherwise.
        Raises ZooKeeperError at the deadline."""
        waiting = list(members)
        delay = 0.02
        while waiting:
            for member in list(waiting):
                if not member.running():
                    return member
                if server_mode(member.client_port) is not None:
                    waiting.remove(member)
            if not waiting:
                break
            if time.monotonic() >= deadline:
                self._fail(f"not serving after {self.start_timeout_s} s", waiting)
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)
        return None

    def _fail(self, why: str, members: Sequence[_Member]) -> None:
        tails = "\n".join(
            f"--- member {m.myid} (port {m.client_port}) log tail ---\n{m.log_tail()}"
            for m in members
        )
        self.stop()
        raise ZooKeeperError(f"ZooKeeper {why}\n{tails}")

    def start(self) -> None:
        _require()
        if self._tmp is not None:
            raise ZooKeeperError("already started")
        self._tmp = Path(tempfile.mkdtemp(prefix="wirebroker-zk-"))
        self.members = [_Member(i + 1, self._tmp / str(i + 1)) for i in range(self._count)]
        _LIVE.add(self)
        deadline = time.monotonic() + self.start_timeout_s
        for attempt in range(_PORT_RETRIES):
            self._pick_ports()
            self._write_configs()
            for member in self.members:
                self._spawn(member)
            exited = self._wait_serving(self.members, deadline)
            if exited is None:
                return
            port_taken = "Address already in use" in exited.log_tail(200)
            if not port_taken or attempt == _PORT_RETRIES - 1:
                self._fail(f"member {exited.myid} exited during start", [exited])
            for member in self.members:
                self._terminate(member, kill=True)

    def _terminate(self, member: _Member, *, kill: bool = False) -> None:
        process = member.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                process.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        member.process = None

    def stop(self) -> None:
        """Stop every member (SIGTERM, then SIGKILL) and remove the temporary directory."""
        for member in self.members:
            self._terminate(member)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        _LIVE.discard(self)

    def _kill_member(self, index: int) -> None:
        self._terminate(self.members[index], kill=True)

    def _restart_member(self, index: int) -> None:
        member = self.members[index]
        self._terminate(member)
        self._spawn(member)
        exited = self._wait_serving([member], time.monotonic() + self.start_timeout_s)
        if exited is not None:
            self._fail(f"member {member.myid} exited during restart", [member])

    @property
    def connect_string(self) -> str:
        if not self.members:
            raise ZooKeeperError("not started")
        return ",".join(f"127.0.0.1:{m.client_port}" for m in self.members)

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(f"--- member {m.myid} ---\n{m.log_tail(lines)}" for m in self.members)

    def __enter__(self) -> _ZooKeeperProcesses:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ZooKeeperServer(_ZooKeeperProcesses):
    """One standalone ZooKeeper on 127.0.0.1 (see the module docstring)."""

    _main_class = STANDALONE_MAIN

    def __init__(self, **options: Any) -> None:
        super().__init__(1, **options)

    @property
    def port(self) -> int:
        return self.members[0].client_port

    def kill(self) -> None:
        """SIGKILL the server (sessions stay in its data and expire after a restart)."""
        self._kill_member(0)

    def restart(self) -> None:
        self._restart_member(0)

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        return self


class ZooKeeperEnsemble(_ZooKeeperProcesses):
    """`n` quorum peers on 127.0.0.1, ids 1..n (see the module docstring)."""

    _main_class = QUORUM_MAIN

    def __init__(self, n: int = 3, **options: Any) -> None:
        if n < 1:
            raise ValueError("an ensemble needs at least one member")
        super().__init__(n, **options)

    def kill(self, index: int) -> None:
        """SIGKILL member `index` (0-based)."""
        self._kill_member(index)

    def restart(self, index: int) -> None:
        """Start member `index` again (same ports and data) and wait until it serves."""
        self._restart_member(index)

    def mode(self, index: int) -> str | None:
        return server_mode(self.members[index].client_port)

    def __enter__(self) -> ZooKeeperEnsemble:
        self.start()
        return self
