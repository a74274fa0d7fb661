"""A real cluster for integration tests: one ZooKeeper, N `wirebroker serve` processes.

    cluster = ClusterProcesses(zk_connect, tmp_path, brokers=3, overrides={...})
                               # overrides go on top of DEFAULT_OVERRIDES (fast timeouts), or
                               # of `base_overrides` when given ({}: the brokers' defaults)
    cluster.start()            # chroot created, brokers spawned at once, each ready line read,
                               # every broker registered in /brokers/ids, a controller elected
    cluster.bootstrap          # "h:p,h:p,h:p" of the running brokers
    cluster.kill9(i) / sigstop(i) / sigcont(i) / sigterm(i) / restart(i)
    cluster.leader(topic, p), isr(...), partition_state(...), controller(), controller_epoch()
    cluster.assert_replicas_equal(topic, p)
    cluster.close()

Broker i runs with `--zookeeper ZK/CHROOT --node-id i --data-dir TMP/broker-i`, stderr in
`TMP/broker-i.log` (attached to the report of a failed test by conftest.py). Every test gets
its own chroot (`/wbtest-<hex>`) on the session's ZooKeeper, so no state leaks between tests.

What the tests read from ZooKeeper (kazoo, chrooted, Kafka's layout; see
shared/reference/replication.md section 1):
    /brokers/ids/<id>                           ephemeral, one per live broker
    /brokers/topics/<T>/partitions/<P>/state    {"leader", "leader_epoch", "isr", ...}
    /controller                                 {"brokerid": N, ...} (ephemeral)
    /controller_epoch                           ASCII integer

Waiting: `wait_until(predicate, timeout, what)` polls every 50 ms up to a deadline and fails
with `what` and the last value seen. Real processes and a real ZooKeeper have no events a
test could await, so bounded polling it is; there are no fixed sleeps.

Replica comparison (`assert_replicas_equal`): for each replica of a partition, the batches of
its segment files (`<data>/<topic>-<p>/*.log`, in base-offset order) whose last offset is below
the high watermark are concatenated and compared byte for byte (followers copy the leader's
batches as they are, partition leader epoch included, so in-sync replicas hold the same bytes).
The high watermark comes from ListOffsets(latest) at the leader.
"""

from __future__ import annotations

import json
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import _wire
from _broker import BrokerProcess
from kazoo.client import KazooClient

from protocol.records import iter_batches

T = TypeVar("T")
POLL_INTERVAL = 0.05

