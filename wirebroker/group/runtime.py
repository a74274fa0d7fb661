"""The group coordinator's trio runtime: drives the pure `GroupCoordinatorCore`.

The only module of `wirebroker.group` that imports trio. Handlers call its typed methods; each
runs one core call with `now_ms` from the clock, appends the returned `__consumer_offsets`
records (acks=-1, `ReplicaManager.append`) BEFORE any response or completion is released, then
wakes parked JoinGroup/SyncGroup requests and runs timers already due; a timer task handles
later deadlines. Invariants:
- core calls never interleave (each method is synchronous up to its one await of a parked
  request);
- an acknowledged commit or assignment is in the kernel (the append returned) first;
- an append that fails turns the call's results into `result.failed(error)` and reloads the
  failed partitions from the log, dropping the core's optimistic change.
`__consumer_offsets` is created on the first FindCoordinator (or append); `load` replays it at
start (last record per key), partition by partition, while requests get
COORDINATOR_LOAD_IN_PROGRESS. Details, limits and Kafka differences: docs/groups.md.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from protocol.errors import ErrorCode
from protocol.group_records import GroupRecordError
from protocol.records import InvalidBatch, build_batch, decode_records, iter_batches
from wirebroker.cluster.errors import ClusterError, UnknownTopicOrPartitionError
from wirebroker.cluster.topic_admin import NewTopic
from wirebroker.cluster.topic_store import TopicInfo
from wirebroker.group.config import GroupConfig
from wirebroker.group.coordinator import GroupCoordinatorCore
from wirebroker.group.effects import (
    Completion,
    Record,
    Result,
    append_error_to_response_error,
)
from wirebroker.group.messages import (
    CommitRequest,
    CommitResult,
    DeleteGroupsResult,
    DeleteOffsetsResult,
    DescribedGroup,
    Failable,
    HeartbeatRequest,
    JoinRequest,
    JoinResult,
    LeaveMember,
    LeaveResult,
    ListGroupsResult,
    OffsetFetchResult,
    ParkedResult,
    SyncRequest,
    SyncResult,
    TopicPartitions,
)
from wirebroker.log.errors import LogError
from wirebroker.replication.partition import NotEnoughReplicasError

if TYPE_CHECKING:
    from wirebroker.cluster.topic_admin import TopicAdmin
    from wirebroker.config import BrokerConfig
    from wirebroker.replication.replica_manager import ReplicaManager

__all__ = ["OFFSETS_TOPIC", "GroupCoordinatorRuntime"]

log = logging.getLogger(__name__)

R = TypeVar("R")
#: Results answered before their records are appended (`failed` gives the error answer).
OFFSETS_TOPIC = "__consumer_offsets"

#: Bytes asked for per `PartitionLog.read` while loading.
_READ_CHUNK = 4 * 1024 * 1024
#: Keys+values per appended batch (well under the default max.message.bytes of 1 MiB).
_BATCH_BYTES = 512 * 1024
#: Upper bound of timer rounds run in one go (a guard against a timer rescheduling itself).
_MAX_TICKS = 10_000


@dataclasses.dataclass
class _Waiter:
    """A parked JoinGroup/SyncGroup: its group's partition, the event and the answer."""

    partition: int
    event: trio.Event = dataclasses.field(default_factory=trio.Event)
    response: ParkedResult | None = None


