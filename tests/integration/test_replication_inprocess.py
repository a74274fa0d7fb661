"""Replication between three in-process brokers, without ZooKeeper.

Three `Broker`s run in one trio run, on port 0, each with its own data directory and node id,
in multi-broker mode (`replicated=True`). The test plays the cluster layer: it gives every
broker the others' addresses, creates the topic on broker 0 through its admin and installs the
same `TopicInfo` (same topic id) on the others, assigns leadership by hand (`make_leader` on
one, `make_follower` on the rest) and stores ISR changes with `StubZk`, which commits a
proposal at once when its partition epoch matches (a CAS on the state znode) and tells every
broker, or rejects it. A raw-protocol client (`BrokerConnection`) produces.

Timing is real (sockets are real): small replica.lag.time.max.ms and fetch waits, and waits
that poll with a bounded deadline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch, iter_batches
from wirebroker.broker import Broker
from wirebroker.config import BrokerConfig
from wirebroker.log.log_manager import REPLICATION_OFFSET_CHECKPOINT
from wirebroker.replication import fetcher as fetcher_module
from wirebroker.replication.broker_client import BrokerConnection
from wirebroker.replication.fetcher import _LeaderFetcher
from wirebroker.replication.partition import Partition, Role

TOPIC = "rep"
LAG_MS = 1500
DEADLINE_S = 20.0
CLUSTER_ID = "cLuSt3r-1d-0000000000"


@dataclass
class StubZk:
    """The partition state znode of each partition; ISR changes are CAS'ed on its version."""

    brokers: list[Broker]
    state: dict[tuple[str, int], dict[str, object]] = field(default_factory=dict)
    proposals: list[tuple[int, list[int]]] = field(default_factory=list)
    rejected: int = 0

    def propose_isr(
        self, topic: str, index: int, *, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None:
        current = self.state[(topic, index)]
        self.proposals.append((partition_epoch, list(isr)))
        if (current["partition_epoch"], current["leader_epoch"]) != (partition_epoch, leader_epoch):
            self.rejected += 1
            for b in self.brokers:
                part = b.replicas.partition(topic, index)
                if part is not None and part.is_leader and part.leader_epoch == leader_epoch:
                    b.replicas.isr_rejected(topic, index)
            return
        new_epoch = partition_epoch + 1
        current.update(partition_epoch=new_epoch, isr=list(isr))
        for b in self.brokers:
            b.replicas.isr_committed(topic, index, isr=isr, partition_epoch=new_epoch)

    def elect(
        self,
        topic: str,
        index: int,
        leader: int,
        isr: list[int],
        replicas: list[int],
        *,
        tell: list[int] | None = None,
    ) -> int:
        """What a controller does: a new leader epoch, a new znode version, the brokers `tell`
        (default: every one) told at once; `tell_one` tells the others later."""
        cur = self.state.get((topic, index))
        leader_epoch = 1 if cur is None else _int(cur["leader_epoch"]) + 1
        partition_epoch = 1 if cur is None else _int(cur["partition_epoch"]) + 1
        self.state[(topic, index)] = {
            "leader": leader,
            "leader_epoch": leader_epoch,
            "partition_epoch": partition_epoch,
            "isr": list(isr),
            "replicas": list(replicas),
        }
        for node in range(len(self.brokers)) if tell is None else tell:
            self.tell_one(topic, index, node)
        return leader_epoch

    def tell_one(self, topic: str, index: int, node: int) -> None:
        """Broker `node` learns the partition's current state (its state znode watch fired)."""
        st = self.state[(topic, index)]
        b = self.brokers[node]
        leader = _int(st["leader"])
        leader_epoch, partition_epoch = _int(st["leader_epoch"]), _int(st["partition_epoch"])
        isr, replicas = _ints(st["isr"]), _ints(st["replicas"])
        if _node(b) == leader:
            b.replicas.make_leader(
                topic,
                index,
                leader_epoch=leader_epoch,
                isr=isr,
                replicas=replicas,
                partition_epoch=partition_epoch,
                now_ms=b.clock(),
            )
        else:
            b.replicas.make_follower(
                topic,
                index,
                leader_id=leader,
                leader_epoch=leader_epoch,
                isr=isr,
                replicas=replicas,
                partition_epoch=partition_epoch,
                now_ms=b.clock(),
            )


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value


def _ints(value: object) -> list[int]:
    assert isinstance(value, list)
    return [_int(v) for v in value]


def _node(b: Broker) -> int:
    return b.config.node_id


@dataclass
class Cluster:
    brokers: list[Broker]
    zk: StubZk
    addresses: dict[int, tuple[str, int]]

    def part(self, node: int) -> Partition:
        p = self.brokers[node].replicas.partition(TOPIC, 0)
        assert p is not None
        return p

    async def client(self, node: int) -> BrokerConnection:
        host, port = self.addresses[node]
        return await BrokerConnection.open(host, port, client_id="test", max_frame_bytes=1 << 26)


def _config(root: Path, node: int, **overrides: str) -> BrokerConfig:
    return BrokerConfig(
        {
            "node.id": str(node),
            "log.dirs": str(root / f"broker{node}"),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "cluster.id": CLUSTER_ID,
            "replica.lag.time.max.ms": str(LAG_MS),
            "replica.fetch.wait.max.ms": "100",
            "replica.fetch.backoff.ms": "50",
            "replica.high.watermark.checkpoint.interval.ms": "200",
            **overrides,
        }
    )


@asynccontextmanager
async def _running(root: Path, *topics: str, **overrides: str) -> AsyncIterator[Cluster]:
    """Three brokers with `overrides`, hosting partition 0 of TOPIC and of each of `topics`
    (min.insync.replicas 2, no roles yet)."""
    brokers = [
        Broker(_config(root, n, **overrides), grace_s=1.0, replicated=True) for n in range(3)
    ]
    zk = StubZk(brokers)
    async with trio.open_nursery() as nursery:
        addresses = {}
        for n, b in enumerate(brokers):
            bound = await nursery.start(b.serve)
            addresses[n] = bound[0]
        for b in brokers:
            b.peer_endpoints.update({n: a for n, a in addresses.items() if n != _node(b)})
            b.replicas.isr_listener = zk
        for name in (TOPIC, *topics):
            info = brokers[0].admin.create_topic(
                name, 1, configs={"min.insync.replicas": "2"}, now_ms=brokers[0].clock()
            )
            for b in brokers[1:]:
                b.topics.put(info)
                b.replicas.ensure_partition(info, 0, now_ms=b.clock())
        yield Cluster(brokers, zk, addresses)
        nursery.cancel_scope.cancel()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with _running(tmp_path) as c:
        yield c


async def eventually(check: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    with trio.move_on_after(timeout) as scope:
        while not check():
            await trio.sleep(0.02)
    assert not scope.cancelled_caught, f"timed out waiting for: {what}"


async def produce(
    conn: BrokerConnection, values: list[bytes], *, acks: int = -1, timeout_ms: int = 5000
) -> tuple[int, int]:
    """(error code, base offset) of one batch."""
    batch = build_batch([(None, v) for v in values], base_timestamp=1_700_000_000_000)
    body = {
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }
    resp = await conn.request(ApiKey.PRODUCE, 9, body)
    p = resp.responses[0].partition_responses[0]
    return int(p.error_code), int(p.base_offset)


def committed_bytes(part: Partition) -> bytes:
    """The log's batches below the high watermark, as stored."""
    return part.log.read(part.log_start_offset, max_bytes=1 << 30, max_offset=part.high_watermark)


def values_below_hw(part: Partition) -> list[int]:
    data = committed_bytes(part)
    return [h.base_offset for _pos, h in iter_batches(data)]


async def test_followers_replicate_isr_shrinks_and_expands(cluster: Cluster) -> None:
    zk = cluster.zk
    zk.elect(TOPIC, 0, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2])
    leader = cluster.part(0)
    assert leader.role is Role.LEADER
    assert [cluster.part(n).role for n in (1, 2)] == [Role.FOLLOWER, Role.FOLLOWER]
    conn = await cluster.client(0)

    # acks=all: answered once both followers have the records
    for i in range(10):
        code, base = await produce(conn, [b"v%d-%d" % (i, j) for j in range(5)])
        assert (code, base) == (ErrorCode.NONE, 5 * i)
    assert leader.high_watermark == 50
    await eventually(
        lambda: all(cluster.part(n).high_watermark == 50 for n in range(3)), "follower HWs"
    )
    assert committed_bytes(cluster.part(1)) == committed_bytes(leader)
    assert committed_bytes(cluster.part(2)) == committed_bytes(leader)

    # a follower answers clients NOT_LEADER_OR_FOLLOWER
    follower_conn = await cluster.client(1)
    assert (await produce(follower_conn, [b"x"]))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER

    # follower 2 stops: acks=all cannot complete while it is in the ISR...
    cluster.brokers[2].fetchers.unfollow(TOPIC, 0)  # type: ignore[union-attr]
    code, _ = await produce(conn, [b"late"], timeout_ms=100)
    assert code == ErrorCode.REQUEST_TIMED_OUT
    # ...until the leader drops it after replica.lag.time.max.ms
    await eventually(lambda: leader.isr == [0, 1], "ISR shrink to [0, 1]")
    assert zk.state[(TOPIC, 0)]["isr"] == [0, 1]
    assert cluster.part(1).isr == [0, 1]  # every broker heard of the commit
    code, _ = await produce(conn, [b"two"])
    assert code == ErrorCode.NONE

    # follower 1 stops too and falls behind (a stopped follower at the leader's end stays in
    # sync, as in Kafka): the ISR goes below min.insync.replicas=2
    cluster.brokers[1].fetchers.unfollow(TOPIC, 0)  # type: ignore[union-attr]
    hw = leader.high_watermark
    assert (await produce(conn, [b"acks=1"], acks=1))[0] == ErrorCode.NONE
    await eventually(lambda: leader.isr == [0], "ISR shrink to [0]")
    code, _ = await produce(conn, [b"refused"])
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert leader.high_watermark == hw  # not advanced below min.insync.replicas (Kafka 3.9)

    # both come back: they catch up and rejoin the ISR
    for n in (1, 2):
        part = cluster.part(n)
        cluster.brokers[n].fetchers.follow(TOPIC, 0, part.leader_id, part.leader_epoch)  # type: ignore[union-attr]
    await eventually(lambda: sorted(leader.isr) == [0, 1, 2], "ISR expansion")
    code, _ = await produce(conn, [b"all back"])
    assert code == ErrorCode.NONE
    end = leader.log_end_offset
    await eventually(
        lambda: all(cluster.part(n).high_watermark == end for n in range(3)), "catch-up"
    )
    for n in (1, 2):
        assert committed_bytes(cluster.part(n)) == committed_bytes(leader)
    await conn.aclose()
    await follower_conn.aclose()


async def test_leader_change_truncates_the_old_leaders_divergent_suffix(
    cluster: Cluster,
) -> None:
    zk = cluster.zk
    zk.elect(TOPIC, 0, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2])
    conn0 = await cluster.client(0)
    for i in range(3):
        assert (await produce(conn0, [b"a%d" % i]))[0] == ErrorCode.NONE
    await eventually(
        lambda: all(cluster.part(n).log_end_offset == 3 for n in range(3)), "replicated"
    )
    # the followers stop; leader 0 takes acks=1 writes nobody else has
    for n in (1, 2):
        cluster.brokers[n].fetchers.unfollow(TOPIC, 0)  # type: ignore[union-attr]
    for i in range(4):
        assert (await produce(conn0, [b"lost%d" % i], acks=1))[0] == ErrorCode.NONE
    assert cluster.part(0).log_end_offset == 7
    assert cluster.part(1).log_end_offset == 3

    # the controller moves leadership to 1 (epoch 2); 1 takes new writes
    epoch = zk.elect(TOPIC, 0, leader=1, isr=[1, 2], replicas=[0, 1, 2])
    assert epoch == 2
    conn1 = await cluster.client(1)
    for i in range(2):
        code, base = await produce(conn1, [b"new%d" % i, b"new%d'" % i])
        assert (code, base) == (ErrorCode.NONE, 3 + 2 * i)
    # the old leader, now a follower, truncates to 3 and copies the new leader's log
    await eventually(
        lambda: (
            committed_bytes(cluster.part(0)) == committed_bytes(cluster.part(1))
            and cluster.part(0).log_end_offset == 7
        ),
        "old leader converges",
    )
    await eventually(lambda: sorted(cluster.part(1).isr) == [0, 1, 2], "old leader rejoins")
    data = cluster.part(0).log.read(0, max_bytes=1 << 30)
    assert b"lost" not in data and b"new1'" in data
    assert cluster.part(0).epoch_entries() == cluster.part(1).epoch_entries() == [(1, 0), (2, 3)]
    assert [cluster.part(n).log_end_offset for n in range(3)] == [7, 7, 7]

    # the old leader's stale proposals are refused: a zombie cannot change the ISR
    rejected = zk.rejected
    zk.propose_isr(TOPIC, 0, leader_epoch=1, partition_epoch=1, isr=[0])
    assert zk.rejected == rejected + 1
    await conn0.aclose()
    await conn1.aclose()


