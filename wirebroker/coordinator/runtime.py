"""One coordinator runtime, shared by the group, transaction and share coordinators (trio).

Kafka's coordinator-common `CoordinatorRuntime` in wirebroker's shape. A coordinator (groups
over `__consumer_offsets`, transactions over `__transaction_state`, share state over
`__share_group_state`) is a pure core plus what is specific to it: its request entry points
and how it applies its core's results. This runtime owns the rest, once for every
coordinator:

- the internal topic: `ensure_topic()` creates it from the coordinator's `NewTopic` unless it
  exists; NONE or COORDINATOR_NOT_AVAILABLE;
- ownership (`wirebroker.coordinator.ownership`, its table): `on_became_leader(p, epoch)`
  schedules a load of `p` (the coordinator's `begin_loading`), `on_resigned(p, epoch)` unloads
  it (`unload`). Loads run one at a time in the runtime's task, in the order they were
  scheduled (Kafka's loading thread): the partition is read up to its log end
  (`log_reader.keyed_records`) into the coordinator's fold, with a checkpoint per chunk; a
  load overtaken by a resignation is discarded; a load that fails unloads the partition (its
  keys answer NOT_COORDINATOR until the next election);
- appends through the log: `append(p, batch, now)` with acks=-1 (the raw error code when it
  fails: `wirebroker.coordinator.errors` maps it for the client) and `wait_replicated`, the
  injected `ReplicationWaiter` (until the high watermark passes the records);
- timers: the coordinator's `next_deadline()` / `fire_timers(now)`, driven by the injected
  clock; `run_due_timers()` after a call fires what is due already, the timer task the later
  deadlines (woken when a call changes the next one);
- background work: `spawn` in the runtime's nursery.

A coordinator plugs in through `CoordinatorShard`. This package imports neither
`wirebroker.group` nor `wirebroker.txn` (import-linter's layers).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import trio

from protocol.errors import ErrorCode
from protocol.records import build_batch
from wirebroker.coordinator.log_reader import Entry, keyed_records
from wirebroker.coordinator.ownership import Ownership
from wirebroker.log.errors import LogError
from wirebroker.metadata.errors import ClusterError, TopicExistsError, UnknownTopicOrPartitionError
from wirebroker.metadata.topic_store import TopicInfo
from wirebroker.replication.partition import NotEnoughReplicasError

if TYPE_CHECKING:
    from wirebroker.metadata.topic_admin import NewTopic, TopicAdmin
    from wirebroker.replication.partition import Partition
    from wirebroker.replication.replica_manager import ReplicaManager

__all__ = [
    "Appended",
    "CoordinatorRuntime",
    "CoordinatorShard",
    "LoadFold",
    "ReplicationWaiter",
    "replicated_at_once",
]

log = logging.getLogger(__name__)

#: Upper bound of timer rounds run in one go (a guard against a timer rescheduling itself).
MAX_TICKS = 10_000

#: Waits until `part`'s high watermark reaches `required_offset` (the appended records' last
#: offset + 1), at most `timeout_s`: NONE, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS(_AFTER_APPEND)
#: or NOT_LEADER_OR_FOLLOWER. Kafka's delayed produce with acks=-1; the broker injects
#: `wirebroker.replication.delayed_produce.ProduceWaiters.wait` in a cluster.
ReplicationWaiter = Callable[["Partition", int, float], Awaitable[ErrorCode]]


async def replicated_at_once(part: Partition, required_offset: int, timeout_s: float) -> ErrorCode:
    """The single-replica `ReplicationWaiter`: the high watermark is the log end offset after
    every append, so there is nothing to wait for."""
    del part, required_offset, timeout_s
    return ErrorCode.NONE


@dataclasses.dataclass(frozen=True)
class Appended:
    """Records appended to one partition, replicated once its high watermark reaches
    `end_offset`; `token`: the partition's ownership token at the append (None: not owned)."""

    part: Partition
    end_offset: int
    token: int | None


