"""Run a wirebroker as a subprocess, the way a user would, for integration tests.

The process is `sys.executable -m wirebroker serve --port 0 --data-dir DIR [--override k=v]...`
started from the repository root with the repository on PYTHONPATH (so the tests work before
`pip install -e .`). The broker announces itself with one stdout line

    wirebroker ready on HOST:PORT

and `BrokerProcess.start` waits for that line (bounded: `ready_timeout` seconds) on a queue fed
by a reader thread; there are no fixed sleeps. The reader thread keeps draining stdout for the
life of the process so a chatty broker never blocks on a full pipe.

stderr goes to `<log_path>` (appended to across restarts, with a marker line per start), so
a test that fails can show what the broker logged: see `BrokerProcess.log_text()` and the
report hook in `conftest.py`.

`extra_args` go right after `serve` (the cluster tests pass `--zookeeper CONNECT --node-id N`).

Lifecycle:
    start()    -> bootstrap "HOST:PORT"   (raises BrokerStartError with the log on failure)
               = spawn() then wait_ready(): the cluster tests spawn several brokers, then wait
    kill9()    SIGKILL, no chance to flush or write a clean-shutdown marker
    send_signal(sig)  any signal (SIGSTOP/SIGCONT to freeze and thaw, SIGTERM without waiting);
               wait_exit(timeout) then reaps it
    stop()     SIGTERM, wait (then SIGKILL if it does not exit in time); returns the exit code
               (a stopped process is sent SIGCONT first so that it sees the SIGTERM)
    restart()  stop() if running (use kill9() first for a crash), start() on the same data dir;
               returns the new bootstrap (a new port, or the same with same_port=True)
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_PREFIX = "wirebroker ready on "


#: The `broker_factory` fixture: `start(**overrides) -> BrokerProcess` (started).
BrokerFactory = Callable[..., "BrokerProcess"]


class BrokerStartError(RuntimeError):
    """The broker exited or stayed silent before printing its ready line."""


def _drain(stream: IO[str], lines: queue.Queue[str | None], keep: list[str]) -> None:
    """Reader thread: every stdout line goes to `keep` and `lines`; None marks EOF."""
    try:
        for line in stream:
            keep.append(line)
            lines.put(line)
    except (OSError, ValueError):  # stream closed under us
        pass
    finally:
        lines.put(None)


class BrokerProcess:
    """One broker subprocess bound to a data directory; restartable on the same directory."""

    def __init__(
        self,
        data_dir: Path,
        *,
        log_path: Path | None = None,
        overrides: Mapping[str, str] | None = None,
        ready_timeout: float = 20.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.data_dir = Path(data_dir)
        self.log_path = Path(log_path) if log_path else self.data_dir.parent / "broker-stderr.log"
        self.overrides: dict[str, str] = dict(overrides or {})
        self.ready_timeout = ready_timeout
        self.extra_args = list(extra_args)
        self.host = ""
        self.port = 0
        self.starts = 0
        self.stdout_lines: list[str] = []
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._log_file: IO[str] | None = None
        self._lines: queue.Queue[str | None] | None = None

    # -- properties -----------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        if not self.port:
            raise RuntimeError("broker is not started")
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def command(self, port: int = 0) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "wirebroker",
            "serve",
            *self.extra_args,
            "--port",
            str(port),
            "--data-dir",
            str(self.data_dir),
        ]
        for key, value in self.overrides.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def log_text(self) -> str:
        """Everything the broker wrote to stderr so far (all starts), plus stdout lines."""
        if self._log_file is not None:
            self._log_file.flush()
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        out = "".join(self.stdout_lines)
        return f"--- stderr ({self.log_path}) ---\n{text}\n--- stdout ---\n{out}"

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, port: int = 0) -> str:
        """Start on `port` (0: any free port); returns the bootstrap once the broker is ready."""
        self.spawn(port)
        return self.wait_ready()

    def spawn(self, port: int = 0) -> None:
        """Start the process on `port` (0: any free port) without waiting for it."""
        if self.is_running():
            raise RuntimeError("broker already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        if self._log_file is None:
            self._log_file = self.log_path.open("a", encoding="utf-8")
        cmd = self.command(port)
        self._log_file.write(f"===== start #{self.starts}: {' '.join(cmd)}\n")
        self._log_file.flush()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
        )
        self.port = 0
        self.stdout_lines = []
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
            bufsize=1,
            start_new_session=True,  # a Ctrl-C on the test run does not hit the broker first
        )
        self._proc = proc
        lines: queue.Queue[str | None] = queue.Queue()
        assert proc.stdout is not None
        self._reader = threading.Thread(
            target=_drain,
            args=(proc.stdout, lines, self.stdout_lines),
            name=f"broker-stdout-{proc.pid}",
            daemon=True,
        )
        self._reader.start()
        self._lines = lines

    def wait_ready(self) -> str:
        """Wait (bounded: `ready_timeout`) for the ready line of the process `spawn` started."""
        proc, lines = self._proc, self._lines
        assert proc is not None and lines is not None, "spawn() first"
        deadline = time.monotonic() + self.ready_timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._abort()
                raise BrokerStartError(
                    f"no '{READY_PREFIX}HOST:PORT' line within {self.ready_timeout} s\n"
                    + self.log_text()
                )
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                code = proc.wait(timeout=5)
                raise BrokerStartError(
                    f"broker exited with code {code} before it was ready\n" + self.log_text()
                )
            if line.startswith(READY_PREFIX):
                address = line[len(READY_PREFIX) :].strip()
                host, _, bound_port = address.rpartition(":")
                self.host, self.port = host.strip("[]"), int(bound_port)
                return self.bootstrap

    def _abort(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=10)
        self._join_reader()

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()

    def send_signal(self, signum: int) -> None:
        """Send `signum` to the broker if it is running (SIGSTOP, SIGCONT, SIGTERM, ...)."""
        if self._proc is not None and self._proc.poll() is None:
            os.kill(self._proc.pid, signum)

    def wait_exit(self, timeout: float) -> int:
        """Wait for the process to exit (after a signal) and reap it; its exit code.
        Raises subprocess.TimeoutExpired after `timeout` seconds."""
        assert self._proc is not None
        code = self._proc.wait(timeout=timeout)
        self._join_reader()
        return code

    def kill9(self) -> None:
        """SIGKILL the broker and reap it (a crash: nothing is flushed, no shutdown marker)."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            os.kill(self._proc.pid, signal.SIGKILL)
        self._proc.wait(timeout=10)
        self._join_reader()

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM and wait; SIGKILL after `timeout` seconds. Returns the exit code."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)  # a SIGSTOPped broker would not see SIGTERM
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
                if self._log_file is not None:
                    self._log_file.write(f"===== did not exit within {timeout} s of SIGTERM\n")
        self._join_reader()
        return self._proc.returncode

    def restart(self, *, same_port: bool = False) -> str:
        """Stop (if still running) and start again on the same data dir; returns the bootstrap.

        The port is a new one unless `same_port` (for clients that must find the broker again
        at the address they bootstrapped from).
        """
        port = self.port if same_port else 0
        self.stop()
        return self.start(port)

    def close(self) -> None:
        """Stop the process (if any) and release the log file; safe to call twice."""
        try:
            self.stop(timeout=10)
        finally:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None