async def test_follower_behind_the_leaders_log_start_starts_over_there(
    cluster: Cluster,
) -> None:
    """OFFSET_OUT_OF_RANGE: the leader deleted records a stopped follower never got; the
    follower empties its log and restarts at the leader's log start."""
    cluster.zk.elect(TOPIC, 0, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2])
    leader = cluster.part(0)
    conn = await cluster.client(0)
    for i in range(3):
        assert (await produce(conn, [b"a%d" % i]))[0] == ErrorCode.NONE
    await eventually(lambda: cluster.part(2).log_end_offset == 3, "replicated")
    cluster.brokers[2].fetchers.unfollow(TOPIC, 0)  # type: ignore[union-attr]
    assert (await produce(conn, [b"b"], acks=1))[0] == ErrorCode.NONE
    await eventually(lambda: leader.isr == [0, 1], "ISR shrink")
    for i in range(4):
        assert (await produce(conn, [b"c%d" % i]))[0] == ErrorCode.NONE
    assert leader.high_watermark == 8
    leader.delete_records_before(6)
    await eventually(lambda: cluster.part(1).log_start_offset == 6, "follower 1 follows")
    part2 = cluster.part(2)
    cluster.brokers[2].fetchers.follow(TOPIC, 0, 0, part2.leader_epoch)  # type: ignore[union-attr]
    await eventually(
        lambda: part2.log_start_offset == 6 and part2.log_end_offset == 8, "follower 2 restarts"
    )
    await eventually(lambda: sorted(leader.isr) == [0, 1, 2], "follower 2 rejoins")
    await eventually(lambda: part2.high_watermark == 8, "follower 2 HW")
    assert committed_bytes(part2) == committed_bytes(leader)
    assert part2.epoch_entries() == [(1, 6)]
    await conn.aclose()


