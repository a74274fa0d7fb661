"""This broker's share partitions (trio runtime; Kafka's SharePartitionManager).

Owns the pure `SharePartition`s (one per share group and topic partition this broker leads),
the share session cache (`sessions.ShareSessions`) and the persister I/O; the ShareFetch and
ShareAcknowledge handlers call it. Rules:

- A share partition is made on first use: its state is read through the persister with the
  partition's leader epoch (`read_state`) and the window built from it
  (`SharePartition.initialize`; start offset -1: share.auto.offset.reset, latest = the high
  watermark, earliest = the log start, by_duration:<d> = the first record of the last d).
  A new leader epoch reads the state again. Persister errors answer the partition as
  Kafka's SharePartition maps them: FENCED_LEADER_EPOCH as
  NOT_LEADER_OR_FOLLOWER, the coordinator errors as COORDINATOR_NOT_AVAILABLE,
  GROUP_ID_NOT_FOUND and FENCED_STATE_EPOCH as they are, any other as UNKNOWN_SERVER_ERROR
  (also a state never initialised, UNKNOWN_TOPIC_OR_PARTITION from the persister: Kafka 4.4
  answers such a fetch -1). An acknowledgement loads nothing: for a share partition not
  loaded here it is UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this
  topic-partition.", as Kafka 4.4 answers.
- One operation at a time per share partition (a trio.Lock held across the persister
  write): an acknowledgement, a release or lock timeouts are written (`write_state`) and
  applied only once written (a refused write answers its error and changes nothing; refused
  as stale, `_STALE`, the share partition is dropped and read again on its next use);
  acquisition applies at once and writes only the aborted data it archived.
- Acquisition locks run out on the broker's clock (`Services.clock`): checked at every use of
  a share partition and by `run`, which sweeps them at the next deadline (at most every
  second). Records that become AVAILABLE again wake long-polling share fetches of the
  partition (`wake`, the fetch waiters' `notify`).
- A share session closes with the connection that opened it (`watch_connection`; Kafka's
  ShareSessionCache does so on disconnect): `run` releases its records.
- Share partitions are forgotten (read again from the persister on their next use) as Kafka's
  listeners drop them: a group's when the connection of its last share session here closes
  (onGroupEmpty) or it is deleted (DeleteGroups on this broker's coordinator: wirebroker's,
  Kafka 4.4 keeps serving the old state while a session stays open), a topic's when it is
  deleted, a partition's when this broker stops leading it.
- Group settings are read per request from the GROUP config resource (share.* group configs
  over the broker's group.share.* defaults: `metadata.group_configs.effective_values`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import trio

from protocol.errors import ErrorCode
from protocol.records import BatchHeader, InvalidBatch, iter_batches
from wirebroker.log.errors import LogError
from wirebroker.metadata.group_configs import duration_ms, effective_values
from wirebroker.replication.partition import READ_COMMITTED, READ_UNCOMMITTED
from wirebroker.share.partition import (
    AckBatch,
    Acquired,
    LogBatch,
    PendingChange,
    ShareError,
    SharePartition,
    SharePartitionConfig,
)
from wirebroker.share.persister import PartitionState, Persister
from wirebroker.share.sessions import ShareSession, ShareSessions

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig
    from wirebroker.metadata.group_config_store import GroupConfigs
    from wirebroker.replication.partition import Partition
    from wirebroker.security.session import ConnectionSession

__all__ = ["FetchedPartition", "GroupSettings", "SharePartitionManager"]

log = logging.getLogger(__name__)

#: (group id, topic id, partition)
_Key = tuple[str, uuid.UUID, int]

#: how a persister error answers the partition (Kafka's SharePartition.fetchPersisterError);
#: any other: UNKNOWN (UNKNOWN_SERVER_ERROR)
_PERSISTER_ERRORS = {
    ErrorCode.FENCED_LEADER_EPOCH: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.NOT_COORDINATOR: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.GROUP_ID_NOT_FOUND: ErrorCode.GROUP_ID_NOT_FOUND,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.FENCED_STATE_EPOCH: ErrorCode.FENCED_STATE_EPOCH,
}
#: a write refused with these: the state changed elsewhere (deleted, its start offset
#: altered with a new state epoch, another leader): the share partition is dropped from
#: memory and read again on its next use (Kafka fences it)
_STALE = frozenset(
    {
        ErrorCode.FENCED_STATE_EPOCH,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.GROUP_ID_NOT_FOUND,
        ErrorCode.INVALID_REQUEST,  # the share coordinator: a write of a state deleted since
    }
)
_SWEEP_MAX_S = 1.0
#: Kafka's text of UNKNOWN_TOPIC_OR_PARTITION
_NOT_HOSTED = "This server does not host this topic-partition."


@dataclass(frozen=True)
class GroupSettings:
    partition: SharePartitionConfig
    read_committed: bool
    #: share.auto.offset.reset by_duration:<d>: start at the first record of the last d ms
    reset_duration_ms: float | None = None


@dataclass
class FetchedPartition:
    """One partition's share fetch: its error, the record batches and the acquired ranges."""

    error: ErrorCode = ErrorCode.NONE
    records: bytes = b""
    acquired: list[Acquired] = field(default_factory=list)


