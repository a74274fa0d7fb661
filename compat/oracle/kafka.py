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
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from compat.oracle.jars import KAFKA_VERSION as KAFKA_VERSION  # re-exported
from compat.oracle.jars import OracleError, cache_dir, ensure_libs
from protocol.codec import decode_response, encode_request

T = TypeVar("T")
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


# The cluster row's settings (ApacheKafkaCluster), as wirebroker's cluster fixture
# (compat/scenarios/cluster.py) sets its brokers: everything replicated 3 ways with
# min.insync.replicas=2, few offsets partitions, and a dead broker noticed within seconds
# (KRaft: its heartbeats to the controller stop; broker.session.timeout.ms, default 9 s).
# Kafka's defaults otherwise (group.initial.rebalance.delay.ms stays 3000).
CLUSTER_SETTINGS = {
    "num.partitions": "1",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "6",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "6",
    "min.insync.replicas": "2",
    "replica.lag.time.max.ms": "5000",
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "1000",
}
# Three JVMs on this machine's 2 CPUs: a smaller heap than Kafka's 1G each.
CLUSTER_HEAP_OPTS = ["-Xmx512M", "-Xms512M"]


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
    """One KRaft Apache Kafka node (broker and controller in one JVM) in `workdir` (a fresh
    temporary one by default, removed by `stop()`), on free loopback ports: alone (the
    default: a single-node cluster of its own), or node `node_id` of an `ApacheKafkaCluster`
    (its ports, the quorum's `voters` and the `cluster_id` given). `start()` formats the log
    dir only the first time, so a node stopped or killed starts again on the same data and
    ports (`ApacheKafkaCluster.restart`)."""

    def __init__(
        self,
        workdir: Path | None = None,
        overrides: dict[str, str] | None = None,
        *,
        keep: bool = False,
        node_id: int = NODE_ID,
        ports: tuple[int, int] | None = None,
        voters: str | None = None,
        cluster_id: str = "",
        heap: Sequence[str] = KAFKA_HEAP_OPTS,
        settings: dict[str, str] | None = None,
    ) -> None:
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="apache-kafka-"))
        self.overrides = dict(overrides or {})
        self.keep = keep
        self.node_id = node_id
        self.ports = ports
        self.voters = voters
        self.heap = list(heap)
        self.settings = dict(SINGLE_NODE_SETTINGS if settings is None else settings)
        self.bootstrap = ""
        self.cluster_id = cluster_id
        self.log_path = self.workdir / "kafka.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None

    @property
    def port(self) -> int:
        return int(self.bootstrap.rpartition(":")[2])

    def server_properties(self, port: int, controller_port: int) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters
            or f"{self.node_id}@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            **self.settings,
        }
        props.update(self.overrides)
        return props

    def start(self, timeout: float = 120.0) -> str:
        """Launch and wait (bounded) until it answers and lists itself with a controller."""
        address = self.launch()
        deadline = time.monotonic() + timeout
        while not probe(address):
            self.check_alive(deadline, timeout)
            time.sleep(0.1)
        return address

    def launch(self) -> str:
        """Write the config, format the log dir (the first time), start the JVM; its
        address, without waiting for it to answer."""
        self.prepare()
        return self.spawn()

    def prepare(self) -> Path:
        """`launch`'s first half: the config written and the log dir formatted (the first
        time); the config's path."""
        cp = str(ensure_libs() / "*")
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.ports is None:
            port, controller_port = free_ports(2)
            self.ports = (port, controller_port)
        port, controller_port = self.ports
        config = self.workdir / "server.properties"
        config.write_text(
            "".join(f"{k}={v}\n" for k, v in self.server_properties(port, controller_port).items())
        )
        if not (self.workdir / "data" / "meta.properties").exists():
            self._format(cp, config)
        return config

    def spawn(self) -> str:
        """`launch`'s second half: start the JVM on the prepared config; its address."""
        assert self.ports is not None, "prepare() first"
        port = self.ports[0]
        cp = str(ensure_libs() / "*")
        config = self.workdir / "server.properties"
        log4j = _log4j_config(self.workdir / "log4j2.properties", self.log_path, "INFO")
        self._stdout = (self.workdir / "kafka.out").open("ab")
        self._proc = subprocess.Popen(
            [
                java(),
                *self.heap,
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
        self.bootstrap = f"127.0.0.1:{port}"
        return self.bootstrap

    def _format(self, cp: str, config: Path) -> None:
        self.cluster_id = self.cluster_id or _kafka_uuid()
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

    def check_alive(self, deadline: float, timeout: float) -> None:
        """Raise OracleError (and stop) if the JVM exited or `deadline` passed."""
        if self._proc is not None and self._proc.poll() is not None:
            tail = self.log_tail()
            self.stop()
            raise OracleError(f"Apache Kafka exited before it was ready:\n{tail}")
        if time.monotonic() > deadline:
            tail = self.log_tail()
            self.stop()
            raise OracleError(f"Apache Kafka not ready within {timeout:.0f} s:\n{tail}")

    def _tool_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["KAFKA_LOG4J_OPTS"] = ""
        return env

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    def exit_status(self) -> str | None:
        """None while running (or never started); else how the JVM ended."""
        return exit_status(self._proc)

    def log_tail(self, lines: int = 30) -> str:
        parts = []
        for path in (self.workdir / "kafka.out", self.log_path):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()
                parts.extend(text[-lines:])
        return "\n".join(parts)

    def sigterm(self) -> None:
        """SIGTERM (Kafka's controlled shutdown) without waiting; `wait_exit` waits."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)

    def wait_exit(self, timeout: float) -> int:
        assert self._proc is not None, "not started"
        code = self._proc.wait(timeout=timeout)
        self._close_stdout()
        return code

    def kill9(self) -> None:
        """SIGKILL (a crash) and reap; the data dir is kept (`start()` again reuses it)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=30)
        self._close_stdout()

    def _close_stdout(self) -> None:
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None

    def stop(self, grace: float = 30.0) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        self._close_stdout()
        if self._own_workdir and not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ApacheKafka:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ApacheKafkaCluster:
    """`size` KRaft Apache Kafka nodes, each broker and controller in one JVM (a quorum of
    `size` voters), on free loopback ports, for the matrix's cluster row against Kafka: node
    ids 0..size-1 (as wirebroker's cluster fixture), `CLUSTER_SETTINGS`, heap `heap` each.

        cluster = ApacheKafkaCluster()
        cluster.start()        # all nodes at once; then every node's Metadata lists every node
        cluster.bootstrap      # "h:p,h:p,h:p"
        cluster.kill9(i)       # SIGKILL node i (its data kept)
        cluster.restart(i)     # node i again on its data and ports; waits until every node
                               # lists it again
        cluster.stop()         # SIGKILL every node (nothing of a run is kept), remove workdir
    """

    def __init__(
        self,
        workdir: Path | None = None,
        size: int = 3,
        overrides: dict[str, str] | None = None,
        heap: Sequence[str] = CLUSTER_HEAP_OPTS,
        settings: dict[str, str] | None = None,
    ) -> None:
        """`settings` replaces `CLUSTER_SETTINGS` (`{}`: Kafka's defaults throughout)."""
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="apache-kafka-cluster-"))
        self.size = size
        ports = free_ports(2 * size)
        self.ports = ports[:size]
        voters = ",".join(f"{i}@127.0.0.1:{ports[size + i]}" for i in range(size))
        cluster_id = _kafka_uuid()
        self.brokers = [
            ApacheKafka(
                self.workdir / f"node-{i}",
                overrides,
                node_id=i,
                ports=(ports[i], ports[size + i]),
                voters=voters,
                cluster_id=cluster_id,
                heap=heap,
                settings=CLUSTER_SETTINGS if settings is None else settings,
            )
            for i in range(size)
        ]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def address(self, node_id: int) -> str:
        return f"127.0.0.1:{self.ports[node_id]}"

    def start(self, timeout: float = 180.0) -> str:
        try:
            # all at once (each formats its log dir with a JVM of its own first)
            at_once(ApacheKafka.launch, self.brokers)
            self.wait_whole(timeout)
        except BaseException:
            self.stop()
            raise
        return self.bootstrap

    def wait_whole(self, timeout: float = 120.0) -> None:
        """Every running node answers, and its Metadata lists every node and a controller."""
        deadline = time.monotonic() + timeout
        want = set(range(self.size))
        while not all(_lists_brokers(self.address(i), want) for i, n in enumerate(self.brokers)):
            for node in self.brokers:
                node.check_alive(deadline, timeout)
            time.sleep(0.1)

    def is_running(self, node_id: int | None = None) -> bool:
        if node_id is None:
            return all(n.is_running() for n in self.brokers)
        return self.brokers[node_id].is_running()

    def kill9(self, node_id: int) -> None:
        self.brokers[node_id].kill9()

    def restart(self, node_id: int, timeout: float = 120.0) -> None:
        node = self.brokers[node_id]
        node.kill9()
        node.launch()
        self.wait_whole(timeout)

    def log_tail(self, lines: int = 15) -> str:
        def head(i: int, n: ApacheKafka) -> str:
            status = n.exit_status()
            return f"--- node {i}" + (f" ({status})" if status else "") + " ---"

        return "\n".join(f"{head(i, n)}\n{n.log_tail(lines)}" for i, n in enumerate(self.brokers))

    def stop(self) -> None:
        """SIGKILL every node (a SIGTERM to all at once waits on controlled shutdowns that
        have nowhere to move leaderships to) and remove the work dir (if it is our own)."""
        for node in self.brokers:
            node.kill9()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ApacheKafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def at_once(fn: Callable[[T], object], items: Iterable[T]) -> None:
    """`fn(item)` for every item, each in a thread of its own, all at once; once every call
    has returned, the first exception one raised is raised."""
    errors: list[BaseException] = []

    def one(item: T) -> None:
        try:
            fn(item)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(item,)) for item in items]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def exit_status(proc: subprocess.Popen[Any] | None) -> str | None:
    """None while `proc` runs (or there is none); else how it ended."""
    code = None if proc is None else proc.poll()
    if code is None:
        return None
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def _lists_brokers(address: str, want: set[int], timeout: float = 2.0) -> bool:
    """The node at `address` answers Metadata listing exactly the brokers `want` (registered
    and unfenced) and a controller."""
    try:
        meta = _call(address, 3, 12, {"topics": [], "allow_auto_topic_creation": False}, timeout)
    except (OSError, ConnectionError, struct.error):
        return False
    return {b.node_id for b in meta.brokers} == want and meta.controller_id >= 0


def _kafka_uuid() -> str:
    """A cluster id as Kafka's `kafka-storage random-uuid` prints it (base64url, no padding),
    and, as Kafka's Uuid.randomUuid, never one starting with "-" (a command line would read
    it as an option: `kafka-storage format -t -x...` fails, one start in 64)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def tools_log4j() -> Path:
    """Kafka's tools' logging: WARN and above to stderr (config/tools-log4j2.yaml), as a file
    in the cache."""
    path = cache_dir() / "tools-log4j2.properties"
    if not path.exists():
        _log4j_config(path, None, "WARN")
    return path


def tool_command(main_class: str, args: Sequence[str], jvm_opts: Sequence[str] = ()) -> list[str]:
    """The command line bin/kafka-run-class.sh builds for one of Kafka's tools: the tools'
    JVM options (then `jvm_opts`), their logging, every jar."""
    libs = ensure_libs()  # first: it makes the cache the logging file goes into
    return [
        java(),
        *TOOL_JVM_OPTS,
        *jvm_opts,
        f"-Dlog4j2.configurationFile={tools_log4j()}",
        "-cp",
        str(libs / "*"),
        main_class,
        *args,
    ]


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
    return subprocess.run(
        tool_command(main_class, args, jvm_opts),
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
