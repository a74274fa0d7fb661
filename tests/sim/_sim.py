"""Deterministic simulation of the cluster: one seed -> one whole run, faults included.

What runs: three real `Broker`s (wirebroker/broker.py: controller, partition replicas, fetchers,
group coordinator, all of it) in one trio run under `MockClock(autojump_threshold=0)` (virtual
time: a minute of cluster time takes about a second), over one `MemoryZooKeeper` (each broker
incarnation has its own `SimCoordination` session) and the `_simnet.SimNetwork` (in-memory
TCP with latency, spikes, partitions, resets), substituted for TCP through the
`wirebroker.transport` seam. Storage is real files in a temporary directory.

Determinism: every random choice derives from the seed: the schedule and the workload
(`random.Random(seed)`), the network (`Random(seed ^ NET_SALT)`), trio's scheduler (its
batch shuffling RNG, `trio._core._run._r`, is seeded per run), the module `random` (replica
placement) and `uuid.uuid4` (topic ids, member ids) are replaced for the run. Nothing waits on
the real clock (no threads, no sockets), so the run is a function of the seed; `SimResult.digest`
hashes its event trace (every fault, send, acknowledgement, read, commit, the final log and
the ZooKeeper zxid) and the determinism test compares two runs of one seed.

Workload (clients on the simulated network, host "client"):
    producers   one per partition, idempotent (InitProducerId, then sequence numbers) and
                acks=all, one batch of 1-5 records in flight, batches spread over the load
                time (a uniform pause averaging load_s / (records / 3)); a batch is retried
                with the same sequence until acknowledged (NONE -> every record acknowledged
                at base+i);
                a fatal answer (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID, an epoch
                error) abandons the batch (never re-sent: not acknowledged, no duplicate by
                construction) and takes a new producer id; every acknowledgement is
                recorded as an `_chaos.Ack`: (broker, partition, the leader epoch that broker
                holds when the answer arrives, virtual time, acknowledged offsets)
    consumer    reads every partition from its leader (consumer Fetch: up to the HW), records
                (partition, offset, payload id), and commits its positions for group `sim` with
                OffsetCommit (generation -1: a group without members, as a consumer using
                assign() does), recording every acknowledged commit
    monitor     every 100 ms: /controller_epoch and every partition's state znode leader epoch,
                and each broker incarnation's own leader epoch per partition: any value below
                one seen before by the same observer is an epoch regression; and, exactly,
                `SimZooKeeper.epoch_history`: every leader epoch a partition state znode
                takes, with the virtual time of the write

Faults (the schedule: `schedule(rng, cfg)`: a fault every uniform(gap) s of load, kinds drawn
from `KINDS`; they may overlap with the next one):
    crash       kill -9 of a random broker: the data dir is copied at that instant (what was
                written survives, not userspace buffers: kill -9), the incarnation's network
                host dies, its ZooKeeper client is severed (no more op, no close), the old
                incarnation is cancelled and discarded; ZooKeeper expires its session
                `session_s` later; the broker restarts on the copy after uniform(0.2, 2) s more
    partition   one broker cut off from every other host (not from ZooKeeper) for
                uniform(0.5, 3) x replica.lag.time.max.ms
    isolate     the same, and from ZooKeeper too (a zombie: its session expires after
                `session_s`; it learns so when it reconnects at the heal)
    expire      ZooKeeper expires a random broker's session (it re-registers)
    cut         1-4 random live connections are reset (message loss)
    slow        a random broker pair's links get uniform(0.05, 1) s extra latency for a while
    split_crash the leader of a random partition is cut off from the other brokers (clients
                still reach it) for uniform(1.5, 3) x replica.lag.time.max.ms, so it shrinks
                the ISR to itself; then it is crashed (kill -9, as `crash`) and the network
                healed. With min.insync.replicas=2 it must refuse acks=all meanwhile; with the
                `unsafe` negative control it acknowledges alone and an unclean election of a
                stale replica then loses those records
    split_zombie
                the leader of a random partition is cut off from the other brokers (clients
                still reach it) for uniform(1.5, 3) x replica.lag.time.max.ms, so it shrinks
                the ISR to itself; then from ZooKeeper too, for uniform(1.3, 2.5) x the
                session timeout: its session expires and the controller replaces it while it
                still believes it leads and clients still reach it (a zombie leader), then
                everything heals. With min.insync.replicas=2 it must refuse acks=all and the
                partition waits for it (its ISR is itself); with `unsafe` it acknowledges
                alone after a stale replica was elected: fenced acknowledgements, then lost
After the load: every fault is healed (network healed, isolated brokers reconnect, crashed ones
restarted), then the run waits (bounded) for every broker registered and every partition with
a full ISR and equal log ends (else `not_healed`), reads every partition back from its leader
and checks with `_chaos`'s checker: `check_log` (lost, misplaced, duplicates, reorders, dense
gaps), `check_reads` (every offset a consumer read still holds that record), `check_commits`
(acknowledged commits never go back; the final OffsetFetch is not below the highest),
`check_fenced_acks` (acknowledgements given at a leader epoch ZooKeeper had superseded:
`acks_after_fence`, informational; those whose records are not at their offsets in the final
log: `fenced_acks_lost`, a violation), plus replica bytes compared below the high watermark
(`divergent`) and the epoch monitor.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import trio
import trio.testing

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))

from _chaos import (
    Ack,
    ChaosReport,
    check_commits,
    check_fenced_acks,
    check_log,
    check_reads,
    ident_of,
    payload,
)
from _simnet import Host, SimNetwork, run_on

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch, decode_records, iter_batches
from wirebroker import transport
from wirebroker.broker import Broker
from wirebroker.cluster import zk_layout as zl
from wirebroker.config import BrokerConfig
from wirebroker.coordination.api import CoordinationError, Op, SessionState
from wirebroker.coordination.api import Stat as ZkStat
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.replication.broker_client import BrokerConnection, BrokerConnectionError

TOPIC = "sim"
GROUP = "sim-group"
PORT = 9092
EPOCH_MS = 1_700_000_000_000
NET_SALT = 0x5EED_0F_4E7
KINDS = ("crash", "partition", "isolate", "expire", "cut", "slow", "split_crash", "split_zombie")

log = logging.getLogger("sim")


@dataclass
class SimConfig:
    brokers: int = 3
    partitions: int = 2
    load_s: float = 15.0  # virtual seconds of load (faults happen in it)
    gap_s: tuple[float, float] = (1.0, 4.0)
    lag_ms: int = 1000
    session_s: float = 3.0
    records: int = 200  # per run, spread over the partitions' producers
    heal_timeout_s: float = 60.0
    kinds: tuple[str, ...] = KINDS
    #: the negative control: min.insync.replicas=1 and unclean leader election, where Kafka
    #: itself loses acknowledged acks=all writes (the checker must see it)
    unsafe: bool = False


def broker_overrides(cfg: SimConfig) -> dict[str, str]:
    return {
        "replica.lag.time.max.ms": str(cfg.lag_ms),
        "replica.fetch.wait.max.ms": "500",
        "replica.fetch.backoff.ms": "100",
        "replica.socket.timeout.ms": "3000",
        "replica.high.watermark.checkpoint.interval.ms": "500",
        "controlled.shutdown.timeout.ms": "2000",
        "offsets.topic.replication.factor": "3",
        "offsets.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.leader.rebalance.enable": "false",
        "min.insync.replicas": "1" if cfg.unsafe else "2",
        "unclean.leader.election.enable": "true" if cfg.unsafe else "false",
        "zookeeper.session.timeout.ms": str(int(cfg.session_s * 1000)),
    }


# -- ZooKeeper, with its leader epoch history ------------------------------------------------


class SimZooKeeper(MemoryZooKeeper):
    """A `MemoryZooKeeper` that records, after every committed write, each leader epoch a
    watched partition state znode holds for the first time: `epoch_history` lists
    (partition, leader epoch, leader, virtual time), the exact moment a leadership was
    superseded (the epoch monitor's 100 ms samples would be late)."""

    def __init__(self) -> None:
        super().__init__()
        self.state_paths: dict[str, int] = {}
        self.epoch_history: list[tuple[int, int, int, float]] = []
        self._seen: set[tuple[int, int]] = set()
        self.note: Callable[[str], None] = lambda line: None

    def watch_partitions(self, topic: str, partitions: int) -> None:
        self.state_paths = {zl.state_path(topic, p): p for p in range(partitions)}

    def _write(
        self, session_id: int, ops: Sequence[Op], *, multi: bool
    ) -> list[str | ZkStat | None]:
        results = super()._write(session_id, ops, multi=multi)
        for path, p in self.state_paths.items():
            node = self._nodes.get(path)
            if node is None:
                continue
            st = zl.decode_partition_state(TOPIC, p, node.data)
            if (p, st.leader_epoch) not in self._seen:
                self._seen.add((p, st.leader_epoch))
                self.epoch_history.append((p, st.leader_epoch, st.leader, trio.current_time()))
                self.note(f"zk p{p} leader epoch {st.leader_epoch} leader b{st.leader}")
        return results


# -- ZooKeeper sessions that can crash and be cut off ---------------------------------------


class SimCoordination(MemoryCoordination):
    """A `MemoryCoordination` whose client side can be severed (a crash: it stops without
    closing its session, which ZooKeeper expires later) or suspended (cut off from ZooKeeper:
    operations fail, nothing is delivered; an expiry meanwhile is learnt at `resume`)."""

    def __init__(self, server: MemoryZooKeeper) -> None:
        super().__init__(server)
        self.severed = False
        self.suspended = False
        self._expired_meanwhile = False

    def sever(self) -> None:
        self.severed = True

    def suspend(self) -> None:
        if self.suspended or self.severed:
            return
        self.suspended = True
        if self._session in self._server._sessions:
            self._server._drop_watches(self._session)
        MemoryCoordination._post(self, partial(self._session_event, SessionState.SUSPENDED))

    def resume(self) -> None:
        if not self.suspended:
            return
        self.suspended = False
        if self._expired_meanwhile:
            self._expired_meanwhile = False
            MemoryCoordination._post(self, super()._expired)
        else:
            state = partial(self._session_event, SessionState.CONNECTED, self._session)
            MemoryCoordination._post(self, state)

    def _expired(self) -> None:
        if self.suspended:
            self._expired_meanwhile = True
            return
        super()._expired()

    def _post(self, fn: Callable[[], None]) -> None:
        # suspended: the server dropped this session's watches, so nothing new comes; what a
        # read already returned is still delivered (dropping it would lose that value for
        # good: the entry already remembers it as delivered)
        if self.severed:
            return
        super()._post(fn)

    async def _op(self) -> int:
        if self.severed or self.suspended:
            await trio.lowlevel.checkpoint()
            raise CoordinationError("connection to ZooKeeper lost")
        return await super()._op()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await self._serve(self._connect, task_status)
        finally:
            if not self.severed:  # a crashed client closes nothing: the session expires
                self._server._close_session(self._session)


# -- the cluster ----------------------------------------------------------------------------


@dataclass(eq=False)
class Incarnation:
    node: int
    gen: int
    host: Host
    coord: SimCoordination
    broker: Broker
    data_dir: Path
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    stopped: trio.Event = field(default_factory=trio.Event)
    crashed: bool = False


class Sim:
    def __init__(self, seed: int, cfg: SimConfig, root: Path) -> None:
        self.seed = seed
        self.cfg = cfg
        self.root = root
        self.rng = random.Random(seed)
        self.net = SimNetwork(random.Random(seed ^ NET_SALT))
        self.server = SimZooKeeper()
        self.server.watch_partitions(TOPIC, cfg.partitions)
        self.server.note = self.note
        self.nodes: dict[int, Incarnation] = {}
        self.gens: dict[int, int] = {}
        self.report = ChaosReport(seed=seed)
        self.trace: list[str] = []
        self.client_host = Host("client")
        self.acked: dict[str, tuple[int, int]] = {}
        self.acks: list[Ack] = []
        self.reads: list[tuple[int, int, str]] = []
        self.commits: list[dict[str, Any]] = []
        self.faults: list[str] = []
        self.load_over = trio.Event()
        self.pending_restarts = 0
        self.epochs: dict[tuple[Any, ...], int] = {}
        self.nursery: trio.Nursery

    def note(self, line: str) -> None:
        self.trace.append(f"{trio.current_time():.6f} {line}")

    def clock_ms(self) -> int:
        return EPOCH_MS + int(trio.current_time() * 1000)

    # -- brokers -------------------------------------------------------------------------------
    def config(self, node: int, data_dir: Path) -> BrokerConfig:
        return BrokerConfig(
            {
                "node.id": str(node),
                "log.dirs": str(data_dir),
                "listeners": f"PLAINTEXT://b{node}:{PORT}",
                "cluster.id": "s1mulat1onClust3r-000",
                **broker_overrides(self.cfg),
            }
        )

    async def start_broker(self, node: int, data_dir: Path) -> Incarnation:
        gen = self.gens.get(node, -1) + 1
        self.gens[node] = gen
        coord = SimCoordination(self.server)
        broker = Broker(
            self.config(node, data_dir), clock=self.clock_ms, grace_s=1.0, coordination=coord
        )
        inc = Incarnation(node, gen, Host(f"b{node}", gen), coord, broker, data_dir)
        self.nodes[node] = inc
        await self.nursery.start(run_on, inc.host, self._serve, inc)
        self.note(f"start b{node}#{gen}")
        return inc

    async def _serve(self, inc: Incarnation, *, task_status: trio.TaskStatus[None]) -> None:
        try:
            with inc.scope:
                async with trio.open_nursery() as nursery:
                    await nursery.start(inc.broker.serve)
                    task_status.started()
        except Exception as exc:
            # a crashed incarnation dies as it may (its ZooKeeper and network fail under it)
            if not inc.crashed:
                raise
            self.note(f"b{inc.node}#{inc.gen} died: {type(exc).__name__}")
        finally:
            inc.stopped.set()

    def crash(self, node: int) -> None:
        """kill -9 (see the module docstring); the restart is scheduled here."""
        inc = self.nodes[node]
        if inc.crashed:
            return
        inc.crashed = True
        copy = self.root / f"b{node}-{inc.gen + 1}"
        shutil.copytree(inc.data_dir, copy, ignore=shutil.ignore_patterns(".lock"))
        session = inc.coord.session_id
        inc.coord.sever()
        self.net.kill(inc.host)
        inc.scope.cancel()
        self.pending_restarts += 1
        self.nursery.start_soon(self._after_crash, node, session, copy)

    async def _after_crash(self, node: int, session: int, copy: Path) -> None:
        await trio.sleep(self.cfg.session_s)
        if session in self.server._sessions:
            self.server.expire_session(session)
            self.note(f"session {session} of b{node} expired")
        await trio.sleep(self.rng.uniform(0.2, 2.0))
        old = self.nodes[node]
        await old.stopped.wait()
        await self.start_broker(node, copy)
        self.pending_restarts -= 1

    def isolate(self, node: int) -> None:
        inc = self.nodes[node]
        self.net.partition(f"b{node}")
        inc.coord.suspend()
        session = inc.coord.session_id
        self.nursery.start_soon(self._expire_later, node, session)

    async def _expire_later(self, node: int, session: int) -> None:
        await trio.sleep(self.cfg.session_s)
        inc = self.nodes[node]
        if inc.coord.suspended and session in self.server._sessions:
            self.server.expire_session(session)
            self.note(f"session {session} of isolated b{node} expired")

    def heal_network(self) -> None:
        self.net.heal()
        for inc in self.nodes.values():
            inc.coord.resume()

    # -- faults --------------------------------------------------------------------------------
    async def faults_task(self) -> None:
        end = trio.current_time() + self.cfg.load_s
        while True:
            await trio.sleep(self.rng.uniform(*self.cfg.gap_s))
            if trio.current_time() >= end:
                break
            kind = self.rng.choice(self.cfg.kinds)
            await self.fault(kind)
        self.load_over.set()

    async def fault(self, kind: str) -> None:
        live = [n for n, inc in sorted(self.nodes.items()) if not inc.crashed]
        victim = self.rng.choice(sorted(self.nodes))
        lag_s = self.cfg.lag_ms / 1000
        self.report.kills += 1
        self.faults.append(kind)
        if kind == "split_crash":
            leader = self.leader_of(self.rng.randrange(self.cfg.partitions))
            if self.pending_restarts or leader not in live:
                kind = "cut"
            else:
                hold = self.rng.uniform(1.5, 3.0) * lag_s
                self.note(f"fault split_crash b{leader} for {hold:.3f}")
                self.net.split(f"b{leader}")
                self.pending_restarts += 1  # no other crash meanwhile
                self.nursery.start_soon(self._split_then_crash, leader, hold)
                return
        if kind == "split_zombie":
            leader = self.leader_of(self.rng.randrange(self.cfg.partitions))
            if self.pending_restarts or leader not in live:
                kind = "cut"
            else:
                hold = self.rng.uniform(1.5, 3.0) * lag_s
                zombie = self.rng.uniform(1.3, 2.5) * self.cfg.session_s
                self.note(f"fault split_zombie b{leader} for {hold:.3f} + {zombie:.3f}")
                self.net.split(f"b{leader}")
                self.pending_restarts += 1  # no crash meanwhile
                self.nursery.start_soon(self._split_then_zombie, leader, hold, zombie)
                return
        if kind == "crash":
            if self.pending_restarts or victim not in live:
                kind = "cut"  # one broker down at a time: the cluster must make progress
            else:
                self.note(f"fault crash b{victim}")
                self.crash(victim)
                return
        if kind in ("partition", "isolate"):
            hold = self.rng.uniform(0.5, 3.0) * lag_s
            self.note(f"fault {kind} b{victim} for {hold:.3f}")
            if kind == "isolate":
                self.isolate(victim)
            else:
                self.net.partition(f"b{victim}")
            self.nursery.start_soon(self._heal_after, hold)
        elif kind == "expire":
            inc = self.nodes[victim]
            if not inc.crashed and not inc.coord.suspended:
                session = inc.coord.session_id
                if session in self.server._sessions:
                    self.note(f"fault expire b{victim} session {session}")
                    self.server.expire_session(session)
        elif kind == "cut":
            conns = self.net.live_conns()
            for _ in range(self.rng.randint(1, 4)):
                if not conns:
                    break
                conn = conns.pop(self.rng.randrange(len(conns)))
                self.note(f"fault cut conn {conn.id} {conn.client}->{conn.server}")
                self.net.cut(conn)
        elif kind == "slow":
            others = [n for n in sorted(self.nodes) if n != victim]
            other = self.rng.choice(others)
            extra = self.rng.uniform(0.05, 1.0)
            hold = self.rng.uniform(1.0, 5.0)
            self.note(f"fault slow b{victim}-b{other} +{extra:.3f} for {hold:.3f}")
            self.net.slow(f"b{victim}", f"b{other}", extra)
            self.nursery.start_soon(self._heal_after, hold)

    def leader_epoch_at(self, node: int, p: int) -> int:
        """The leader epoch broker `node` (its live incarnation) holds for partition `p` now,
        -1 if it has no replica (read from the broker object: the simulation sees inside).

        The producer attributes an acknowledgement to the epoch its broker holds when the
        answer arrives. A broker's epoch only grows within an incarnation (and an answer
        cannot outlive its incarnation's connections), so the epoch it answered at lies
        between the one it held when the request left and this one. The epoch at sending
        would blame on an old epoch a request that the network held across the broker's
        re-election (seed 56: a Produce held by a partition reached b1 after ZooKeeper
        had moved its partition from epoch 0 to 1, no leader, and 2, b1 again; b1 answered
        at 2); the epoch at arrival misses a
        zombie that learns of its successor while its answer is in flight. Either way its
        lost records are still counted by `check_log` (lost / misplaced): only the
        attribution to a fenced leader depends on this."""
        inc = self.nodes.get(node)
        if inc is None or inc.crashed or not hasattr(inc.broker, "replicas"):
            return -1
        part = inc.broker.replicas.partition(TOPIC, p)
        return -1 if part is None else int(part.leader_epoch)

    def leader_of(self, p: int) -> int:
        node = self.server._nodes.get(zl.state_path(TOPIC, p))
        return -1 if node is None else zl.decode_partition_state(TOPIC, p, node.data).leader

    async def _split_then_crash(self, node: int, hold: float) -> None:
        await trio.sleep(hold)
        self.pending_restarts -= 1
        self.note(f"crash split b{node}")
        self.crash(node)
        self.net.heal()

    async def _split_then_zombie(self, node: int, hold: float, zombie: float) -> None:
        await trio.sleep(hold)
        inc = self.nodes[node]
        self.note(f"zombie b{node}: cut from ZooKeeper too")
        inc.coord.suspend()
        self.nursery.start_soon(self._expire_later, node, inc.coord.session_id)
        await trio.sleep(zombie)
        self.pending_restarts -= 1
        self.note("heal network")
        self.heal_network()

    async def _heal_after(self, hold: float) -> None:
        await trio.sleep(hold)
        self.note("heal network")
        self.heal_network()

    # -- monitor -------------------------------------------------------------------------------
    def _see(self, key: tuple[Any, ...], value: int) -> None:
        self.report.epoch_samples += 1
        last = self.epochs.get(key)
        if last is not None and value < last:
            self.report.epoch_regressions += 1
            self.report.examples.append(f"epoch regression {key}: {value} after {last}")
        self.epochs[key] = max(value, last if last is not None else value)

    def sample_epochs(self) -> None:
        nodes = self.server._nodes
        epoch = nodes.get(zl.CONTROLLER_EPOCH)
        if epoch is not None:
            self._see(("controller_epoch",), zl.decode_controller_epoch(epoch.data))
        for p in range(self.cfg.partitions):
            state = nodes.get(zl.state_path(TOPIC, p))
            if state is not None:
                st = zl.decode_partition_state(TOPIC, p, state.data)
                self._see(("zk", p), st.leader_epoch)
            for inc in self.nodes.values():
                if inc.crashed or not hasattr(inc.broker, "replicas"):
                    continue
                part = inc.broker.replicas.partition(TOPIC, p)
                if part is not None:
                    self._see(("broker", inc.node, inc.gen, p), part.leader_epoch)

    async def monitor_task(self) -> None:
        while True:
            self.sample_epochs()
            await trio.sleep(0.1)

    # -- the run -------------------------------------------------------------------------------
    async def main(self) -> None:
        transport.TRANSPORT.set(self.net)
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            for n in range(self.cfg.brokers):
                d = self.root / f"b{n}-0"
                await self.start_broker(n, d)
            client = SimClient(self)
            await run_on(self.client_host, self._run_load, client)
            nursery.cancel_scope.cancel()

    def registered(self) -> bool:
        return all(
            not inc.crashed
            and inc.broker.member is not None
            and len(inc.broker.member.cache.brokers) == self.cfg.brokers
            for inc in self.nodes.values()
        )

    async def wait_for(self, check: Callable[[], bool], timeout: float) -> bool:
        with trio.move_on_after(timeout):
            while not check():
                await trio.sleep(0.05)
            return True
        return False

    async def _run_load(self, client: SimClient) -> None:
        if not await self.wait_for(self.registered, 30):
            raise AssertionError(f"seed {self.seed}: the cluster never formed")
        await client.create_topic()
        self.nursery.start_soon(self.monitor_task)
        async with trio.open_nursery() as load:
            per = self.cfg.records // self.cfg.partitions
            for p in range(self.cfg.partitions):
                load.start_soon(client.produce_loop, p, per)
            load.start_soon(client.consume_loop)
            load.start_soon(self.faults_task)
            await self.load_over.wait()
            # heal: no new fault; wait for pending restarts, then the network and ZooKeeper
            self.note("load over: healing")
            await self.wait_for(lambda: self.pending_restarts == 0, 60)
            self.heal_network()
            healed = await self.wait_for(self.converged, self.cfg.heal_timeout_s)
            if not healed:
                self.report.not_healed += 1
                self.report.examples.append(f"not healed: {self.describe()}")
            client.stop = True
            load.cancel_scope.deadline = trio.current_time() + 30
        self.report.sends = client.sent
        self.note(f"final zxid {self.server.zxid}")
        await self.final_check(client)

    def describe(self) -> str:
        out = []
        for p in range(self.cfg.partitions):
            node = self.server._nodes.get(zl.state_path(TOPIC, p))
            st = None if node is None else zl.decode_partition_state(TOPIC, p, node.data)
            ends = {}
            for inc in self.nodes.values():
                part = None if inc.crashed else inc.broker.replicas.partition(TOPIC, p)
                if part is not None:
                    ends[inc.node] = (part.log_end_offset, part.high_watermark)
            out.append(f"p{p} {st} ends {ends}")
        return "; ".join(out)

    def converged(self) -> bool:
        if not self.registered():
            return False
        for p in range(self.cfg.partitions):
            node = self.server._nodes.get(zl.state_path(TOPIC, p))
            if node is None:
                return False
            st = zl.decode_partition_state(TOPIC, p, node.data)
            if len(st.isr) != self.cfg.brokers or st.leader < 0:
                return False
            ends = set()
            for inc in self.nodes.values():
                part = inc.broker.replicas.partition(TOPIC, p)
                if part is None:
                    return False
                ends.add((part.log_end_offset, part.high_watermark))
            if len(ends) != 1:
                return False
        return True

    async def final_check(self, client: SimClient) -> None:
        report = self.report
        final: dict[int, list[tuple[int, bytes]]] = {}
        for p in range(self.cfg.partitions):
            final[p] = await client.read_back(p)
            self.note(f"final p{p}: {[(o, ident_of(v)) for o, v in final[p]]}")
        self.compare_replicas()
        report.acked = len(self.acked)
        check_log(final, self.acked, report, dense=True)
        check_reads(final, self.reads, report)
        high = check_commits(self.commits, report)
        epochs = [(p, epoch, t) for p, epoch, _leader, t in self.server.epoch_history]
        check_fenced_acks(self.acks, epochs, final, report)
        fetched = await client.fetch_committed()
        self.note(f"final committed {fetched}")
        for p, h in sorted(high.items()):
            report.commit_checks += 1
            if fetched.get(p, -1) < h:
                report.commit_regressions += 1
                report.examples.append(f"final: committed p{p} {fetched.get(p)} < acked {h}")
        self.sample_epochs()

    def compare_replicas(self) -> None:
        report = self.report
        for p in range(self.cfg.partitions):
            parts = {
                n: inc.broker.replicas.partition(TOPIC, p)
                for n, inc in sorted(self.nodes.items())
                if not inc.crashed
            }
            live = {n: part for n, part in parts.items() if part is not None}
            if not live:
                continue
            low = min(part.high_watermark for part in live.values())
            data = {
                n: bytes(part.log.read(part.log_start_offset, max_bytes=1 << 30, max_offset=low))
                for n, part in live.items()
            }
            ref_node = min(data)
            for n, blob in data.items():
                if n == ref_node:
                    continue
                report.replicas_compared += 1
                if blob != data[ref_node]:
                    report.divergent += 1
                    report.examples.append(
                        f"p{p}: replicas b{ref_node} and b{n} differ below HW {low}"
                    )


# -- the clients ----------------------------------------------------------------------------

_RETRIABLE = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
}

