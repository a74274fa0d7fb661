"""Apache Kafka 4.4's 3-broker cluster behind the interface `bench_failover.failover_rounds`
uses for wirebroker's (tests/cluster/_cluster.py `ClusterProcesses`): leader, live, address,
kill9, sigterm, wait_exit, restart, wait_full_isr, bootstrap.

Not a test, not part of the broker. Three KRaft nodes, each broker and controller in one JVM
(compat/oracle `ApacheKafkaCluster`), with Kafka's defaults throughout (`settings={}`:
broker.session.timeout.ms 9000, replica.lag.time.max.ms 30000, internal topics replicated 3
ways) and Kafka's shipped heap (-Xmx1G -Xms1G each). What the cluster knows is read from its
Metadata (leader, ISR) over the raw protocol (compat/scenarios/wire.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import _peers  # noqa: F401  (puts the repository on sys.path for the compat imports)

from compat.oracle.kafka import KAFKA_HEAP_OPTS, ApacheKafkaCluster
from compat.scenarios.wire import PartitionView, Wire

__all__ = ["KafkaCluster"]


class KafkaCluster:
    """A started 3-node Apache Kafka (module doc); `close()` kills and removes it."""

    def __init__(self, workdir: Path, size: int = 3) -> None:
        self._cluster = ApacheKafkaCluster(workdir, size, heap=KAFKA_HEAP_OPTS, settings={})
        self.size = size
        self._down: set[int] = set()

    def start(self, timeout: float = 240.0) -> KafkaCluster:
        self._cluster.start(timeout)
        return self

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(i) for i in self.live())

    def address(self, node_id: int) -> str:
        return self._cluster.address(node_id)

    def live(self) -> list[int]:
        return [i for i in range(self.size) if i not in self._down]

    def pids(self) -> list[int]:
        return [self._cluster.brokers[i].pid for i in self.live()]

    def _partition(self, topic: str, partition: int) -> PartitionView | None:
        for i in self.live():
            try:
                with Wire(self.address(i), timeout=5.0) as w:
                    view = w.partitions(topic).get(partition)
            except (OSError, ConnectionError):
                continue
            if view is not None:
                return view
        return None

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader as a live node's Metadata shows it, waiting (bounded) for
        one that is not down."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            view = self._partition(topic, partition)
            if view is not None and view.leader in self.live():
                return view.leader
            time.sleep(0.05)
        raise RuntimeError(f"{topic}-{partition}: no live leader within 60 s")

    def kill9(self, node_id: int) -> None:
        self._down.add(node_id)
        self._cluster.kill9(node_id)

    def sigterm(self, node_id: int) -> None:
        self._down.add(node_id)
        self._cluster.brokers[node_id].sigterm()

    def wait_exit(self, node_id: int, timeout: float = 60.0) -> int:
        return self._cluster.brokers[node_id].wait_exit(timeout)

    def restart(self, node_id: int) -> None:
        self._cluster.restart(node_id)
        self._down.discard(node_id)

    def wait_full_isr(self, topic: str, partitions: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for p in range(partitions):
            while True:
                view = self._partition(topic, p)
                if view is not None and len(view.isr) == self.size:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{topic}-{p}: ISR not full within {timeout:.0f} s")
                time.sleep(0.05)

    def close(self) -> None:
        self._cluster.stop()