async def test_high_watermark_checkpoint_is_written(cluster: Cluster, tmp_path: Path) -> None:
    cluster.part(2).topic_id = None  # follower 2 fetches by name (Fetch v12), 1 by id (v16)
    cluster.zk.elect(TOPIC, 0, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2])
    conn = await cluster.client(0)
    assert (await produce(conn, [b"a", b"b"]))[0] == ErrorCode.NONE
    await eventually(lambda: cluster.part(2).high_watermark == 2, "follower HW")

    def checkpointed(n: int) -> bool:
        path = tmp_path / f"broker{n}" / REPLICATION_OFFSET_CHECKPOINT
        return path.exists() and path.read_text().splitlines()[2:] == [f"{TOPIC} 0 2"]

    await eventually(lambda: all(checkpointed(n) for n in range(3)), "HW checkpoints")
    await conn.aclose()


async def test_acks_all_produces_pipelined_on_one_connection(cluster: Cluster) -> None:
    """Produce requests sent back to back on one connection: each is appended while the ones
    before it wait for the followers (net/connection.py, QUEUED); the answers come in request
    order, each once its records are replicated."""
    from protocol.codec import decode_response, encode_request
    from protocol.framing import FrameDecoder

    cluster.zk.elect(TOPIC, 0, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2])
    conn = await cluster.client(0)
    n = 12  # more than the connection queues (MAX_QUEUED_REPLIES)
    frames = []
    for i in range(n):
        batch = build_batch([(None, b"p%d-%d" % (i, j)) for j in range(3)], base_timestamp=1)
        body = {
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
        }
        frames.append(encode_request(ApiKey.PRODUCE, 9, 100 + i, "pipelined", body))
    await conn.stream.send_all(b"".join(frames))
    decoder = FrameDecoder(1 << 26)
    answers: list[tuple[int, int, int]] = []
    with trio.fail_after(DEADLINE_S):
        while len(answers) < n:
            frame = decoder.next_frame()
            if frame is None:
                decoder.receive_data(await conn.stream.receive_some(65536))
                continue
            cid, resp = decode_response(ApiKey.PRODUCE, 9, frame)
            p = resp.responses[0].partition_responses[0]
            answers.append((cid, int(p.error_code), int(p.base_offset)))
            # answered only once replicated: the follower slowest to fetch has it
            assert min(cluster.part(k).log_end_offset for k in (1, 2)) >= int(p.base_offset) + 3
    assert answers == [(100 + i, ErrorCode.NONE, 3 * i) for i in range(n)]
    assert cluster.part(0).high_watermark == 3 * n
    await conn.aclose()


