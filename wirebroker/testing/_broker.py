"""Throwaway brokers for tests: one broker (a subprocess or a thread) or a local cluster.

One broker, `BrokerHandle` (what `wirebroker.running()` yields):

    subprocess (the default)  `python -m wirebroker serve --port 0 --data-dir D --log-level L
                              [--override K=V ...]`; start() reads stdout until the ready line
                              `wirebroker ready on HOST:PORT` (bounded by `ready_timeout`,
                              selectors on the pipe: no sleeps, no reader thread: the broker
                              prints nothing else on stdout). Its stderr goes to a log file next
                              to the data directory; a failed start raises BrokerStartError
                              with the log's last lines. On Linux the child gets SIGTERM when the
                              thread that started it dies (PR_SET_PDEATHSIG; set only from the
                              main thread, as a worker thread's exit would kill it), so a killed
                              test run leaves no broker behind.
    thread                    the same Broker built in this process and served by `trio.run` in
                              a daemon thread; start() waits for the bound address. Much faster
                              to start (no interpreter start-up, imports done once; figures in
                              docs/benchmarks.md, "The pytest plugin"), but it
                              shares the GIL and the process with the tests, and a broker bug
                              can take the test process down with it.

Why a subprocess by default: it is independent of the caller's event loop (pytest's plain,
asyncio and trio styles all just see a TCP address), its logs and signals are its own, and a
test that wedges the broker cannot wedge the test runner.

Stop: subprocess: SIGTERM (graceful: logs closed), SIGKILL after `stop_timeout`; thread: the
trio run is cancelled from outside (`trio.from_thread.run_sync` on its token) and joined. Then
the temporary directory (data + log) is removed. A `data_dir` given by the caller is kept.

A cluster, `ClusterHandle` (`wirebroker.running_cluster()`): `wirebroker.launcher`'s
ClusterLauncher (a throwaway ZooKeeper from Debian's `zookeeper` package + N broker
subprocesses), driven without its signal handling so it can run inside a test process. It
needs ZooKeeper and a JRE: `ZooKeeperMissing` (with the install hint) is raised before
anything starts when they are missing.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from wirebroker.testing._security import INTERNAL, SecuredSettings, secured
from wirebroker.testing.client import Message, WireClient
from wirebroker.testing.faults import ClusterFaults, Faults

READY_PREFIX = "wirebroker ready on "
ADMIN_PREFIX = "wirebroker admin on "
_INTERNAL_PREFIX = f"wirebroker listener {INTERNAL} on "
_PR_SET_PDEATHSIG = 1
_TAIL_LINES = 20


class BrokerStartError(RuntimeError):
    """The broker exited, or stayed silent for `ready_timeout`, before it was ready."""


class ZooKeeperMissing(RuntimeError):
    """`running_cluster` needs Debian's zookeeper package and a JRE; they are not installed."""