REQUEST_TIMEOUT_S = 5.0


class SimClient:
    """The producers and the consumer (on the "client" host; see the module docstring)."""

    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.rng = random.Random(sim.rng.getrandbits(64))
        self.leaders: dict[int, int] = {}
        self.sent = 0
        self.stop = False

    def address(self, node: int) -> tuple[str, int]:
        return (f"b{node}", PORT)

    async def request(self, node: int, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
        """One request on a fresh connection; None on a connection failure or timeout."""
        host, port = self.address(node)
        conn: BrokerConnection | None = None
        try:
            with trio.fail_after(REQUEST_TIMEOUT_S):
                conn = await BrokerConnection.open(
                    host, port, client_id="sim", max_frame_bytes=1 << 26
                )
                return await conn.request(api, version, body)
        except (BrokerConnectionError, trio.TooSlowError, OSError):
            return None
        finally:
            if conn is not None:
                await conn.aclose()

    async def create_topic(self) -> None:
        n = self.sim.cfg.brokers
        assignment = {p: [(p + i) % n for i in range(n)] for p in range(self.sim.cfg.partitions)}
        body = {
            "topics": [
                {
                    "name": TOPIC,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [
                        {"partition_index": i, "broker_ids": r} for i, r in assignment.items()
                    ],
                    "configs": [],
                }
            ],
            "timeout_ms": 10000,
            "validate_only": False,
        }
        while True:
            resp = await self.request(0, ApiKey.CREATE_TOPICS, 5, body)
            if resp is not None and resp.topics[0].error_code in (
                ErrorCode.NONE,
                ErrorCode.TOPIC_ALREADY_EXISTS,
            ):
                break
            await trio.sleep(0.2)

        def ready() -> bool:
            return self.sim.converged()

        await self.sim.wait_for(ready, 30)

    async def refresh(self) -> None:
        node = self.rng.randrange(self.sim.cfg.brokers)
        body = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}
        resp = await self.request(node, ApiKey.METADATA, 9, body)
        if resp is None:
            return
        for t in resp.topics:
            if t.name == TOPIC and t.error_code == ErrorCode.NONE:
                for p in t.partitions:
                    if p.error_code == ErrorCode.NONE and p.leader_id >= 0:
                        self.leaders[int(p.partition_index)] = int(p.leader_id)

    async def leader(self, p: int) -> int:
        while p not in self.leaders:
            await self.refresh()
            if p not in self.leaders:
                await trio.sleep(0.1)
        return self.leaders[p]

    async def backoff(self, p: int | None = None) -> None:
        if p is not None:
            self.leaders.pop(p, None)
        await trio.sleep(self.rng.uniform(0.05, 0.3))

    # -- producer -------------------------------------------------------------------------------
    async def init_pid(self) -> tuple[int, int]:
        body = {"transactional_id": None, "transaction_timeout_ms": 60000}
        while True:
            node = self.rng.randrange(self.sim.cfg.brokers)
            resp = await self.request(node, ApiKey.INIT_PRODUCER_ID, 4, body)
            if resp is not None and resp.error_code == ErrorCode.NONE:
                return int(resp.producer_id), int(resp.producer_epoch)
            await self.backoff()

    async def produce_loop(self, p: int, count: int) -> None:
        sim = self.sim
        name = f"idem{p}"
        pid, epoch = await self.init_pid()
        seq = 0
        n = 0
        # batches of 3 on average, spread over the load time (faults must meet traffic)
        gap = sim.cfg.load_s / max(count / 3, 1)
        while n < count and not sim.load_over.is_set():
            size = min(self.rng.randint(1, 5), count - n)
            idents = [payload(name, n + i) for i in range(size)]
            n += size
            self.sent += size
            batch = build_batch(
                [(None, v) for v in idents],
                base_timestamp=sim.clock_ms(),
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
            )
            body = {
                "transactional_id": None,
                "acks": -1,
                "timeout_ms": 3000,
                "topic_data": [{"name": TOPIC, "partition_data": [{"index": p, "records": batch}]}],
            }
            first = ident_of(idents[0])
            while True:
                leader = await self.leader(p)
                resp = await self.request(leader, ApiKey.PRODUCE, 9, body)
                if resp is None:
                    await self.backoff(p)
                    continue
                r = resp.responses[0].partition_responses[0]
                code = int(r.error_code)
                if code == ErrorCode.NONE:
                    base = int(r.base_offset)
                    for i, v in enumerate(idents):
                        sim.acked[ident_of(v)] = (p, base + i)
                    records = tuple((base + i, ident_of(v)) for i, v in enumerate(idents))
                    # the epoch the answering broker holds as the answer arrives (see
                    # `leader_epoch_at`)
                    epoch = sim.leader_epoch_at(leader, p)
                    sim.acks.append(Ack(leader, p, epoch, trio.current_time(), records))
                    sim.note(f"ack {first}+{size} p{p}@{base} by b{leader} epoch {epoch}")
                    seq += size
                    break
                if code in _RETRIABLE:
                    sim.note(f"retry {first} p{p} b{leader} {ErrorCode(code).name}")
                    await self.backoff(p)
                    continue
                # fatal for this producer: abandon the batch, take a new producer id
                sim.report.failed[ErrorCode(code).name] += 1
                sim.note(f"fatal {first} p{p} b{leader} {ErrorCode(code).name}")
                pid, epoch = await self.init_pid()
                seq = 0
                break
            await trio.sleep(self.rng.uniform(0.0, 2 * gap))

    # -- consumer -------------------------------------------------------------------------------
    async def fetch(self, node: int, p: int, offset: int) -> tuple[int, int, bytes] | None:
        body = {
            "replica_id": -1,
            "max_wait_ms": 200,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": TOPIC,
                    "partitions": [
                        {
                            "partition": p,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        resp = await self.request(node, ApiKey.FETCH, 12, body)
        if resp is None:
            return None
        part = resp.responses[0].partitions[0]
        return int(part.error_code), int(part.high_watermark), bytes(part.records or b"")

    async def read_from(self, p: int, offset: int) -> tuple[list[tuple[int, bytes]], int, int]:
        """(records, next offset, high watermark) of one fetch from the leader; hw -1: failed."""
        leader = await self.leader(p)
        got = await self.fetch(leader, p, offset)
        if got is None or got[0] != ErrorCode.NONE:
            await self.backoff(p)
            return [], offset, -1
        _code, hw, data = got
        out = []
        nxt = offset
        for pos, header in iter_batches(data):
            for rec in decode_records(data, pos):
                if rec.offset >= offset:
                    out.append((rec.offset, bytes(rec.value or b"")))
            nxt = max(nxt, header.base_offset + header.last_offset_delta + 1)
        return out, nxt, hw

    async def consume_loop(self) -> None:
        sim = self.sim
        pos = {p: 0 for p in range(sim.cfg.partitions)}
        while not self.stop:
            for p in range(sim.cfg.partitions):
                records, nxt, _hw = await self.read_from(p, pos[p])
                for off, value in records:
                    sim.reads.append((p, off, ident_of(value)))
                if records:
                    sim.note(f"read p{p} {records[0][0]}..{records[-1][0]}")
                pos[p] = nxt
            await self.commit(pos)
            if self.rng.random() < 0.3:
                await self.check_committed()
            await trio.sleep(self.rng.uniform(0.05, 0.3))

    async def check_committed(self) -> None:
        """One OffsetFetch from whoever answers FindCoordinator now: a committed offset below
        an acknowledged commit is a regression (a coordinator serving stale offsets), as a
        consumer that takes over a partition would start from there."""
        sim = self.sim
        fetched = await self.fetch_committed_once()
        if fetched is None:
            return
        node, offsets = fetched
        high = check_commits(sim.commits, ChaosReport(seed=sim.seed))
        inc = sim.nodes.get(node)
        if inc is not None and inc.coord.suspended:
            # A zombie (cut off from ZooKeeper, its session expired or expiring) still
            # believes it coordinates the group and answers from what it holds, as Kafka's
            # ZooKeeper-mode coordinator did until it learned of the expiry: not counted.
            sim.note(f"committed {offsets} at zombie b{node} (not checked)")
            return
        sim.note(f"committed {offsets} at b{node}")
        for p, h in high.items():
            sim.report.commit_checks += 1
            if offsets.get(p, -1) < h:
                sim.report.commit_regressions += 1
                sim.report.examples.append(
                    f"t={trio.current_time():.3f}: b{node} answered committed p{p} "
                    f"{offsets.get(p)} < acknowledged {h}"
                )

    async def coordinator(self) -> int | None:
        node = self.rng.randrange(self.sim.cfg.brokers)
        resp = await self.request(node, ApiKey.FIND_COORDINATOR, 3, {"key": GROUP, "key_type": 0})
        if resp is None or resp.error_code != ErrorCode.NONE:
            return None
        return int(resp.node_id)

    async def commit(self, pos: dict[int, int]) -> None:
        node = await self.coordinator()
        if node is None:
            return
        body = {
            "group_id": GROUP,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": p, "committed_offset": o, "committed_metadata": ""}
                        for p, o in sorted(pos.items())
                    ],
                }
            ],
        }
        resp = await self.request(node, ApiKey.OFFSET_COMMIT, 7, body)
        if resp is None:
            return
        ok = {
            int(p.partition_index): pos[int(p.partition_index)]
            for p in resp.topics[0].partitions
            if p.error_code == ErrorCode.NONE
        }
        if ok:
            self.sim.commits.append({"t": trio.current_time(), "offsets": ok})
            self.sim.note(f"commit {ok} at b{node}")

    async def fetch_committed_once(self) -> tuple[int, dict[int, int]] | None:
        """(node, committed offsets) from one OffsetFetch answered NONE, else None."""
        body = {
            "group_id": GROUP,
            "topics": [{"name": TOPIC, "partition_indexes": list(range(self.sim.cfg.partitions))}],
        }
        node = await self.coordinator()
        if node is None:
            return None
        resp = await self.request(node, ApiKey.OFFSET_FETCH, 7, body)
        if resp is None or resp.error_code != ErrorCode.NONE:
            return None
        return node, {
            int(p.partition_index): int(p.committed_offset)
            for p in resp.topics[0].partitions
            if p.committed_offset >= 0 and p.error_code == ErrorCode.NONE
        }

    async def fetch_committed(self) -> dict[int, int]:
        for _ in range(100):
            fetched = await self.fetch_committed_once()
            if fetched is not None:
                return fetched[1]
            await self.backoff()
        self.sim.report.examples.append("final OffsetFetch failed")
        return {}

    async def read_back(self, p: int) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        offset = 0
        failures = 0
        while True:
            records, nxt, hw = await self.read_from(p, offset)
            if hw < 0:
                failures += 1
                if failures > 100:
                    raise AssertionError(f"seed {self.sim.seed}: read-back of p{p} failed")
                continue
            out.extend(records)
            offset = nxt
            if offset >= hw:
                return out


