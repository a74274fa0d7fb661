"""A 3-broker Apache Kafka 4.4 (KRaft: one controller node, three broker nodes) for checking
the cluster cases' assertions against Kafka itself (`compat/kafka-tools/run --kafka-cluster`;
four JVMs, so never part of CI).

`KafkaCluster` has the surface of `compat.scenarios.cluster.Cluster` the cluster cases use:
`size`, `brokers[i]` (`stop()`: SIGTERM, a controlled shutdown; `start(port=...)`;
`kill9()`; `is_running()`), `ports`, `bootstrap`, `address(i)`, `restart(i)`, `kill9(i)`.
Broker ids are 0..2 (as wirebroker's cluster), the controller is node 100. Settings: Kafka's
defaults (so `min.insync.replicas` 1, replication factor 3 for the internal topics) plus
`auto.leader.rebalance.enable=false`, as the wirebroker cluster of the cases.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from compat.oracle.kafka import (
    KAFKA_JVM_PERFORMANCE_OPTS,
    TOOL_JVM_OPTS,
    OracleError,
    _kafka_uuid,
    _log4j_config,
    ensure_libs,
    free_ports,
    java,
    probe,
)
from compat.scenarios.wire import Wire

CONTROLLER_ID = 100
SETTINGS = {"auto.leader.rebalance.enable": "false", "num.partitions": "1"}


class KafkaNode:
    def __init__(self, workdir: Path, props: dict[str, str]) -> None:
        self.workdir = workdir
        self.props = props
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def node_id(self) -> int:
        return int(self.props["node.id"])

    def format(self, cluster_id: str) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        cmd = [java(), *TOOL_JVM_OPTS, "-cp", str(ensure_libs() / "*"), "kafka.tools.StorageTool"]
        done = subprocess.run(
            [*cmd, "format", "-t", cluster_id, "-c", str(config)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise OracleError(f"format of node {self.node_id} failed: {done.stdout}{done.stderr}")

    def start(self, timeout: float = 120.0, port: int = 0) -> None:
        log4j = _log4j_config(
            self.workdir / "log4j2.properties", self.workdir / "kafka.log", "INFO"
        )
        with (self.workdir / "kafka.out").open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    java(),
                    "-Xmx512M",
                    "-Xms512M",
                    *KAFKA_JVM_PERFORMANCE_OPTS,
                    f"-Dlog4j2.configurationFile={log4j}",
                    f"-Dkafka.logs.dir={self.workdir}",
                    "-cp",
                    str(ensure_libs() / "*"),
                    "kafka.Kafka",
                    str(self.workdir / "server.properties"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if "broker" not in self.props["process.roles"]:
            return
        address = self.props["advertised.listeners"].removeprefix("PLAINTEXT://")
        deadline = time.monotonic() + timeout
        while not probe(address):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise OracleError(f"Kafka node {self.node_id} did not start")
            time.sleep(0.2)

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 60.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


class KafkaCluster:
    def __init__(self, workdir: Path, brokers: int = 3) -> None:
        self.workdir = workdir
        self.size = brokers
        ports = free_ports(brokers + 1)
        self.ports = ports[:brokers]
        voters = f"{CONTROLLER_ID}@127.0.0.1:{ports[-1]}"
        common = {
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            **SETTINGS,
        }
        self.controller = KafkaNode(
            workdir / "controller",
            {
                **common,
                "process.roles": "controller",
                "node.id": str(CONTROLLER_ID),
                "listeners": f"CONTROLLER://127.0.0.1:{ports[-1]}",
                "log.dirs": str(workdir / "controller" / "data"),
            },
        )
        self.brokers = [
            KafkaNode(
                workdir / f"broker-{i}",
                {
                    **common,
                    "process.roles": "broker",
                    "node.id": str(i),
                    "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "log.dirs": str(workdir / f"broker-{i}" / "data"),
                },
            )
            for i, port in enumerate(self.ports)
        ]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def address(self, node_id: int) -> str:
        return f"127.0.0.1:{self.ports[node_id]}"

    def start(self) -> str:
        cluster_id = _kafka_uuid()
        for node in (self.controller, *self.brokers):
            node.format(cluster_id)
        self.controller.start()
        for node in self.brokers:
            node.start()
        self.wait_whole()
        return self.bootstrap

    def wait_whole(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with Wire(self.bootstrap) as w:
                    if set(w.brokers()) == set(range(self.size)):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise OracleError("the Kafka cluster is not whole")
            time.sleep(0.2)

    def kill9(self, node_id: int) -> None:
        self.brokers[node_id].kill9()

    def restart(self, node_id: int) -> None:
        self.brokers[node_id].stop()
        self.brokers[node_id].start()
        self.wait_whole()

    def stop(self) -> None:
        for node in (*self.brokers, self.controller):
            node.kill9()
