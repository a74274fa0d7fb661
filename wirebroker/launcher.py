"""`wirebroker cluster`: a throwaway ZooKeeper and N broker processes, for users and tests.

    wirebroker cluster --brokers N [--data-dir D] [--zookeeper CONNECT | --zookeeper-servers Z]
                       [--port-base P] [--admin] [--restart-after S]
                       [--override KEY=VALUE ...] [--log-level L]

What it starts, in order:
1. ZooKeeper, unless `--zookeeper` names one: a throwaway standalone server from Debian's
   `zookeeper` package (`wirebroker.coordination.zk_server.ZooKeeperServer`: a JVM on a free
   loopback port, data and log in a temporary directory of its own, removed when it stops), or
   with `--zookeeper-servers Z` (Z > 1) an ensemble of Z quorum peers on loopback
   (`ZooKeeperEnsemble`; the brokers' connect string names all of them, so the cluster keeps
   working while a majority of the servers runs).
2. N brokers, each `python -m wirebroker serve --zookeeper CONNECT --node-id i --port 0|P+i
   --data-dir D/broker-i [--admin-port 0] [--override ...]` for i = 0..N-1, all at once
   (`--admin`: each broker serves its admin listener, /metrics, the web view and /faults, on
   a free loopback port). Each runs in its own
   process group (a Ctrl-C in the terminal reaches only the launcher, which then stops the
   brokers in order) and gets SIGTERM if the launcher itself dies (PR_SET_PDEATHSIG).
   `offsets.topic.replication.factor` is min(3, N) unless an override sets it.
3. It waits for every broker's `wirebroker ready on HOST:PORT` line, then until ZooKeeper lists
   all N brokers under /brokers/ids and a controller under /controller, then until every
   broker's Metadata lists all N brokers and a controller, so a client may create a topic with
   replication factor N as soon as the launcher says ready.

Output (stdout, each line flushed): one line per broker

    broker I ready on HOST:PORT (pid PID[, admin http://HOST:PORT/], data DIR, log FILE)

then one summary line, the last one of start-up (scripts wait for it):

    wirebroker cluster ready: bootstrap H:P,H:P,... zookeeper HOST:PORT[/chroot]

While it runs, a broker that exits on its own is reported in one stdout line
(`wirebroker cluster: broker I (pid PID) exited unexpectedly (killed by SIGKILL); log: FILE`,
or `(exit code N)`) and the others keep running. With `--restart-after S` the launcher starts
it again S seconds later, with the same id, data directory and port (so the bootstrap list
stays valid; `kill -9` a leader and watch it fail over, then rejoin and catch up), and says
`broker I restarted on HOST:PORT (pid PID[, admin URL])` once it is ready. Without it, when
no broker is left the launcher stops ZooKeeper and exits 1.
Logs: every broker's stdout and stderr go to `D/logs/broker-I.log` (with a temporary D they
vanish at exit with the rest).

Stopping: on SIGINT (Ctrl-C) or SIGTERM the brokers get SIGTERM (a controlled shutdown) one
at a time, the controller last (from its Metadata), each awaited before the next, so every
controlled shutdown has live brokers to hand its leaderships to; brokers still alive
`--stop-timeout` seconds (default 30) after the signal get SIGKILL, as does everything at a
second Ctrl-C. Then ZooKeeper stops and the temporary directory is removed
(a `--data-dir` given by the user is kept, for inspection: the throwaway ZooKeeper's state is
gone, so a later run wants a new directory, or `--zookeeper` naming the ZooKeeper that the
data's cluster used). Exit code 0 after a requested stop, 1 when start-up failed.

No threads: one `selectors` loop waits on the brokers' stdout pipes, a pidfd per broker (exit
notification) and the signal wake-up fd.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

READY_PREFIX = "wirebroker ready on "
ADMIN_PREFIX = "wirebroker admin on "
CLUSTER_READY_PREFIX = "wirebroker cluster ready: "
OFFSETS_RF = "offsets.topic.replication.factor"
_PR_SET_PDEATHSIG = 1
_LOG_TAIL_LINES = 20


class ClusterError(RuntimeError):
    """Start-up failed (ZooKeeper, a broker, a time-out); the message is for the user."""


@dataclass
class ClusterSpec:
    """What `wirebroker cluster` was asked to run (the command-line options)."""

    brokers: int
    data_dir: Path | None = None
    zookeeper: str | None = None
    port_base: int | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    log_level: str = "INFO"
    ready_timeout: float = 60.0
    stop_timeout: float = 30.0
    zookeeper_servers: int = 1  # >1: a throwaway ensemble (ignored with `zookeeper`)
    admin: bool = False  # every broker serves the admin listener on a free loopback port
    restart_after: float | None = None  # restart a broker that died, after this many seconds


class ZooKeeperLike(Protocol):
    """The part of `wirebroker.coordination.zk_server.ZooKeeperServer` the launcher uses."""

    @property
    def connect_string(self) -> str: ...

    def start(self) -> Any: ...

    def stop(self) -> Any: ...


def broker_overrides(spec: ClusterSpec) -> dict[str, str]:
    """The user's overrides plus the cluster's defaults (offsets topic RF = min(3, N))."""
    values = {OFFSETS_RF: str(min(3, spec.brokers))}
    values.update(spec.overrides)
    return values


def broker_command(
    spec: ClusterSpec, node_id: int, connect: str, data_dir: Path, port: int
) -> list[str]:
    """The command line of broker `node_id` (see the module doc)."""
    cmd = [sys.executable, "-m", "wirebroker", "serve", "--zookeeper", connect]
    cmd += ["--node-id", str(node_id), "--port", str(port), "--data-dir", str(data_dir)]
    cmd += ["--log-level", spec.log_level]
    if spec.admin:
        cmd += ["--admin-port", "0"]
    for key, value in broker_overrides(spec).items():
        cmd += ["--override", f"{key}={value}"]
    return cmd


BrokerCommand = Callable[[ClusterSpec, int, str, Path, int], list[str]]


def default_zookeeper(servers: int = 1) -> ZooKeeperLike:
    """A throwaway ZooKeeper, not started yet (`coordination.zk_server`: data and logs in a
    temporary directory of its own, removed by stop()): one standalone server, or an ensemble
    of `servers` quorum peers."""
    from wirebroker.coordination.zk_server import ZooKeeperEnsemble, ZooKeeperServer

    if servers > 1:
        return ZooKeeperEnsemble(servers)
    return ZooKeeperServer()


#: Builds the (not yet started) ZooKeeper of `--zookeeper-servers N`.
ZooKeeperFactory = Callable[[int], ZooKeeperLike]


def _child_env() -> dict[str, str]:
    """The environment of a broker: ours, with this wirebroker importable (a source checkout
    runs as it is, without `pip install`)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM this child when the launcher dies (Linux; a no-op elsewhere)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "".join(text.splitlines(keepends=True)[-lines:])