# -- a follower's long poll must not hold back a partition it starts following ------------------
OTHER = "other"
#: a long poll far longer than the answers the tests below wait for: waiting one out shows
SLOW_POLL = {"replica.fetch.wait.max.ms": "5000"}
FAST_S = 2.0


def _fetcher_of(cluster: Cluster, node: int, leader: int) -> _LeaderFetcher:
    fetchers = cluster.brokers[node].fetchers
    assert fetchers is not None
    return fetchers._fetchers[leader]


async def _parked_at_1(cluster: Cluster) -> _LeaderFetcher:
    """OTHER led by 1 and TOPIC by 0, both replicated; broker 2's fetch of OTHER (alone) is
    out to broker 1, where it parks for the whole long poll (no data)."""
    zk = cluster.zk
    zk.elect(OTHER, 0, leader=1, isr=[0, 1, 2], replicas=[0, 1, 2])
    zk.elect(TOPIC, 0, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2])
    conn = await cluster.client(0)
    with trio.fail_after(FAST_S):
        assert await produce(conn, [b"before"]) == (ErrorCode.NONE, 0)
    await conn.aclose()
    fetcher = _fetcher_of(cluster, 2, leader=1)
    await eventually(
        lambda: fetcher.in_flight_keys == {(OTHER, 0)}, "broker 2's fetch of OTHER out to 1"
    )
    return fetcher


