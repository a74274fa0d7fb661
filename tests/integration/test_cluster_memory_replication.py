"""Replication between three in-process brokers of a cluster over the in-memory ZooKeeper.

The brokers run the production path (`_memory_cluster.start_cluster`): the controller elects
the leaders and moves them (`FaultControl.move_leader`: a reassignment reordering the replicas,
then a preferred election), the leaders write their ISR changes to the state znodes, every
broker applies the states it mirrors. Faults come through the brokers' objects: a follower's
fetcher stops (`fetchers.unfollow`) and starts again (`fetchers.follow`); a broker's
application of a topic's state is held back (`_Held`: its `PartitionRoles.apply` deferred)
where a test needs the brokers to learn a leadership change in a given order. A raw-protocol
client (`BrokerConnection`) produces.

Each topic is created with an explicit assignment, so its first leader is known (the first
replica, leader epoch 0). Timing is real (sockets are real): small replica.lag.time.max.ms
and fetch waits, and waits that poll with a bounded deadline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from _memory_cluster import Cluster, committed_bytes, eventually, start_cluster, wait_roles

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch
from wirebroker.log.log_manager import REPLICATION_OFFSET_CHECKPOINT
from wirebroker.replication import fetcher as fetcher_module
from wirebroker.replication.broker_client import BrokerConnection
from wirebroker.replication.fetcher import ReplicaFetcherManager, _LeaderFetcher
from wirebroker.replication.partition import Partition, Role

pytestmark = pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")

TOPIC = "rep"
DEADLINE_S = 20.0
#: leader 0 for TOPIC; OTHER (and the tests' extra topics) led by 1
LED_BY_0 = [0, 1, 2]
LED_BY_1 = [1, 0, 2]
OTHER = "other"


@asynccontextmanager
async def _running(
    root: Path, topics: dict[str, list[int]] | None = None, **overrides: str
) -> AsyncIterator[Cluster]:
    """Three brokers with `overrides`, hosting partition 0 of TOPIC (led by 0) and of each of
    `topics` (name -> replicas, the first leads), min.insync.replicas 2, roles settled."""
    async with trio.open_nursery() as nursery:
        cluster = await start_cluster(nursery, root, overrides=overrides)
        for name, replicas in {TOPIC: LED_BY_0, **(topics or {})}.items():
            await _create(cluster, name, replicas)
        yield cluster
        await cluster.stop_all()
        nursery.cancel_scope.cancel()


async def _create(cluster: Cluster, name: str, replicas: list[int]) -> None:
    code = await cluster.create_topic(
        0, name, -1, assignment={0: replicas}, configs={"min.insync.replicas": "2"}
    )
    assert code == ErrorCode.NONE
    await wait_roles(cluster, name, 1)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with _running(tmp_path) as c:
        yield c


def part(cluster: Cluster, node: int, topic: str = TOPIC) -> Partition:
    return cluster.nodes[node].part(topic, 0)


def fetchers(cluster: Cluster, node: int) -> ReplicaFetcherManager:
    f = cluster.nodes[node].broker.fetchers
    assert f is not None
    return f


async def produce(
    cluster: Cluster, node: int, values: list[bytes], *, acks: int = -1, timeout_ms: int = 5000
) -> tuple[int, int]:
    """(error code, base offset) of one batch to TOPIC-0 at broker `node`."""
    return await cluster.produce(node, TOPIC, 0, values, acks=acks, timeout_ms=timeout_ms)


async def move_leader(cluster: Cluster, topic: str, to: int) -> None:
    """The controller moves the leadership of `topic`-0 to `to` (asked through a broker)."""
    with trio.fail_after(DEADLINE_S):
        result = await cluster.nodes[to].broker.fault_control.move_leader(topic, 0, to=to)
    assert result["leader"] == to


class _Held:
    """Broker `node` does not apply `topics`' states until `release`d (its state znode watch
    is late): its `PartitionRoles.apply` defers them."""

    def __init__(self, cluster: Cluster, node: int, *topics: str) -> None:
        member = cluster.nodes[node].broker.member
        assert member is not None
        self.roles = member.roles
        self.original: Callable[[str, int], None] = member.roles.apply
        self.topics = set(topics)
        self.roles.apply = self._apply  # type: ignore[method-assign]

    def _apply(self, name: str, index: int) -> None:
        if name not in self.topics:
            self.original(name, index)

    def release(self, topic: str) -> None:
        """The broker learns `topic`'s current state now."""
        self.topics.discard(topic)
        if not self.topics:
            self.roles.apply = self.original  # type: ignore[method-assign]
        self.original(topic, 0)


