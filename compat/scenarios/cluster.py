"""A 3-broker wirebroker cluster for the matrix's cluster row, started as a user would.

    cluster = Cluster(workdir, brokers=3)
    cluster.start()       # ZooKeeper, then the brokers (all at once), then: every broker's
                          # Metadata lists every broker and a controller
    cluster.bootstrap     # "h:p,h:p,h:p" (every broker, running or not: clients bootstrap
                          # from a list and skip the dead ones)
    cluster.kill9(i)      # a crash of broker i (SIGKILL): its ZooKeeper session expires after
                          # zookeeper.session.timeout.ms and the controller elects new leaders
    cluster.restart(i)    # broker i again, same data dir and port; waits until it is back in
                          # every broker's Metadata
    cluster.stop()        # SIGKILL the brokers (see stop()), stop ZooKeeper

What runs: a throwaway standalone ZooKeeper (`wirebroker.coordination.zk_server.ZooKeeperServer`,
Debian's `zookeeper` package and a JRE, a free loopback port, removed at stop) and broker i as
`python -m wirebroker serve --zookeeper CONNECT/compat --node-id i --port 0 --data-dir
WORKDIR/broker-i --override ...` (`broker.Broker`; the same command `wirebroker cluster` runs),
stderr in `WORKDIR/broker-i.log`. The brokers' settings (`CLUSTER_OVERRIDES`):

    default.replication.factor=3        auto-created topics are replicated like the rest
    offsets.topic.replication.factor=3  __consumer_offsets (6 partitions) on every broker
    min.insync.replicas=2               every acks=all write needs a follower too
    zookeeper.session.timeout.ms=4000   a killed broker is noticed in ~4 s (failover cases)
    replica.lag.time.max.ms=5000
    group.initial.rebalance.delay.ms=0  (as the single broker's row: no join delay)

The oracle (`wire.Wire` with `replication_factor=3`) creates topics with replication factor 3
and waits until every partition has a leader and three in-sync replicas on every broker.
"""

from __future__ import annotations

import time
from pathlib import Path

from compat.oracle.kafka import at_once
from compat.scenarios.broker import Broker, BrokerError
from compat.scenarios.wire import Wire

BROKERS = 3
CLUSTER_OVERRIDES = {
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "6",
    "min.insync.replicas": "2",
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "5000",
    "group.initial.rebalance.delay.ms": "0",
}
CHROOT = "/compat"


class Cluster:
    def __init__(
        self, workdir: Path, brokers: int = BROKERS, overrides: dict[str, str] | None = None
    ) -> None:
        self.workdir = workdir
        self.overrides = {**CLUSTER_OVERRIDES, **(overrides or {})}
        self.size = brokers
        self.zookeeper: object | None = None
        self.connect = ""
        self.brokers: list[Broker] = []
        self.ports: list[int] = []

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> str:
        from wirebroker.coordination.zk_server import ZooKeeperServer

        self.workdir.mkdir(parents=True, exist_ok=True)
        zk = ZooKeeperServer()
        zk.start()
        self.zookeeper = zk
        self.connect = zk.connect_string + CHROOT
        self.brokers = [
            Broker(
                self.workdir / f"broker-{i}",
                self.overrides,
                extra_args=["--zookeeper", self.connect, "--node-id", str(i)],
            )
            for i in range(self.size)
        ]
        try:
            # All at once, as `wirebroker cluster` starts them (one thread each waits for a
            # ready line); the first failure is raised once every start has returned.
            at_once(lambda b: b.start(timeout=timeout), self.brokers)
            self.ports = [b.port for b in self.brokers]
            self.wait_whole(timeout)
        except BaseException:
            self.stop()
            raise
        return self.bootstrap

    def stop(self) -> None:
        """SIGKILL every broker, then stop ZooKeeper. Nothing of a run is kept, and a
        SIGTERM to all brokers at once costs `controlled.shutdown.timeout.ms` (10 s): each
        leader waits for a controller to move its leaderships to brokers that are all
        leaving too."""
        try:
            for broker in self.brokers:
                broker.kill9()
        finally:
            zk = self.zookeeper
            self.zookeeper = None
            if zk is not None:
                zk.stop()  # type: ignore[attr-defined]

    # -- state ---------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def address(self, node_id: int) -> str:
        return f"127.0.0.1:{self.ports[node_id]}"

    def is_running(self, node_id: int | None = None) -> bool:
        """Broker `node_id` runs (None: every broker runs)."""
        if node_id is None:
            return bool(self.brokers) and all(b.is_running() for b in self.brokers)
        return self.brokers[node_id].is_running()

    def log_tail(self, lines: int = 15) -> str:
        def head(i: int, b: Broker) -> str:
            status = b.exit_status()
            return f"--- broker {i}" + (f" ({status})" if status else "") + " ---"

        return "\n".join(f"{head(i, b)}\n{b.log_tail(lines)}" for i, b in enumerate(self.brokers))

    def wait_whole(self, timeout: float = 60.0) -> None:
        """Every broker's Metadata lists all brokers and a controller."""
        want = set(range(self.size))
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            try:
                if all(self._sees_whole(i, want) for i in range(self.size)):
                    return
            except OSError as exc:
                last = repr(exc)
            if time.monotonic() > deadline:
                raise BrokerError(f"cluster not whole after {timeout} s ({last})")
            time.sleep(0.05)

    def _sees_whole(self, node_id: int, want: set[int]) -> bool:
        with Wire(self.address(node_id)) as w:
            return set(w.brokers()) == want and w.controller() >= 0

    # -- faults --------------------------------------------------------------------------
    def kill9(self, node_id: int) -> None:
        self.brokers[node_id].kill9()

    def restart(self, node_id: int, timeout: float = 60.0) -> None:
        broker = self.brokers[node_id]
        broker.stop()
        broker.start(timeout=timeout, port=self.ports[node_id])
        self.wait_whole(timeout)