async def _acks_all_to_1_is_fast(cluster: Cluster) -> None:
    """An acks=all produce to broker 1 (ISR [1, 2]) is answered well within the long poll,
    and the two replicas then hold the same log."""
    conn = await cluster.client(1)
    with trio.fail_after(FAST_S):
        assert await produce(conn, [b"after"], timeout_ms=30_000) == (ErrorCode.NONE, 1)
    await conn.aclose()
    await eventually(lambda: cluster.part(2).high_watermark == 2, "follower HW")
    assert committed_bytes(cluster.part(2)) == committed_bytes(cluster.part(1))


async def test_partition_added_abandons_a_parked_fetch_without_it(tmp_path: Path) -> None:
    """Leadership of TOPIC moves to broker 1 (0 is gone: ISR [1, 2]) while broker 2's fetch of
    OTHER is parked there: following TOPIC abandons that fetch, so TOPIC's first fetch (which
    tells the leader where broker 2's log ends, and the HW needs it) goes out at once instead
    of after the long poll."""
    async with _running(tmp_path, OTHER, **SLOW_POLL) as cluster:
        await _parked_at_1(cluster)
        # the new leader applies its state first, then the follower
        cluster.zk.elect(TOPIC, 0, leader=1, isr=[1, 2], replicas=[0, 1, 2], tell=[1, 2])
        await _acks_all_to_1_is_fast(cluster)


