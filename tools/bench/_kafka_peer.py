"""Apache Kafka 4.4 as a benchmark peer: a single-node KRaft broker as Kafka ships it.

Not a test, not part of the broker. The jars come from the oracle's Maven cache
(`compat/oracle`, fetched once, offline after); the JVM runs with Kafka's start scripts'
settings (`KAFKA_HEAP_OPTS` -Xmx1G -Xms1G and `KAFKA_JVM_PERFORMANCE_OPTS`: G1, 20 ms pause
goal; compat/oracle/kafka.py names them) and the server.properties of Kafka's single-node
`config/server.properties` (one process in the broker and controller roles, internal topics
with replication factor 1, everything else Kafka's default).

`start_kafka` formats the log directory first (kafka-storage format, untimed: an operator does
it once), then spawns the JVM and times it like the other brokers of `_peers.Broker`: spawn ->
first ApiVersions answered on a new connection, polled every 2 ms. The object it returns has
the `Broker` interface the benchmarks use (`bootstrap`, `port`, `answer_s`, `rss`,
`peak_rss`, `cpu_seconds`, `stop`).
"""

from __future__ import annotations

import time
from pathlib import Path

from _peers import REPO_ROOT, ProcessMeasures, api_versions_answered

from compat.oracle.jars import KAFKA_VERSION
from compat.oracle.kafka import ApacheKafka

__all__ = ["KafkaBroker", "kafka_peer_line", "start_kafka"]

START_TIMEOUT_S = 120.0


class KafkaBroker(ProcessMeasures):
    """A running single-node Apache Kafka (module doc); `stop()` removes its data."""

    name = "kafka"
    ready_line_s: float | None = None

    def __init__(self, workdir: Path, overrides: dict[str, str] | None = None) -> None:
        self._kafka = ApacheKafka(workdir / "kafka", overrides)
        self.bootstrap = ""
        self.port = 0
        self.answer_s: float | None = None
        self.spawned_at = 0.0

    def start(self) -> KafkaBroker:
        kafka = self._kafka
        kafka.prepare()
        t0 = self.spawned_at = time.perf_counter()
        address = kafka.spawn()
        port = int(address.rpartition(":")[2])
        deadline = time.monotonic() + START_TIMEOUT_S
        while not api_versions_answered(port):
            kafka.check_alive(deadline, START_TIMEOUT_S)
            time.sleep(0.002)
        self.answer_s = time.perf_counter() - t0
        self.bootstrap, self.port = address, port
        return self

    @property
    def pid(self) -> int:
        return self._kafka.pid

    def stop(self) -> None:
        self._kafka.stop()


def start_kafka(workdir: Path, overrides: dict[str, str] | None = None) -> KafkaBroker:
    """A started `KafkaBroker` in `workdir` (module doc)."""
    return KafkaBroker(workdir, overrides).start()


def kafka_peer_line() -> str:
    """How the peer is described in a report."""
    return (
        f"Apache Kafka {KAFKA_VERSION} (Maven Central jars, single-node KRaft, broker and "
        "controller in one JVM, Kafka's start-script JVM settings: -Xmx1G -Xms1G, G1)"
    )


assert REPO_ROOT  # _peers put the repository on sys.path for the compat imports above