# -- one run --------------------------------------------------------------------------------


@dataclass
class SimResult:
    seed: int
    report: ChaosReport
    digest: str
    faults: list[str]
    virtual_s: float
    wall_s: float
    trace: list[str]

    @property
    def ok(self) -> bool:
        return self.report.ok

    def summary(self) -> str:
        r = self.report
        kinds = {k: self.faults.count(k) for k in sorted(set(self.faults))}
        return (
            f"seed {self.seed}: {'ok' if self.ok else 'FAILED'} faults {kinds} sends {r.sends} "
            f"acked {r.acked} log {r.log_records} lost {r.lost} misplaced {r.misplaced} "
            f"duplicates {r.duplicates} reorders {r.reorders} gaps {r.gaps} overwritten "
            f"{r.overwritten} ({r.reads_checked} reads) divergent {r.divergent} "
            f"({r.replicas_compared}) epoch regressions {r.epoch_regressions} "
            f"({r.epoch_samples}) commits {r.commits} regressions {r.commit_regressions} "
            f"not healed {r.not_healed} acks after fence {r.acks_after_fence} fenced acks lost "
            f"{r.fenced_acks_lost} ({r.acks_attributed}) failed {dict(r.failed)}; "
            f"{self.virtual_s:.1f} s virtual, "
            f"{self.wall_s:.2f} s wall, digest {self.digest[:16]}"
            + (f"\n  examples: {r.examples[:8]}" if r.examples else "")
        )


