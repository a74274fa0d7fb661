"""Power loss on every replica at once: a `FileSystem` that forgets what was not fsynced.

`PowerLossFileSystem(roots)` wraps `OsFileSystem`: the real files are the page cache (every
read sees the latest write), and beside them it keeps a model of what a power cut would
leave on the device, under the rules of POSIX fsync (ext4/xfs without `data=journal`, the
worst case Kafka's recovery is built for):

    file content      the bytes as of the file's last `fsync` (a new file: empty)
    directory entry   as of the last `fsync_dir` of its directory: a file or directory
                      created, renamed in or removed since then reverts (a new file whose
                      directory was never fsynced disappears, whatever its own fsyncs)

Model (one `_Node` per file or directory, identity = the object, so a rename moves it):

    _Node.durable            file: content at the last fsync
    _Node.dirty_from         file: lowest offset written or truncated since (None: clean)
    _Node.children           directory: the current entries (mirror of the real directory)
    _Node.durable_children   directory: the entries at its last fsync_dir

Writes are appends (O_APPEND: at the file size) or sequential from the current position
(`write_file*`: after O_TRUNC), so bytes below `dirty_from` are still the durable ones and an
fsync costs only the bytes written since: durable = durable[:dirty_from] + file[dirty_from:].
Every path below a root is tracked (the roots' trees are scanned at construction and after
each power loss: what is on disk then counts as durable); paths outside the roots pass
through untouched, as do files another writer created (the broker's `.lock`).

A power loss in two steps, so brokers can be stopped between them the way an in-process test
can stop them (cancellation, which still closes logs and writes checkpoints):

    cut()          the instant of the power loss: snapshot the durable tree (`_Snap`);
                   whatever happens later (the brokers' shutdown flushes) is page cache only
    power_loss()   with every file closed: rewrite the real trees to the snapshot (remove the
                   entries the snapshot lacks, recreate the ones it has, rewind the content
                   of every file), then rescan; returns what was thrown away

The cluster scenario built on it (`run_power_loss`) is described in its docstring.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from _chaos import ChaosReport, check_log, ident_of, payload
from _memory_cluster import BROKER_OVERRIDES, CLUSTER_ID, Cluster, Node

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch
from wirebroker.broker import Broker
from wirebroker.config import BrokerConfig
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.log.fs import Buffer, OsFileSystem
from wirebroker.replication.broker_client import BrokerConnection, BrokerConnectionError


class _Node:
    __slots__ = ("children", "dirty_from", "durable", "durable_children", "is_dir")

    def __init__(self, is_dir: bool, durable: bytes = b"") -> None:
        self.is_dir = is_dir
        self.durable = durable
        self.dirty_from: int | None = None
        self.children: dict[str, _Node] = {}
        self.durable_children: dict[str, _Node] = {}

    def mark(self, offset: int) -> None:
        if self.dirty_from is None or offset < self.dirty_from:
            self.dirty_from = offset


@dataclass(frozen=True)
class _Snap:
    """One node of the durable tree at the cut."""

    node: _Node
    data: bytes | None  # file content (None: a directory)
    children: dict[str, _Snap] | None  # directory entries (None: a file)


def _scan(path: Path) -> _Node:
    """The tree at `path` as it is on disk, all of it durable."""
    if path.is_dir():
        node = _Node(True)
        for name in os.listdir(path):
            child = path / name
            if child.is_dir() or child.is_file():
                node.children[name] = _scan(child)
        node.durable_children = dict(node.children)
        return node
    return _Node(False, path.read_bytes())


def _snap(node: _Node) -> _Snap:
    if not node.is_dir:
        return _Snap(node, node.durable, None)
    return _Snap(node, None, {n: _snap(c) for n, c in node.durable_children.items()})


def _read_from(fd: int, start: int, end: int) -> bytes:
    """Bytes [start, end) of the file open as `fd`, which may be write-only (read through
    a second descriptor of the same file, Linux's /proc/self/fd)."""
    rfd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
    try:
        parts = []
        while start < end:
            chunk = os.pread(rfd, end - start, start)
            if not chunk:
                break
            parts.append(chunk)
            start += len(chunk)
        return b"".join(parts)
    finally:
        os.close(rfd)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


@dataclass
class PowerLossStats:
    """What a power loss threw away (files compared with their durable content)."""

    files_rewound: int = 0
    bytes_lost: int = 0
    entries_removed: int = 0
    entries_restored: int = 0


class PowerLossFileSystem(OsFileSystem):
    """`OsFileSystem` plus the durable-state model of the module docstring."""

    def __init__(self, roots: list[Path]) -> None:
        self._lock = threading.Lock()  # fsync_dirs calls fsync_dir from threads
        self._roots: dict[Path, _Node] = {}
        for root in roots:
            root = Path(os.path.abspath(root))
            root.mkdir(parents=True, exist_ok=True)
            self._roots[root] = _scan(root)
        self._fds: dict[int, tuple[_Node, bool]] = {}
        self._frozen: dict[Path, _Snap] | None = None
        self.fsyncs = 0
        self.dir_fsyncs = 0

    # -- the model ----------------------------------------------------------------------------
    def _find_root(self, path: Path) -> tuple[Path, tuple[str, ...]] | None:
        path = Path(os.path.abspath(path))
        for root in self._roots:
            if path == root or root in path.parents:
                return root, path.relative_to(root).parts
        return None

    def _resolve(self, path: Path) -> _Node | None:
        found = self._find_root(path)
        if found is None:
            return None
        node: _Node | None = self._roots[found[0]]
        for part in found[1]:
            if node is None or not node.is_dir:
                return None
            node = node.children.get(part)
        return node

    def _parent(self, path: Path) -> tuple[_Node | None, str]:
        path = Path(os.path.abspath(path))
        found = self._find_root(path)
        if found is None or not found[1]:
            return None, path.name
        parent = self._resolve(path.parent)
        return (parent if parent is not None and parent.is_dir else None), path.name

    # -- FileSystem ---------------------------------------------------------------------------
    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        parent, name = self._parent(path)
        untracked = parent is not None and name not in parent.children and os.path.isfile(path)
        if untracked:  # written by someone else: take it as durable
            assert parent is not None
            with self._lock:
                parent.children[name] = parent.durable_children[name] = _scan(Path(path))
        fd = super().open(path, flags, mode)
        if parent is None:
            return fd
        with self._lock:
            node = parent.children.get(name)
            if node is None:
                node = parent.children[name] = _Node(False)
            if flags & os.O_TRUNC:
                node.mark(0)
            self._fds[fd] = (node, bool(flags & os.O_APPEND))
        return fd

    def close(self, fd: int) -> None:
        with self._lock:
            self._fds.pop(fd, None)
        super().close(fd)

    def write(self, fd: int, data: Buffer) -> int:
        entry = self._fds.get(fd)
        if entry is None:
            return super().write(fd, data)
        node, append = entry
        offset = os.fstat(fd).st_size if append else os.lseek(fd, 0, os.SEEK_CUR)
        n = super().write(fd, data)
        if n > 0:
            with self._lock:
                node.mark(offset)
        return n

    def ftruncate(self, fd: int, length: int) -> None:
        entry = self._fds.get(fd)
        size = os.fstat(fd).st_size
        super().ftruncate(fd, length)
        if entry is not None:
            with self._lock:
                entry[0].mark(min(length, size))

    def fsync(self, fd: int) -> None:
        super().fsync(fd)
        self.fsyncs += 1
        entry = self._fds.get(fd)
        if entry is None:
            return
        node = entry[0]
        with self._lock:
            start = node.dirty_from
            if start is None:
                return
            size = os.fstat(fd).st_size
            tail = _read_from(fd, start, size) if size > start else b""
            node.durable = node.durable[:start] + tail
            node.dirty_from = None

    def rename(self, src: Path, dst: Path) -> None:
        sp, sn = self._parent(src)
        dp, dn = self._parent(dst)
        super().rename(src, dst)
        with self._lock:
            node = sp.children.pop(sn, None) if sp is not None else None
            if dp is not None:
                dp.children[dn] = node if node is not None else _scan(Path(dst))

    def unlink(self, path: Path) -> None:
        parent, name = self._parent(path)
        super().unlink(path)
        if parent is not None:
            with self._lock:
                parent.children.pop(name, None)

    def makedirs(self, path: Path) -> None:
        super().makedirs(path)
        found = self._find_root(path)
        if found is None:
            return
        with self._lock:
            node = self._roots[found[0]]
            for part in found[1]:
                child = node.children.get(part)
                if child is None:
                    child = node.children[part] = _Node(True)
                node = child

    def rmtree(self, path: Path) -> None:
        parent, name = self._parent(path)
        super().rmtree(path)
        if parent is not None:
            with self._lock:
                parent.children.pop(name, None)

    def fsync_dir(self, path: Path) -> None:
        super().fsync_dir(path)
        self.dir_fsyncs += 1
        node = self._resolve(path)
        if node is not None and node.is_dir:
            with self._lock:
                node.durable_children = dict(node.children)

    # -- power loss ---------------------------------------------------------------------------
    def cut(self) -> None:
        """The power goes out now: later writes and fsyncs no longer reach the device."""
        with self._lock:
            if self._frozen is None:
                self._frozen = {root: _snap(node) for root, node in self._roots.items()}

    def power_loss(self) -> PowerLossStats:
        """Rewind every tree to its state at `cut()` (called now if it was not); the files
        must all be closed (the brokers stopped). Returns what was thrown away."""
        self.cut()
        assert self._frozen is not None
        if self._fds:
            raise RuntimeError(f"{len(self._fds)} files still open at the power loss")
        stats = PowerLossStats()
        for root, snap in self._frozen.items():
            assert snap.children is not None
            self._restore(root, self._roots[root].children, snap.children, stats)
        self._roots = {root: _scan(root) for root in self._roots}
        self._frozen = None
        return stats

    def _restore(
        self, path: Path, current: dict[str, _Node], durable: dict[str, _Snap], stats: Any
    ) -> None:
        for name, node in current.items():
            snap = durable.get(name)
            if snap is None or snap.node is not node:
                _remove(path / name)
                stats.entries_removed += 1
        for name, snap in durable.items():
            real = path / name
            same = current.get(name) is snap.node
            if same and snap.data is not None and real.is_file():
                now = real.read_bytes()
                if now != snap.data:
                    stats.files_rewound += 1
                    stats.bytes_lost += max(0, len(now) - len(snap.data))
                    real.write_bytes(snap.data)
            elif same and snap.children is not None and real.is_dir():
                self._restore(real, snap.node.children, snap.children, stats)
            else:
                stats.entries_restored += 1
                self._materialize(real, snap)

    def _materialize(self, path: Path, snap: _Snap) -> None:
        _remove(path)
        if snap.data is not None:
            path.write_bytes(snap.data)
            return
        path.mkdir()
        assert snap.children is not None
        for name, child in snap.children.items():
            self._materialize(path / name, child)


# -- the cluster scenario ---------------------------------------------------------------------
TOPIC = "power"
PARTITIONS = 3
BATCH = 5
PRODUCER = "idem"
RETRIABLE = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.KAFKA_STORAGE_ERROR,
}