async def test_followers_replicate_isr_shrinks_and_expands(cluster: Cluster) -> None:
    leader = part(cluster, 0)
    assert leader.role is Role.LEADER and leader.leader_epoch == 0
    assert [part(cluster, n).role for n in (1, 2)] == [Role.FOLLOWER, Role.FOLLOWER]

    # acks=all: answered once both followers have the records
    for i in range(10):
        code, base = await produce(cluster, 0, [b"v%d-%d" % (i, j) for j in range(5)])
        assert (code, base) == (ErrorCode.NONE, 5 * i)
    assert leader.high_watermark == 50
    await eventually(
        lambda: all(part(cluster, n).high_watermark == 50 for n in range(3)), "follower HWs"
    )
    assert committed_bytes(part(cluster, 1)) == committed_bytes(leader)
    assert committed_bytes(part(cluster, 2)) == committed_bytes(leader)

    # a follower answers clients NOT_LEADER_OR_FOLLOWER
    assert (await produce(cluster, 1, [b"x"]))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER

    # follower 2 stops: acks=all cannot complete while it is in the ISR...
    fetchers(cluster, 2).unfollow(TOPIC, 0)
    code, _ = await produce(cluster, 0, [b"late"], timeout_ms=100)
    assert code == ErrorCode.REQUEST_TIMED_OUT
    # ...until the leader drops it after replica.lag.time.max.ms, in ZooKeeper too
    await eventually(lambda: leader.isr == [0, 1], "ISR shrink to [0, 1]")
    assert list(cluster.peek_state(TOPIC, 0).isr) == [0, 1]
    await eventually(lambda: part(cluster, 1).isr == [0, 1], "broker 1 hears of the commit")
    code, _ = await produce(cluster, 0, [b"two"])
    assert code == ErrorCode.NONE

    # follower 1 stops too and falls behind (a stopped follower at the leader's end stays in
    # sync, as in Kafka): the ISR goes below min.insync.replicas=2
    fetchers(cluster, 1).unfollow(TOPIC, 0)
    hw = leader.high_watermark
    assert (await produce(cluster, 0, [b"acks=1"], acks=1))[0] == ErrorCode.NONE
    await eventually(lambda: leader.isr == [0], "ISR shrink to [0]")
    code, _ = await produce(cluster, 0, [b"refused"])
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert leader.high_watermark == hw  # not advanced below min.insync.replicas (Kafka 3.9)

    # both come back: they catch up and rejoin the ISR
    for n in (1, 2):
        p = part(cluster, n)
        fetchers(cluster, n).follow(TOPIC, 0, p.leader_id, p.leader_epoch)
    await eventually(lambda: sorted(leader.isr) == [0, 1, 2], "ISR expansion")
    assert sorted(cluster.peek_state(TOPIC, 0).isr) == [0, 1, 2]
    code, _ = await produce(cluster, 0, [b"all back"])
    assert code == ErrorCode.NONE
    end = leader.log_end_offset
    await eventually(
        lambda: all(part(cluster, n).high_watermark == end for n in range(3)), "catch-up"
    )
    for n in (1, 2):
        assert committed_bytes(part(cluster, n)) == committed_bytes(leader)


