"""Kafka's Java programs (its command-line tools, a Kafka Streams application) run cheaply.

    tool("kafka-topics", ["--bootstrap-server", b, "--list"])     # to its end
    proc = start_tool("kafka-console-consumer", [...])            # in the background

run one of Kafka's command-line tools unchanged: the class its bin/*.sh script runs
(`TOOL_CLASSES`, read from the 4.4 jars), with the oracle's cached jars and JVM options and
WARN logging to stderr, exactly as `compat.oracle.kafka.run_tool` does (its `tool_command`),
plus class data sharing. A tool's JVM spends most of its ~2.5 s loading and verifying classes
from ~90 jars; the first run of each main class dumps the classes it loaded into a dynamic
CDS archive (`-XX:ArchiveClassesAtExit`), and every later run maps that archive
(`-XX:SharedArchiveFile`): about 0.9 s instead of 2.6 s for `kafka-topics --list` here.

The archives live in the oracle's cache (`CACHE/cds/KEY/<main class>.jsa`), keyed by the java
binary and the jars' stamp (`compat.oracle.javac.runtime_key`), so a new JDK or new jars
start fresh archives; a run with an archive the JVM rejects still runs (`-Xshare:auto`),
only slower. An archive is written to a temporary name and renamed, so concurrent first runs
never see a half-written one. The JVM's own log lines (CDS warnings among them) go to stderr,
never into a tool's stdout.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from compat.oracle.javac import runtime_key
from compat.oracle.kafka import cache_dir, run_tool, tool_command

JVM_LOG = ["-Xlog:disable", "-Xlog:all=error:stderr"]

#: bin/<script>.sh -> the class it runs (Apache Kafka 4.4: every tool is in kafka-tools).
TOOL_CLASSES = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-streams-application-reset": "org.apache.kafka.tools.StreamsResetter",
}


def main_class(name: str) -> str:
    """A tool's main class from its script name (`kafka-topics`, `kafka-topics.sh`) or the
    class itself."""
    return TOOL_CLASSES.get(name.removesuffix(".sh"), name)


def _archive_dir() -> Path:
    return cache_dir() / "cds" / runtime_key()


def cds_options(cls: str) -> tuple[list[str], tuple[Path, Path] | None]:
    """JVM options that map `cls`'s archive, or that dump one (then also (temporary path the
    dump goes to, final path), for `keep_archive` once the JVM has exited)."""
    folder = _archive_dir()
    archive = folder / f"{cls}.jsa"
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}", *JVM_LOG], None
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{cls}.jsa.{os.getpid()}-{threading.get_ident()}.partial"
    return [f"-XX:ArchiveClassesAtExit={partial}", *JVM_LOG], (partial, archive)


def keep_archive(dump: tuple[Path, Path] | None) -> None:
    """After the JVM exited: install the archive it dumped (if it did) under its final name."""
    if dump is None:
        return
    partial, final = dump
    if partial.exists() and partial.stat().st_size > 0:
        os.replace(partial, final)
    else:
        partial.unlink(missing_ok=True)


def tool(
    name: str,
    args: Sequence[str],
    *,
    input: str | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line tools (script name or class) to its end."""
    cls = main_class(name)
    opts, dump = cds_options(cls)
    try:
        return run_tool(cls, args, timeout=timeout, input=input, jvm_opts=opts)
    finally:
        keep_archive(dump)


class Background:
    """A tool running in the background (a console consumer that stays in its group, a
    producer to be killed): its output goes to files, read when asked. `kill_all()` ends
    every one still running (a run's last word, whatever its cases left behind)."""

    _all: ClassVar[list[Background]] = []

    def __init__(self, name: str, args: Sequence[str], workdir: Path) -> None:
        cls = main_class(name)
        self.opts, self._dump = cds_options(cls)
        workdir.mkdir(parents=True, exist_ok=True)
        tag = f"{name.rsplit('.', 1)[-1]}-{os.getpid()}-{id(self)}"
        self.stdout_path = workdir / f"{tag}.out"
        self.stderr_path = workdir / f"{tag}.err"
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                tool_command(cls, args, self.opts),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        Background._all.append(self)

    @classmethod
    def kill_all(cls) -> None:
        for proc in cls._all:
            proc.kill9()
        cls._all.clear()

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (the tool's shutdown hook runs: a consumer commits and leaves its group),
        SIGKILL if it is still there after `timeout`; the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        keep_archive(self._dump)
        return int(self.proc.returncode)

    def kill9(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        if self._dump is not None:
            self._dump[0].unlink(missing_ok=True)
            self._dump = None