@dataclass
class PowerLossReport:
    """The figures of one run (`run_power_loss`)."""

    mode: str
    check: ChaosReport
    load_s: float = 0.0
    acked_per_s: float = 0.0
    fsyncs: int = 0
    fs: PowerLossStats = field(default_factory=PowerLossStats)
    lost_by_partition: Counter[int] = field(default_factory=Counter)
    acked_by_partition: Counter[int] = field(default_factory=Counter)
    recovered_s: float = 0.0
    leaders: dict[int, int] = field(default_factory=dict)
    replicas_equal: bool = False
    writable_after: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def recovered(self) -> bool:
        return self.replicas_equal and self.writable_after and not self.errors

    def summary(self) -> str:
        c = self.check
        return (
            f"{self.mode}: {c.acked} acked (acks=all, idempotent) in {self.load_s:.1f} s "
            f"({self.acked_per_s:.0f}/s, {self.fsyncs} fsyncs); after the power loss on all "
            f"3 brokers: lost {c.lost} of {c.acked} acknowledged "
            f"(per partition {dict(sorted(self.lost_by_partition.items()))}), duplicates "
            f"{c.duplicates}, gaps {c.gaps}, misplaced {c.misplaced}, reorders {c.reorders}; "
            f"page cache thrown away: {self.fs.bytes_lost} bytes in {self.fs.files_rewound} "
            f"files, {self.fs.entries_removed} entries removed; recovery: leaders "
            f"{self.leaders} in {self.recovered_s:.1f} s, replicas equal to the HW "
            f"{self.replicas_equal}, writable {self.writable_after}"
            + (f"; errors {self.errors}" if self.errors else "")
        )