async def test_leader_change_truncates_the_old_leaders_divergent_suffix(tmp_path: Path) -> None:
    # a long replica.lag.time.max.ms: the stopped followers stay in the ISR, eligible to lead
    async with _running(tmp_path, **{"replica.lag.time.max.ms": "60000"}) as cluster:
        for i in range(3):
            assert (await produce(cluster, 0, [b"a%d" % i]))[0] == ErrorCode.NONE
        await eventually(
            lambda: all(part(cluster, n).log_end_offset == 3 for n in range(3)), "replicated"
        )
        # the followers stop; leader 0 takes acks=1 writes nobody else has
        for n in (1, 2):
            fetchers(cluster, n).unfollow(TOPIC, 0)
        for i in range(4):
            assert (await produce(cluster, 0, [b"lost%d" % i], acks=1))[0] == ErrorCode.NONE
        assert part(cluster, 0).log_end_offset == 7
        assert part(cluster, 1).log_end_offset == 3
        old_state, old_version = await cluster.state(TOPIC, 0)

        # the controller moves leadership to 1 (a new leader epoch); 1 takes new writes
        await move_leader(cluster, TOPIC, to=1)
        await wait_roles(cluster, TOPIC, 1)
        epoch = cluster.peek_state(TOPIC, 0).leader_epoch
        assert epoch > old_state.leader_epoch == 0
        for i in range(2):
            code, base = await produce(cluster, 1, [b"new%d" % i, b"new%d'" % i])
            assert (code, base) == (ErrorCode.NONE, 3 + 2 * i)
        # the old leader, now a follower, truncates to 3 and copies the new leader's log
        await eventually(
            lambda: (
                committed_bytes(part(cluster, 0)) == committed_bytes(part(cluster, 1))
                and part(cluster, 0).log_end_offset == 7
            ),
            "old leader converges",
        )
        await eventually(lambda: sorted(part(cluster, 1).isr) == [0, 1, 2], "ISR [0, 1, 2]")
        data = part(cluster, 0).log.read(0, max_bytes=1 << 30)
        assert b"lost" not in data and b"new1'" in data
        expected = [(0, 0), (epoch, 3)]
        assert part(cluster, 0).epoch_entries() == part(cluster, 1).epoch_entries() == expected
        assert [part(cluster, n).log_end_offset for n in range(3)] == [7, 7, 7]

        # the old leader's stale proposal is refused: a zombie cannot change the ISR
        member = cluster.nodes[0].broker.member
        assert member is not None
        rejected = trio.Event()
        replicas = cluster.nodes[0].broker.replicas
        real_rejected = replicas.isr_rejected

        def record(*args: Any, **kwargs: Any) -> None:
            rejected.set()
            real_rejected(*args, **kwargs)

        replicas.isr_rejected = record  # type: ignore[method-assign]
        before = await cluster.state(TOPIC, 0)
        member.propose_isr(TOPIC, 0, leader_epoch=0, partition_epoch=old_version, isr=[0])
        with trio.fail_after(DEADLINE_S):
            await rejected.wait()
        assert await cluster.state(TOPIC, 0) == before
        assert before[0].leader == 1


