"""Start wirebroker as a user would, for the compatibility runs.

`Broker(data_dir, overrides, config_file, extra_args).start(port=0)` runs `python -m wirebroker
serve [EXTRA_ARGS] --port PORT --data-dir DIR [--config FILE] [--override k=v]...` from the
repository root and waits (bounded) for its one stdout line `wirebroker ready on HOST:PORT`.
stderr goes to `<data_dir>.log` (appended to across starts), which the runner quotes when a
case fails. `stop()` sends SIGTERM, then SIGKILL after a grace period; `kill9()` is a crash
(SIGKILL, nothing flushed). A broker may be started again on the same data dir and port (the
cluster fixture, `cluster.py`, restarts a killed broker that way; `extra_args` carry its
`--zookeeper CONNECT --node-id N`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from compat.oracle.kafka import exit_status

REPO_ROOT = Path(__file__).resolve().parents[2]
READY = "wirebroker ready on "


class BrokerError(RuntimeError):
    pass


class Broker:
    def __init__(
        self,
        data_dir: Path,
        overrides: dict[str, str] | None = None,
        config_file: Path | None = None,
        extra_args: list[str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.extra_args = list(extra_args or [])
        self.overrides = dict(overrides or {})
        self.config_file = config_file
        self.log_path = data_dir.with_suffix(".log")
        self.bootstrap = ""
        self._proc: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    def start(self, timeout: float = 30.0, port: int = 0) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "wirebroker", "serve", *self.extra_args, "--port", str(port)]
        cmd += ["--data-dir", str(self.data_dir)]
        if self.config_file is not None:
            cmd += ["--config", str(self.config_file)]
        for key, value in self.overrides.items():
            cmd += ["--override", f"{key}={value}"]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
        )
        self._log = self.log_path.open("a", encoding="utf-8")
        self._log.write(f"===== {' '.join(cmd)}\n")
        self._log.flush()
        self._proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        found: list[str] = []
        ready = threading.Event()
        stdout = self._proc.stdout
        assert stdout is not None

        def drain() -> None:
            for line in stdout:
                if line.startswith(READY) and not found:
                    found.append(line[len(READY) :].strip())
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.05):
            if time.monotonic() > deadline:
                self.stop()
                raise BrokerError(f"broker not ready within {timeout} s; log {self.log_path}")
        if not found:
            self.stop()
            raise BrokerError(f"broker exited before it was ready; log {self.log_path}")
        self.bootstrap = found[0]
        return self.bootstrap

    @property
    def port(self) -> int:
        return int(self.bootstrap.rpartition(":")[2])

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill9(self) -> None:
        """SIGKILL (a crash) and reap; the log file is closed, the data dir kept."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
            self._note("killed with SIGKILL (asked for)")
        self.stop()

    def _note(self, line: str) -> None:
        if self._log is not None and not self._log.closed:
            self._log.write(f"===== {line}\n")
            self._log.flush()

    def exit_status(self) -> str | None:
        """None while running; else how the process ended (for failure reports)."""
        return exit_status(self._proc)

    def stop(self, grace: float = 10.0) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is not None:
            self._note(f"found stopped: {self.exit_status()}")
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