class LoadFold(Protocol):
    """What a load folds a partition's log into, a chunk of entries at a time."""

    def add(self, entries: Iterable[Entry]) -> None: ...


class CoordinatorShard(Protocol):
    """What a coordinator gives the runtime: its core's side of loading and timers."""

    def begin_loading(self, partition: int) -> None:
        """`partition` is LOADING now (its keys answer COORDINATOR_LOAD_IN_PROGRESS)."""

    def new_fold(self, partition: int) -> LoadFold:
        """An empty fold for a load of `partition`."""
        ...

    def replay(self, partition: int, fold: Any) -> Any:
        """Replay a load's fold (raises when the partition cannot be loaded); what
        `complete_loading` installs. Called while the partition is still LOADING."""

    def complete_loading(self, partition: int, epoch: int, replayed: Any, started_ms: int) -> None:
        """The load of `partition` (elected at leader `epoch`) is installed: serve it."""

    def unload(self, partitions: list[int]) -> None:
        """Drop `partitions` (resigned, or their load failed): NOT_COORDINATOR."""

    def next_deadline(self) -> int | None:
        """The next timer deadline, in the clock's milliseconds (None: no timer)."""
        ...

    def fire_timers(self, now_ms: int) -> None:
        """Run the timers due at `now_ms` (and schedule the next ones)."""