class SharePartitionManager:
    """The share partitions of this broker (module docstring)."""

    def __init__(
        self,
        config: BrokerConfig,
        persister: Persister,
        group_configs: GroupConfigs,
        *,
        clock: Callable[[], int],
        wake: Callable[[str, int], None] | None = None,
    ) -> None:
        self.config = config
        self.persister = persister
        self.group_configs = group_configs
        self.clock = clock
        self.wake = wake
        self.sessions = ShareSessions(
            max_sessions=_config_int(config, "group.share.max.share.sessions", 2_000)
        )
        self._partitions: dict[_Key, SharePartition] = {}
        self._topics: dict[_Key, Partition] = {}
        self._locks: dict[_Key, trio.Lock] = {}
        #: open connections with share sessions: id -> (connection, {(group, member)})
        self._connections: dict[int, tuple[ConnectionSession, set[tuple[str, str]]]] = {}
        #: sessions closed with their connection, released by `run`
        self._closed: list[ShareSession] = []
        self._wake_run = trio.Event()

    # -- settings --------------------------------------------------------------------------
    def settings(self, group_id: str) -> GroupSettings:
        values = effective_values(self.config, self.group_configs.get(group_id))
        reset = str(values.get("share.auto.offset.reset", "latest"))
        return GroupSettings(
            SharePartitionConfig(
                lock_duration_ms=int(cast("int", values["share.record.lock.duration.ms"])),
                delivery_count_limit=int(cast("int", values["share.delivery.count.limit"])),
                max_record_locks=int(cast("int", values["share.partition.max.record.locks"])),
                auto_offset_reset="earliest" if reset == "earliest" else "latest",
            ),
            read_committed=values.get("share.isolation.level") == "read_committed",
            reset_duration_ms=(
                duration_ms(reset.split(":", 1)[1]) if reset.startswith("by_duration:") else None
            ),
        )

    def forget_group(self, group_id: str) -> None:
        """The group is deleted (DeleteGroups) or its last share session here closed with its
        connection: its share partitions are read again on their next use."""
        self._forget(lambda k: k[0] == group_id)

    def forget_topic(self, topic_id: uuid.UUID) -> None:
        """The topic is deleted: its share partitions go (Kafka's SharePartitionListener)."""
        self._forget(lambda k: k[1] == topic_id)

    def forget_partition(self, topic_id: uuid.UUID, index: int) -> None:
        """This broker no longer leads the partition: its share partitions go (Kafka's
        SharePartitionListener onBecomingFollower / onFailed)."""
        self._forget(lambda k: k[1] == topic_id and k[2] == index)

    def _forget(self, which: Callable[[_Key], bool]) -> None:
        for key in [k for k in self._partitions if which(k)]:
            del self._partitions[key]
            self._topics.pop(key, None)

    def partition(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition | None:
        """A loaded share partition (tests, the admin view)."""
        return self._partitions.get((group_id, topic_id, index))

    # -- fetch -----------------------------------------------------------------------------
    async def fetch(
        self,
        group_id: str,
        member_id: str,
        topic_id: uuid.UUID,
        part: Partition,
        *,
        max_bytes: int,
        max_records: int,
        record_limit: bool,
        settings: GroupSettings,
        batch_size: int = 0,
    ) -> FetchedPartition:
        """Acquire records of `part` for `member_id`: what ShareFetch answers for it."""
        key = (group_id, topic_id, part.index)
        async with self._lock(key):
            sp = await self._load(key, part, settings)
            if isinstance(sp, ErrorCode):
                return FetchedPartition(sp)
            now_ms = self.clock()
            await self._expire(key, sp, now_ms)
            moved = sp.advance_log_start(part.log_start_offset)
            if moved is not None:
                await self._write(key, moved)
            if max_records <= 0 or not sp.can_acquire():
                return FetchedPartition()
            offset = sp.next_fetch_offset()
            isolation = READ_COMMITTED if settings.read_committed else READ_UNCOMMITTED
            try:
                data = part.read(offset, max_bytes=max_bytes, isolation_level=isolation)
            except LogError as exc:
                return FetchedPartition(exc.error_code)
            data = bytes(cast("bytes", data))
            headers = _headers(data)
            aborted = _aborted(part, offset, data, headers) if settings.read_committed else set()
            batches = [
                LogBatch(h.base_offset, h.last_offset, aborted=h.base_offset in aborted)
                for _pos, h in headers
            ]
            acquired, archived = sp.acquire(
                member_id,
                batches,
                max_records,
                now_ms,
                fetch_offset=offset,
                record_limit=record_limit,
                batch_size=batch_size,
            )
            if archived is not None:
                await self._write(key, archived)
            return FetchedPartition(records=_slice(data, headers, acquired), acquired=acquired)

    # -- acknowledge / release -------------------------------------------------------------
    async def acknowledge(
        self,
        group_id: str,
        member_id: str,
        topic_id: uuid.UUID,
        part: Partition,
        batches: Sequence[AckBatch],
        settings: GroupSettings,
    ) -> tuple[ErrorCode, str | None]:
        """Apply `member_id`'s acknowledgements of `part`: (error, message)."""
        key = (group_id, topic_id, part.index)
        async with self._lock(key):
            sp = self._partitions.get(key)
            if sp is None or sp.leader_epoch != part.leader_epoch:
                # not loaded here (no fetch made it, or dropped): Kafka's manager answers so
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _NOT_HOSTED
            sp.config = settings.partition
            now_ms = self.clock()
            await self._expire(key, sp, now_ms)
            try:
                change = sp.acknowledge(member_id, batches, now_ms)
            except ShareError as exc:
                return exc.code, exc.message
            return await self._write(key, change), None

    async def release_session(self, session: ShareSession) -> None:
        """The member's share session closed: every record it holds in this group's share
        partitions is released (AVAILABLE, or ARCHIVED at the delivery count limit)."""
        for key in [k for k in self._partitions if k[0] == session.group_id]:
            async with self._lock(key):
                sp = self._partitions.get(key)
                if sp is not None:
                    await self._write(key, sp.release_member(session.member_id))

    # -- lock timeouts ---------------------------------------------------------------------
    async def expire_due(self, now_ms: int) -> None:
        """Release every record whose acquisition lock ran out by `now_ms`."""
        for key, sp in list(self._partitions.items()):
            deadline = sp.next_lock_deadline()
            if deadline is not None and deadline <= now_ms:
                async with self._lock(key):
                    if self._partitions.get(key) is sp:
                        await self._expire(key, sp, now_ms)

    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        """Sweep acquisition locks at their deadlines (at most every second); release the
        records of sessions whose connection closed."""
        task_status.started()
        while True:
            await self.release_closed()
            now_ms = self.clock()
            await self.expire_due(now_ms)
            deadlines = [d for sp in self._partitions.values() if (d := sp.next_lock_deadline())]
            wait_ms = min(deadlines, default=now_ms + 1_000) - now_ms
            self._wake_run = trio.Event()
            with trio.move_on_after(min(max(wait_ms, 1) / 1000.0, _SWEEP_MAX_S)):
                await self._wake_run.wait()

    # -- sessions closed with their connection ---------------------------------------------
    def watch_connection(self, connection: ConnectionSession, session: ShareSession) -> None:
        """`session` was opened on `connection`: closed (its records released) when it closes."""
        session.connection = connection
        key = id(connection)
        entry = self._connections.get(key)
        if entry is None:
            entry = self._connections[key] = (connection, set())
            connection.on_close(lambda: self._connection_closed(key))
        entry[1].add((session.group_id, session.member_id))

    def _connection_closed(self, key: int) -> None:
        connection, members = self._connections.pop(key, (None, set()))
        for group_id, member_id in members:
            closed = self.sessions.close_if(group_id, member_id, connection)
            if closed is not None:
                self._closed.append(closed)
        if self._closed:
            self._wake_run.set()

    async def release_closed(self) -> None:
        """Release the records of the sessions closed with their connection; a group left
        without a session here is forgotten (Kafka's onGroupEmpty, which Kafka 4.4 calls on
        a disconnection, not when a ShareFetch closes the session)."""
        while self._closed:
            session = self._closed.pop()
            await self.release_session(session)
            if not self.sessions.has_group(session.group_id):
                self.forget_group(session.group_id)

    # -- internals -------------------------------------------------------------------------
    def _lock(self, key: _Key) -> trio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = trio.Lock()
        return lock

    async def _load(
        self, key: _Key, part: Partition, settings: GroupSettings
    ) -> SharePartition | ErrorCode:
        """The share partition of `key`, read from the persister when new (or when the leader
        epoch moved on), with the group's current settings."""
        sp = self._partitions.get(key)
        if sp is None or sp.leader_epoch != part.leader_epoch:
            group_id, topic_id, index = key
            state = await self.persister.read_state(group_id, topic_id, index, part.leader_epoch)
            if not isinstance(state, PartitionState):
                self._partitions.pop(key, None)
                if state is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    return ErrorCode.UNKNOWN  # never initialised: Kafka 4.4 answers -1
                return _PERSISTER_ERRORS.get(state, ErrorCode.UNKNOWN)
            sp = SharePartition(group_id, topic_id, index, settings.partition)
            end = part.last_stable_offset if settings.read_committed else part.high_watermark
            if state.start_offset < 0 and settings.reset_duration_ms is not None:
                found = part.offset_for_timestamp(int(self.clock() - settings.reset_duration_ms))
                start = min(found[0], end) if found is not None else end
                state = PartitionState(state.state_epoch, start, state.leader_epoch, state.batches)
            sp.initialize(
                state, log_start=part.log_start_offset, log_end=end, leader_epoch=part.leader_epoch
            )
            self._partitions[key] = sp
            self._topics[key] = part
        sp.config = settings.partition
        return sp

    async def _expire(self, key: _Key, sp: SharePartition, now_ms: int) -> None:
        deadline = sp.next_lock_deadline()
        if deadline is not None and deadline <= now_ms:
            change = sp.expire_locks(now_ms)
            # a lock timeout stands even when its write fails (as Kafka): the record must
            # become deliverable again
            code = await self._write(key, change)
            if code is not ErrorCode.NONE:
                sp.commit(change)
                self._woken(key, change)

    async def _write(self, key: _Key, change: PendingChange) -> ErrorCode:
        """Write `change`'s state, then apply it; the persister's error (mapped) otherwise."""
        if change.state is not None:
            group_id, topic_id, index = key
            try:
                code = await self.persister.write_state(group_id, topic_id, index, change.state)
            except Exception:
                log.exception("writing the share state of %s failed", key)
                code = ErrorCode.UNKNOWN
            if code is not ErrorCode.NONE:
                log.warning("share state of %s not written: %s", key, code.name)
                if code in _STALE:
                    self._partitions.pop(key, None)  # read again on next use
                return _PERSISTER_ERRORS.get(code, ErrorCode.UNKNOWN)
        sp = self._partitions.get(key)
        if sp is not None:
            sp.commit(change)
            self._woken(key, change)
        return ErrorCode.NONE

    def _woken(self, key: _Key, change: PendingChange) -> None:
        part = self._topics.get(key)
        if change.released and self.wake is not None and part is not None:
            self.wake(part.topic, part.index)


def _config_int(config: BrokerConfig, name: str, default: int) -> int:
    try:
        return config.get_int(name)
    except (KeyError, ValueError):
        return default


def _headers(data: bytes) -> list[tuple[int, BatchHeader]]:
    try:
        return list(iter_batches(data))
    except InvalidBatch:
        log.exception("a share fetch read a malformed batch")
        return []


def _aborted(
    part: Partition, offset: int, data: bytes, headers: list[tuple[int, BatchHeader]]
) -> set[int]:
    """Base offsets of the data batches of aborted transactions (read_committed), found as a
    consumer finds them: from each aborted transaction's first offset up to its producer's
    next control batch (the ABORT marker)."""
    starts = sorted(part.aborted_transactions(offset, data), key=lambda t: t[1])
    open_aborts: set[int] = set()
    out: set[int] = set()
    for _pos, h in headers:
        while starts and starts[0][1] <= h.base_offset:
            open_aborts.add(starts.pop(0)[0])
        if h.is_control:
            open_aborts.discard(h.producer_id)
        elif h.is_transactional and h.producer_id in open_aborts:
            out.add(h.base_offset)
    return out


def _slice(data: bytes, headers: list[tuple[int, BatchHeader]], acquired: list[Acquired]) -> bytes:
    """The batches of `data` that hold an acquired offset (others are not the member's)."""
    if not acquired:
        return b""
    keep = [
        data[pos : pos + h.size]
        for pos, h in headers
        if any(a.first_offset <= h.last_offset and a.last_offset >= h.base_offset for a in acquired)
    ]
    return b"".join(keep)
