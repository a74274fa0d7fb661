"""Throwaway Kafka brokers for tests, for any test runner (the pytest plugin builds on it).

    import wirebroker

    with wirebroker.running() as broker:             # a fresh broker on a free port
        broker.bootstrap                             # "127.0.0.1:PORT" for any Kafka client
        broker.create_topic("orders", partitions=3)  # waits until it has leaders
        broker.produce("orders", [b"v1", ("key", "v2")])
        broker.read_to_end("orders")                 # [Message(topic, partition, offset, ...)]

    with wirebroker.running_cluster(brokers=3) as cluster:   # ZooKeeper + 3 brokers
        cluster.create_topic("t", partitions=3, replication_factor=3)

`running(overrides={"num.partitions": 4}, data_dir=None, thread=False, log_level="WARNING",
admin=True)`:
a subprocess `python -m wirebroker serve --port 0` with a temporary data directory (removed
at exit) by default, ready in well under a second (docs/benchmarks.md, "The pytest plugin");
`thread=True` serves it from a thread of this process
instead (faster, less isolated); `data_dir` keeps the data where the caller wants it;
`admin` serves the admin listener on a free loopback port (`.admin_url`: /faults, /metrics),
and `.faults` is the broker's fault control (`wirebroker.testing.faults`). See
`wirebroker.testing._broker` for the life cycle, `wirebroker.testing.client` for the helpers
(pure Kafka protocol, no client library needed).

The context managers are synchronous and the broker runs outside the caller's event loop, so
they serve plain, asyncio and trio code alike (start the broker before the loop or in a
fixture; from inside a running loop, hand them to a worker thread if a 0.3 s block matters).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from wirebroker.testing._broker import (
    BrokerHandle,
    BrokerStartError,
    ClusterHandle,
    ZooKeeperMissing,
)
from wirebroker.testing.client import KafkaError, Message, WireClient
from wirebroker.testing.faults import ClusterFaults, FaultRequestError, Faults

__all__ = [
    "BrokerHandle",
    "BrokerStartError",
    "ClusterFaults",
    "ClusterHandle",
    "FaultRequestError",
    "Faults",
    "KafkaError",
    "Message",
    "WireClient",
    "ZooKeeperMissing",
    "running",
    "running_cluster",
]


def running(
    *,
    overrides: Mapping[str, object] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    thread: bool = False,
    log_level: str = "WARNING",
    ready_timeout: float = 30.0,
    admin: bool = True,
) -> BrokerHandle:
    """A fresh broker, started; use it in a `with` block (or call `.stop()`)."""
    return BrokerHandle(
        overrides=overrides,
        data_dir=data_dir,
        host=host,
        port=port,
        thread=thread,
        log_level=log_level,
        ready_timeout=ready_timeout,
        admin=admin,
    ).start()


def running_cluster(
    brokers: int = 3,
    *,
    overrides: Mapping[str, object] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    log_level: str = "WARNING",
    ready_timeout: float = 60.0,
    admin: bool = True,
) -> ClusterHandle:
    """ZooKeeper + `brokers` replicated brokers, started (`with` block or `.stop()`).
    Raises ZooKeeperMissing when Debian's zookeeper package or a JRE is not installed."""
    return ClusterHandle(
        brokers,
        overrides=overrides,
        data_dir=data_dir,
        log_level=log_level,
        ready_timeout=ready_timeout,
        admin=admin,
    ).start()
