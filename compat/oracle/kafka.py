"""Apache Kafka 4.4.0 on this machine: fetched once with Maven, started as a single-node KRaft
broker on free ports, stopped and removed at the end. The oracle that wirebroker is compared
with (compat/oracle/README.md).

    libs = ensure_libs()                  # CACHE/libs: every jar, fetched once, offline after
    with ApacheKafka() as kafka:          # formats a fresh log dir, starts kafka.Kafka, waits
        kafka.bootstrap                   # "127.0.0.1:PORT", ready for clients
    run_tool("org.apache.kafka.tools.TopicCommand", ["--bootstrap-server", b, "--list"])

The jars and their cache (`ensure_libs`, `cache_dir`): compat/oracle/jars.py, which
tools/gen_protocol.py also uses (Kafka's message definitions are in kafka-clients).

One oracle per test run: `tools/run-tests` starts one (`python -m compat.oracle serve`) and
exports its address as `WIREBROKER_ORACLE`; `shared_or_new()` (and the pytest fixture
`apache_kafka`) use that one when it is set and start their own otherwise.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from compat.oracle.jars import KAFKA_VERSION as KAFKA_VERSION  # re-exported
from compat.oracle.jars import OracleError, cache_dir, ensure_libs
from protocol.codec import decode_response, encode_request

SHARED_ENV = "WIREBROKER_ORACLE"  # host:port of a running oracle shared by a whole test run
NODE_ID = 1

# The JVM options Kafka's start scripts use (bin/kafka-server-start.sh: KAFKA_HEAP_OPTS;
# bin/kafka-run-class.sh: KAFKA_JVM_PERFORMANCE_OPTS), so that what is measured against it is
# Kafka as shipped.
KAFKA_HEAP_OPTS = ["-Xmx1G", "-Xms1G"]
KAFKA_JVM_PERFORMANCE_OPTS = [
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]
# The tools' JVM (bin/kafka-run-class.sh without a heap setting: the JVM's default; small
# and quick to start, as the tools need).
TOOL_JVM_OPTS = ["-Xmx512M", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]

# What the oracle's server.properties sets beyond listeners and the log dir: exactly what
# Kafka's own single-node config/server.properties sets so that one broker can host the
# internal topics (their replication factors default to 3). Everything else is Kafka's
# default, so that DescribeConfigs and behaviour compare with Kafka as shipped.
SINGLE_NODE_SETTINGS = {
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


def classpath() -> str:
    return str(ensure_libs() / "*")


def java() -> str:
    """The `java` to run Kafka with: $JAVA_HOME's, else the one on PATH (Kafka 4 needs 17+)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise OracleError("no java on PATH: apt-get install default-jre-headless (Java 17+)")
    return found


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that were free a moment ago (Kafka's KRaft listeners cannot take
    port 0: the controller's port is written into the quorum configuration)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _call(address: str, api: int, version: int, body: dict[str, Any], timeout: float) -> Any:
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(encode_request(api, version, 1, "wirebroker-oracle", body))
        head = _recv_exact(sock, 4)
        (size,) = struct.unpack(">i", head)
        _, response = decode_response(api, version, _recv_exact(sock, size))
        return response


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def probe(address: str, timeout: float = 2.0) -> bool:
    """True once the broker at `address` answers ApiVersions and its Metadata lists itself
    with a controller: a single KRaft node has then elected itself and registered."""
    try:
        versions = _call(
            address,
            18,
            3,
            {"client_software_name": "wirebroker-oracle", "client_software_version": "1"},
            timeout,
        )
        if versions.error_code != 0:
            return False
        meta = _call(address, 3, 12, {"topics": [], "allow_auto_topic_creation": False}, timeout)
    except (OSError, ConnectionError, struct.error):
        return False
    return bool(meta.brokers) and meta.controller_id >= 0


def _log4j_config(path: Path, log_file: Path | None, level: str) -> Path:
    if log_file is None:
        appender = [
            "appender.out.type = Console",
            "appender.out.name = out",
            "appender.out.target = SYSTEM_ERR",
        ]
    else:
        appender = [
            "appender.out.type = File",
            "appender.out.name = out",
            f"appender.out.fileName = {log_file}",
        ]
    path.write_text(
        "\n".join(
            [
                "status = warn",
                *appender,
                "appender.out.layout.type = PatternLayout",
                "appender.out.layout.pattern = [%d] %p %m (%c)%n",
                f"rootLogger.level = {level}",
                "rootLogger.appenderRef.out.ref = out",
                "",
            ]
        )
    )
    return path


class ApacheKafka:
    """One single-node KRaft Apache Kafka (broker and controller in one JVM) in `workdir`
    (a fresh temporary one by default, removed by `stop()`), on free loopback ports."""

    def __init__(
        self,
        workdir: Path | None = None,
        overrides: dict[str, str] | None = None,
        *,
        keep: bool = False,
    ) -> None:
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="apache-kafka-"))
        self.overrides = dict(overrides or {})
        self.keep = keep
        self.bootstrap = ""
        self.cluster_id = ""
        self.log_path = self.workdir / "kafka.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None

    @property
    def port(self) -> int:
        return int(self.bootstrap.rpartition(":")[2])

    def server_properties(self, port: int, controller_port: int) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            **SINGLE_NODE_SETTINGS,
        }
        props.update(self.overrides)
        return props

    def start(self, timeout: float = 120.0) -> str:
        libs = ensure_libs()
        cp = str(libs / "*")
        self.workdir.mkdir(parents=True, exist_ok=True)
        port, controller_port = free_ports(2)
        config = self.workdir / "server.properties"
        config.write_text(
            "".join(f"{k}={v}\n" for k, v in self.server_properties(port, controller_port).items())
        )
        self.cluster_id = _kafka_uuid()
        storage = [java(), *TOOL_JVM_OPTS, "-cp", cp, "kafka.tools.StorageTool"]
        fmt = subprocess.run(
            [*storage, "format", "-t", self.cluster_id, "-c", str(config)],
            capture_output=True,
            text=True,
            check=False,
            env=self._tool_env(),
        )
        if fmt.returncode != 0:
            raise OracleError(f"kafka-storage format failed: {fmt.stdout}{fmt.stderr}")
        log4j = _log4j_config(self.workdir / "log4j2.properties", self.log_path, "INFO")
        self._stdout = (self.workdir / "kafka.out").open("wb")
        self._proc = subprocess.Popen(
            [
                java(),
                *KAFKA_HEAP_OPTS,
                *KAFKA_JVM_PERFORMANCE_OPTS,
                f"-Dlog4j2.configurationFile={log4j}",
                f"-Dkafka.logs.dir={self.workdir}",
                "-cp",
                cp,
                "kafka.Kafka",
                str(config),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while not probe(address):
            if self._proc.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise OracleError(f"Apache Kafka exited before it was ready:\n{tail}")
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise OracleError(f"Apache Kafka not ready within {timeout:.0f} s:\n{tail}")
            time.sleep(0.1)
        self.bootstrap = address
        return address

    def _tool_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["KAFKA_LOG4J_OPTS"] = ""
        return env

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        parts = []
        for path in (self.workdir / "kafka.out", self.log_path):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()
                parts.extend(text[-lines:])
        return "\n".join(parts)

    def kill9(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=30)

    def stop(self, grace: float = 30.0) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        self._proc = None
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None
        if self._own_workdir and not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ApacheKafka:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kafka_uuid() -> str:
    """A cluster id as Kafka's `kafka-storage random-uuid` prints it (base64url, no padding),
    and, as Kafka's Uuid.randomUuid, never one starting with "-" (a command line would read
    it as an option: `kafka-storage format -t -x...` fails, one start in 64)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def run_tool(
    main_class: str,
    args: Sequence[str],
    *,
    timeout: float = 120.0,
    input: str | None = None,
    jvm_opts: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line tools (the class its bin/*.sh script runs) to its end;
    logging at WARN to stderr, as Kafka's tools-log4j2 configuration does."""
    libs = ensure_libs()
    log4j = cache_dir() / "tools-log4j2.properties"
    if not log4j.exists():
        _log4j_config(log4j, None, "WARN")
    return subprocess.run(
        [
            java(),
            *TOOL_JVM_OPTS,
            *jvm_opts,
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            str(libs / "*"),
            main_class,
            *args,
        ],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


@contextlib.contextmanager
def shared_or_new() -> Iterator[str]:
    """The bootstrap of the run's shared oracle ($WIREBROKER_ORACLE, checked to answer), else
    of one started here and stopped at the end."""
    shared = os.environ.get(SHARED_ENV)
    if shared:
        if not probe(shared, timeout=10.0):
            raise OracleError(f"{SHARED_ENV}={shared} does not answer as a Kafka broker")
        yield shared
        return
    with ApacheKafka() as kafka:
        yield kafka.bootstrap