async def test_follower_behind_the_leaders_log_start_starts_over_there(cluster: Cluster) -> None:
    """OFFSET_OUT_OF_RANGE: the leader deleted records a stopped follower never got; the
    follower empties its log and restarts at the leader's log start."""
    leader = part(cluster, 0)
    for i in range(3):
        assert (await produce(cluster, 0, [b"a%d" % i]))[0] == ErrorCode.NONE
    await eventually(lambda: part(cluster, 2).log_end_offset == 3, "replicated")
    fetchers(cluster, 2).unfollow(TOPIC, 0)
    assert (await produce(cluster, 0, [b"b"], acks=1))[0] == ErrorCode.NONE
    await eventually(lambda: leader.isr == [0, 1], "ISR shrink")
    for i in range(4):
        assert (await produce(cluster, 0, [b"c%d" % i]))[0] == ErrorCode.NONE
    assert leader.high_watermark == 8
    leader.delete_records_before(6)
    await eventually(lambda: part(cluster, 1).log_start_offset == 6, "follower 1 follows")
    part2 = part(cluster, 2)
    fetchers(cluster, 2).follow(TOPIC, 0, 0, part2.leader_epoch)
    await eventually(
        lambda: part2.log_start_offset == 6 and part2.log_end_offset == 8, "follower 2 restarts"
    )
    await eventually(lambda: sorted(leader.isr) == [0, 1, 2], "follower 2 rejoins")
    await eventually(lambda: part2.high_watermark == 8, "follower 2 HW")
    assert committed_bytes(part2) == committed_bytes(leader)
    assert part2.epoch_entries() == [(0, 6)]


async def test_high_watermark_checkpoint_is_written(cluster: Cluster, tmp_path: Path) -> None:
    part(cluster, 2).topic_id = None  # follower 2 fetches by name (Fetch v12), 1 by id (v16)
    assert (await produce(cluster, 0, [b"a", b"b"]))[0] == ErrorCode.NONE
    await eventually(lambda: part(cluster, 2).high_watermark == 2, "follower HW")

    def checkpointed(n: int) -> bool:
        path = tmp_path / f"broker{n}" / REPLICATION_OFFSET_CHECKPOINT
        return path.exists() and path.read_text().splitlines()[2:] == [f"{TOPIC} 0 2"]

    await eventually(lambda: all(checkpointed(n) for n in range(3)), "HW checkpoints")


async def test_acks_all_produces_pipelined_on_one_connection(cluster: Cluster) -> None:
    """Produce requests sent back to back on one connection: each is appended while the ones
    before it wait for the followers (net/connection.py, QUEUED); the answers come in request
    order, each once its records are replicated."""
    from protocol.codec import decode_response, encode_request
    from protocol.framing import FrameDecoder

    conn = await cluster.connect(0)
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
            assert min(part(cluster, k).log_end_offset for k in (1, 2)) >= int(p.base_offset) + 3
    assert answers == [(100 + i, ErrorCode.NONE, 3 * i) for i in range(n)]
    assert part(cluster, 0).high_watermark == 3 * n
    await conn.aclose()


# -- a follower's long poll must not hold back a partition it starts following ------------------
#: a long poll far longer than the answers the tests below wait for: waiting one out shows
SLOW_POLL = {"replica.fetch.wait.max.ms": "5000"}
FAST_S = 2.0


def _fetcher_of(cluster: Cluster, node: int, leader: int) -> _LeaderFetcher:
    return fetchers(cluster, node)._fetchers[leader]


async def _parked_at_1(cluster: Cluster) -> _LeaderFetcher:
    """OTHER led by 1 and TOPIC by 0, both replicated; broker 2's fetch of OTHER (alone) is
    out to broker 1, where it parks for the whole long poll (no data)."""
    with trio.fail_after(FAST_S):
        assert await produce(cluster, 0, [b"before"]) == (ErrorCode.NONE, 0)
    fetcher = _fetcher_of(cluster, 2, leader=1)
    await eventually(
        lambda: fetcher.in_flight_keys == {(OTHER, 0)}, "broker 2's fetch of OTHER out to 1"
    )
    return fetcher


async def _acks_all_to_1_is_fast(cluster: Cluster) -> None:
    """An acks=all produce to broker 1 is answered well within the long poll, and the
    replicas then hold the same log."""
    with trio.fail_after(FAST_S):
        assert await produce(cluster, 1, [b"after"], timeout_ms=30_000) == (ErrorCode.NONE, 1)
    await eventually(lambda: part(cluster, 2).high_watermark == 2, "follower HW")
    assert committed_bytes(part(cluster, 2)) == committed_bytes(part(cluster, 1))