def _config(root: Path, node: int, overrides: dict[str, str]) -> BrokerConfig:
    return BrokerConfig(
        {
            "node.id": str(node),
            "log.dirs": str(root / f"broker{node}"),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "cluster.id": CLUSTER_ID,
            **BROKER_OVERRIDES,
            # a power cut gives no time for it; it would also move leaderships in ZooKeeper
            "controlled.shutdown.enable": "false",
            **overrides,
        }
    )


async def _serve(node: Node, *, task_status: trio.TaskStatus[tuple[str, int]]) -> None:
    try:
        with node.scope:
            async with trio.open_nursery() as nursery:
                bound = await nursery.start(node.broker.serve)
                task_status.started(bound[0])
    finally:
        node.stopped.set()


async def start_brokers(
    nursery: trio.Nursery,
    server: MemoryZooKeeper,
    observer: MemoryCoordination,
    root: Path,
    fs: PowerLossFileSystem,
    overrides: dict[str, str] | None = None,
    count: int = 3,
) -> Cluster:
    """`count` brokers over `server`, every log file through `fs`; returns once each one sees
    them all registered."""
    nodes = []
    for n in range(count):
        coord = MemoryCoordination(server)
        broker = Broker(_config(root, n, overrides or {}), grace_s=1.0, coordination=coord, fs=fs)
        nodes.append(Node(broker, coord))
    for node in nodes:
        node.address = await nursery.start(_serve, node)
    cluster = Cluster(server, nodes, observer)
    await _until(
        lambda: all(
            n.broker.member is not None and len(n.broker.member.cache.brokers) == count
            for n in nodes
        ),
        "every broker sees every broker",
    )
    return cluster