async def test_partition_retried_after_leader_not_ready_does_not_wait_out_a_long_poll(
    tmp_path: Path,
) -> None:
    """The follower applies the new state before the new leader does (each learns it from
    its own watch): its first fetch of TOPIC at broker 1 is refused (UNKNOWN_LEADER_EPOCH)
    and retried shortly after; the round in between asks for OTHER alone and parks at 1. The
    retry must not wait for that long poll to end (it did: up to replica.fetch.wait.max.ms
    added to a failover)."""
    async with _running(tmp_path, OTHER, **SLOW_POLL) as cluster:
        await _parked_at_1(cluster)
        cluster.zk.elect(TOPIC, 0, leader=1, isr=[1, 2], replicas=[0, 1, 2], tell=[2])
        fetchers = cluster.brokers[2].fetchers
        assert fetchers is not None
        follow = fetchers._follows[(TOPIC, 0)]
        await eventually(lambda: follow.not_ready >= 1, "broker 2 told: 1 is not ready")
        cluster.zk.tell_one(TOPIC, 0, 1)  # now the new leader applies it
        await _acks_all_to_1_is_fast(cluster)


async def test_partition_added_while_the_fetcher_reconnects_is_in_the_next_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broker 2 starts following THIRD from broker 1, which abandons its parked fetch of OTHER
    and reconnects; TOPIC (whose leadership moved to 1) is followed while that connection is
    being opened (after a broker failure, partitions stream in every few ms). The Fetch sent
    on the new connection must ask for TOPIC: built before connecting it did not, and as it
    was not in flight yet, following TOPIC did not abandon it either (a whole long poll)."""
    third = "third"
    async with _running(tmp_path, OTHER, third, **SLOW_POLL) as cluster:
        await _parked_at_1(cluster)
        zk = cluster.zk
        zk.elect(TOPIC, 0, leader=1, isr=[1, 2], replicas=[0, 1, 2], tell=[1])
        zk.elect(third, 0, leader=1, isr=[0, 1, 2], replicas=[0, 1, 2], tell=[0, 1])
        leader_port = cluster.addresses[1][1]
        opened = BrokerConnection.open
        armed = [True]

        async def open_then_follow(host: str, port: int, **kwargs: Any) -> BrokerConnection:
            conn = await opened(host, port, **kwargs)
            if armed[0] and port == leader_port and kwargs["client_id"].endswith("-2"):
                armed[0] = False
                zk.tell_one(TOPIC, 0, 2)  # broker 2 follows TOPIC meanwhile
            return conn

        monkeypatch.setattr(fetcher_module.BrokerConnection, "open", open_then_follow)
        zk.tell_one(third, 0, 2)  # abandons the fetch of OTHER: a new connection
        await eventually(lambda: not armed[0], "broker 2 reconnected to 1")
        await _acks_all_to_1_is_fast(cluster)


# -- fetch sessions (KIP-227) between brokers ----------------------------------------------------
async def test_followers_fetch_in_a_session_naming_only_what_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower's first Fetch to a leader is a full one that opens a session; the next ones
    name only the partitions whose position moved (idle ones stay in the leader's session,
    unnamed); a leader that lost the session (restart, eviction) refuses the next one and the
    follower opens a new session at once, replication going on."""
    idle = ("idle-a", "idle-b")
    sent: list[tuple[int, int, set[str]]] = []  # broker 2 -> 0: (session id, epoch, named)
    original = _LeaderFetcher._request

    def recording(self: _LeaderFetcher, ready: list[Any], max_wait_ms: int) -> Any:
        version, body, *rest = original(self, ready, max_wait_ms)
        if self.m.node_id == 2 and self.leader_id == 0:
            names = {f.part.topic_id: f.part.topic for f in ready}
            named = {names.get(t.get("topic_id"), t.get("topic")) for t in body["topics"]}
            sent.append((body["session_id"], body["session_epoch"], named))
        return (version, body, *rest)

    monkeypatch.setattr(_LeaderFetcher, "_request", recording)
    async with _running(tmp_path, *idle) as cluster:
        for name in (TOPIC, *idle):
            cluster.zk.elect(name, 0, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2])
        conn = await cluster.client(0)
        for i in range(3):
            with trio.fail_after(DEADLINE_S):
                assert await produce(conn, [b"v%d" % i]) == (ErrorCode.NONE, i)
        fetcher = _fetcher_of(cluster, 2, leader=0)
        assert fetcher.session_id != 0
        assert (0, 0) in {(s, e) for s, e, _n in sent}  # it opened with a full Fetch
        incremental = [named for s, e, named in sent if s == fetcher.session_id and e > 0]
        assert incremental, sent
        assert all(not (named & set(idle)) for named in incremental), sent
        assert any(TOPIC in named for named in incremental), sent
        # the leader loses every session: the follower's next Fetch is refused, a new one opens
        old = fetcher.session_id
        cluster.brokers[0].services.fetch_sessions._sessions.clear()
        with trio.fail_after(DEADLINE_S):
            assert await produce(conn, [b"after"]) == (ErrorCode.NONE, 3)
        await eventually(lambda: fetcher.session_id not in (0, old), "a new fetch session")
        await eventually(lambda: cluster.part(2).high_watermark == 4, "follower HW")
        assert committed_bytes(cluster.part(2)) == committed_bytes(cluster.part(0))
        await conn.aclose()