#: Settings every cluster test starts with (a test may override any of them).
DEFAULT_OVERRIDES: dict[str, str] = {
    "zookeeper.session.timeout.ms": "4000",  # a kill -9 is noticed within ~4-6 s
    "replica.lag.time.max.ms": "3000",
    "offsets.topic.num.partitions": "6",  # fewer __consumer_offsets partitions to elect
    "group.initial.rebalance.delay.ms": "0",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "auto.create.topics.enable": "false",
}


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    *,
    interval: float = POLL_INTERVAL,
    detail: Callable[[], object] | None = None,
) -> T:
    """Poll `predicate` until it returns a truthy value (returned) or `timeout` seconds pass
    (AssertionError naming `what` and the last value or exception seen, and `detail()` when
    given: the state that tells why)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = predicate()
        except Exception as exc:  # a broker or ZooKeeper briefly unreachable: keep polling
            value, last = None, f"{type(exc).__name__}: {exc}"
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            extra = ""
            if detail is not None:
                try:
                    extra = f"; {detail()}"
                except Exception as exc:
                    extra = f"; (detail failed: {exc!r})"
            raise AssertionError(
                f"timed out after {timeout} s waiting for {what}; last: {last!r}{extra}"
            )
        time.sleep(interval)


def segment_batches(partition_dir: Path, below: int) -> list[tuple[int, int, bytes]]:
    """(base offset, last offset, bytes) of every batch in the partition's segments with last offset
    < `below`, in offset order. A batch that straddles `below` is an error (the high watermark
    always falls between batches)."""
    out: list[tuple[int, int, bytes]] = []
    for seg in sorted(partition_dir.glob("*.log"), key=lambda p: int(p.stem)):
        data = seg.read_bytes()
        for pos, h in _batches_prefix(data, len(data)):
            if h.base_offset >= below:
                return out
            if h.last_offset >= below:
                raise AssertionError(
                    f"{seg}: batch {h.base_offset}..{h.last_offset} straddles the high "
                    f"watermark {below}"
                )
            out.append((h.base_offset, h.last_offset, data[pos : pos + h.size]))
    return out


def _batches_prefix(data: bytes, end: int) -> Iterable[tuple[int, Any]]:
    """iter_batches up to the first incomplete batch (a live log may be mid-append)."""
    try:
        yield from iter_batches(data, 0, end)
    except Exception:
        return


class ClusterProcesses:
    """ZooKeeper chroot + N broker processes (see the module doc)."""

    def __init__(
        self,
        zk_connect: str,
        workdir: Path,
        *,
        brokers: int = 3,
        overrides: Mapping[str, str] | None = None,
        chroot: str | None = None,
        ready_timeout: float = 30.0,
        base_overrides: Mapping[str, str] | None = None,
    ) -> None:
        self.zk_connect = zk_connect
        self.chroot = chroot or f"/wbtest-{uuid.uuid4().hex[:12]}"
        self.connect = f"{zk_connect}{self.chroot}"
        self.workdir = workdir
        self.overrides = dict(DEFAULT_OVERRIDES if base_overrides is None else base_overrides)
        self.overrides["offsets.topic.replication.factor"] = str(min(3, brokers))
        self.overrides.update(overrides or {})
        self.brokers = [
            BrokerProcess(
                workdir / f"broker-{i}",
                log_path=workdir / f"broker-{i}.log",
                overrides=self.overrides,
                ready_timeout=ready_timeout,
                extra_args=["--zookeeper", self.connect, "--node-id", str(i)],
            )
            for i in range(brokers)
        ]
        self.zk = KazooClient(hosts=self.connect, timeout=10.0)
        self._root_zk = KazooClient(hosts=zk_connect, timeout=10.0)

    # -- lifecycle ------------------------------------------------------------------------
    def connect_zookeeper(self) -> None:
        """Create the chroot and connect the harness's ZooKeeper clients (start() does)."""
        self._root_zk.start(timeout=15)
        self._root_zk.ensure_path(self.chroot)
        self.zk.start(timeout=15)

    def start(self, timeout: float = 30.0) -> ClusterProcesses:
        self.connect_zookeeper()
        for broker in self.brokers:
            broker.spawn()
        for broker in self.brokers:
            broker.wait_ready()
        self.wait_registered(range(len(self.brokers)), timeout)
        wait_until(
            lambda: self.controller_or_none() is not None, timeout, "a controller in /controller"
        )
        self.wait_metadata_brokers(timeout)
        return self

    def close(self) -> None:
        """SIGKILL every broker (a test's end needs no graceful stop: SIGTERM with every broker
        leaving at once costs seconds per test; test_cluster_failover and test_cluster_command
        check the graceful stop), then disconnect from ZooKeeper."""
        try:
            for broker in self.brokers:
                broker.kill9()
                broker.close()
        finally:
            for client in (self.zk, self._root_zk):
                try:
                    client.stop()
                    client.close()
                except Exception:  # pragma: no cover - best effort at teardown
                    pass

    # -- addresses ------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """Bootstrap servers: every broker that is running."""
        return ",".join(b.bootstrap for b in self.brokers if b.is_running() and b.port)

    def address(self, node_id: int) -> str:
        return self.brokers[node_id].bootstrap

    def live(self) -> list[int]:
        return [i for i, b in enumerate(self.brokers) if b.is_running()]

    def any_live_address(self, exclude: Iterable[int] = ()) -> str:
        skip = set(exclude)
        for i in self.live():
            if i not in skip:
                return self.address(i)
        raise AssertionError("no live broker")

    # -- ZooKeeper reads ------------------------------------------------------------------
    def registered(self) -> set[int]:
        """Node ids under /brokers/ids (live sessions)."""
        if not self.zk.exists("/brokers/ids"):
            return set()
        return {int(c) for c in self.zk.get_children("/brokers/ids")}

    def controller_or_none(self) -> int | None:
        if not self.zk.exists("/controller"):
            return None
        data, _ = self.zk.get("/controller")
        return int(json.loads(data)["brokerid"])

    def controller(self) -> int:
        return wait_until(
            lambda: (c := self.controller_or_none()) is not None and (c,),
            15,
            "a controller in /controller",
        )[0]

    def controller_epoch(self) -> int:
        data, _ = self.zk.get("/controller_epoch")
        return int(data.decode().strip())

    def partition_state(self, topic: str, partition: int) -> dict[str, Any] | None:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        if not self.zk.exists(path):
            return None
        data, stat = self.zk.get(path)
        state: dict[str, Any] = json.loads(data)
        state["zk_version"] = stat.version
        return state

    def topic_assignment(self, topic: str) -> dict[int, list[int]]:
        data, _ = self.zk.get(f"/brokers/topics/{topic}")
        return {int(p): list(r) for p, r in json.loads(data)["partitions"].items()}

    def leader(self, topic: str, partition: int) -> int:
        """The current leader from ZooKeeper (waits up to 15 s for one: not -1)."""
        state = wait_until(
            lambda: (s := self.partition_state(topic, partition)) and s["leader"] >= 0 and s,
            15,
            f"a leader of {topic}-{partition}",
        )
        return int(state["leader"])

    def isr(self, topic: str, partition: int) -> list[int]:
        state = self.partition_state(topic, partition)
        assert state is not None, f"no state znode for {topic}-{partition}"
        return list(state["isr"])

    # -- waits ----------------------------------------------------------------------------
    def wait_registered(self, ids: Iterable[int], timeout: float = 30.0) -> None:
        want = set(ids)
        wait_until(
            lambda: want <= self.registered(),
            timeout,
            f"brokers {sorted(want)} registered in /brokers/ids",
            detail=lambda: f"registered: {sorted(self.registered())}; running: {self.live()}",
        )

    def wait_metadata_brokers(self, timeout: float = 30.0) -> None:
        """Every running broker's Metadata lists every running broker and the controller (a
        broker's view trails ZooKeeper a little; CreateTopics with replication factor N at a
        broker that sees fewer than N fails)."""
        want = set(self.live())

        def views() -> dict[int, tuple[list[int], int]]:
            out = {}
            for i in self.live():
                meta = _wire.metadata(self.address(i), [])
                out[i] = (sorted(b.node_id for b in meta.brokers), meta.controller_id)
            return out

        wait_until(
            lambda: all(set(ids) == want and c >= 0 for ids, c in views().values()),
            timeout,
            f"every broker's Metadata to list brokers {sorted(want)} and a controller",
            detail=lambda: f"(brokers, controller) per broker: {views()}",
        )

    def wait_unregistered(self, node_id: int, timeout: float = 30.0) -> None:
        wait_until(
            lambda: node_id not in self.registered(),
            timeout,
            f"broker {node_id}'s /brokers/ids znode gone (ZooKeeper session expiry)",
        )

    def wait_topic(
        self,
        topic: str,
        partitions: int,
        *,
        replicas: int | None = None,
        timeout: float = 30.0,
    ) -> None:
        """Every partition has a leader and a full ISR in ZooKeeper, and every live broker's
        Metadata shows that leader."""
        rf = replicas if replicas is not None else len(self.brokers)

        def ready() -> bool:
            for p in range(partitions):
                s = self.partition_state(topic, p)
                if s is None or s["leader"] < 0 or len(s["isr"]) < rf:
                    return False
            for i in self.live():
                view = _wire.partition_view(self.address(i), topic)
                if len(view) < partitions:
                    return False
                for p in range(partitions):
                    s = self.partition_state(topic, p)
                    assert s is not None
                    if view[p]["leader"] != s["leader"]:
                        return False
            return True

        def detail() -> str:
            states = {p: self.partition_state(topic, p) for p in range(partitions)}
            views: dict[int, object] = {}
            for i in self.live():
                try:
                    views[i] = {
                        p: v["leader"]
                        for p, v in _wire.partition_view(self.address(i), topic).items()
                    }
                except Exception as exc:
                    views[i] = repr(exc)
            return f"state znodes: {states}; leaders in each broker's Metadata: {views}"

        wait_until(
            ready,
            timeout,
            f"{topic}: {partitions} partitions led with {rf} in-sync replicas",
            detail=detail,
        )

    def wait_leader_moved(
        self, topic: str, partition: int, old: int, timeout: float = 30.0
    ) -> dict[str, Any]:
        """The state znode names a leader other than `old` (and not -1); returns the state."""
        return wait_until(
            lambda: (
                (s := self.partition_state(topic, partition)) and s["leader"] not in (old, -1) and s
            ),
            timeout,
            f"a new leader of {topic}-{partition} (was broker {old})",
            detail=lambda: f"registered brokers: {sorted(self.registered())}",
        )

    def wait_isr(
        self,
        topic: str,
        partition: int,
        predicate: Callable[[list[int]], bool],
        what: str,
        timeout: float = 30.0,
    ) -> list[int]:
        state = wait_until(
            lambda: (s := self.partition_state(topic, partition)) and predicate(s["isr"]) and s,
            timeout,
            f"ISR of {topic}-{partition}: {what}",
        )
        return list(state["isr"])

    def wait_full_isr(self, topic: str, partitions: int, timeout: float = 30.0) -> None:
        n = len(self.brokers)
        for p in range(partitions):
            self.wait_isr(topic, p, lambda isr: len(isr) == n, f"all {n} replicas", timeout)

    # -- admin ----------------------------------------------------------------------------
    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int = 3,
        configs: Mapping[str, str] | None = None,
        *,
        timeout: float = 30.0,
    ) -> None:
        """CreateTopics at the controller, then `wait_topic` (leaders, full ISR, metadata)."""
        address = self.address(self.controller())
        code, message = _wire.create_topic(address, topic, partitions, replication_factor, configs)
        assert code == 0, f"CreateTopics {topic} at {address}: error {code} {message}"
        self.wait_topic(topic, partitions, replicas=replication_factor, timeout=timeout)

    def high_watermark(self, topic: str, partition: int) -> int:
        """ListOffsets(latest) at the current leader (retried while leadership moves)."""

        def ask() -> tuple[int] | None:
            leader = self.leader(topic, partition)
            code, offset = _wire.list_offset(self.address(leader), topic, partition)
            return (offset,) if code == 0 else None

        return wait_until(ask, 15, f"the high watermark of {topic}-{partition}")[0]

    def checkpointed_hw(self, node_id: int, topic: str, partition: int) -> int | None:
        """The broker's replication-offset-checkpoint entry (text: 0, count, `t p hw` lines)."""
        path = self.brokers[node_id].data_dir / "replication-offset-checkpoint"
        if not path.exists():
            return None
        for line in path.read_text().splitlines()[2:]:
            t, p, hw = line.rsplit(" ", 2)
            if t == topic and int(p) == partition:
                return int(hw)
        return None

    # -- faults ---------------------------------------------------------------------------
    def kill9(self, node_id: int) -> None:
        self.brokers[node_id].kill9()

    def sigstop(self, node_id: int) -> None:
        self.brokers[node_id].send_signal(signal.SIGSTOP)

    def sigcont(self, node_id: int) -> None:
        self.brokers[node_id].send_signal(signal.SIGCONT)

    def sigterm(self, node_id: int) -> None:
        """SIGTERM (controlled shutdown) without waiting; see `wait_exit`."""
        self.brokers[node_id].send_signal(signal.SIGTERM)

    def wait_exit(self, node_id: int, timeout: float = 30.0) -> int:
        return self.brokers[node_id].wait_exit(timeout)

    def restart(self, node_id: int) -> str:
        """Start broker `node_id` again on its data dir and its old port (clients bootstrapped
        from the old address find it there); waits for its ready line and registration."""
        broker = self.brokers[node_id]
        port = broker.port
        if broker.is_running():
            broker.stop()
        address = broker.start(port)
        self.wait_registered([node_id])
        return address

    # -- data -----------------------------------------------------------------------------
    def partition_dir(self, node_id: int, topic: str, partition: int) -> Path:
        return self.brokers[node_id].data_dir / f"{topic}-{partition}"

    def assert_replicas_equal(
        self,
        topic: str,
        partition: int,
        replicas: Iterable[int] | None = None,
        *,
        hw: int | None = None,
    ) -> int:
        """Every replica (default: the ISR in ZooKeeper) holds the same bytes below the high
        watermark (default: ListOffsets at the leader), in batches that cover offsets 0..HW-1
        without a gap. Returns the high watermark."""
        ids = list(replicas) if replicas is not None else self.isr(topic, partition)
        mark = self.high_watermark(topic, partition) if hw is None else hw
        logs = {i: segment_batches(self.partition_dir(i, topic, partition), mark) for i in ids}
        for i, batches in logs.items():
            expect = 0
            for base, last, _ in batches:
                assert base == expect, (
                    f"{topic}-{partition} on broker {i}: batch at offset {base}, expected "
                    f"{expect} (a gap or an overlap below the high watermark {mark})"
                )
                expect = last + 1
            assert expect == mark, (
                f"{topic}-{partition} on broker {i}: its log covers offsets up to {expect}, "
                f"short of the high watermark {mark}"
            )
        first = ids[0]
        reference = {base: data for base, _, data in logs[first]}
        for i in ids[1:]:
            for base, _, data in logs[i]:
                if reference.get(base) != data:
                    raise AssertionError(
                        f"{topic}-{partition}: replicas on brokers {first} and {i} differ below "
                        f"the high watermark {mark}: the batch at offset {base} is not the "
                        f"same bytes ({len(reference.get(base) or b'')} vs {len(data)} bytes)"
                    )
        return mark