class _Broker:
    """One broker child: its process, stdout pipe (read here, copied to the log) and pidfd."""

    def __init__(self, node_id: int, data_dir: Path, log_path: Path) -> None:
        self.node_id = node_id
        self.data_dir = data_dir
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: IO[bytes] | None = None
        self.pidfd: int | None = None
        self.address: str | None = None
        #: its admin listener's URL, when it serves one (`admin.listeners`)
        self.admin_url: str | None = None
        self.buffer = b""
        self.reported = False  # its exit was reported (or expected)
        self.restart_at: float | None = None  # when to start it again (--restart-after)
        self.restarting = False  # started again, its ready line not seen yet

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def spawn(self, cmd: Sequence[str]) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.log is None:
            self.log = self.log_path.open("ab")
        self.log.write(f"===== {' '.join(cmd)}\n".encode())
        self.log.flush()
        self.proc = subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=_child_env(),
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                self.pidfd = os.pidfd_open(self.proc.pid)

    def read_stdout(self) -> int:
        """Read once from the pipe; copy it to the log; note the ready line. The number of
        bytes read: 0 at EOF, -1 when nothing is there yet."""
        assert self.proc is not None and self.proc.stdout is not None and self.log is not None
        try:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
        except BlockingIOError:
            return -1
        if not chunk:
            return 0
        self.log.write(chunk)
        self.log.flush()
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            text = line.decode(errors="replace").strip()
            if self.address is None and text.startswith(READY_PREFIX):
                self.address = text[len(READY_PREFIX) :].strip()
            elif self.admin_url is None and text.startswith(ADMIN_PREFIX):
                self.admin_url = text[len(ADMIN_PREFIX) :].strip().rstrip("/")
        return len(chunk)

    def poll(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def signal(self, signum: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signum)

    def release(self) -> None:
        """Close what the exited process left (pidfd, stdout pipe); the log stays open."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def close(self) -> None:
        self.release()
        if self.log is not None:
            self.log.close()
            self.log = None


class ClusterLauncher:
    """Runs one cluster from start to stop (`run()`); see the module doc."""

    def __init__(
        self,
        spec: ClusterSpec,
        *,
        out: IO[str] | None = None,
        err: IO[str] | None = None,
        command: BrokerCommand = broker_command,
        zookeeper_factory: ZooKeeperFactory = default_zookeeper,
        wait_for_registration: bool = True,
    ) -> None:
        if spec.brokers < 1:
            raise ValueError("--brokers must be at least 1")
        self.spec = spec
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.command = command
        self.zookeeper_factory = zookeeper_factory
        self.wait_for_registration = wait_for_registration
        self.temp_dir: Path | None = None
        self.root = Path()
        self.zookeeper: ZooKeeperLike | None = None
        self.connect = ""
        self.brokers: list[_Broker] = []
        self.signals: list[int] = []
        self.selector = selectors.DefaultSelector()
        self._wake_r = -1
        self._wake_w = -1
        self._old_wakeup_fd = -1
        self._old_handlers: dict[int, Any] = {}

    # -- output ---------------------------------------------------------------------------
    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def note(self, line: str) -> None:
        print(f"wirebroker cluster: {line}", file=self.err, flush=True)

    # -- entry point ----------------------------------------------------------------------
    def run(self) -> int:
        """Start everything, serve until a signal (or until every broker is gone), stop."""
        self._install_signals()
        try:
            try:
                self._start()
            except ClusterError as exc:
                self.note(f"cannot start: {exc}")
                return 1
            if self.signals:
                return 0
            return self._serve()
        finally:
            self._stop_all()
            self._restore_signals()

    # -- signals --------------------------------------------------------------------------
    def _install_signals(self) -> None:
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self._old_wakeup_fd = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._old_handlers[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.signals.append(signum)  # the wake-up fd wakes the selector

    def _restore_signals(self) -> None:
        for signum, handler in self._old_handlers.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._old_wakeup_fd)
        self.selector.close()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    # -- start ----------------------------------------------------------------------------
    def _start(self) -> None:
        spec = self.spec
        if spec.data_dir is None:
            self.temp_dir = Path(tempfile.mkdtemp(prefix="wirebroker-cluster-"))
            self.root = self.temp_dir
        else:
            self.root = spec.data_dir.expanduser().resolve()
            self.root.mkdir(parents=True, exist_ok=True)
        logs = self.root / "logs"
        logs.mkdir(exist_ok=True)
        t0 = time.monotonic()
        if spec.zookeeper:
            self.connect = spec.zookeeper
        else:
            self.zookeeper = self.zookeeper_factory(spec.zookeeper_servers)
            try:
                self.zookeeper.start()
            except Exception as exc:
                self.zookeeper = None
                raise ClusterError(
                    f"ZooKeeper did not start: {exc} (it needs Debian's zookeeper package and a "
                    "JRE: apt-get install zookeeper default-jre-headless; or pass --zookeeper "
                    "HOST:PORT of a running one)"
                ) from exc
            self.connect = self.zookeeper.connect_string
            what = "ZooKeeper" if spec.zookeeper_servers <= 1 else "ZooKeeper ensemble"
            self.note(f"{what} on {self.connect} ({time.monotonic() - t0:.1f} s)")
        for i in range(spec.brokers):
            broker = _Broker(i, self.root / f"broker-{i}", logs / f"broker-{i}.log")
            port = 0 if spec.port_base is None else spec.port_base + i
            broker.spawn(self.command(spec, i, self.connect, broker.data_dir, port))
            self.brokers.append(broker)
            self._register(broker)
        deadline = time.monotonic() + spec.ready_timeout
        while not self.signals and not all(b.address for b in self.brokers):
            if time.monotonic() > deadline:
                waiting = [b for b in self.brokers if not b.address]
                raise ClusterError(
                    f"no ready line from broker {waiting[0].node_id} within "
                    f"{spec.ready_timeout:.0f} s; last lines of {waiting[0].log_path}:\n"
                    + tail(waiting[0].log_path)
                )
            self._wait(deadline - time.monotonic())
            for broker in self.brokers:
                code = broker.poll()
                if code is not None and not broker.address:
                    broker.reported = True
                    self._drain(broker)
                    raise ClusterError(
                        f"broker {broker.node_id} ({describe_exit(code)}) exited before it was "
                        f"ready; last lines of {broker.log_path}:\n" + tail(broker.log_path)
                    )
        if self.signals:
            return
        if self.wait_for_registration:
            self._wait_registered(deadline)
            self._wait_metadata(deadline)
        if self.signals:
            return
        for broker in self.brokers:
            admin = f", admin {broker.admin_url}/" if broker.admin_url else ""
            self.say(
                f"broker {broker.node_id} ready on {broker.address} (pid {broker.pid}{admin}, "
                f"data {broker.data_dir}, log {broker.log_path})"
            )
        bootstrap = ",".join(str(b.address) for b in self.brokers)
        self.say(f"{CLUSTER_READY_PREFIX}bootstrap {bootstrap} zookeeper {self.connect}")
        kept = "" if self.temp_dir is None else " (a temporary directory: --data-dir keeps one)"
        self.note(
            f"{spec.brokers} brokers ready in {time.monotonic() - t0:.1f} s; logs in {logs}"
            f"{kept}; Ctrl-C stops the cluster"
        )

    def _wait_registered(self, deadline: float) -> None:
        """Poll ZooKeeper until /brokers/ids lists every broker and /controller exists."""
        from wirebroker.coordination.zk import ZkPeek

        want = {str(b.node_id) for b in self.brokers}
        try:
            with ZkPeek(self.connect, timeout_s=max(1.0, deadline - time.monotonic())) as zk:
                while not self.signals:
                    ids = set(zk.children("/brokers/ids"))
                    if want <= ids and zk.exists("/controller"):
                        return
                    if time.monotonic() > deadline:
                        raise ClusterError(
                            f"ZooKeeper lists brokers {sorted(ids)} (want {sorted(want)}) and "
                            f"{'a' if zk.exists('/controller') else 'no'} controller after "
                            f"{self.spec.ready_timeout:.0f} s"
                        )
                    self._wait(0.05)
        except ClusterError:
            raise
        except Exception as exc:
            raise ClusterError(f"cannot read ZooKeeper at {self.connect}: {exc}") from exc

    def _wait_metadata(self, deadline: float) -> None:
        """Poll each broker's Metadata until it lists all N brokers and a controller (a broker's
        view of the cluster trails ZooKeeper a little; CreateTopics with replication factor N
        needs N brokers in the view of the broker that takes it)."""
        want = {b.node_id for b in self.brokers}
        pending = list(self.brokers)
        last: object = None
        while pending and not self.signals:
            try:
                ids, controller = metadata_view(str(pending[0].address))
            except (OSError, ValueError) as exc:
                ids, controller, last = set(), -1, exc
            else:
                last = (sorted(ids), controller)
            if want <= ids and controller >= 0:
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"broker {pending[0].node_id}'s Metadata shows (brokers, controller) {last} "
                    f"after {self.spec.ready_timeout:.0f} s (want brokers {sorted(want)})"
                )
            self._wait(0.05)

    # -- the event loop -------------------------------------------------------------------
    def _wait(self, timeout: float) -> None:
        """One round of the selector: copy broker output, drain the wake-up pipe."""
        for key, _ in self.selector.select(max(0.0, min(timeout, 1.0))):
            kind, broker = key.data
            if kind == "wake":
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_r, 512)
            elif kind == "out" and broker.read_stdout() == 0:
                self.selector.unregister(key.fileobj)
            elif kind == "exit":
                self.selector.unregister(key.fd)

    def _drain(self, broker: _Broker) -> None:
        """Copy what is left in a dead broker's stdout pipe to its log."""
        if broker.proc is None or broker.proc.stdout is None or broker.proc.stdout.closed:
            return
        while broker.read_stdout() > 0:
            pass

    def _serve(self) -> int:
        while not self.signals:
            restarts = [b.restart_at for b in self.brokers if b.restart_at is not None]
            self._wait(min([1.0, *(t - time.monotonic() for t in restarts)]))
            for broker in self.brokers:
                self._watch(broker)
            if all(b.reported and b.restart_at is None for b in self.brokers):
                self.note("no broker left; stopping")
                return 1
        return 0

    def _watch(self, broker: _Broker) -> None:
        """Report a broker's unexpected exit; with --restart-after, start it again when due
        and report it ready again."""
        code = broker.poll()
        if code is not None and not broker.reported:
            broker.reported = True
            broker.restarting = False
            self._drain(broker)
            again = ""
            if self.spec.restart_after is not None:
                broker.restart_at = time.monotonic() + self.spec.restart_after
                again = f"; restarting it in {self.spec.restart_after:g} s"
            self.say(
                f"wirebroker cluster: broker {broker.node_id} (pid {broker.pid}) exited "
                f"unexpectedly ({describe_exit(code)}); log: {broker.log_path}{again}"
            )
        if broker.restart_at is not None and time.monotonic() >= broker.restart_at:
            broker.restart_at = None
            self._respawn(broker)
        if broker.restarting and broker.address is not None:
            broker.restarting = False
            admin = f", admin {broker.admin_url}/" if broker.admin_url else ""
            self.say(
                f"broker {broker.node_id} restarted on {broker.address} (pid {broker.pid}{admin})"
            )

    def _respawn(self, broker: _Broker) -> None:
        """Start a dead broker again: same id, data directory and port."""
        port = self._port_of(broker)
        for fileobj in (broker.proc.stdout if broker.proc else None, broker.pidfd):
            if fileobj is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(fileobj)
        broker.release()
        broker.address = broker.admin_url = None
        broker.buffer = b""
        broker.spawn(self.command(self.spec, broker.node_id, self.connect, broker.data_dir, port))
        broker.reported = False
        broker.restarting = True
        self._register(broker)

    def _port_of(self, broker: _Broker) -> int:
        if self.spec.port_base is not None:
            return self.spec.port_base + broker.node_id
        return int(str(broker.address).rpartition(":")[2]) if broker.address else 0

    def _register(self, broker: _Broker) -> None:
        assert broker.proc is not None and broker.proc.stdout is not None
        self.selector.register(broker.proc.stdout, selectors.EVENT_READ, ("out", broker))
        if broker.pidfd is not None:
            self.selector.register(broker.pidfd, selectors.EVENT_READ, ("exit", broker))

    # -- stop -----------------------------------------------------------------------------
    def _stop_all(self) -> None:
        try:
            self._stop_brokers()
        finally:
            try:
                if self.zookeeper is not None:
                    self.zookeeper.stop()
                    self.zookeeper = None
            finally:
                for broker in self.brokers:
                    broker.close()
                if self.temp_dir is not None:
                    shutil.rmtree(self.temp_dir, ignore_errors=True)
                    self.temp_dir = None

    def _stop_order(self, live: list[_Broker]) -> list[_Broker]:
        """The brokers to stop, one at a time: the controller last (each controlled shutdown
        then has live brokers to hand its leaderships to, and the controller moves once)."""
        controller = -1
        for broker in live if self.wait_for_registration else ():
            if broker.address is None:
                continue
            try:
                controller = metadata_view(broker.address, timeout=1.0)[1]
                break
            except (OSError, ValueError):
                continue
        return sorted(live, key=lambda b: (b.node_id == controller, b.node_id))

    def _stop_brokers(self) -> None:
        """SIGTERM (a controlled shutdown) to one broker at a time, waiting for each to exit,
        all within --stop-timeout; SIGKILL to what is left after it or at a second signal."""
        live = [b for b in self.brokers if b.poll() is None]
        if not live:
            return
        ordered = self._stop_order(live)
        t0 = time.monotonic()
        self.note(
            f"stopping {len(live)} broker(s), one at a time (SIGTERM: controlled shutdown): "
            + ", ".join(str(b.node_id) for b in ordered)
        )
        seen = len(self.signals)
        deadline = t0 + self.spec.stop_timeout
        for current in ordered:
            current.signal(signal.SIGCONT)  # a stopped process would not see SIGTERM
            current.signal(signal.SIGTERM)
            while current.poll() is None:
                if time.monotonic() > deadline or len(self.signals) > seen:
                    break
                self._wait(deadline - time.monotonic())
            if time.monotonic() > deadline or len(self.signals) > seen:
                break
        slow = [b for b in live if b.poll() is None]
        if slow:
            why = "a second signal" if len(self.signals) > seen else "the stop time-out"
            self.note(f"{why}: SIGKILL to broker(s) {', '.join(str(b.node_id) for b in slow)}")
            for broker in slow:
                broker.signal(signal.SIGCONT)
                broker.signal(signal.SIGKILL)
            for broker in slow:
                assert broker.proc is not None
                broker.proc.wait()
        self.note(f"brokers stopped in {time.monotonic() - t0:.1f} s")
        for broker in live:
            self._drain(broker)
            code = broker.poll()
            if code not in (0, None):
                self.note(f"broker {broker.node_id} stopped: {describe_exit(code)}")


def metadata_view(address: str, timeout: float = 5.0) -> tuple[set[int], int]:
    """(broker ids, controller id) in the Metadata v1 answer of the broker at "host:port"."""
    import socket
    import struct

    from protocol.codec import decode_response, encode_request

    host, _, port = address.rpartition(":")
    with socket.create_connection((host.strip("[]"), int(port)), timeout) as sock:
        sock.sendall(encode_request(3, 1, 1, "wirebroker-cluster", {"topics": []}))
        head = b""
        while len(head) < 4:
            chunk = sock.recv(4 - len(head))
            if not chunk:
                raise ConnectionError(f"{address} closed the connection")
            head += chunk
        (size,) = struct.unpack(">i", head)
        body = b""
        while len(body) < size:
            chunk = sock.recv(size - len(body))
            if not chunk:
                raise ConnectionError(f"{address} closed the connection")
            body += chunk
    _cid, resp = decode_response(3, 1, body)
    return {int(b.node_id) for b in resp.brokers}, int(resp.controller_id)


def run_cluster(spec: ClusterSpec, **kwargs: Any) -> int:
    """`wirebroker cluster`: run until stopped; the exit code (see the module doc)."""
    return ClusterLauncher(spec, **kwargs).run()