def _led_by_1(cluster: Cluster, *nodes: int) -> Callable[[], bool]:
    def check() -> bool:
        roles = [part(cluster, n).role for n in nodes]
        return roles == [Role.LEADER if n == 1 else Role.FOLLOWER for n in nodes] and all(
            part(cluster, n).leader_id == 1 for n in nodes
        )

    return check


async def test_partition_added_abandons_a_parked_fetch_without_it(tmp_path: Path) -> None:
    """Leadership of TOPIC moves to broker 1 while broker 2's fetch of OTHER is parked there:
    following TOPIC abandons that fetch, so TOPIC's first fetch (which tells the leader where
    broker 2's log ends, and the HW needs it) goes out at once instead of after the long
    poll. The new leader applies its state first, then the follower."""
    async with _running(tmp_path, {OTHER: LED_BY_1}, **SLOW_POLL) as cluster:
        await _parked_at_1(cluster)
        held = _Held(cluster, 2, TOPIC)
        await move_leader(cluster, TOPIC, to=1)
        await eventually(_led_by_1(cluster, 0, 1), "broker 1 leads TOPIC")
        assert part(cluster, 2).leader_id == 0
        held.release(TOPIC)
        await _acks_all_to_1_is_fast(cluster)


async def test_partition_retried_after_leader_not_ready_does_not_wait_out_a_long_poll(
    tmp_path: Path,
) -> None:
    """The follower applies the new state before the new leader does (each learns it from
    its own watch): its first fetch of TOPIC at broker 1 is refused (UNKNOWN_LEADER_EPOCH)
    and retried shortly after; the round in between asks for OTHER alone and parks at 1. The
    retry must not wait for that long poll to end (it did: up to replica.fetch.wait.max.ms
    added to a failover)."""
    async with _running(tmp_path, {OTHER: LED_BY_1}, **SLOW_POLL) as cluster:
        await _parked_at_1(cluster)
        held = _Held(cluster, 1, TOPIC)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(move_leader, cluster, TOPIC, 1)
            await eventually(
                lambda: (
                    TOPIC in {k[0] for k in fetchers(cluster, 2)._follows}
                    and part(cluster, 2).leader_id == 1
                ),
                "broker 2 follows 1",
            )
            follow = fetchers(cluster, 2)._follows[(TOPIC, 0)]
            await eventually(lambda: follow.not_ready >= 1, "broker 2 told: 1 is not ready")
            assert part(cluster, 1).role is Role.FOLLOWER
            held.release(TOPIC)  # now the new leader applies it
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
    async with _running(tmp_path, {OTHER: LED_BY_1}, **SLOW_POLL) as cluster:
        await _parked_at_1(cluster)
        held = _Held(cluster, 2, TOPIC, third)
        await _create_unwaited(cluster, third, LED_BY_1)
        await move_leader(cluster, TOPIC, to=1)
        await eventually(_led_by_1(cluster, 0, 1), "broker 1 leads TOPIC")
        await eventually(lambda: part(cluster, 1, third).role is Role.LEADER, "1 leads third")
        leader_port = cluster.nodes[1].address[1]
        opened = BrokerConnection.open
        armed = [True]

        async def open_then_follow(host: str, port: int, **kwargs: Any) -> BrokerConnection:
            conn = await opened(host, port, **kwargs)
            if armed[0] and port == leader_port and kwargs["client_id"].endswith("-2"):
                armed[0] = False
                held.release(TOPIC)  # broker 2 follows TOPIC meanwhile
            return conn

        monkeypatch.setattr(fetcher_module.BrokerConnection, "open", open_then_follow)
        held.release(third)  # abandons the fetch of OTHER: a new connection
        await eventually(lambda: not armed[0], "broker 2 reconnected to 1")
        await _acks_all_to_1_is_fast(cluster)


