"""Followers fetch from their leaders: `ReplicaFetcherManager` (trio runtime).

Which partitions: the manager is a role listener of the `ReplicaManager`. A partition that
becomes FOLLOWER is fetched from its `leader_id` at its `leader_epoch` (`follow`); one that
becomes leader, NONE or is deleted is dropped (`unfollow`). `follow`/`unfollow` are public so a
caller may drive them directly; a repeated `follow` with the same leader and epoch is a no-op.

One task per leader broker (`_LeaderFetcher`), started in the manager's nursery (`run`), with
one persistent connection (`broker_client.BrokerConnection`). The leader's address is asked of
`endpoint(leader_id)` before every connect and checked before every request (the leader may
have moved); no address or a failed connection: wait replica.fetch.backoff.ms and retry.

Each round sends one Fetch for every partition of that leader not backing off. A long poll
parked at the leader must not hold back a partition left out of it, which after a failover
would add up to replica.fetch.wait.max.ms to the unavailability of acks=all producers (the
leader's HW waits for this follower's first fetch at the new epoch):
    a partition added while a Fetch without it is in flight abandons that Fetch (closing the
        connection; its answer is never read), and a new round starts at once; a round
        picks its partitions once connected (a reconnect takes a while) and sends without
        an await in between, so an added partition is either in the Fetch or abandons it;
    a partition backing off (say 20 ms after "leader not ready", below) caps the round's
        max_wait_ms at the time left until its backoff ends, so the leader answers by then
        and the next round asks for it. (Kafka's fetcher waits out the round; the answer
        is the same, sooner.)
The request:
    version 16 when every partition has a topic id (topics by id), else 12 (by name);
    replica_id / replica_state {replica_id: node id, replica_epoch: broker_epoch()},
    max_wait_ms replica.fetch.wait.max.ms (or less, above), min_bytes
    replica.fetch.min.bytes, max_bytes replica.fetch.response.max.bytes; per partition:
    current_leader_epoch, fetch_offset = its log end, last_fetched_epoch = the latest epoch of
    its epoch cache, log_start_offset, partition_max_bytes replica.fetch.max.bytes.
    A fetch session (KIP-227) with each leader: the first Fetch is a full one (session 0,
    epoch 0) and the leader's answer gives the session id; each later Fetch carries the
    session id and the next epoch and names only partitions whose fetch data changed
    (typically the busy ones: their log end moved), the others being held by the leader's
    session, and forgets the partitions left out of the round (backing off, unfollowed); the
    answer then carries only partitions with something new. The session ends, and the next
    Fetch is a full one again, when the connection is closed (an abandoned or failed Fetch
    may or may not have moved it), on any top-level error (FETCH_SESSION_ID_NOT_FOUND,
    INVALID_FETCH_SESSION_EPOCH: the leader restarted or evicted it; retried at once) or an
    answer with session id 0 (a leader that makes none: full Fetches each time). That full
    Fetch names the old session (epoch 0), so that the leader closes it, except after
    FETCH_SESSION_ID_NOT_FOUND or an answer with session id 0 (Kafka's FetchSessionHandler:
    nextCloseExisting / INITIAL): the leader binds a session to nothing but its id, so one
    left behind would hold a slot of its cache until evicted.
and handles each partition of the answer, unless the partition changed meanwhile (role, leader,
epoch, or log end moved):
    records          whole batches appended as they are (`append_as_follower`, a trailing
                     partial batch dropped), HW := min(leader's HW, own log end), log start
                     follows the leader's
    diverging_epoch  truncation on fetch (KIP-279/595, Kafka 3.x): the leader's (epoch, end
                     offset) for our last fetched epoch -> `rules.truncation_offset` over our
                     epoch cache; an epoch we lack -> the end of our largest epoch below it
                     (`rules.own_end_offset_below`), and the next fetch asks again
    OFFSET_OUT_OF_RANGE  ListOffsets (replica_id = node id) for the leader's log end: below
                     ours -> truncate to it; else its log start: above our log end -> empty the
                     log and restart there (`truncate_fully_and_start_at`)
    NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH  the leader has not applied its new state yet
                     (brokers learn it from their own ZooKeeper watches, in any order): up
                     to 50 quick retries 20 ms apart (a leader busy applying a broker
                     failure's state changes may take a few hundred ms; a growing interval
                     would leave the partition unreplicated for up to that interval after it
                     applied), then as other errors
    other errors     (FENCED_LEADER_EPOCH, unknown topic, storage...) that partition backs
                     off replica.fetch.backoff.ms
Replication throttle (KIP-73, wirebroker.replication.quota): a partition in this broker's
follower throttled replicas (follower.replication.throttled.replicas) that is not in sync (its
last answer did not bring it to the leader's high watermark) is left out of the rounds while
the follower quota is exceeded, as if backing off until the rate is back under the bound (at
most replica.fetch.backoff.ms at a time); the records appended of every throttled partition
are recorded in the quota.
A partition whose log has no leader epoch at all is first truncated to its high watermark
(Kafka does so when it cannot truncate by epoch). A request gets replica.socket.timeout.ms plus
its max wait before the connection is dropped. Times come from `trio.current_time` (MockClock in
tests) and `clock()` (ms, for the log).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import InvalidBatch, iter_batches
from wirebroker.errors import KafkaError
from wirebroker.replication import rules
from wirebroker.replication.broker_client import BrokerConnection, BrokerConnectionError
from wirebroker.replication.fetch_sessions import INITIAL_EPOCH, next_epoch
from wirebroker.replication.partition import Partition, Role

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig
    from wirebroker.replication.quota import ReplicationQuota
    from wirebroker.replication.replica_manager import ReplicaManager

__all__ = ["ReplicaFetcherManager"]

log = logging.getLogger(__name__)

FETCH_VERSION_BY_ID = 16
FETCH_VERSION_BY_NAME = 12
LIST_OFFSETS_VERSION = 7
_LATEST = -1
_EARLIEST = -2

Key = tuple[str, int]


#: Answers of a leader that has not yet applied the state that makes it leader at our epoch.
_LEADER_NOT_READY = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH})
#: top-level answers that end our fetch session (a new one is asked for at once)
_SESSION_ERRORS = frozenset(
    {
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
    }
)
_NOT_READY_QUICK_RETRIES = 50
_NOT_READY_RETRY_S = 0.02


@dataclass
class _Follow:
    """One partition this broker follows, as the fetcher sees it."""

    part: Partition
    leader_id: int
    leader_epoch: int
    delay_until: float = -math.inf  # trio time: backing off after an error
    #: answers in a row saying the leader does not know it leads yet (see _LEADER_NOT_READY)
    not_ready: int = 0
    checked_epochless: bool = False  # the no-epoch truncation to the HW was done
    dropped: bool = False  # unfollowed: an answer still in flight is ignored
    #: the last answer brought the log up to the leader's high watermark: in sync, so never
    #: throttled (Kafka's fetch state lag <= 0; none yet: not in sync)
    in_sync: bool = False

    def current(self) -> bool:
        part = self.part
        return (
            not self.dropped
            and part.role is Role.FOLLOWER
            and part.leader_id == self.leader_id
            and part.leader_epoch == self.leader_epoch
            and not part.log.closed
        )


class ReplicaFetcherManager:
    def __init__(
        self,
        replicas: ReplicaManager,
        *,
        node_id: int,
        endpoint: Callable[[int], tuple[str, int] | None],
        broker_epoch: Callable[[], int],
        config: BrokerConfig,
        clock: Callable[[], int],
    ) -> None:
        self.replicas = replicas
        self.node_id = node_id
        self.endpoint = endpoint
        self.broker_epoch = broker_epoch
        self.clock = clock
        self.wait_max_ms = config.get_int("replica.fetch.wait.max.ms")
        self.min_bytes = config.get_int("replica.fetch.min.bytes")
        self.fetch_max_bytes = config.get_int("replica.fetch.max.bytes")
        self.response_max_bytes = config.get_int("replica.fetch.response.max.bytes")
        self.backoff_s = config.get_int("replica.fetch.backoff.ms") / 1000.0
        self.request_timeout_s = (
            config.get_int("replica.socket.timeout.ms") + self.wait_max_ms
        ) / 1000.0
        # a response holds at most response_max_bytes of records (one batch more at worst)
        self.max_frame_bytes = 2 * max(self.response_max_bytes, self.fetch_max_bytes) + (64 << 20)
        self._follows: dict[Key, _Follow] = {}
        self._fetchers: dict[int, _LeaderFetcher] = {}
        self._nursery: trio.Nursery | None = None
        replicas.add_role_listener(self._on_role)

    # -- which partitions -----------------------------------------------------------------
    def _on_role(self, part: Partition) -> None:
        if part.role is Role.FOLLOWER:
            self.follow(part.topic, part.index, part.leader_id, part.leader_epoch)
        else:
            self.unfollow(part.topic, part.index)

    def follow(self, topic: str, index: int, leader_id: int, leader_epoch: int) -> None:
        """Fetch `topic-index` from `leader_id` at `leader_epoch` (the partition must be a
        follower of it in the ReplicaManager, or nothing is fetched)."""
        part = self.replicas.partition(topic, index)
        if part is None:
            return
        key = (topic, index)
        old = self._follows.get(key)
        if old is not None and (old.leader_id, old.leader_epoch) == (leader_id, leader_epoch):
            return
        self.unfollow(topic, index)
        follow = self._follows[key] = _Follow(part, leader_id, leader_epoch)
        fetcher = self._fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self._fetchers[leader_id] = _LeaderFetcher(self, leader_id)
            if self._nursery is not None:
                self._nursery.start_soon(fetcher.run)
        fetcher.add(key, follow)

    def unfollow(self, topic: str, index: int) -> None:
        """Stop fetching `topic-index` (no-op when not fetched)."""
        follow = self._follows.pop((topic, index), None)
        if follow is not None:
            follow.dropped = True
            fetcher = self._fetchers.get(follow.leader_id)
            if fetcher is not None:
                fetcher.remove((topic, index))

    def following(self) -> dict[Key, int]:
        """(topic, index) -> leader id of every partition fetched (tests, metrics)."""
        return {key: f.leader_id for key, f in self._follows.items()}

    # -- runtime -------------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the per-leader fetch tasks until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for fetcher in self._fetchers.values():
                    nursery.start_soon(fetcher.run)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None


class _LeaderFetcher:
    """The fetch loop towards one leader broker (see the module doc)."""

    def __init__(self, manager: ReplicaFetcherManager, leader_id: int) -> None:
        self.m = manager
        self.leader_id = leader_id
        self.follows: dict[Key, _Follow] = {}
        self.wakeup = trio.Event()
        self.conn: BrokerConnection | None = None
        #: the Fetch in flight (None between rounds) and the partitions it asks for: `add`
        #: of another partition cancels it, see `add`
        self.in_flight: trio.CancelScope | None = None
        self.in_flight_follows: list[_Follow] = []
        self.abandoned = False  # `add` cancelled the Fetch in flight (else: its timeout)
        #: the fetch session with this leader (KIP-227; replication/fetch_sessions.py): its
        #: id (0: none, the next Fetch is a full one that asks for one), the epoch the next
        #: incremental Fetch carries, and the fetch data the leader holds per partition
        self.session_id = 0
        self.session_epoch = INITIAL_EPOCH
        self.session_by_id = False
        self.session_parts: dict[tuple[object, int], tuple[int, ...]] = {}

    def _reset_session(self, *, close: bool = True) -> None:
        """Forget the session: the next Fetch is a full one (INITIAL). `close`: it names the
        old session so that the leader closes it (else the leader knows none)."""
        if not close:
            self.session_id = 0
        self.session_epoch = INITIAL_EPOCH
        self.session_parts = {}

    def add(self, key: Key, follow: _Follow) -> None:
        self.follows[key] = follow
        self.wakeup.set()
        if self.in_flight is not None and key not in self.in_flight_keys:
            # The Fetch in flight may be parked at the leader for up to replica.fetch.wait.max.ms
            # (nothing new for the partitions it asks about), and the new partition would wait
            # for it: after a failover its acks=all producers would. Abandon it (its answer
            # would come on this connection: it is closed) and fetch again at once. A partition
            # already in it (followed again at a new leader epoch: the controller removed a dead
            # broker from its ISR) does not: its part of the answer is ignored as not current,
            # and the next round asks again; abandoning for each of those would restart the
            # fetch every few milliseconds while a broker failure's ISR changes stream in.
            self.abandoned = True
            self.in_flight.cancel()

    @property
    def in_flight_keys(self) -> frozenset[Key]:
        """The partitions the Fetch in flight asks for (made on demand: `add` is rare)."""
        return frozenset((f.part.topic, f.part.index) for f in self.in_flight_follows)

    def remove(self, key: Key) -> None:
        self.follows.pop(key, None)

    async def run(self) -> None:
        try:
            while True:
                self.wakeup = trio.Event()
                ready, backoff_end = self._scan()
                if not ready:
                    await self._idle()
                    continue
                try:
                    await self._round(ready, backoff_end)
                except (BrokerConnectionError, trio.TooSlowError) as exc:
                    log.warning(
                        "fetch from broker %d failed: %s", self.leader_id, str(exc) or "timeout"
                    )
                    await self._close()
                    await trio.sleep(self.m.backoff_s)
                except Exception:  # a bug must not stop replication, nor the broker
                    log.exception("fetch from broker %d failed", self.leader_id)
                    await self._close()
                    await trio.sleep(self.m.backoff_s)
        finally:
            await self._close()

    async def _idle(self) -> None:
        """Nothing to fetch now: wait for a new partition or the end of a backoff."""
        waiting = [f.delay_until for f in self.follows.values() if f.current()]
        if not waiting:
            await self._close()
        deadline = min(waiting, default=math.inf)
        with trio.move_on_at(deadline):
            await self.wakeup.wait()

    async def _close(self) -> None:
        # an abandoned Fetch may or may not have moved the session at the leader
        self._reset_session()
        conn, self.conn = self.conn, None
        if conn is not None:
            await conn.aclose()

    async def _connection(self) -> BrokerConnection:
        address = self.m.endpoint(self.leader_id)
        if address is None:
            raise BrokerConnectionError(f"broker {self.leader_id} has no known endpoint")
        conn = self.conn
        if conn is not None and (conn.closed or conn.address != tuple(address)):
            await self._close()
            conn = None
        if conn is None:
            conn = self.conn = await BrokerConnection.open(
                address[0],
                address[1],
                client_id=f"wirebroker-replica-{self.m.node_id}",
                max_frame_bytes=self.m.max_frame_bytes,
            )
        return conn

    # -- one round -----------------------------------------------------------------------------
    def _scan(self) -> tuple[list[_Follow], float]:
        """(the partitions to fetch now, the trio time the first one backing off may be
        fetched again: inf when none is), in one pass over them (it runs every round)."""
        now = trio.current_time()
        ready: list[_Follow] = []
        backoff_end = math.inf
        quota = self.m.replicas.quotas.follower
        throttle_s = self._throttle_s(quota) if quota.throttles_any else 0.0
        for f in self.follows.values():
            if f.current():
                if throttle_s and not f.in_sync and quota.is_throttled(f.part.topic, f.part.index):
                    # over the follower quota: left out until the rate is back under it
                    # (at most replica.fetch.backoff.ms: the rate's bound may change)
                    f.delay_until = max(f.delay_until, now + throttle_s)
                until = f.delay_until
                if until <= now:
                    ready.append(f)
                elif until < backoff_end:
                    backoff_end = until
        return ready, backoff_end

    def _throttle_s(self, quota: ReplicationQuota) -> float:
        """Seconds the follower quota keeps its throttled partitions out (0: none)."""
        wait_ms = quota.wait_ms(self.m.clock())
        return min(wait_ms / 1000.0, self.m.backoff_s or 0.001) if wait_ms else 0.0

    async def _round(self, ready: list[_Follow], backoff_end: float) -> None:
        """One Fetch for `ready` (from `_scan`, just before) and its answer."""
        before = self.conn
        conn = await self._connection()  # does not yield when it is `before`, still usable
        if conn is not before:
            # The partitions are chosen again after connecting (a reconnect, after an
            # abandoned Fetch, takes a while: partitions added meanwhile belong in this round;
            # chosen before, they would miss it and `add` would not abandon it, not yet in
            # flight). From here no await until the Fetch is in flight: an `add` either comes
            # before (in it) or abandons it.
            ready, backoff_end = self._scan()
        if any(not f.checked_epochless for f in ready):
            for follow in ready:
                self._truncate_epochless(follow)
            ready, backoff_end = self._scan()
        if not ready:
            return
        version, body, sent, session_parts = self._request(ready, self._max_wait_ms(backoff_end))
        # One scope for both ends of the wait: `add` cancels it (abandon), its deadline is
        # the request timeout (`trio.fail_after` would add a second scope and a generator
        # context manager to every round).
        timeout_at = trio.current_time() + self.m.request_timeout_s
        scope = self.in_flight = trio.CancelScope(deadline=timeout_at)
        self.in_flight_follows = ready
        self.abandoned = False
        try:
            with scope:
                response = await conn.request(ApiKey.FETCH, version, body)
        finally:
            self.in_flight = None
            self.in_flight_follows = []
        if scope.cancelled_caught:
            if not self.abandoned:
                raise trio.TooSlowError
            await self._close()
            return
        code = int(response.get("error_code", 0))
        if code in _SESSION_ERRORS:
            # the leader lost or moved past our session (a restart, an eviction): a full
            # Fetch at once starts a new one
            log.info("fetch from broker %d: %s; new fetch session", self.leader_id, _name(code))
            self._reset_session(close=code != ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
            return
        if code != ErrorCode.NONE:
            log.warning("fetch from broker %d: %s", self.leader_id, _name(code))
            self._reset_session()
            self._delay(ready)
            return
        session_id = int(response.get("session_id", 0))
        if session_id == 0:
            self._reset_session(close=False)  # none made (or it ended): full Fetches
        else:
            if int(body["session_epoch"]) == INITIAL_EPOCH:
                self.session_id = session_id
            self.session_epoch = next_epoch(int(body["session_epoch"]))
            self.session_by_id = version >= 13
            self.session_parts = session_parts
        for topic in response.get("responses") or []:
            tkey = topic.get("topic_id") if version >= 13 else topic.get("topic")
            for pdata in topic.get("partitions") or []:
                entry = sent.get((tkey, int(pdata.get("partition_index"))))
                if entry is not None:
                    await self._handle(entry[0], entry[1], pdata)

    def _max_wait_ms(self, backoff_end: float) -> int:
        """replica.fetch.wait.max.ms, or less: the time until the first partition of this
        leader left out of the round (backing off until `backoff_end`) may be fetched again,
        so that the round does not outlast its backoff (see the module doc)."""
        wait_ms = self.m.wait_max_ms
        if backoff_end < math.inf:
            wait_ms = min(wait_ms, math.ceil((backoff_end - trio.current_time()) * 1000.0))
        return wait_ms

    def _request(
        self, ready: list[_Follow], max_wait_ms: int
    ) -> tuple[
        int,
        dict[str, Any],
        dict[tuple[object, int], tuple[_Follow, int]],
        dict[tuple[object, int], tuple[int, ...]],
    ]:
        """The Fetch for `ready`: (version, body, what each answer partition is checked
        against, the fetch data the leader's session holds once it is answered). Within a
        session only partitions whose fetch data changed are named and those left out are
        forgotten; otherwise a full Fetch (INITIAL) asks for a session."""
        m = self.m
        by_id = all(_has_id(f.part.topic_id) for f in ready)
        version = FETCH_VERSION_BY_ID if by_id else FETCH_VERSION_BY_NAME
        incremental = (
            self.session_id != 0
            and self.session_epoch != INITIAL_EPOCH
            and self.session_by_id == by_id
        )
        topics: dict[object, list[dict[str, Any]]] = {}
        sent: dict[tuple[object, int], tuple[_Follow, int]] = {}
        parts: dict[tuple[object, int], tuple[int, ...]] = {}
        for follow in ready:
            part = follow.part
            tkey: object = part.topic_id if by_id else part.topic
            leo = part.log_end_offset
            key = (tkey, part.index)
            data = (
                follow.leader_epoch,
                leo,
                part.latest_epoch,
                part.log_start_offset,
                m.fetch_max_bytes,
            )
            sent[key] = (follow, leo)
            parts[key] = data
            if incremental and self.session_parts.get(key) == data:
                continue  # the leader's session has it as it is
            topics.setdefault(tkey, []).append(
                {
                    "partition": part.index,
                    "current_leader_epoch": data[0],
                    "fetch_offset": leo,
                    "last_fetched_epoch": data[2],
                    "log_start_offset": data[3],
                    "partition_max_bytes": data[4],
                }
            )
        forgotten: dict[object, list[int]] = {}
        if incremental:
            for tkey, index in self.session_parts:
                if (tkey, index) not in parts:
                    forgotten.setdefault(tkey, []).append(index)
        field = "topic_id" if by_id else "topic"
        body = {
            "replica_id": m.node_id,
            "replica_state": {"replica_id": m.node_id, "replica_epoch": m.broker_epoch()},
            "max_wait_ms": max_wait_ms,
            "min_bytes": m.min_bytes,
            "max_bytes": m.response_max_bytes,
            "isolation_level": 0,
            "session_id": self.session_id,  # a full Fetch (INITIAL) closes the one it names
            "session_epoch": self.session_epoch if incremental else INITIAL_EPOCH,
            "topics": [{field: t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [{field: t, "partitions": ps} for t, ps in forgotten.items()],
            "rack_id": "",
        }
        return version, body, sent, parts

    def _delay(self, follows: list[_Follow]) -> None:
        until = trio.current_time() + self.m.backoff_s
        for follow in follows:
            follow.delay_until = until

    def _truncate_epochless(self, follow: _Follow) -> None:
        """A log without any leader epoch cannot be truncated by epoch: to the HW first."""
        if follow.checked_epochless:
            return
        follow.checked_epochless = True
        part = follow.part
        if part.latest_epoch < 0 and part.log_end_offset > part.high_watermark:
            try:
                self.m.replicas.truncate(part, part.high_watermark)
            except KafkaError as exc:
                log.warning("%s-%d: truncation to the HW failed: %s", part.topic, part.index, exc)
                self._delay([follow])

    # -- one partition of the answer -------------------------------------------------------
    async def _handle(self, follow: _Follow, sent_leo: int, pdata: Any) -> None:
        part = follow.part
        if not follow.current() or part.log_end_offset != sent_leo:
            return  # the partition changed while the fetch was out: its answer is stale
        code = int(pdata.get("error_code", 0))
        try:
            if code == ErrorCode.NONE:
                follow.not_ready = 0
                diverging = pdata.get("diverging_epoch")
                if diverging is not None and int(diverging.get("epoch", -1)) >= 0:
                    self._truncate_diverging(
                        follow, int(diverging["epoch"]), int(diverging["end_offset"])
                    )
                    return
                records = _complete_batches(pdata.get("records") or b"")
                leader_hw = int(pdata.get("high_watermark"))
                now_ms = self.m.clock()
                self.m.replicas.append_as_follower(
                    part,
                    records,
                    leader_high_watermark=leader_hw,
                    leader_log_start_offset=int(pdata.get("log_start_offset", -1)),
                    now_ms=now_ms,
                )
                follow.in_sync = part.log_end_offset >= leader_hw
                quota = self.m.replicas.quotas.follower
                if records and quota.throttles_any and quota.is_throttled(part.topic, part.index):
                    # in sync or not: all of a throttled partition's traffic counts
                    quota.record(len(records), now_ms)
            elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                await self._out_of_range(follow)
            elif code in _LEADER_NOT_READY and follow.not_ready < _NOT_READY_QUICK_RETRIES:
                # The new leader has not applied the state znode we already saw (every broker
                # watches it; we were faster): ask again soon instead of replica.fetch.backoff.ms
                # later, which would add a second to every failover.
                follow.not_ready += 1
                follow.delay_until = trio.current_time() + _NOT_READY_RETRY_S
            else:
                log.info(
                    "%s-%d: fetch from broker %d: %s; backing off",
                    part.topic,
                    part.index,
                    self.leader_id,
                    _name(code),
                )
                self._delay([follow])
        except KafkaError as exc:
            log.warning(
                "%s-%d: replication from broker %d failed: %s",
                part.topic,
                part.index,
                self.leader_id,
                exc,
            )
            self._delay([follow])

    def _truncate_diverging(self, follow: _Follow, epoch: int, end_offset: int) -> None:
        part = follow.part
        entries = part.epoch_entries()
        leo = part.log_end_offset
        target = rules.truncate_on_fetch_offset(
            epoch, end_offset, entries, leo, part.high_watermark
        )
        log.info(
            "%s-%d: leader %d diverges at epoch %d end %d; truncating to %d",
            part.topic,
            part.index,
            self.leader_id,
            epoch,
            end_offset,
            target,
        )
        self.m.replicas.truncate(part, target)

    async def _out_of_range(self, follow: _Follow) -> None:
        """Kafka's handleOutOfRangeError: compare log ends, then log starts."""
        part = follow.part
        leader_end = await self._list_offset(follow, _LATEST)
        if leader_end is None or not follow.current():
            return
        if leader_end < part.log_end_offset:
            self.m.replicas.truncate(part, leader_end)
            return
        leader_start = await self._list_offset(follow, _EARLIEST)
        if leader_start is None or not follow.current():
            return
        if leader_start > part.log_end_offset:
            self.m.replicas.truncate_fully_and_start_at(part, leader_start)
        else:
            self._delay([follow])

    async def _list_offset(self, follow: _Follow, timestamp: int) -> int | None:
        """The leader's log end (-1) or start (-2) of the partition; None after an error
        (the partition backs off)."""
        part = follow.part
        body = {
            "replica_id": self.m.node_id,
            "isolation_level": 0,
            "topics": [
                {
                    "name": part.topic,
                    "partitions": [
                        {
                            "partition_index": part.index,
                            "current_leader_epoch": follow.leader_epoch,
                            "timestamp": timestamp,
                        }
                    ],
                }
            ],
        }
        conn = await self._connection()
        with trio.fail_after(self.m.request_timeout_s):
            response = await conn.request(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body)
        for topic in response.get("topics") or []:
            for p in topic.get("partitions") or []:
                if int(p.get("error_code", 0)) == ErrorCode.NONE:
                    return int(p.get("offset"))
                log.info(
                    "%s-%d: ListOffsets: %s",
                    part.topic,
                    part.index,
                    _name(int(p.get("error_code"))),
                )
        self._delay([follow])
        return None


def _has_id(topic_id: uuid.UUID | None) -> bool:
    """A real topic id (not None, not the nil UUID), without UUID.__eq__ (it runs per
    partition per round)."""
    return topic_id is not None and topic_id.int != 0


def _complete_batches(records: bytes | memoryview) -> bytes | memoryview:
    """`records` without a trailing partial batch (a leader may cut its answer mid-batch)."""
    end = 0
    try:
        for pos, header in iter_batches(records):
            end = pos + header.size
    except InvalidBatch:
        pass
    return records if end == len(records) else records[:end]


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