async def test_a_fetch_past_its_timeout_is_dropped_and_replication_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A replica Fetch not answered within replica.socket.timeout.ms + the long poll ends in
    a timeout (not taken for an abandoned fetch): the follower drops the connection, backs
    off and fetches again on a new one, and the acks=all write it held up completes."""
    quick = {"replica.socket.timeout.ms": "300", "replica.fetch.wait.max.ms": "100"}
    async with _running(tmp_path, **quick) as cluster:
        real = BrokerConnection.request
        hung: list[BrokerConnection] = []

        async def request(self: BrokerConnection, api_key: int, version: int, body: Any) -> Any:
            if not hung and api_key == ApiKey.FETCH and self.client_id.endswith("-2"):
                hung.append(self)  # broker 2's first Fetch: never answered
                await trio.sleep_forever()
            return await real(self, api_key, version, body)

        monkeypatch.setattr(fetcher_module.BrokerConnection, "request", request)
        cluster.zk.elect(TOPIC, 0, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2])
        conn = await cluster.client(0)
        with trio.fail_after(DEADLINE_S):
            assert await produce(conn, [b"held"], timeout_ms=30_000) == (ErrorCode.NONE, 0)
        await conn.aclose()
        assert hung and hung[0].closed  # the timed-out connection was dropped
        await eventually(lambda: cluster.part(2).high_watermark == 1, "broker 2 caught up")
        assert committed_bytes(cluster.part(2)) == committed_bytes(cluster.part(0))
        assert "fetch from broker 0 failed: timeout" in caplog.text