async def _until(check: Any, what: str, timeout: float = 30.0) -> float:
    start = trio.current_time()
    with trio.move_on_after(timeout):
        while True:
            result = check()
            if not isinstance(result, bool):
                result = await result
            if result:
                return trio.current_time() - start
            await trio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for: {what}")


@dataclass
class _Load:
    cluster: Cluster
    producer_id: int
    producer_epoch: int
    counter: itertools.count[int] = field(default_factory=itertools.count)
    acked: dict[str, tuple[int, int]] = field(default_factory=dict)
    cut: bool = False
    errors: Counter[str] = field(default_factory=Counter)


async def _init_producer(cluster: Cluster, node: int) -> tuple[int, int]:
    body = {
        "transactional_id": None,
        "transaction_timeout_ms": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    resp = await cluster.request(node, ApiKey.INIT_PRODUCER_ID, 4, body)
    assert resp.error_code == 0, ErrorCode(resp.error_code).name
    return int(resp.producer_id), int(resp.producer_epoch)


async def _produce_partition(load: _Load, p: int) -> None:
    """An idempotent acks=all producer of partition `p`: batches of BATCH records, one in
    flight, each retried with the same sequence until acknowledged (Kafka's idempotent
    retry). Acknowledgements that arrive after the cut are not counted: a client cannot
    receive them from a broker without power."""
    sequence = 0
    conn: BrokerConnection | None = None
    try:
        while not load.cut:
            seqs = [next(load.counter) for _ in range(BATCH)]
            values = [payload(PRODUCER, s) for s in seqs]
            batch = build_batch(
                [(None, v) for v in values],
                base_timestamp=int(time.time() * 1000),
                producer_id=load.producer_id,
                producer_epoch=load.producer_epoch,
                base_sequence=sequence,
            )
            body = {
                "transactional_id": None,
                "acks": -1,
                "timeout_ms": 5000,
                "topic_data": [{"name": TOPIC, "partition_data": [{"index": p, "records": batch}]}],
            }
            while not load.cut:
                if conn is None:
                    state, _ = await load.cluster.state(TOPIC, p)
                    if state.leader < 0:
                        await trio.sleep(0.05)
                        continue
                    try:
                        conn = await load.cluster.connect(state.leader)
                    except BrokerConnectionError:
                        await trio.sleep(0.05)
                        continue
                try:
                    with trio.fail_after(8):
                        resp = await conn.request(ApiKey.PRODUCE, 9, body)
                except (BrokerConnectionError, trio.TooSlowError) as exc:
                    load.errors[type(exc).__name__] += 1
                    await conn.aclose()
                    conn = None
                    continue
                part = resp.responses[0].partition_responses[0]
                code = ErrorCode(part.error_code)
                if code == ErrorCode.NONE:
                    if not load.cut:
                        for i, v in enumerate(values):
                            load.acked[ident_of(v)] = (p, int(part.base_offset) + i)
                    sequence += BATCH
                    break
                load.errors[code.name] += 1
                if code not in RETRIABLE:
                    raise AssertionError(f"p{p}: produce failed with {code.name}")
                await conn.aclose()
                conn = None
                await trio.sleep(0.05)
    finally:
        if conn is not None:
            with trio.CancelScope(shield=True):
                await conn.aclose()


async def _settled(cluster: Cluster) -> dict[int, int] | None:
    """{partition: leader} once every partition has a leader with the full ISR that leads
    it, and each follower has caught up to the leader's log end; else None."""
    leaders = {}
    for p in range(PARTITIONS):
        state, _ = await cluster.state(TOPIC, p)
        if state.leader < 0 or len(state.isr) != len(cluster.nodes):
            return None
        parts = [n.broker.replicas.partition(TOPIC, p) for n in cluster.nodes]
        if any(x is None for x in parts):
            return None
        leader = parts[state.leader]
        assert leader is not None
        if not leader.is_leader:
            return None
        if any(x.log_end_offset != leader.log_end_offset for x in parts if x is not None):
            return None
        if leader.high_watermark != leader.log_end_offset:
            return None
        leaders[p] = state.leader
    return leaders


def _replicas_equal(parts: list[Any]) -> bool:
    """The replicas hold the same bytes below the smallest of their high watermarks."""
    hw = min(x.high_watermark for x in parts)
    copies = {x.log.read(x.log_start_offset, max_bytes=1 << 30, max_offset=hw) for x in parts}
    return len(copies) == 1


async def _check_after_restart(
    cluster: Cluster, settled: dict[int, int], load: _Load, report: PowerLossReport
) -> None:
    """With every partition led again: replicas equal, the history checked against the
    acknowledgements before the cut, and each partition writable."""
    report.replicas_equal = all(
        _replicas_equal([n.part(TOPIC, p) for n in cluster.nodes]) for p in range(PARTITIONS)
    )
    records = {p: await cluster.read_all(settled[p], TOPIC, p) for p in range(PARTITIONS)}
    check_log(records, load.acked, report.check, dense=True)
    for ident in report.check.lost_ids:
        report.lost_by_partition[load.acked[ident][0]] += 1
    for p, _off in load.acked.values():
        report.acked_by_partition[p] += 1
    report.writable_after = True
    for p in range(PARTITIONS):
        code, _ = await cluster.produce(settled[p], TOPIC, p, [b"after-%d" % p])
        if code != 0:
            report.writable_after = False
            report.errors.append(f"p{p}: produce after: {ErrorCode(code).name}")


async def run_power_loss(
    root: Path,
    *,
    flush_messages: int | None,
    load_s: float = 3.0,
    log: Any = lambda _line: None,
) -> PowerLossReport:
    """One run: 3 brokers (one in-memory ZooKeeper, every log through one
    `PowerLossFileSystem`), topic `power` (3 partitions, RF 3, min.insync.replicas 2,
    `flush.messages` = `flush_messages`, or Kafka's default: never), one idempotent acks=all
    producer per partition for `load_s` seconds; then, while it still runs, the power goes out
    on all three brokers at once: `cut()`, the brokers are stopped (no controlled shutdown;
    what their shutdown writes is lost with the rest of the page cache), the files rewound,
    the brokers restarted on the same ZooKeeper. Checked: every partition gets a leader and
    its full ISR back, the replicas hold the same bytes below the HW, the partitions take
    new writes, and the history checker (`_chaos.check_log`, dense offsets) compares the read
    back log with every acknowledgement received before the cut."""
    mode = "default flush" if flush_messages is None else f"flush.messages={flush_messages}"
    report = PowerLossReport(mode=mode, check=ChaosReport(seed=0))
    fs = PowerLossFileSystem([root / f"broker{n}" for n in range(3)])
    server = MemoryZooKeeper()
    observer = MemoryCoordination(server)
    configs = {"min.insync.replicas": "2"}
    if flush_messages is not None:
        configs["flush.messages"] = str(flush_messages)
    async with trio.open_nursery() as outer:
        await outer.start(observer.run)
        async with trio.open_nursery() as nursery:
            cluster = await start_brokers(nursery, server, observer, root, fs)
            code = await cluster.create_topic(0, TOPIC, PARTITIONS, 3, configs=configs)
            assert code == 0, ErrorCode(code).name
            await _until(lambda: _settled(cluster), "the topic's leaders and ISRs")
            pid, epoch = await _init_producer(cluster, 0)
            load = _Load(cluster, pid, epoch)
            fsyncs0 = fs.fsyncs
            async with trio.open_nursery() as producers:
                for p in range(PARTITIONS):
                    producers.start_soon(_produce_partition, load, p)
                t0 = trio.current_time()
                await trio.sleep(load_s)
                # the power goes out
                fs.cut()
                load.cut = True
                report.load_s = trio.current_time() - t0
                report.fsyncs = fs.fsyncs - fsyncs0
                producers.cancel_scope.cancel()
            report.check.acked = len(load.acked)
            report.check.sends = next(load.counter)
            report.acked_per_s = len(load.acked) / report.load_s
            log(f"{mode}: {len(load.acked)} acked in {report.load_s:.1f} s; cutting the power")
            for node in cluster.nodes:
                node.scope.cancel()
            for node in cluster.nodes:
                await node.stopped.wait()
            nursery.cancel_scope.cancel()
        report.fs = fs.power_loss()
        log(f"{mode}: power back; {report.fs}")
        async with trio.open_nursery() as nursery:
            t0 = trio.current_time()
            cluster = await start_brokers(nursery, server, observer, root, fs)
            try:
                await _until(lambda: _settled(cluster), "leaders and full ISRs after the restart")
            except AssertionError as exc:
                report.errors.append(str(exc))
            report.recovered_s = trio.current_time() - t0
            settled = await _settled(cluster)
            report.leaders = dict(settled or {})
            if settled is not None:
                await _check_after_restart(cluster, settled, load, report)
            for node in cluster.nodes:
                node.scope.cancel()
            nursery.cancel_scope.cancel()
        outer.cancel_scope.cancel()
    report.check.failed.update(load.errors)
    return report


__all__ = [
    "PowerLossFileSystem",
    "PowerLossReport",
    "PowerLossStats",
    "run_power_loss",
    "start_brokers",
]