class CoordinatorRuntime:
    """Runs one coordinator's partitions of its internal `topic` (see the module docstring).

    `partitions`: the topic's partition count; `new_topic`: the topic to create when it is
    missing (evaluated then: its replication factor may depend on the live brokers); `role`:
    the coordinator's name in log lines.
    """

    def __init__(
        self,
        *,
        topic: str,
        partitions: int,
        shard: CoordinatorShard,
        replicas: ReplicaManager,
        admin: TopicAdmin,
        clock: Callable[[], int],
        new_topic: Callable[[], NewTopic],
        replication_waiter: ReplicationWaiter = replicated_at_once,
        role: str = "coordinator",
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.shard = shard
        self.replicas = replicas
        self.admin = admin
        self.clock = clock
        self.new_topic = new_topic
        self.replication_waiter = replication_waiter
        self.role = role
        self.ownership = Ownership()
        self.stopped = False
        self._load_queue: collections.deque[int] = collections.deque()
        self._load_ready = trio.Event()
        self._timer_changed = trio.Event()
        self._timer_deadline: int | None = None
        self._nursery: trio.Nursery | None = None

    # == lifetime ==========================================================================
    async def run(
        self,
        start: Callable[[], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Start the timer task, `await start()` (the coordinator's own start: a single broker
        loads here), report started, then run the scheduled loads until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._timer_loop)
            await start()
            task_status.started()
            await self._load_loop()

    def shutdown(self) -> list[int]:
        """Stop: later leadership changes are ignored, scheduled loads dropped; the partitions
        that were owned (the coordinator unloads its core)."""
        self.stopped = True
        self._load_queue.clear()
        return self.ownership.drop_all()

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run `fn(*args)` in the runtime's nursery (dropped, logged, when not running)."""
        if self._nursery is None:
            log.error("%s not running: background work dropped", self.role)
            return
        self._nursery.start_soon(fn, *args)

    # == leadership ========================================================================
    def on_became_leader(self, partition: int, leader_epoch: int) -> bool:
        """This broker leads `partition` at `leader_epoch`: schedule its load (True). Stale or
        repeated notifications, and a new epoch of a partition already led (no resignation in
        between: the controller changed the ISR), change nothing (False)."""
        if self.stopped or not 0 <= partition < self.partitions:
            return False
        owned = self.ownership.get(partition)
        if self.ownership.became_leader(partition, leader_epoch) is None:
            if owned is not None and leader_epoch > owned.epoch:
                log.info(
                    "%s-%d: leader epoch %d, still led here: %s epoch stays %d",
                    self.topic,
                    partition,
                    leader_epoch,
                    self.role,
                    owned.elected_epoch,
                )
            return False
        self.shard.begin_loading(partition)
        self._load_queue.append(partition)
        self._load_ready.set()
        return True

    def on_resigned(self, partition: int, leader_epoch: int | None = None) -> bool:
        """This broker no longer leads `partition` (`leader_epoch`: its new epoch when known; a
        stale one is ignored): unload it (True when it was owned)."""
        if not self.ownership.resigned(partition, leader_epoch):
            return False
        log.info("resigned as %s of %s-%d", self.role, self.topic, partition)
        self.shard.unload([partition])
        return True

    def elected_epoch(self, partition: int) -> int | None:
        """The leader epoch the current ownership of `partition` started at (None: not owned)."""
        owned = self.ownership.get(partition)
        return None if owned is None else owned.elected_epoch

    def leads(self, part: Partition, elected_epoch: int | None) -> bool:
        """This broker leads `part` in the ownership that started at `elected_epoch` (its
        leader epoch may have moved on since: an ISR change by the controller)."""
        return part.is_leader and self.elected_epoch(part.index) == elected_epoch

    # == loading ===========================================================================
    async def load_scheduled(self) -> list[Any]:
        """Run the loads scheduled so far, in order (a single broker's start): what each
        replayed (None for a load that did not complete)."""
        replayed = []
        while self._load_queue:
            replayed.append(await self.load_partition(self._load_queue.popleft()))
        return replayed

    async def _load_loop(self) -> None:
        while True:
            if not self._load_queue:
                self._load_ready = trio.Event()
                await self._load_ready.wait()
                continue
            await self.load_partition(self._load_queue.popleft())

    async def load_partition(self, partition: int) -> Any:
        """Load one LOADING partition and serve it: what the shard replayed, or None (not
        loading any more, the load went stale, or it failed)."""
        token = self.ownership.token(partition)
        owned = self.ownership.get(partition)
        if token is None or owned is None or not self.ownership.is_current_load(partition, token):
            return None
        started = self.clock()
        try:
            fold = self.shard.new_fold(partition)
            part = self.replicas.partition(self.topic, partition)
            for entries in keyed_records(part) if part is not None else ():
                fold.add(entries)
                await trio.lowlevel.checkpoint()
                if not self.ownership.is_current_load(partition, token):
                    break
            if not self.ownership.is_current_load(partition, token):
                log.info("%s-%d: stale load discarded", self.topic, partition)
                return None
            replayed = self.shard.replay(partition, fold)
        except Exception:
            if not self.ownership.is_current_load(partition, token):
                return None
            log.exception(
                "loading %s-%d failed; the %s answers NOT_COORDINATOR for it",
                self.topic,
                partition,
                self.role,
            )
            self.ownership.drop(partition)
            self.shard.unload([partition])
            return None
        self.ownership.finish_load(partition, token)
        self.shard.complete_loading(partition, owned.elected_epoch, replayed, started)
        return replayed

    def read(self, partition: int, fold: LoadFold) -> None:
        """Fold all of `partition`'s log now, without yielding (a reload after a failed
        append, which must not let another call in)."""
        part = self.replicas.partition(self.topic, partition)
        for entries in keyed_records(part) if part is not None else ():
            fold.add(entries)

    # == the internal topic ================================================================
    def ensure_topic(self) -> ErrorCode:
        """Create the topic unless it exists; NONE or COORDINATOR_NOT_AVAILABLE."""
        if self.admin.describe(self.topic) is not None:
            return ErrorCode.NONE
        topic = self.new_topic()
        try:
            [created] = self.admin.create_topics([topic], now_ms=self.clock())
            if not isinstance(created, TopicInfo):
                raise created
        except TopicExistsError:
            return ErrorCode.NONE  # created meanwhile, or its creation is under way
        except ClusterError as exc:
            if self.admin.describe(self.topic) is not None:
                return ErrorCode.NONE
            log.error("cannot create %s: %s", self.topic, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        except Exception:
            log.exception("cannot create %s", self.topic)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        log.info(
            "created %s with %d partitions, replication factor %d",
            self.topic,
            topic.num_partitions,
            topic.replication_factor,
        )
        return ErrorCode.NONE

    # == appending =========================================================================
    def append(
        self,
        partition: int,
        batch: bytes,
        now_ms: int,
        *,
        transactional: bool = False,
        leading: Callable[[Partition], bool] | None = None,
    ) -> Appended | ErrorCode:
        """Append one batch to `partition` now (acks=-1): what to wait for, or the raw error.
        `leading`: checked first, NOT_LEADER_OR_FOLLOWER when it says no."""
        try:
            part = self.replicas.partition(self.topic, partition)
            if part is None:
                raise UnknownTopicOrPartitionError(f"{self.topic}-{partition}")
            if leading is not None and not leading(part):
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            done = self.replicas.append(
                part, batch, now_ms=now_ms, required_acks=-1, coordinator=transactional
            )
        except (ClusterError, LogError, NotEnoughReplicasError) as exc:
            log.error("append to %s-%d failed: %s", self.topic, partition, exc)
            return exc.error_code
        except Exception:
            log.exception("append to %s-%d failed", self.topic, partition)
            return ErrorCode.UNKNOWN
        return Appended(part, done.last_offset + 1, self.ownership.token(partition))

    def append_records(
        self,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        now_ms: int,
        *,
        elected_epoch: int | None,
    ) -> Appended | ErrorCode:
        """Append `records` (key, value) to `partition` now as one batch stamped `now_ms`,
        while this broker leads it in the ownership elected at `elected_epoch` (else
        NOT_LEADER_OR_FOLLOWER): what to wait for, or the raw error."""
        batch = build_batch(records, base_timestamp=now_ms)
        return self.append(
            partition, batch, now_ms, leading=lambda part: self.leads(part, elected_epoch)
        )

    async def wait_replicated(self, appended: Appended, timeout_s: float) -> ErrorCode:
        """Wait until the high watermark passes `appended`, at most `timeout_s`: NONE or the
        waiter's raw error (UNKNOWN, logged, when the waiter raises)."""
        if appended.part.high_watermark >= appended.end_offset:
            return ErrorCode.NONE
        try:
            return await self.replication_waiter(appended.part, appended.end_offset, timeout_s)
        except Exception:
            log.exception("waiting for %s-%d to replicate failed", self.topic, appended.part.index)
            return ErrorCode.UNKNOWN

    # == timers ============================================================================
    def run_due_timers(self) -> None:
        """Fire the timers due now, then wake the timer task if the next deadline moved."""
        for _ in range(MAX_TICKS):
            deadline = self.shard.next_deadline()
            if deadline is None:
                break
            now = self.clock()
            if deadline > now:
                break
            self.shard.fire_timers(now)
        else:
            log.error(
                "%s timers kept firing; %d rounds run, the rest deferred", self.role, MAX_TICKS
            )
        if self.shard.next_deadline() != self._timer_deadline:
            self._timer_changed.set()

    async def _timer_loop(self) -> None:
        """Fire the timers at `next_deadline()`; woken early when a call changes it."""
        while True:
            self._timer_changed = trio.Event()
            deadline = self.shard.next_deadline()
            self._timer_deadline = deadline
            if deadline is None:
                await self._timer_changed.wait()
                continue
            delay_ms = deadline - self.clock()
            if delay_ms > 0:
                with trio.move_on_after(delay_ms / 1000):
                    await self._timer_changed.wait()
                continue
            try:
                self.run_due_timers()
            except Exception:
                log.exception("%s timer failed", self.role)
            await trio.lowlevel.checkpoint()
