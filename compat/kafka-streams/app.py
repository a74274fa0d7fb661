"""The Kafka Streams word count (WordCount.java): compiled once, started, driven, checked.

    classes = compile_app()                 # javac against the oracle's jars, cached by hash
    with App(bootstrap, app_id, ...) as app # java WordCount ...; waits for "STATE RUNNING"
    committed_output(w, topic, partitions)  # what a read_committed consumer would read

Compiling: `javac` (next to the `java` the oracle uses) compiles WordCount.java against Apache
Kafka 4.4.0's cached jars into the oracle's cache (`compat.oracle.javac.compile_java`), keyed
by the source, the jars' stamp and the java binary; nothing compiled is in the repository.

Reading committed: the wire oracle reads every record and every transaction marker of a
partition (read_uncommitted); a record counts only once a COMMIT marker of its producer
follows it: records followed by an ABORT marker, and those of a transaction still open, are
what a read_committed consumer never returns.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

from compat.oracle.javac import compile_java
from compat.oracle.kafka import ensure_libs, java, tools_log4j
from compat.scenarios.wire import LATEST, StoredRecord, Wire

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "WordCount.java"
MAIN = "WordCount"


def compile_app() -> Path:
    """The folder holding WordCount.class, compiled now unless cached."""
    return compile_java("kafka-streams", [SOURCE])


class App:
    """One WordCount process; stdout lines are kept (`lines`), stderr goes to a file."""

    def __init__(
        self, classes: Path, bootstrap: str, app_id: str, topics: tuple[str, str], workdir: Path
    ) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.lines: list[str] = []
        self.stderr_path = workdir / "streams.err"
        cp = f"{classes}{os.pathsep}{ensure_libs() / '*'}"
        cmd = [
            java(),
            "-Xmx512M",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={tools_log4j()}",
            "-cp",
            cp,
            MAIN,
            bootstrap,
            app_id,
            *topics,
            str(workdir / "state"),
        ]
        with self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_running(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while "STATE RUNNING" not in self.lines:
            if self.proc.poll() is not None:
                raise AssertionError(f"the Streams app exited: {self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the Streams app not RUNNING in {timeout:.0f} s: {self.tail()}"
                )
            time.sleep(0.1)

    def thread_errors(self) -> list[str]:
        return [line for line in self.lines if line.startswith("THREAD-ERROR")]

    def tail(self) -> str:
        err = self.stderr_path.read_text(errors="replace").splitlines()[-15:]
        return f"stdout {self.lines[-10:]}; stderr {err}"

    def stop(self, timeout: float = 45.0) -> int:
        """SIGTERM (Streams closes: commits, leaves its group), SIGKILL after `timeout`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._reader.join(timeout=5)
        return int(self.proc.returncode)

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def committed(records: list[StoredRecord], markers: list) -> list[StoredRecord]:
    """The records a read_committed consumer returns, in offset order (see the module doc)."""
    ends: dict[int, list[tuple[int, bool]]] = defaultdict(list)
    for m in markers:
        ends[m.producer_id].append((m.offset, m.commit))
    out = []
    for rec in records:
        if not rec.transactional:
            out.append(rec)
            continue
        following = [commit for offset, commit in ends[rec.producer_id] if offset > rec.offset]
        if following and following[0]:
            out.append(rec)
    return out


def committed_output(w: Wire, topic: str, partitions: int) -> list[tuple[str, int, bool]]:
    """(word, count, transactional) of every committed output record, partition by partition
    in offset order."""
    out = []
    for p in range(partitions):
        records, markers = w.read_log(topic, p)
        for rec in committed(records, markers):
            assert rec.key is not None and rec.value is not None and len(rec.value) == 8, rec
            (count,) = struct.unpack(">q", rec.value)
            out.append((rec.key.decode(), count, rec.transactional))
    return out


def open_transaction(
    w: Wire, topics: list[str], partitions: int
) -> tuple[str, int, int, int] | None:
    """A partition of `topics` with a transaction open: (topic, partition, its last stable
    offset (ListOffsets latest, read_committed), its high watermark), the first below the
    second; None when every partition is stable."""
    for topic in topics:
        for p in range(partitions):
            stable, high = w.list_offset(topic, p, LATEST, 1), w.list_offset(topic, p, LATEST)
            if stable < high:
                return topic, p, stable, high
    return None