class GroupCoordinatorRuntime:
    """Runs a `GroupCoordinatorCore` for the broker (see the module docstring)."""

    def __init__(
        self,
        config: BrokerConfig,
        replicas: ReplicaManager,
        *,
        admin: TopicAdmin,
        clock: Callable[[], int],
        member_id_suffix: Callable[[], str] | None = None,
    ) -> None:
        self.replicas = replicas
        self.admin = admin
        self.clock = clock
        group_config = GroupConfig.from_broker_config(config)
        existing = admin.describe(OFFSETS_TOPIC)
        if existing is not None and existing.partitions != group_config.num_partitions:
            log.info(
                "%s has %d partitions (offsets.topic.num.partitions is %d); using %d",
                OFFSETS_TOPIC,
                existing.partitions,
                group_config.num_partitions,
                existing.partitions,
            )
            group_config = dataclasses.replace(group_config, num_partitions=existing.partitions)
        self.core = GroupCoordinatorCore(group_config, member_id_suffix=member_id_suffix)
        self.segment_bytes = config.get_int("offsets.topic.segment.bytes")
        self._waiters: dict[Hashable, _Waiter] = {}
        self._keys = itertools.count(1)
        self._timer_changed = trio.Event()
        self._timer_deadline: int | None = None
        self._recovering = False
        self.loaded = trio.Event()

    # == lifetime ==========================================================================
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Load `__consumer_offsets`, report started, then run timers until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._timer_loop)
            await self.load()
            task_status.started()

    async def load(self) -> None:
        """Replay every partition of `__consumer_offsets` into the core (see the docstring)."""
        info = self.admin.describe(OFFSETS_TOPIC)
        if info is None:
            self.core.begin_loading()
            self._process(self.core.complete_loading(self.clock()))
            self.loaded.set()
            return
        partitions = list(range(self.core.config.num_partitions))
        self._process(self.core.begin_loading(partitions))
        started = self.clock()
        total = 0
        for p in partitions:
            total += await self._load_partition(p)
        log.info(
            "loaded %s (%d partitions, %d live records) in %d ms: %d group(s)",
            OFFSETS_TOPIC,
            len(partitions),
            total,
            self.clock() - started,
            len(self.core.group_ids()),
        )
        self.loaded.set()

    async def _load_partition(self, partition: int) -> int:
        """Replay one partition (marked loading) and serve it; the records replayed."""
        total = 0
        try:
            latest: dict[bytes, bytes | None] = {}
            for records in self._read_partition(partition):
                _keep_latest(latest, records)
                await trio.lowlevel.checkpoint()
            total = self._replay(partition, latest.items())
        except Exception:
            log.exception(
                "loading %s-%d failed; its groups answer NOT_COORDINATOR", OFFSETS_TOPIC, partition
            )
            self._process(self.core.unload([partition]))
            return total
        self._process(self.core.complete_loading(self.clock(), [partition]))
        return total

    def shutdown(self) -> None:
        """Unload everything: parked requests get NOT_COORDINATOR, later ones
        COORDINATOR_NOT_AVAILABLE."""
        self._process(self.core.shutdown())

    # == request entry points (typed: `wirebroker.group.messages`) =========================
    def partition_for(self, group_id: str) -> int:
        return self.core.partition_for(group_id)

    def find_coordinator(self, group_id: str) -> ErrorCode:
        """FindCoordinator for a group: NONE (this broker; the offsets topic now exists) or
        COORDINATOR_NOT_AVAILABLE (not active yet / shut down, or the topic cannot be made)."""
        if self.core.coordinator_error(group_id) is ErrorCode.COORDINATOR_NOT_AVAILABLE:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return self.ensure_offsets_topic()

    def ensure_offsets_topic(self) -> ErrorCode:
        """Create `__consumer_offsets` unless it exists; NONE or COORDINATOR_NOT_AVAILABLE."""
        if self.admin.describe(OFFSETS_TOPIC) is not None:
            return ErrorCode.NONE
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": str(self.segment_bytes),
            "compression.type": "producer",
        }
        topic = NewTopic(OFFSETS_TOPIC, self.core.config.num_partitions, 1, configs)
        try:
            [created] = self.admin.create_topics([topic], now_ms=self.clock())
            if not isinstance(created, TopicInfo):
                raise created
        except ClusterError as exc:
            if self.admin.describe(OFFSETS_TOPIC) is not None:
                return ErrorCode.NONE
            log.error("cannot create %s: %s", OFFSETS_TOPIC, exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        except Exception:
            log.exception("cannot create %s", OFFSETS_TOPIC)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        log.info("created %s with %d partitions", OFFSETS_TOPIC, self.core.config.num_partitions)
        return ErrorCode.NONE

    async def join_group(self, req: JoinRequest) -> JoinResult:
        """JoinGroup (see `GroupMembership.join_group`); waits until the group answers."""
        result = await self._parked(
            req.group_id, lambda key, now: self.core.join_group(key, now, req)
        )
        assert isinstance(result, JoinResult)
        return result

    async def sync_group(self, req: SyncRequest) -> SyncResult:
        """SyncGroup (see `GroupMembership.sync_group`); waits until the group answers."""
        result = await self._parked(
            req.group_id, lambda key, now: self.core.sync_group(key, now, req)
        )
        assert isinstance(result, SyncResult)
        return result

    def heartbeat(self, req: HeartbeatRequest) -> ErrorCode:
        return self._call(lambda now: self.core.heartbeat(now, req))

    def leave_group(self, *, group_id: str, members: Sequence[LeaveMember]) -> LeaveResult:
        return self._call(
            lambda now: self.core.leave_group(now, group_id=group_id, members=members)
        )

    def commit_offsets(self, req: CommitRequest) -> CommitResult:
        return self._call(lambda now: self.core.commit_offsets(now, req))

    def delete_offsets(
        self, *, group_id: str, topics: Sequence[TopicPartitions]
    ) -> DeleteOffsetsResult:
        return self._call(
            lambda now: self.core.delete_offsets(now, group_id=group_id, topics=topics)
        )

    def delete_groups(self, group_ids: Sequence[str]) -> DeleteGroupsResult:
        return self._call(lambda now: self.core.delete_groups(now, group_ids=group_ids))

    def fetch_offsets(
        self, *, group_id: str, topics: Sequence[TopicPartitions] | None
    ) -> OffsetFetchResult:
        return self.core.fetch_offsets(group_id=group_id, topics=topics)

    def list_groups(
        self, *, states_filter: Sequence[str] = (), types_filter: Sequence[str] = ()
    ) -> ListGroupsResult:
        return self.core.list_groups(states_filter=states_filter, types_filter=types_filter)

    def describe_groups(self, *, group_ids: Sequence[str]) -> list[DescribedGroup]:
        return self.core.describe_groups(group_ids=group_ids)

    def tick(self) -> None:
        """Run every timer due now (the timer task does this by itself)."""
        self._process(Result())

    # == core calls and their effects ======================================================
    def _call(self, call: Callable[[int], Result[R]]) -> R:
        response = self._process(call(self.clock()))
        assert response is not None, "core call without a response"
        return response

    async def _parked(
        self, group_id: str, call: Callable[[Hashable, int], Result[None]]
    ) -> ParkedResult:
        key = ("req", next(self._keys))
        waiter = _Waiter(self.core.partition_for(group_id))
        self._waiters[key] = waiter
        try:
            self._process(call(key, self.clock()))
            await waiter.event.wait()
        finally:
            self._waiters.pop(key, None)
        assert waiter.response is not None
        return waiter.response

    def _process(self, result: Result[R]) -> R | None:
        """Apply one core result, then run the timers already due."""
        response = self._apply(result)
        self._run_due_timers()
        if self.core.next_deadline() != self._timer_deadline:
            self._timer_changed.set()
        return response

    def _run_due_timers(self) -> None:
        for _ in range(_MAX_TICKS):
            deadline = self.core.next_deadline()
            if deadline is None:
                return
            now = self.clock()
            if deadline > now:
                return
            self._apply(self.core.tick(now))
        log.error("group timers kept firing; %d rounds run, the rest deferred", _MAX_TICKS)

    def _apply(self, result: Result[R]) -> R | None:
        response = result.response
        completions = result.completions
        if result.records:
            failed = self._append(result.records)
            if failed:
                response, completions = self._failed(response, completions, failed)
                for c in completions:
                    self._deliver(c)
                self._recover(sorted(failed))
                return response
        for c in completions:
            self._deliver(c)
        return response

    def _deliver(self, completion: Completion) -> None:
        waiter = self._waiters.get(completion.key)
        if waiter is None:
            return  # the request's task is gone (connection closed while parked)
        waiter.response = completion.result
        waiter.event.set()

    # -- appending --------------------------------------------------------------------------
    def _append(self, records: list[Record]) -> dict[int, ErrorCode]:
        """Append `records` in order, grouped by partition; the partitions that failed."""
        now = self.clock()
        by_partition: dict[int, list[Record]] = {}
        for r in records:
            by_partition.setdefault(r.partition, []).append(r)
        failed: dict[int, ErrorCode] = {}
        if self.ensure_offsets_topic() is not ErrorCode.NONE:
            return dict.fromkeys(by_partition, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        for partition, recs in by_partition.items():
            for chunk in _chunks(recs):
                batch = build_batch([(r.key, r.value) for r in chunk], base_timestamp=now)
                try:
                    part = self.replicas.partition(OFFSETS_TOPIC, partition)
                    if part is None:
                        raise UnknownTopicOrPartitionError(f"{OFFSETS_TOPIC}-{partition}")
                    self.replicas.append(part, batch, now_ms=now, required_acks=-1)
                except (ClusterError, LogError, NotEnoughReplicasError) as exc:
                    log.error("append to %s-%d failed: %s", OFFSETS_TOPIC, partition, exc)
                    failed[partition] = exc.error_code
                    break
                except Exception:
                    log.exception("append to %s-%d failed", OFFSETS_TOPIC, partition)
                    failed[partition] = ErrorCode.UNKNOWN
                    break
        return failed

    def _failed(
        self,
        response: R | None,
        completions: list[Completion],
        failed: dict[int, ErrorCode],
    ) -> tuple[R | None, list[Completion]]:
        """The results of a core call whose append failed (see the module docstring)."""
        mapped = {p: append_error_to_response_error(e) for p, e in failed.items()}
        any_error = next(iter(mapped.values()))
        out_response: Any = response
        if isinstance(response, DeleteGroupsResult):  # per group
            partition_for = self.core.partition_for
            out_response = response.failed_where(
                {
                    r.group_id: mapped[partition_for(r.group_id)]
                    for r in response.results
                    if partition_for(r.group_id) in mapped
                }
            )
        elif isinstance(response, Failable):
            out_response = response.failed(any_error)
        out = []
        for c in completions:
            waiter = self._waiters.get(c.key)
            error = mapped.get(waiter.partition) if waiter is not None else any_error
            out.append(c if error is None else Completion(c.key, c.result.failed(error)))
        return out_response, out

    def _recover(self, partitions: list[int]) -> None:
        """Unload `partitions` and reload them from the log (after a failed append)."""
        self._apply(self.core.unload(partitions))
        if self._recovering:
            return  # an append failed while reloading: leave the partitions unloaded
        self._recovering = True
        try:
            self._apply(self.core.begin_loading(partitions))
            for p in partitions:
                latest: dict[bytes, bytes | None] = {}
                for records in self._read_partition(p):
                    _keep_latest(latest, records)
                self._replay(p, latest.items())
            self._apply(self.core.complete_loading(self.clock(), partitions))
            log.warning(
                "reloaded %s partitions %s after a failed append", OFFSETS_TOPIC, partitions
            )
        except Exception:
            log.exception(
                "reloading %s partitions %s failed; they stay unloaded", OFFSETS_TOPIC, partitions
            )
            self._apply(self.core.unload(partitions))
        finally:
            self._recovering = False

    # -- loading ----------------------------------------------------------------------------
    def _read_partition(self, partition: int) -> Iterator[list[tuple[bytes, bytes | None]]]:
        """(key, value) of every keyed record of one partition, a chunk at a time."""
        part = self.replicas.partition(OFFSETS_TOPIC, partition)
        if part is None:
            return
        plog = part.log
        offset = plog.log_start_offset
        end = plog.log_end_offset
        while offset < end:
            data = plog.read(offset, max_bytes=_READ_CHUNK)
            if not data:
                return
            out: list[tuple[bytes, bytes | None]] = []
            for pos, header in iter_batches(data):
                if header.next_offset <= offset:
                    continue
                if not header.is_control:
                    try:
                        records = decode_records(data, pos)
                    except InvalidBatch as exc:
                        log.warning(
                            "%s-%d: skipping undecodable batch at offset %d: %s",
                            OFFSETS_TOPIC,
                            partition,
                            header.base_offset,
                            exc,
                        )
                        records = []
                    for rec in records:
                        if rec.offset >= offset and rec.key is not None:
                            out.append((rec.key, rec.value))
                offset = header.next_offset
            yield out

    def _replay(self, partition: int, records: Iterable[tuple[bytes, bytes | None]]) -> int:
        count = 0
        skipped = 0
        for key, value in records:
            try:
                self.core.replay(key, value)
                count += 1
            except (GroupRecordError, RuntimeError) as exc:
                skipped += 1
                if skipped == 1:
                    log.warning(
                        "%s-%d: skipping a record that does not replay: %s",
                        OFFSETS_TOPIC,
                        partition,
                        exc,
                    )
        if skipped > 1:
            log.warning("%s-%d: %d records skipped in all", OFFSETS_TOPIC, partition, skipped)
        return count

    # -- timers -----------------------------------------------------------------------------
    async def _timer_loop(self) -> None:
        """Call `core.tick` at `core.next_deadline()`; woken early when a call changes it."""
        while True:
            self._timer_changed = trio.Event()
            deadline = self.core.next_deadline()
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
                self._process(Result())
            except Exception:
                log.exception("group coordinator timer failed")
            await trio.lowlevel.checkpoint()


def _keep_latest(
    latest: dict[bytes, bytes | None], records: Iterable[tuple[bytes, bytes | None]]
) -> None:
    """Fold `records` into `latest`: the last value of each key, ordered by the position of
    that last occurrence -- what log compaction keeps, so replaying it gives the same state as
    replaying every record (Kafka's loader must be right on compacted logs too)."""
    for key, value in records:
        latest.pop(key, None)
        latest[key] = value


def _chunks(records: list[Record]) -> Iterator[list[Record]]:
    chunk: list[Record] = []
    size = 0
    for r in records:
        n = len(r.key) + (len(r.value) if r.value is not None else 0)
        if chunk and size + n > _BATCH_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(r)
        size += n
    if chunk:
        yield chunk