def replay_command(seed: int) -> str:
    return f"python tools/reliability/sim.py --seed {seed}"


@contextlib.contextmanager
def _seeded_globals(seed: int) -> Iterator[None]:
    """The process-global randomness a run touches, seeded from `seed` (restored after)."""
    import trio._core._run as trio_run

    trio_state = trio_run._r.getstate()
    deterministic = trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    random_state = random.getstate()
    uuid4 = uuid.uuid4
    ids = random.Random(seed ^ 0x0001D)
    trio_run._r.seed(seed ^ 0x7210)
    # each batch of runnable tasks in task-creation order, then shuffled by the seeded RNG
    # (what hypothesis turns on): otherwise the order tasks were woken in, which may follow
    # the iteration order of sets of objects (their addresses), would leak into the run
    trio_run._ALLOW_DETERMINISTIC_SCHEDULING = True  # type: ignore[misc]
    random.seed(seed ^ 0x9A4D)
    uuid.uuid4 = lambda: uuid.UUID(int=ids.getrandbits(128), version=4)  # type: ignore[assignment]
    try:
        yield
    finally:
        uuid.uuid4 = uuid4  # type: ignore[assignment]
        random.setstate(random_state)
        trio_run._ALLOW_DETERMINISTIC_SCHEDULING = deterministic  # type: ignore[misc]
        trio_run._r.setstate(trio_state)


def run_seed(seed: int, cfg: SimConfig | None = None) -> SimResult:
    """One whole simulated run (a fresh trio run: call it outside any trio run)."""
    cfg = cfg or SimConfig()
    shm = Path("/dev/shm")  # tmpfs when there is one: fsync costs nothing there
    root = Path(tempfile.mkdtemp(prefix=f"wb-sim-{seed}-", dir=shm if shm.is_dir() else None))
    t0 = time.perf_counter()
    clock = trio.testing.MockClock(autojump_threshold=0)
    sim = Sim(seed, cfg, root)
    try:
        with _seeded_globals(seed):
            trio.run(sim.main, clock=clock)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    wall = time.perf_counter() - t0
    sim.trace.append(f"report {sim.report.summary()}")
    digest = hashlib.sha256("\n".join(sim.trace).encode()).hexdigest()
    return SimResult(seed, sim.report, digest, sim.faults, clock.current_time(), wall, sim.trace)
