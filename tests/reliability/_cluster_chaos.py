"""Cluster chaos: a 3-ZooKeeper, 3-broker cluster under load, seeded faults, and a checker.

The multi-broker counterpart of `_chaos.py` (one broker, kill -9): the same workload shapes
and the same checker (`_chaos.ChaosReport`, `check_log`, `check_reads`, `check_commits`), over
`tests/cluster/_cluster.py`'s `ClusterProcesses` (broker processes) on a
`ZooKeeperEnsemble(3)` (so one ZooKeeper server can die), with a cuttable TCP proxy in front
of every broker (`_tcp_proxy.py`: brokers advertise the proxy, so clients and followers go
through it).

Cluster: brokers 0..2, `HARNESS_CONFIG` (session timeout 3 s, replica.lag.time.max.ms 2 s,
min.insync.replicas 2, unclean election off); topic `chaos`, 3 partitions, RF 3.

Workload (all through the proxies):
    idem-all    confluent-kafka, enable.idempotence, acks=all (`_chaos.ProducerThread`)
    plain-1     confluent-kafka, acks=1, retries 0 (its losses are `weak_lost`: allowed)
    plain consumer  `_streams.ConfluentConsumerStream` (assign, from the beginning): every
                record read, with its offset and time
    group       `_chaos.Group`: two librdkafka member processes committing after every batch
    monitor     a thread polling, every 250 ms, /controller_epoch and every partition state
                znode (leader_epoch), and Metadata at every running, unpaused broker (its
                leader_epoch per partition); any value lower than one seen before by the same
                observer (ZooKeeper, or a broker since its last start) is an epoch regression.

Schedule: `random.Random(seed)` draws, for fault k, the kind (from `kinds`, cycled in a
shuffled order so that a short mix covers every kind), the gap before it (`uniform(min_gap,
max_gap)` s of load) and the victim's choice and hold times; so one integer replays the
schedule (what the cluster does in between, and so which broker leads, is not replayed).
Faults are sequential: after each one the harness heals (restart, SIGCONT, un-cut) and waits
for every broker registered, every broker's Metadata converged and a full ISR on every
partition (`heal_timeout`; a fault not healed in time is a violation, `not_healed`).

Fault kinds (the victim is chosen when the fault fires, from ZooKeeper's view):
    kill_leader      kill -9 of the leader of a random partition; wait for its session to
                     expire (its /brokers/ids znode gone), restart it on its port
    kill_follower    kill -9 of a follower of a random partition (ISR shrink timed)
    kill_controller  kill -9 of the broker in /controller
    zombie           SIGSTOP the leader of a random partition until its session expired and
                     a new leader was elected, plus 1 s of load on the new leader; SIGCONT
    sigterm          SIGTERM (controlled shutdown) of a leader; restart when it exited
    rolling          `rolling_restarts` times: SIGTERM the leader of partition 0 (following
                     leadership), restart, wait for a full ISR
    session_expiry   SIGSTOP a random broker for session timeout + 0.6 s, SIGCONT: ZooKeeper
                     expires its session (the broker re-registers). How: SIGSTOP, because the
                     session id and password live inside the broker process and nothing
                     exposes them (stealing the session with kazoo, as tests/zk_fixtures.py's
                     expire_session does, needs them); the difference with `zombie` is the
                     victim (any broker) and the hold (just past the timeout).
    partition        cut one random broker off from clients and its peers (not from
                     ZooKeeper) for uniform(1.5, 2.5) x replica.lag.time.max.ms; heal
    zk_death         kill -9 one ZooKeeper server of the ensemble for uniform(1, 3) s; restart
    disk_full        a follower of a random partition runs out of disk for uniform(1.5, 2) x
                     replica.lag.time.max.ms: every write through its storage seam fails with
                     ENOSPC (every broker runs under tests/reliability/quota_broker.py with its
                     own quota file, unlimited until this fault sets it to 0). Its follower
                     appends fail (KAFKA_STORAGE_ERROR, counted in its log), it drops out of
                     the ISR of what it follows (timed, as kill_follower), and it keeps
                     leading what it led, refusing writes there with KAFKA_STORAGE_ERROR
                     (wirebroker does not take a log dir offline on ENOSPC; Kafka would, and
                     with its only log dir offline would halt the broker). Then the space is
                     freed and the broker restarted (SIGTERM, start), as an operator would
The ISR checks: for kill_follower, partition and session_expiry of a follower, the time from
the fault to the victim leaving the ISR of a partition it follows (must be <= 1.5 x
replica.lag.time.max.ms + ISR_SLACK_S measurement slack: the leader checks lag every half
lag time, as Kafka's isr-expiration task does, then a ZooKeeper write and the harness's 50 ms
poll), and the time from the heal to a full ISR again.

Unavailability per fault (`FaultRecord`): for the partitions the fault touched (led by the
victim; for a follower fault, those it was in the ISR of; ZooKeeper death: all), the largest
over them of (first acks=all acknowledgement of a record *sent* after the fault) - fault time,
and of (first record sent after the fault read by the plain consumer) - fault time.

After the last fault: load for one more gap, producers flush, the group drains and leaves,
every partition's replicas are compared byte for byte below the smallest high watermark in
their replication-offset-checkpoint files (`_cluster.segment_batches`, the same log batch
reader as tools/dump_log.py), then every partition is read back from offset 0 and checked:
`check_log` (lost, misplaced, duplicates, reorders, gaps; plain-1 losses apart),
`check_reads` (every offset a consumer read holds the same record in the read-back: the
group's and the plain consumer's reads), `check_commits` (acknowledged commits never go back).

Secured (`security="SASL_SSL"`, `cluster_chaos.py --security SASL_SSL`): every broker gets
two listeners, INTERNAL (PLAINTEXT, first: the one `--port` and the ready line name, and the
harness's own `_wire` probes use) and SASL_SSL on a port fixed across restarts, behind the
proxy, advertised as the proxy, and the inter-broker listener (follower fetches, controller
requests, markers); settings from `wirebroker.testing._security.secured` (a throwaway CA in
the work dir, SCRAM-SHA-256 between brokers, user alice). Every librdkafka client of the
workload (producers, the plain consumer, the group's member processes, the read-back) gets
security.protocol=SASL_SSL, the CA and SCRAM-SHA-256 through `_client_env` (the environment,
so child processes too).
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent / "cluster"), str(_HERE.parent / "integration")]

import _chaos  # noqa: E402
import _wire  # noqa: E402
from _chaos import PARTITIONS, TOPIC, ChaosReport  # noqa: E402
from _client_env import ENV as CLIENT_ENV  # noqa: E402
from _cluster import ClusterProcesses, segment_batches, wait_until  # noqa: E402
from _streams import ConfluentConsumerStream  # noqa: E402
from _tcp_proxy import ProxySet  # noqa: E402

from wirebroker.coordination.zk_server import ZooKeeperEnsemble  # noqa: E402
from wirebroker.testing._security import secured  # noqa: E402

SESSION_MS = 3000
LAG_MS = 2000
ISR_SLACK_S = 0.5

HARNESS_CONFIG: dict[str, str] = {
    "zookeeper.session.timeout.ms": str(SESSION_MS),
    "replica.lag.time.max.ms": str(LAG_MS),
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "auto.create.topics.enable": "false",
}

KINDS = (
    "kill_leader",
    "kill_follower",
    "kill_controller",
    "zombie",
    "sigterm",
    "rolling",
    "session_expiry",
    "partition",
    "zk_death",
    "disk_full",
)
WEAK = ("plain-1",)


@dataclass
class FaultRecord:
    kind: str
    victim: int
    at: float
    affected: list[int]
    healed_at: float = 0.0
    isr_shrink_s: float | None = None
    isr_regrow_s: float | None = None
    produce_unavail_s: float | None = None
    consume_unavail_s: float | None = None
    note: str = ""


@dataclass
class ClusterChaosReport:
    check: ChaosReport
    faults: list[FaultRecord] = field(default_factory=list)
    isr_slow: int = 0
    #: fault kind -> acks=all records lost / duplicated, each charged to the first fault
    #: after its acknowledgement (the one that could have destroyed or re-sent it)
    lost_by_kind: dict[str, int] = field(default_factory=dict)
    dups_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.check.ok and not self.isr_slow

    def by_kind(self) -> dict[str, list[FaultRecord]]:
        out: dict[str, list[FaultRecord]] = {}
        for f in self.faults:
            out.setdefault(f.kind, []).append(f)
        return out


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


class EpochMonitor(threading.Thread):
    """Polls the epochs (see the module doc) until stopped; counts regressions."""

    def __init__(self, harness: ChaosCluster, report: ChaosReport) -> None:
        super().__init__(name="epoch-monitor", daemon=True)
        self.h, self.report = harness, report
        self.stopping = threading.Event()
        self.high: dict[tuple[Any, ...], int] = {}

    def _see(self, key: tuple[Any, ...], value: int) -> None:
        self.report.epoch_samples += 1
        before = self.high.get(key, -1)
        if value < before:
            self.report.epoch_regressions += 1
            self.report.examples.append(f"epoch regression {key}: {value} after {before}")
        self.high[key] = max(before, value)

    def poll_once(self) -> None:
        c = self.h.cluster
        try:
            self._see(("zk", "controller_epoch"), c.controller_epoch())
            for p in range(self.h.partitions):
                s = c.partition_state(self.h.topic, p)
                if s is not None:
                    self._see(("zk", p), int(s["leader_epoch"]))
        except Exception:  # a ZooKeeper server down: next round
            pass
        for i in list(self.h.running_unpaused()):
            starts = c.brokers[i].starts
            try:
                resp = _wire.request(
                    c.address(i),
                    _wire.METADATA,
                    12,
                    {"topics": [{"name": self.h.topic}], "allow_auto_topic_creation": False},
                    timeout=1.0,
                )
            except Exception:
                continue
            for t in resp.topics:
                for part in t.partitions:
                    if part.error_code == 0 and part.leader_epoch >= 0:
                        self._see((i, starts, part.partition_index), int(part.leader_epoch))

    def run(self) -> None:
        while not self.stopping.wait(0.25):
            self.poll_once()


class ChaosCluster:
    """ZooKeeper ensemble + proxies + brokers + workload; `run_fault(kind)` injects one."""

    def __init__(
        self,
        workdir: Path,
        rng: random.Random,
        *,
        config: dict[str, str] | None = None,
        topic: str = TOPIC,
        partitions: int = PARTITIONS,
        log: Callable[[str], None] = lambda _line: None,
        rolling_restarts: int = 5,
        heal_timeout: float = 40.0,
        security: str | None = None,
    ) -> None:
        self.workdir, self.rng, self.log = workdir, rng, log
        #: SASL_SSL: clients and peers on a SASL_SSL listener (SCRAM-SHA-256), module doc
        self.security = security
        #: broker -> the port of its SASL_SSL listener (fixed across restarts), when secured
        self.secure_ports: dict[int, int] = {}
        self.topic, self.partitions = topic, partitions
        self.rolling_restarts = rolling_restarts
        self.heal_timeout = heal_timeout
        self.config = dict(HARNESS_CONFIG)
        self.config.update(config or {})
        self.session_s = int(self.config["zookeeper.session.timeout.ms"]) / 1000
        self.lag_s = int(self.config["replica.lag.time.max.ms"]) / 1000
        self.paused: set[int] = set()
        #: broker -> its quota_broker.py byte-quota file (the disk_full fault)
        self.quota_files: dict[int, Path] = {}
        self.ensemble = ZooKeeperEnsemble(3)
        self.proxies = ProxySet()
        self.cluster: ClusterProcesses

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self.ensemble.start()
        config = self.config | (self._secure() if self.security else {})
        self.cluster = ClusterProcesses(
            self.ensemble.connect_string, self.workdir, brokers=3, base_overrides=config
        )
        for i, broker in enumerate(self.cluster.brokers):
            proxy = self.proxies.add(i)
            if self.security:
                self.secure_ports[i] = _free_port()
                broker.overrides["listeners"] = (
                    f"INTERNAL://127.0.0.1:0,{self.security}://127.0.0.1:{self.secure_ports[i]}"
                )
                broker.overrides["advertised.listeners"] = (
                    f"{self.security}://127.0.0.1:{proxy.port}"
                )
            else:
                broker.overrides["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{proxy.port}"
            self.quota_files[i] = self.workdir / f"quota-{i}"
            self._set_quota(i, UNLIMITED)
            _under_quota(broker, self.quota_files[i])
        self.cluster.connect_zookeeper()
        for broker in self.cluster.brokers:
            broker.spawn()
        for i, broker in enumerate(self.cluster.brokers):
            broker.wait_ready()
            self._track(i)
        self.cluster.wait_registered(range(3))
        self.cluster.controller()
        self.cluster.wait_metadata_brokers()

    def _secure(self) -> dict[str, str]:
        """The brokers' settings for `security` (a throwaway CA, SCRAM users), and every
        librdkafka client's, through the environment (`_client_env`, child processes too).
        The harness's own requests (`_wire`) use the INTERNAL PLAINTEXT listener, first so
        that it is the one `--port` and the ready line name."""
        settings = secured(self.security or "", "SCRAM-SHA-256", self.workdir / "tls", "", 0)
        client = settings.client_config("")
        del client["bootstrap.servers"]
        os.environ[CLIENT_ENV] = json.dumps(client)
        return settings.overrides

    def _track(self, i: int) -> None:
        broker = self.cluster.brokers[i]
        port = self.secure_ports.get(i, broker.port)  # what clients and peers reach
        self.proxies.proxies[i].target = ("127.0.0.1", port)
        if broker.pid is not None:
            self.proxies.owner_pids[i] = broker.pid

    @property
    def bootstrap(self) -> str:
        return ",".join(p.address for p in self.proxies.proxies.values())

    def create_topic(self, configs: dict[str, str] | None = None) -> None:
        self.cluster.create_topic(self.topic, self.partitions, 3, configs)

    def close(self) -> None:
        try:
            for i in list(self.paused):
                self.cluster.sigcont(i)
            self.cluster.close()
        finally:
            os.environ.pop(CLIENT_ENV, None)
            self.proxies.close()
            self.ensemble.stop()

    def running_unpaused(self) -> list[int]:
        return [i for i in self.cluster.live() if i not in self.paused]

    # -- views ----------------------------------------------------------------------------
    def states(self) -> dict[int, dict[str, Any]]:
        out = {}
        for p in range(self.partitions):
            s = self.cluster.partition_state(self.topic, p)
            if s is not None:
                out[p] = s
        return out

    def led_by(self, node: int) -> list[int]:
        return [p for p, s in self.states().items() if s["leader"] == node]

    def in_isr_of(self, node: int) -> list[int]:
        return [p for p, s in self.states().items() if node in s["isr"]]

    def followed_by(self, node: int) -> list[int]:
        return [p for p, s in self.states().items() if node in s["isr"] and s["leader"] != node]

    def random_leader(self) -> tuple[int, int]:
        p = self.rng.randrange(self.partitions)
        return self.cluster.leader(self.topic, p), p

    # -- healing --------------------------------------------------------------------------
    def restart(self, i: int) -> None:
        """Start broker i again on its port once its old session is gone (a kill -9 leaves
        the ephemeral registration until the session expires; the broker would wait for it)."""
        self.cluster.wait_unregistered(i, timeout=self.session_s * 3 + 5)
        self.cluster.brokers[i].start(self.cluster.brokers[i].port)
        self._track(i)

    def heal_wait(self, fault: FaultRecord) -> None:
        """Every broker registered, Metadata converged, a full ISR everywhere (bounded)."""
        deadline = time.monotonic() + self.heal_timeout
        try:
            self.cluster.wait_registered(range(3), timeout=self.heal_timeout)
            left = max(1.0, deadline - time.monotonic())
            self.cluster.wait_full_isr(self.topic, self.partitions, timeout=left)
            left = max(1.0, deadline - time.monotonic())
            self.cluster.wait_metadata_brokers(timeout=left)
        except AssertionError as exc:
            fault.note += f" NOT HEALED: {exc}"
            raise

    def wait_isr_without(self, node: int, partitions: list[int], since: float) -> float | None:
        """Seconds from `since` until `node` left the ISR of one of `partitions` (None: no
        partition to watch or not within 4 x lag)."""
        if not partitions:
            return None
        try:
            wait_until(
                lambda: any(
                    node not in (self.cluster.partition_state(self.topic, p) or {"isr": []})["isr"]
                    for p in partitions
                ),
                self.lag_s * 4 + self.session_s,
                f"broker {node} out of the ISR of one of {partitions}",
            )
        except AssertionError:
            return None
        return time.monotonic() - since

    # -- faults ---------------------------------------------------------------------------
    def run_fault(self, kind: str) -> FaultRecord:
        leaders = {p: s["leader"] for p, s in self.states().items()}
        fault: FaultRecord = getattr(self, f"_fault_{kind}")()
        fault.note = f"leaders before {leaders} {fault.note}".strip()
        fault.healed_at = time.monotonic()
        self.heal_wait(fault)
        if fault.isr_regrow_s is None and fault.healed_at:
            fault.isr_regrow_s = time.monotonic() - fault.healed_at
        return fault

    def _kill_and_restart(self, kind: str, victim: int, affected: list[int]) -> FaultRecord:
        fault = FaultRecord(kind, victim, 0.0, affected)
        fault.at = time.monotonic()
        self.cluster.kill9(victim)
        if kind == "kill_follower":
            fault.isr_shrink_s = self.wait_isr_without(victim, affected, fault.at)
        time.sleep(self.rng.uniform(0.0, 0.5))
        self.restart(victim)
        return fault

    def _fault_kill_leader(self) -> FaultRecord:
        victim, _ = self.random_leader()
        return self._kill_and_restart("kill_leader", victim, self.led_by(victim))

    def _fault_kill_follower(self) -> FaultRecord:
        _, p = self.random_leader()
        state = self.cluster.partition_state(self.topic, p) or {"leader": -1, "isr": []}
        followers = [b for b in state["isr"] if b != state["leader"]] or [
            b for b in range(3) if b != state["leader"]
        ]
        victim = self.rng.choice(sorted(followers))
        return self._kill_and_restart("kill_follower", victim, self.followed_by(victim))

    def _fault_kill_controller(self) -> FaultRecord:
        victim = self.cluster.controller()
        return self._kill_and_restart("kill_controller", victim, self.led_by(victim))

    def _fault_zombie(self) -> FaultRecord:
        victim, p = self.random_leader()
        fault = FaultRecord("zombie", victim, 0.0, self.led_by(victim))
        fault.at = time.monotonic()
        self.cluster.sigstop(victim)
        self.paused.add(victim)
        try:
            self.cluster.wait_leader_moved(self.topic, p, victim, timeout=self.session_s * 4 + 10)
            time.sleep(1.0)
        finally:
            self.cluster.sigcont(victim)
            self.paused.discard(victim)
        return fault

    def _fault_sigterm(self) -> FaultRecord:
        victim, _ = self.random_leader()
        fault = FaultRecord("sigterm", victim, 0.0, self.led_by(victim))
        fault.at = time.monotonic()
        self.cluster.sigterm(victim)
        self.cluster.wait_exit(victim, timeout=30)
        self.restart(victim)
        return fault

    def _fault_rolling(self) -> FaultRecord:
        first = self.cluster.leader(self.topic, 0)
        fault = FaultRecord("rolling", first, time.monotonic(), [0])
        for n in range(self.rolling_restarts):
            victim = self.cluster.leader(self.topic, 0)
            self.cluster.sigterm(victim)
            self.cluster.wait_exit(victim, timeout=30)
            self.restart(victim)
            self.cluster.wait_full_isr(self.topic, self.partitions, timeout=self.heal_timeout)
            fault.note += f"{'' if n == 0 else ','}{victim}"
        fault.note = f"restarted {fault.note}"
        return fault

    def _fault_session_expiry(self) -> FaultRecord:
        victim = self.rng.randrange(3)
        fault = FaultRecord("session_expiry", victim, 0.0, self.in_isr_of(victim))
        followed = self.followed_by(victim)
        fault.at = time.monotonic()
        self.cluster.sigstop(victim)
        self.paused.add(victim)
        try:
            if followed:
                fault.isr_shrink_s = self.wait_isr_without(victim, followed, fault.at)
            time.sleep(max(0.0, fault.at + self.session_s + 0.6 - time.monotonic()))
        finally:
            self.cluster.sigcont(victim)
            self.paused.discard(victim)
        return fault

    def _fault_partition(self) -> FaultRecord:
        victim = self.rng.randrange(3)
        fault = FaultRecord("partition", victim, 0.0, self.in_isr_of(victim))
        followed = self.followed_by(victim)
        hold = self.rng.uniform(1.5, 2.5) * self.lag_s
        cut = self.proxies.isolate(victim)
        fault.at = time.monotonic()  # the cut is complete (finding the openers takes time)
        try:
            if followed:
                fault.isr_shrink_s = self.wait_isr_without(victim, followed, fault.at)
            time.sleep(max(0.0, fault.at + hold - time.monotonic()))
        finally:
            self.proxies.heal()
        fault.note = f"{cut} connections cut for {hold:.1f} s"
        return fault

    def _set_quota(self, i: int, quota: int) -> None:
        tmp = self.quota_files[i].with_suffix(".tmp")
        tmp.write_text(str(quota))
        tmp.replace(self.quota_files[i])

    def _fault_disk_full(self) -> FaultRecord:
        _, p = self.random_leader()
        state = self.cluster.partition_state(self.topic, p) or {"leader": -1, "isr": []}
        followers = [b for b in state["isr"] if b != state["leader"]] or [
            b for b in range(3) if b != state["leader"]
        ]
        victim = self.rng.choice(sorted(followers))
        fault = FaultRecord("disk_full", victim, 0.0, self.in_isr_of(victim))
        followed = self.followed_by(victim)
        hold = self.rng.uniform(1.5, 2.0) * self.lag_s
        before = self.cluster.brokers[victim].log_text().count(ENOSPC_MARK)
        fault.at = time.monotonic()
        self._set_quota(victim, 0)
        try:
            if followed:
                fault.isr_shrink_s = self.wait_isr_without(victim, followed, fault.at)
            time.sleep(max(0.0, fault.at + hold - time.monotonic()))
        finally:
            self._set_quota(victim, UNLIMITED)
        failed = self.cluster.brokers[victim].log_text().count(ENOSPC_MARK) - before
        fault.note = f"disk full for {hold:.1f} s, {failed} writes refused (ENOSPC in its log)"
        self.cluster.sigterm(victim)
        self.cluster.wait_exit(victim, timeout=30)
        self.restart(victim)
        return fault

    def _fault_zk_death(self) -> FaultRecord:
        victim = self.rng.randrange(3)
        fault = FaultRecord("zk_death", victim, 0.0, list(range(self.partitions)))
        fault.at = time.monotonic()
        self.ensemble.kill(victim)
        time.sleep(self.rng.uniform(1.0, 3.0))
        self.ensemble.restart(victim)
        return fault

    # -- checks after the run -------------------------------------------------------------
    def checkpointed_hw(self, i: int, p: int) -> int | None:
        return self.cluster.checkpointed_hw(i, self.topic, p)

    def compare_replicas(self, report: ChaosReport) -> None:
        """Byte comparison of every partition's replicas below the smallest checkpointed HW
        (the brokers checkpoint every 500 ms; wait until every replica's checkpoint reached the
        leader's high watermark, bounded, so that the comparison covers the whole log)."""
        for p in range(self.partitions):
            hw = self.cluster.high_watermark(self.topic, p)
            marks: dict[int, int | None] = {}

            def caught_up(p: int = p, hw: int = hw, marks: dict[int, int | None] = marks) -> bool:
                for i in range(3):
                    marks[i] = self.checkpointed_hw(i, p)
                return all((m or 0) >= hw for m in marks.values())

            try:
                wait_until(caught_up, 15, f"checkpointed HW of {self.topic}-{p} >= {hw}")
            except AssertionError:
                report.examples.append(f"p{p}: checkpoints {marks} below HW {hw}")
            low = min((m or 0) for m in marks.values())
            logs = {
                i: segment_batches(self.cluster.partition_dir(i, self.topic, p), low)
                for i in range(3)
            }
            ref = {base: data for base, _, data in logs[0]}
            for i in (1, 2):
                report.replicas_compared += 1
                mine = {base: data for base, _, data in logs[i]}
                if mine != ref:
                    report.divergent += 1
                    bad = sorted(b for b in set(ref) | set(mine) if ref.get(b) != mine.get(b))
                    report.examples.append(
                        f"p{p}: replicas 0 and {i} differ below checkpointed HW {low} "
                        f"(batches at {bad[:5]})"
                    )


UNLIMITED = 1 << 40
#: what quota_broker.py's refused writes put in the broker's log (with the failed append)
ENOSPC_MARK = "No space left on device (quota)"
_QUOTA_LAUNCHER = _HERE / "quota_broker.py"


def _free_port() -> int:
    """A port free now on loopback (the secured listener's, kept across restarts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _under_quota(broker: Any, quota_file: Path) -> None:
    """Run `broker` (a BrokerProcess) through quota_broker.py: its storage writes obey the
    byte quota in `quota_file` (re-read at every write)."""
    plain = broker.command

    def command(port: int = 0) -> list[str]:
        cmd = plain(port)
        assert cmd[1:3] == ["-m", "wirebroker"], cmd
        return [cmd[0], str(_QUOTA_LAUNCHER), str(quota_file), *cmd[3:]]

    broker.command = command


def _unavailability(
    faults: list[FaultRecord],
    sends: dict[str, tuple[int, float, float]],
    reads: list[tuple[int, float, str]],
) -> None:
    """Fill produce/consume unavailability of each fault (module doc)."""
    sent_at = {ident: t for ident, (_, t, _) in sends.items()}
    for f in faults:
        parts = f.affected or list(range(PARTITIONS))
        worst_p: float | None = 0.0
        worst_c: float | None = 0.0
        for p in parts:
            acks = [a for (q, s, a) in sends.values() if q == p and s >= f.at]
            first_ack = min(acks, default=None)
            gots = [at for (q, at, ident) in reads if q == p and sent_at.get(ident, -1) >= f.at]
            first_got = min(gots, default=None)
            worst_p = (
                None if first_ack is None or worst_p is None else max(worst_p, first_ack - f.at)
            )
            worst_c = (
                None if first_got is None or worst_c is None else max(worst_c, first_got - f.at)
            )
        f.produce_unavail_s = worst_p
        f.consume_unavail_s = worst_c


def _charge(
    faults: list[FaultRecord], ids: list[str], sends: dict[str, tuple[int, float, float]]
) -> dict[str, int]:
    out: dict[str, int] = {}
    for ident in ids:
        acked_at = sends.get(ident, (0, 0.0, 0.0))[2]
        kind = next((f.kind for f in faults if f.at >= acked_at), "after the last fault")
        out[kind] = out.get(kind, 0) + 1
    return out


def _check_commits(group: _chaos.Group, check: ChaosReport) -> None:
    """`check_commits` over the group's commits; the first regression comes with its
    partition's story (who was assigned it, read what, committed what)."""
    before = len(check.examples)
    _chaos.check_commits(group.events("commit"), check)
    for example in check.examples[before : before + 1]:
        p = int(example.split()[1][1:])
        check.examples.append(f"p{p} in the group:\n  " + "\n  ".join(group.story(p)[-60:]))


def schedule(rng: random.Random, faults: int, kinds: tuple[str, ...]) -> list[str]:
    """The fault kinds in order: `kinds` shuffled, repeated (each round reshuffled)."""
    out: list[str] = []
    while len(out) < faults:
        round_ = list(kinds)
        rng.shuffle(round_)
        out += round_
    return out[:faults]


def run_cluster_chaos(
    workdir: Path,
    seed: int,
    faults: int,
    *,
    kinds: tuple[str, ...] = KINDS,
    min_gap: float = 0.5,
    max_gap: float = 1.5,
    rate: float = 100.0,
    rolling_restarts: int = 5,
    log: Callable[[str], None] = lambda _line: None,
    security: str | None = None,
) -> ClusterChaosReport:
    """Run the workload under `faults` faults; returns the checked report (module doc)."""
    rng = random.Random(seed)
    plan = schedule(rng, faults, kinds)
    report = ClusterChaosReport(check := ChaosReport(seed=seed))
    t0 = time.monotonic()
    h = ChaosCluster(workdir, rng, log=log, rolling_restarts=rolling_restarts, security=security)
    producers: list[_chaos.ProducerThread] = []
    group: _chaos.Group | None = None
    plain: ConfluentConsumerStream | None = None
    monitor: EpochMonitor | None = None
    try:
        h.start()
        h.create_topic()
        log(f"cluster up in {time.monotonic() - t0:.1f} s; bootstrap {h.bootstrap}")
        bootstrap = h.bootstrap
        producers = [_chaos.ProducerThread(bootstrap, n, c, rate) for n, c in _chaos.PRODUCERS]
        for t in producers:
            t.start()
        plain = ConfluentConsumerStream(bootstrap, h.topic, h.partitions)
        plain.start()
        group = _chaos.Group(bootstrap, workdir)
        monitor = EpochMonitor(h, check)
        monitor.start()
        for k, kind in enumerate(plan):
            time.sleep(rng.uniform(min_gap, max_gap))
            started = time.monotonic()
            try:
                fault = h.run_fault(kind)
            except AssertionError as exc:
                check.not_healed += 1
                check.examples.append(f"fault {k + 1} {kind}: {exc}")
                log(f"fault {k + 1}/{faults} {kind}: NOT HEALED {exc}")
                report.faults.append(FaultRecord(kind, -1, started, [], note=str(exc)))
                break
            report.faults.append(fault)
            check.kills += 1
            group.heal()
            log(
                f"fault {k + 1}/{faults} {kind} victim {fault.victim} affected "
                f"{fault.affected} isr-shrink {fault.isr_shrink_s} {fault.note} "
                f"({time.monotonic() - started:.1f} s)"
            )
        time.sleep(rng.uniform(min_gap, max_gap))
        for t in producers:
            t.stop_event.set()
        for t in producers:
            t.join(timeout=120)
        acked: dict[str, tuple[int, int]] = {}
        sends: dict[str, tuple[int, float, float]] = {}
        for t in producers:
            with t.lock:
                acked.update(t.acked)
                check.failed.update(t.failed)
                if t.pname not in WEAK:
                    sends.update(t.times)
            check.sends += t.sent
        check.acked = len(acked)
        # the group drains to the end (bounded), then leaves
        ends = {p: h.cluster.high_watermark(h.topic, p) for p in range(h.partitions)}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            group.heal()
            reached = _chaos.check_commits(group.events("commit"), ChaosReport(seed=seed))
            if all(reached.get(p, 0) >= ends[p] for p in range(h.partitions)):
                break
            time.sleep(0.2)
        group.close()
        _check_commits(group, check)
        check.member_restarts = group.restarts
        reads: list[tuple[int, int, str]] = [
            (int(r[0]), int(r[1]), _chaos.ident_of(bytes.fromhex(r[3])))
            for e in group.events("records")
            for r in e["records"]
        ]
        group_got = {ident for _, _, ident in reads}
        check.group_missed = sum(1 for ident in acked if ident not in group_got)
        group = None
        plain.stop()
        with plain.lock:
            plain_got = [(g.partition, g.offset, _chaos.ident_of(g.value), g.at) for g in plain.got]
        plain = None
        reads += [(p, off, ident) for p, off, ident, _ in plain_got]
        monitor.stopping.set()
        monitor.join(5)
        monitor.poll_once()
        h.compare_replicas(check)
        final = _chaos.read_log(bootstrap, h.partitions)
        _chaos.check_log(final, acked, check, weak=WEAK, dense=True)
        _chaos.check_reads(final, reads, check)
        report.lost_by_kind = _charge(report.faults, check.lost_ids, sends)
        report.dups_by_kind = _charge(report.faults, check.duplicate_ids, sends)
        _unavailability(report.faults, sends, [(p, at, ident) for p, _, ident, at in plain_got])
        for f in report.faults:
            if f.isr_shrink_s is not None and f.isr_shrink_s > 1.5 * h.lag_s + ISR_SLACK_S:
                report.isr_slow += 1
                check.examples.append(
                    f"{f.kind} of broker {f.victim}: ISR shrink after {f.isr_shrink_s:.2f} s "
                    f"> 1.5 x {h.lag_s} s"
                )
    finally:
        for t in producers:
            t.stop_event.set()
        if monitor is not None:
            monitor.stopping.set()
        if plain is not None:
            plain.stopping.set()
        if group is not None:
            for w in group.workers + group.retired:
                w.close()
        h.close()
    check.duration_s = time.monotonic() - t0
    return report


def kind_table(report: ClusterChaosReport) -> list[dict[str, Any]]:
    """Per fault kind: N, unavailability p50/p99 (produce, consume), ISR shrink max."""
    rows = []
    for kind, fs in sorted(report.by_kind().items()):
        prod = [f.produce_unavail_s for f in fs if f.produce_unavail_s is not None]
        cons = [f.consume_unavail_s for f in fs if f.consume_unavail_s is not None]
        shrink = [f.isr_shrink_s for f in fs if f.isr_shrink_s is not None]
        rows.append(
            {
                "kind": kind,
                "n": len(fs),
                "lost": report.lost_by_kind.get(kind, 0),
                "duplicates": report.dups_by_kind.get(kind, 0),
                "produce_p50": percentile(prod, 50),
                "produce_p99": percentile(prod, 99),
                "consume_p50": percentile(cons, 50),
                "consume_p99": percentile(cons, 99),
                "isr_shrink_max": max(shrink, default=None),
                "regrow_max": max((f.isr_regrow_s or 0.0 for f in fs), default=None),
            }
        )
    return rows


def fault_lines(report: ClusterChaosReport) -> list[str]:
    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    lines = [
        "kind             N  acks=all lost  dups  produce p50/p99 s  consume p50/p99 s  "
        "ISR shrink max s"
    ]
    for row in kind_table(report):
        lines.append(
            f"{row['kind']:<16} {row['n']:>2}  {row['lost']:>13}  {row['duplicates']:>4}  "
            f"{s(row['produce_p50']):>7}/{s(row['produce_p99']):<9}  "
            f"{s(row['consume_p50']):>7}/{s(row['consume_p99']):<9}  {s(row['isr_shrink_max'])}"
        )
    return lines


def report_json(report: ClusterChaosReport) -> str:
    return json.dumps(
        {
            "seed": report.check.seed,
            "ok": report.ok,
            "summary": report.check.summary(),
            "kinds": kind_table(report),
            "faults": [f.__dict__ for f in report.faults],
        },
        indent=1,
        default=str,
    )


def run_negative_control(
    workdir: Path, seed: int, *, log: Callable[[str], None] = lambda _line: None
) -> ChaosReport:
    """The proof that the checker can fail: unclean leader election on, min.insync.replicas 1,
    one partition (RF 3). Under an idempotent acks=all producer, both followers are SIGSTOPped;
    once the ISR is the leader alone (replica.lag.time.max.ms), the leader keeps acknowledging
    acks=all records for a while, then is killed -9 and the followers get SIGCONT: a stale
    follower becomes leader (unclean election) and the records acknowledged by the lone leader
    are gone. Returns the checker's report of the read-back: `lost` > 0 expected."""
    rng = random.Random(seed)
    unclean = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}
    h = ChaosCluster(workdir, rng, config=unclean, partitions=1, log=log)
    check = ChaosReport(seed=seed)
    producer: _chaos.ProducerThread | None = None
    t0 = time.monotonic()
    try:
        h.start()
        h.create_topic(unclean)
        name, conf = _chaos.PRODUCERS[0]
        producer = _chaos.ProducerThread(h.bootstrap, name, conf, 200.0, partitions=1)
        producer.start()
        time.sleep(1.0)
        leader = h.cluster.leader(h.topic, 0)
        followers = [i for i in range(3) if i != leader]
        for i in followers:
            h.cluster.sigstop(i)
            h.paused.add(i)
        h.cluster.wait_isr(h.topic, 0, lambda isr: isr == [leader], f"only {leader}", timeout=20)
        with producer.lock:
            before = len(producer.acked)
        time.sleep(1.5)  # acks=all acknowledged by the leader alone
        with producer.lock:
            alone = len(producer.acked) - before
        h.cluster.kill9(leader)
        for i in followers:
            h.cluster.sigcont(i)
            h.paused.discard(i)
        new = h.cluster.wait_leader_moved(h.topic, 0, leader, timeout=30)
        log(
            f"ISR shrank to {leader}, {alone} records acknowledged by it alone; killed; "
            f"unclean election made {new['leader']} leader (epoch {new['leader_epoch']})"
        )
        producer.flush_timeout = 3.0  # its records now fail (sequence desynchronisation)
        producer.stop_event.set()
        producer.join(timeout=30)
        with producer.lock:
            acked = dict(producer.acked)
        check.sends, check.acked = producer.sent, len(acked)
        final = _chaos.read_log(h.bootstrap, 1)
        _chaos.check_log(final, acked, check, dense=True)
    finally:
        if producer is not None:
            producer.stop_event.set()
        h.close()
    check.duration_s = time.monotonic() - t0
    return check