def _tail(path: Path, lines: int = _TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "".join(text.splitlines(keepends=True)[-lines:])


def _child_env() -> dict[str, str]:
    """Our environment with this wirebroker importable (a source checkout works uninstalled)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class _Helpers:
    """Set-up helpers over the Kafka protocol (`wirebroker.testing.client.WireClient`)."""

    @property
    def bootstrap(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def helper_bootstrap(self) -> str:
        """Where the set-up helpers connect (a secured broker's INTERNAL PLAINTEXT listener)."""
        return self.bootstrap

    def client(self, timeout: float = 30.0) -> WireClient:
        """A new blocking protocol client for this broker (close it, or use `with`)."""
        return WireClient(self.helper_bootstrap, timeout=timeout)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        exist_ok: bool = False,
    ) -> str:
        """Create `name` and wait for its leaders; returns `name`."""
        with self.client() as c:
            return c.create_topic(name, partitions, replication_factor, configs, exist_ok=exist_ok)

    def produce(
        self,
        topic: str,
        values: Any,
        *,
        partition: int = 0,
        headers: Sequence[tuple[str, str | bytes | None]] = (),
    ) -> list[int]:
        """Append values (or (key, value) pairs) to one partition, acks=all; their offsets."""
        with self.client() as c:
            return c.produce(topic, values, partition=partition, headers=headers)

    def read_to_end(self, topic: str) -> list[Message]:
        """Every record of `topic` up to its current end (all partitions, offset order)."""
        with self.client() as c:
            return c.read_to_end(topic)

    def end_offsets(self, topic: str) -> dict[int, int]:
        with self.client() as c:
            return c.end_offsets(topic)

    def list_topics(self) -> list[str]:
        with self.client() as c:
            return c.list_topics()


class BrokerHandle(_Helpers):
    """One throwaway broker (see the module doc). `start()`/`stop()`, or `with`."""

    def __init__(
        self,
        *,
        overrides: Mapping[str, object] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        thread: bool = False,
        log_level: str = "WARNING",
        ready_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        admin: bool = True,
        security: str | None = None,
        sasl_mechanism: str = "PLAIN",
    ) -> None:
        self.overrides = {k: _config_value(v) for k, v in (overrides or {}).items()}
        #: "SSL", "SASL_PLAINTEXT" or "SASL_SSL" (None: PLAINTEXT), see testing/_security.py
        self.security = security
        self.sasl_mechanism = sasl_mechanism
        self.secured: SecuredSettings | None = None
        self._internal = ""  # a secured broker's INTERNAL listener, for the helpers
        #: serve the admin listener (/faults, /metrics) on a free loopback port: `admin_url`
        self.admin = admin
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self.listen_host = host
        self.listen_port = port
        self.thread = thread
        self.log_level = log_level.upper()
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.host = ""
        self.port = 0
        self.data_dir = Path()
        self.log_path: Path | None = None
        self._temp: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._trio_token: Any = None
        self._cancel: Any = None
        self._thread_error: BaseException | None = None
        self._broker: Any = None  # thread mode: the Broker object
        #: the admin listener's base URL ("http://127.0.0.1:PORT"), when it has one
        self.admin_url: str | None = None

    @property
    def bootstrap(self) -> str:
        """ "HOST:PORT" for clients (bootstrap.servers)."""
        if not self.port:
            raise RuntimeError("the broker is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def helper_bootstrap(self) -> str:
        return self._internal or self.bootstrap

    @property
    def client_config(self) -> dict[str, str]:
        """librdkafka / confluent-kafka settings for this broker (security included)."""
        if self.secured is None:
            return {"bootstrap.servers": self.bootstrap}
        return self.secured.client_config(self.bootstrap)

    @property
    def kafka_python_config(self) -> dict[str, Any]:
        """kafka-python keyword arguments for this broker (security included)."""
        if self.secured is None:
            return {"bootstrap_servers": self.bootstrap}
        return self.secured.kafka_python_config(self.bootstrap)

    @property
    def pid(self) -> int | None:
        """The broker's process id (None in thread mode or when stopped)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def faults(self) -> Faults:
        """Fault control of this broker (`wirebroker.testing.faults.Faults`): in process in
        thread mode, else over HTTP to its admin listener."""
        if self._broker is not None and self._trio_token is not None:
            return Faults.in_process(self._broker, self._trio_token)
        if self.admin_url is None:
            raise RuntimeError("the broker is not running (or has no admin listener)")
        return Faults.http(self.admin_url)

    def __enter__(self) -> BrokerHandle:
        return self if self.port else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        mode = "thread" if self.thread else f"pid {self.pid}"
        return f"<wirebroker {self.bootstrap if self.port else '(stopped)'} {mode}>"

    def _overrides(self) -> dict[str, str]:
        """The broker's config overrides: the caller's over a secured broker's."""
        base = dict(self.secured.overrides) if self.secured is not None else {}
        return base | self.overrides

    # -- start ----------------------------------------------------------------------------
    def start(self) -> BrokerHandle:
        if self.port:
            raise RuntimeError("the broker is already running")
        self._temp = Path(tempfile.mkdtemp(prefix="wirebroker-test-"))
        self.data_dir = self._given_dir if self._given_dir is not None else self._temp / "data"
        self.log_path = self._temp / "broker.log"
        try:
            if self.security is not None:
                self.secured = secured(
                    self.security,
                    self.sasl_mechanism,
                    self._temp / "certs",
                    self.listen_host,
                    self.listen_port,
                )
            if self.thread:
                self._start_thread()
            else:
                self._start_process()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_process(self) -> None:
        cmd = [sys.executable, "-m", "wirebroker", "serve", "--host", self.listen_host]
        cmd += ["--port", str(self.listen_port), "--data-dir", str(self.data_dir)]
        cmd += ["--log-level", self.log_level]
        if self.admin:
            cmd += ["--admin-port", "0"]
        for key, value in self._overrides().items():
            cmd += ["--override", f"{key}={value}"]
        assert self.log_path is not None
        self._log = self.log_path.open("wb")
        main = threading.current_thread() is threading.main_thread()
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=_child_env(),
            start_new_session=True,  # a Ctrl-C in the terminal reaches the test runner only
            preexec_fn=_die_with_parent if main and sys.platform == "linux" else None,
        )
        assert self._proc.stdout is not None
        address = self._read_ready_line(self._proc.stdout)
        host, _, port = address.rpartition(":")
        self.host, self.port = host.strip("[]"), int(port)

    def _read_ready_line(self, stdout: IO[bytes]) -> str:
        assert self._proc is not None and self.log_path is not None
        deadline = time.monotonic() + self.ready_timeout
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrokerStartError(
                        f"no ready line within {self.ready_timeout:.0f} s; the end of its "
                        f"log:\n{_tail(self.log_path)}"
                    )
                if sel.select(left):
                    chunk = os.read(stdout.fileno(), 4096)
                    if not chunk:
                        code = self._proc.wait()
                        raise BrokerStartError(
                            f"the broker exited with code {code} before it was ready; the "
                            f"end of its log:\n{_tail(self.log_path)}"
                        )
                    buf += chunk
                    text = buf.decode(errors="replace")
                    for line in text.split("\n")[:-1]:  # whole lines: a URL may be cut
                        if line.startswith(ADMIN_PREFIX) and self.admin_url is None:
                            self.admin_url = line[len(ADMIN_PREFIX) :].strip().rstrip("/")
                        if line.startswith(_INTERNAL_PREFIX):
                            self._internal = line[len(_INTERNAL_PREFIX) :].strip()
                    for line in text.splitlines():
                        if line.startswith(READY_PREFIX):
                            return line[len(READY_PREFIX) :].strip()

    def _start_thread(self) -> None:
        import logging

        import trio

        from wirebroker.broker import Broker
        from wirebroker.config import BrokerConfig
        from wirebroker.listeners import connectable_host

        values = self._overrides()
        host = f"[{self.listen_host}]" if ":" in self.listen_host else self.listen_host
        values.setdefault("listeners", f"PLAINTEXT://{host}:{self.listen_port}")
        values["log.dirs"] = str(self.data_dir)
        if self.admin:
            values.setdefault("admin.listeners", "127.0.0.1:0")
        config = BrokerConfig(values)
        logging.getLogger("wirebroker").setLevel(self.log_level)
        broker = self._broker = Broker(config)
        ready = threading.Event()
        bound: list[tuple[str, int]] = []

        async def main() -> None:
            self._trio_token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as scope:
                self._cancel = scope
                async with trio.open_nursery() as nursery:
                    bound.extend(await nursery.start(broker.serve))
                    ready.set()

        def run() -> None:
            try:
                trio.run(main)
            except BaseException as exc:  # reported by start() / stop()
                self._thread_error = exc
            finally:
                ready.set()

        self._thread = threading.Thread(target=run, name="wirebroker", daemon=True)
        self._thread.start()
        if not ready.wait(self.ready_timeout) or not bound:
            raise BrokerStartError(f"the in-thread broker did not start: {self._thread_error!r}")
        bound_host, self.port = bound[0]
        self.host = connectable_host(bound_host)
        internal = broker.server.bound_by_listener.get(INTERNAL)
        if internal is not None and self.secured is not None:
            self._internal = f"{connectable_host(internal[0])}:{internal[1]}"
        if broker.admin_bound:
            admin_host, admin_port = broker.admin_bound[0]
            admin_host = connectable_host(admin_host)
            admin_host = f"[{admin_host}]" if ":" in admin_host else admin_host
            self.admin_url = f"http://{admin_host}:{admin_port}"

    # -- stop -----------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the broker (graceful, bounded) and remove the temporary directory."""
        try:
            if self._proc is not None:
                self._stop_process(self._proc)
            if self._thread is not None:
                self._stop_thread(self._thread)
        finally:
            self._proc = None
            self._thread = None
            self._broker = None
            self.admin_url = None
            self.port = 0
            self._internal = ""
            if self._log is not None:
                self._log.close()
                self._log = None
            if self._temp is not None:
                shutil.rmtree(self._temp, ignore_errors=True)
                self._temp = None

    def _stop_process(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def _stop_thread(self, thread: threading.Thread) -> None:
        import trio

        if thread.is_alive() and self._trio_token is not None and self._cancel is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._cancel.cancel, trio_token=self._trio_token)
        thread.join(self.stop_timeout)


def _config_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class ClusterHandle(_Helpers):
    """A throwaway local cluster: ZooKeeper + `brokers` broker subprocesses (module doc)."""

    def __init__(
        self,
        brokers: int = 3,
        *,
        overrides: Mapping[str, object] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        log_level: str = "WARNING",
        ready_timeout: float = 60.0,
        stop_timeout: float = 30.0,
        admin: bool = True,
    ) -> None:
        from wirebroker.launcher import ClusterSpec

        values = {k: _config_value(v) for k, v in (overrides or {}).items()}
        if admin:  # each broker's admin listener on a free loopback port (`admin_urls`)
            values.setdefault("admin.listeners", "127.0.0.1:0")
        self.spec = ClusterSpec(
            brokers=brokers,
            data_dir=Path(data_dir) if data_dir is not None else None,
            overrides=values,
            log_level=log_level.upper(),
            ready_timeout=ready_timeout,
            stop_timeout=stop_timeout,
        )
        self._launcher: Any = None
        self.addresses: list[str] = []
        #: node id -> its admin listener's URL
        self.admin_urls: dict[int, str] = {}
        self.zookeeper = ""

    @property
    def bootstrap(self) -> str:
        if not self.addresses:
            raise RuntimeError("the cluster is not running")
        return ",".join(self.addresses)

    @property
    def brokers(self) -> int:
        return self.spec.brokers

    def pids(self) -> list[int]:
        return [b.pid for b in self._launcher.brokers] if self._launcher is not None else []

    def __enter__(self) -> ClusterHandle:
        return self if self._launcher is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ClusterHandle:
        from wirebroker.coordination.zk_server import INSTALL_HINT, zookeeper_available
        from wirebroker.launcher import ClusterError, ClusterLauncher

        if not zookeeper_available():
            raise ZooKeeperMissing(
                f"a wirebroker cluster needs a ZooKeeper server and a JRE: {INSTALL_HINT}"
            )
        launcher = ClusterLauncher(self.spec, out=io.StringIO(), err=io.StringIO())
        self._launcher = launcher
        try:
            # The launcher's steps without its signal handlers (a test process owns those).
            launcher._start()
        except ClusterError as exc:
            self.stop()
            raise BrokerStartError(f"the cluster did not start: {exc}") from exc
        except BaseException:
            self.stop()
            raise
        self.addresses = [str(b.address) for b in launcher.brokers]
        self.admin_urls = {b.node_id: b.admin_url for b in launcher.brokers if b.admin_url}
        self.zookeeper = launcher.connect
        return self

    @property
    def admin_url(self) -> str | None:
        """The admin listener of the lowest node id (each broker's: `admin_urls`)."""
        return self.admin_urls[min(self.admin_urls)] if self.admin_urls else None

    @property
    def faults(self) -> ClusterFaults:
        """Fault control of every broker (`ClusterFaults`: `[node_id]` for one broker;
        shrink_isr goes to the partition's leader)."""
        if not self.admin_urls:
            raise RuntimeError("the cluster is not running (or has no admin listeners)")
        brokers = {node: Faults.http(url) for node, url in self.admin_urls.items()}
        return ClusterFaults(brokers, self._leader_of)

    def _leader_of(self, topic: str, partition: int) -> int:
        with self.client() as c:
            (t,) = c.metadata([topic]).topics
            return next(int(p.leader_id) for p in t.partitions if p.partition_index == partition)

    def stop(self) -> None:
        launcher, self._launcher = self._launcher, None
        self.addresses = []
        self.admin_urls = {}
        if launcher is not None:
            try:
                launcher._stop_all()
            finally:
                launcher.selector.close()

    def __repr__(self) -> str:
        return f"<wirebroker cluster {self.bootstrap if self.addresses else '(stopped)'}>"
