"""A 3-broker cluster on a 3-server ZooKeeper ensemble survives the loss of one ZooKeeper server.

Set-up: `ZooKeeperEnsemble(3)` (coordination/zk_server.py: three quorum peers on loopback) and
three `wirebroker serve --zookeeper H1:P1,H2:P2,H3:P3/CHROOT --node-id I` processes
(`_broker.BrokerProcess`); a topic with replication factor 3 and min.insync.replicas=2; every
write is acks=all (the oracle, `compat.scenarios.wire.Wire`, which finds partition leaders by
itself and retries while leadership moves).

test_cluster_rides_out_zookeeper_server_failures, in order:
  1. produce and read back (baseline); note each broker's registration czxid (broker epoch)
  2. SIGKILL a ZooKeeper follower: the two others keep a quorum; produce/consume go on, and
     no broker lost its session (same /brokers/ids czxids: kazoo moved to a live server
     within the session timeout); the follower is restarted (rejoins the quorum)
  3. SIGKILL the ZooKeeper leader: the two followers elect a new leader; produce/consume go
     on, sessions kept again
  4. with the old ZooKeeper leader still dead, SIGKILL the partition's leader broker: its
     session expires on the surviving quorum, the controller (a new one if the killed broker
     was it, with a higher /controller_epoch) elects a new partition leader from the ISR,
     acks=all with min.insync.replicas=2 works on the two brokers left, and every record
     acknowledged since the start is there, in order, once.

test_cluster_command_with_an_ensemble: `wirebroker cluster --brokers 3 --zookeeper-servers 3`
prints a connect string naming three servers, which serve as one leader and two followers;
the brokers all register; SIGINT stops everything (exit 0, the ZooKeeper ports closed).

Real processes: waits are bounded polls (`wait_until`), no fixed sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from _broker import REPO_ROOT, BrokerProcess
from kazoo.client import KazooClient
from zk_fixtures import require_zookeeper

from compat.scenarios.wire import Wire
from protocol.records import RecordSpec
from wirebroker.coordination.zk_server import ZooKeeperEnsemble, server_mode

pytestmark = pytest.mark.slow

T = TypeVar("T")
CHROOT = "/ensemble-test"
TOPIC = "ensemble"
OVERRIDES = {
    "zookeeper.session.timeout.ms": "6000",  # room to move to another ZooKeeper server
    "replica.lag.time.max.ms": "5000",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "auto.create.topics.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
}


def wait_until(what: str, predicate: Callable[[], T], timeout: float = 30.0) -> T:
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = predicate()
        except Exception as exc:  # a broker or ZooKeeper server briefly unreachable
            last = exc
        else:
            if value:
                return value
            last = value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; last {last!r}")
        time.sleep(0.05)


class Cluster:
    """The ensemble, the brokers, a kazoo reader on the chroot, and the records acknowledged."""

    def __init__(self, ensemble: ZooKeeperEnsemble, tmp_path: Path) -> None:
        self.ensemble = ensemble
        self.connect = ensemble.connect_string + CHROOT
        self.brokers = [
            BrokerProcess(
                tmp_path / f"broker-{i}",
                log_path=tmp_path / f"broker-{i}.log",
                overrides=OVERRIDES,
                ready_timeout=60,
                extra_args=["--zookeeper", self.connect, "--node-id", str(i)],
            )
            for i in range(3)
        ]
        self.zk = KazooClient(hosts=self.connect, timeout=10.0)
        self.acked: list[bytes] = []
        self._batch = 0

    def start(self) -> None:
        for broker in self.brokers:
            broker.spawn()
        for broker in self.brokers:
            broker.wait_ready()
        self.zk.start(timeout=15)
        wait_until("3 brokers registered and a controller", self.whole)

    def close(self) -> None:
        for broker in self.brokers:
            broker.close()
        try:
            self.zk.stop()
            self.zk.close()
        except Exception:  # pragma: no cover - best effort at teardown
            pass

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers if b.is_running())

    def wire(self) -> Wire:
        return Wire(self.bootstrap, replication_factor=3, retry_s=45.0)

    # -- ZooKeeper reads (the kazoo client follows the quorum too) ------------------------
    def registered(self) -> dict[int, int]:
        """{broker id: czxid of its /brokers/ids znode} (the broker epoch)."""
        out = {}
        for child in self.zk.get_children("/brokers/ids"):
            _data, stat = self.zk.get(f"/brokers/ids/{child}")
            out[int(child)] = stat.czxid
        return out

    def controller(self) -> int | None:
        if not self.zk.exists("/controller"):
            return None
        return int(json.loads(self.zk.get("/controller")[0])["brokerid"])

    def controller_epoch(self) -> int:
        return int(self.zk.get("/controller_epoch")[0])

    def whole(self) -> bool:
        live = {i for i, b in enumerate(self.brokers) if b.is_running()}
        return set(self.registered()) == live and self.controller() in live

    def zk_modes(self) -> list[str | None]:
        return [
            self.ensemble.mode(i) if self.ensemble.members[i].running() else None for i in range(3)
        ]

    # -- data ------------------------------------------------------------------------------
    def produce_batch(self) -> None:
        """One acks=all batch of 10 records to partition 0 (retried while leadership moves)."""
        self._batch += 1
        values = [f"b{self._batch}-{i}".encode() for i in range(10)]
        with self.wire() as w:
            w.produce(TOPIC, 0, [RecordSpec(None, v) for v in values])
        self.acked += values

    def check_all_readable(self) -> None:
        with self.wire() as w:
            stored = [r.value for r in w.read(TOPIC, 0)]
        assert stored == self.acked, (
            f"{len(stored)} records stored, {len(self.acked)} acknowledged; "
            f"missing {[v for v in self.acked if v not in stored][:3]}"
        )

    def log_text(self) -> str:
        return "\n".join(b.log_text() for b in self.brokers) + "\n" + self.ensemble.log_tail(20)


def test_cluster_rides_out_zookeeper_server_failures(tmp_path: Path) -> None:
    require_zookeeper()
    with ZooKeeperEnsemble(3) as ensemble:
        cluster = Cluster(ensemble, tmp_path)
        try:
            _scenario(cluster)
        except BaseException:
            print(cluster.log_text())  # shown with the failure
            raise
        finally:
            cluster.close()


def _scenario(cluster: Cluster) -> None:
    ensemble = cluster.ensemble
    cluster.start()
    with cluster.wire() as w:
        w.create_topic(TOPIC, 1, {"min.insync.replicas": "2"})
    cluster.produce_batch()
    cluster.check_all_readable()
    epochs = cluster.registered()
    assert sorted(epochs) == [0, 1, 2]

    # 1. a ZooKeeper follower dies: the quorum (2 of 3) goes on, no broker session is lost
    modes = cluster.zk_modes()
    assert sorted(m or "" for m in modes) == ["follower", "follower", "leader"], modes
    follower = modes.index("follower")
    ensemble.kill(follower)
    cluster.produce_batch()
    cluster.check_all_readable()
    with cluster.wire() as w:
        view = w.partitions(TOPIC)[0]
    assert sorted(view.isr) == [0, 1, 2], f"ISR {view.isr} after a ZooKeeper follower died"
    assert cluster.registered() == epochs, "a broker re-registered: its session was lost"
    ensemble.restart(follower)
    wait_until(
        "the restarted follower back in the quorum",
        lambda: sorted(m or "" for m in cluster.zk_modes()) == ["follower", "follower", "leader"],
    )

    # 2. the ZooKeeper leader dies: the followers elect a new one; the brokers keep serving
    zk_leader = cluster.zk_modes().index("leader")
    ensemble.kill(zk_leader)
    wait_until(
        "a new ZooKeeper leader among the two survivors",
        lambda: sorted(m or "" for m in cluster.zk_modes()) == ["", "follower", "leader"],
    )
    cluster.produce_batch()
    cluster.check_all_readable()
    assert wait_until("the brokers' sessions on the new quorum", cluster.whole)
    assert cluster.registered() == epochs, "a broker re-registered: its session was lost"

    # 3. with the old ZooKeeper leader still dead, kill -9 the partition's leader broker
    with cluster.wire() as w:
        old = w.leader(TOPIC, 0)
    controller_before = cluster.controller()
    epoch_before = cluster.controller_epoch()
    cluster.brokers[old].kill9()
    wait_until(
        f"broker {old}'s session to expire on the surviving quorum",
        lambda: old not in cluster.registered(),
        timeout=30,
    )

    def new_leader() -> tuple[int] | None:
        with cluster.wire() as w:
            leader = w.leader(TOPIC, 0)
        return (leader,) if leader not in (old, -1) else None

    (leader,) = wait_until(f"a new leader of {TOPIC}-0 (was broker {old})", new_leader)
    assert wait_until("a live controller", cluster.whole)
    if controller_before == old:
        assert cluster.controller_epoch() > epoch_before, "a new controller, same epoch"
    with cluster.wire() as w:
        isr = w.partitions(TOPIC)[0].isr
    assert old not in isr and leader in isr, f"ISR {isr} after broker {old} died"
    cluster.produce_batch()
    cluster.check_all_readable()


def _free_port_closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_cluster_command_with_an_ensemble(tmp_path: Path) -> None:
    require_zookeeper()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "wirebroker", "cluster", "--brokers", "3"]
    cmd += ["--zookeeper-servers", "3", "--data-dir", str(tmp_path / "data")]
    err_path = tmp_path / "launcher.err"
    with (
        err_path.open("w") as err,
        subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        ) as proc,
    ):
        try:
            _check_launcher(proc, err_path)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _check_launcher(proc: subprocess.Popen[str], err_path: Path) -> None:
    assert proc.stdout is not None
    ready = ""
    for line in proc.stdout:  # bounded by the launcher's own --ready-timeout (60 s)
        if line.startswith("wirebroker cluster ready: "):
            ready = line
            break
    assert ready, f"the launcher exited ({proc.wait(10)}): {err_path.read_text()}"
    words = ready.split()
    bootstrap, zookeeper = words[4], words[6]
    servers = zookeeper.split(",")
    assert len(servers) == 3, f"zookeeper {zookeeper!r}"
    ports = [int(s.rpartition(":")[2]) for s in servers]
    modes = sorted(server_mode(p) or "" for p in ports)
    assert modes == ["follower", "follower", "leader"], modes
    with Wire(bootstrap) as w:
        assert sorted(w.brokers()) == [0, 1, 2]
        assert w.controller() in (0, 1, 2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 0, err_path.read_text()
    assert "ZooKeeper ensemble on" in err_path.read_text()
    wait_until("the ensemble's ports closed", lambda: all(map(_free_port_closed, ports)), 15)