async def _create_unwaited(cluster: Cluster, name: str, replicas: list[int]) -> None:
    """Create `name` without waiting for every broker's roles (one of them is held)."""
    code = await cluster.create_topic(
        0, name, -1, assignment={0: replicas}, configs={"min.insync.replicas": "2"}
    )
    assert code == ErrorCode.NONE


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
    async with _running(tmp_path, dict.fromkeys(idle, LED_BY_0)) as cluster:
        for i in range(3):
            with trio.fail_after(DEADLINE_S):
                assert await produce(cluster, 0, [b"v%d" % i]) == (ErrorCode.NONE, i)
        fetcher = _fetcher_of(cluster, 2, leader=0)
        assert fetcher.session_id != 0
        assert (0, 0) in {(s, e) for s, e, _n in sent}  # it opened with a full Fetch
        incremental = [named for s, e, named in sent if s == fetcher.session_id and e > 0]
        assert incremental, sent
        assert all(not (named & set(idle)) for named in incremental), sent
        assert any(TOPIC in named for named in incremental), sent
        # the leader loses every session: the follower's next Fetch is refused, a new one opens
        old = fetcher.session_id
        cluster.nodes[0].broker.services.fetch_sessions.clear()
        with trio.fail_after(DEADLINE_S):
            assert await produce(cluster, 0, [b"after"]) == (ErrorCode.NONE, 3)
        await eventually(lambda: fetcher.session_id not in (0, old), "a new fetch session")
        await eventually(lambda: part(cluster, 2).high_watermark == 4, "follower HW")
        assert committed_bytes(part(cluster, 2)) == committed_bytes(part(cluster, 0))
        assert (0, 0) in {(s, e) for s, e, _n in sent[-3:]}  # NOT_FOUND: nothing to close
        # a session the leader still holds but at another epoch: INVALID_FETCH_SESSION_EPOCH,
        # then the full Fetch names it (epoch 0) and the leader closes it (Kafka's
        # nextCloseExisting): sessions are bound to their id only, none is left behind
        sessions = cluster.nodes[0].broker.services.fetch_sessions
        old = fetcher.session_id
        held = sessions.get(old)
        assert held is not None
        held.epoch += 7
        with trio.fail_after(DEADLINE_S):
            assert await produce(cluster, 0, [b"again"]) == (ErrorCode.NONE, 4)
        await eventually(lambda: fetcher.session_id not in (0, old), "another fetch session")
        assert (old, 0) in {(s, e) for s, e, _n in sent}
        assert sessions.get(old) is None
        await eventually(lambda: part(cluster, 2).high_watermark == 5, "follower HW")


async def test_a_fetch_past_its_timeout_is_dropped_and_replication_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A replica Fetch not answered within replica.socket.timeout.ms + the long poll ends in
    a timeout (not taken for an abandoned fetch): the follower drops the connection, backs
    off and fetches again on a new one, and the acks=all write it held up completes."""
    quick = {"replica.socket.timeout.ms": "300", "replica.fetch.wait.max.ms": "100"}
    real = BrokerConnection.request
    hung: list[BrokerConnection] = []

    async def request(self: BrokerConnection, api_key: int, version: int, body: Any) -> Any:
        if not hung and api_key == ApiKey.FETCH and self.client_id.endswith("-2"):
            hung.append(self)  # broker 2's first Fetch: never answered
            await trio.sleep_forever()
        return await real(self, api_key, version, body)

    monkeypatch.setattr(fetcher_module.BrokerConnection, "request", request)
    async with _running(tmp_path, **quick) as cluster:
        with trio.fail_after(DEADLINE_S):
            assert await produce(cluster, 0, [b"held"], timeout_ms=30_000) == (ErrorCode.NONE, 0)
        assert hung and hung[0].closed  # the timed-out connection was dropped
        await eventually(lambda: part(cluster, 2).high_watermark == 1, "broker 2 caught up")
        assert committed_bytes(part(cluster, 2)) == committed_bytes(part(cluster, 0))
        assert "fetch from broker 0 failed: timeout" in caplog.text
