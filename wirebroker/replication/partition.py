"""One partition as this broker sees it: leader, follower or neither (pure: no trio, no awaits).

Roles
-----
    LEADER    serves Produce and Fetch; tracks each follower (`rules.FollowerState`) from its
              fetches, advances the high watermark, and asks for ISR changes (`isr_to_expand`
              on a follower fetch, `isr_to_shrink` from the periodic check), which the
              `ReplicaManager` proposes and later commits or has rejected.
    FOLLOWER  written by the replica fetcher from `leader_id` (`append_as_follower`,
              `truncate_to`); clients get NOT_LEADER_OR_FOLLOWER.
    NONE      hosted here but neither (multi-broker mode before the first make_leader /
              make_follower, and after stop_replica): clients get NOT_LEADER_OR_FOLLOWER.

An unreplicated ReplicaManager builds every partition as the LEADER of replicas [itself] at
leader epoch 0 and never changes it: its high watermark is the log end offset after every
append (and after loading), exactly as before replication existed (`single_replica`). A leader
whose replicas and ISR are only itself behaves the same: a single broker (make_leader of every
partition with replicas = ISR = [itself]), or a cluster topic with one replica.

Transitions (`become_leader`, `become_follower`) apply only to newer state: a higher leader epoch,
or the same leader epoch with a higher partition epoch (the ISR or replicas of the same
leadership changed: the ZooKeeper znode version), or the same leader epoch while in NONE. Older
or equal state is ignored (returns False), so a stale controller or a replayed watch changes
nothing. The replica set alone (the assignment's: a reassignment started or ended) is taken
without a newer state (`take_replicas`). A new leadership (`leader epoch` changed or the role
changed) appends (epoch, log end offset) to the leader-epoch cache and resets every
follower's state: ISR members count as caught up now (Kafka's resetReplicaState), the others
as never.

High watermark (leader, Kafka 3.9 `maybeIncrementLeaderHW`, via `rules.high_watermark`):
the least log end offset of the leader, of every member of the *maximal* ISR and of every
caught-up follower outside it; never decreasing; not advanced while the committed ISR is
smaller than min.insync.replicas. The maximal ISR is the committed ISR plus the members of a
proposal in flight: while an expansion is pending the newcomer already holds the HW back (it may
be committed any moment), and while a shrink is pending the leaving member still does (the
shrink may fail), which is the safe choice both ways (Kafka's maximalIsr does the same).
min.insync.replicas checks (acks=-1 admission, NOT_ENOUGH_REPLICAS_AFTER_APPEND, the HW) use
the committed ISR and Kafka's *effective* minimum, min(min.insync.replicas, replica count)
(`effective_min_isr`): a topic of fewer replicas than min.insync.replicas still takes acks=-1
writes, as Kafka 4's Partition.effectiveMinIsr. A follower's HW is min(leader's HW, own log
end) and may go down.

Low watermark (leader, Kafka's lowWatermarkIfLeader, via `rules.low_watermark`): the least
log start offset of the leader and of its followers on live brokers, each follower's as its
last Fetch reported it (-1 until it fetched in this leadership). A DeleteRecords moves the
leader's log start at once and is answered once the low watermark reaches it
(`delete_records_status`); followers move theirs to the leader's from their fetch responses
(`append_as_follower`, whole segments below it deleted), and report it in their next fetch.

ISR changes: at most one proposal in flight (`pending_isr`); after a rejection (`isr_fenced`:
the znode's version moved, so this leader may be a zombie) none until the next accepted
`become_leader`. The leader never leaves its own ISR, and only its replica set's followers can
join it; a member the replica set lost is proposed out (`isr_without_non_replicas`).

Leader-epoch fencing (KIP-320), `check_leader_epoch(current)`:
    current == -1       no check (old clients, or the client does not know the epoch)
    current  > ours     UNKNOWN_LEADER_EPOCH (the client has newer metadata than us)
    current  < ours     FENCED_LEADER_EPOCH  (the client's metadata is stale)
Then, for requests that need the leader, NOT_LEADER_OR_FOLLOWER unless LEADER.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.errors import KafkaError
from wirebroker.metadata.partition_state import NO_LEADER
from wirebroker.replication import rules
from wirebroker.replication.log_view import LogView
from wirebroker.replication.rules import FollowerState

if TYPE_CHECKING:
    import uuid
    from collections.abc import Callable, Sequence

    from protocol.records import BatchHeader
    from wirebroker.log.config import LogConfig
    from wirebroker.log.file_slice import FileSlice
    from wirebroker.log.partition_log import AppendResult, PartitionLog

__all__ = ["NotEnoughReplicasError", "NotLeaderOrFollowerError", "Partition", "Role"]

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
DEFAULT_LAG_MS = 30_000


class NotEnoughReplicasError(KafkaError, code=ErrorCode.NOT_ENOUGH_REPLICAS):
    """acks=-1 while the ISR is smaller than min.insync.replicas (checked before appending)."""


class NotLeaderOrFollowerError(KafkaError, code=ErrorCode.NOT_LEADER_OR_FOLLOWER):
    """A leader-only operation on a follower (or the reverse), or a fetch from a broker that
    is not a replica of the partition."""


class Role(enum.Enum):
    NONE = "none"
    LEADER = "leader"
    FOLLOWER = "follower"


class Partition(LogView):
    """One partition's replica state (module doc); its log as `LogView` shows it."""

    def __init__(
        self,
        topic: str,
        index: int,
        log: PartitionLog,
        *,
        node_id: int,
        leader_epoch: int = 0,
        topic_id: uuid.UUID | None = None,
        min_insync_replicas: int = 1,
        role: Role = Role.LEADER,
        lag_ms: int = DEFAULT_LAG_MS,
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.node_id = node_id
        self.role = role
        self.leader_epoch = leader_epoch
        #: the leader epoch this broker's current, uninterrupted leadership began at (an
        #: epoch bump while leading, e.g. the controller shrinking the ISR, keeps it)
        self.led_since_epoch = leader_epoch if role is Role.LEADER else -1
        self.partition_epoch = 0 if role is Role.LEADER else -1
        leading = role is Role.LEADER
        self.leader_id = node_id if leading else NO_LEADER
        self.replicas: list[int] = [node_id] if leading else []
        self.isr: list[int] = [node_id] if leading else []
        self.min_insync_replicas = min_insync_replicas
        self.lag_ms = lag_ms
        self.followers: dict[int, FollowerState] = {}
        self.pending_isr: list[int] | None = None
        self.isr_fenced = False
        self.epoch_start_offset = 0
        #: leader of replicas == ISR == [this broker]: HW = log end after every append
        self.single_replica = leading
        if leading:
            self._maybe_advance_high_watermark(0)

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.index}, {self.role.value}, epoch={self.leader_epoch}, "
            f"isr={self.isr}, hw={self.high_watermark}, leo={self.log_end_offset})"
        )

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def effective_min_isr(self) -> int:
        """Kafka's effectiveMinIsr: min.insync.replicas, at most the replica count."""
        return min(self.min_insync_replicas, max(len(self.replicas), 1))

    def maximal_isr(self) -> list[int]:
        """The committed ISR plus the members of a proposal in flight."""
        pending = self.pending_isr
        if not pending:
            return self.isr
        return self.isr + [r for r in pending if r not in self.isr]

    def _maybe_advance_high_watermark(self, now_ms: int) -> bool:
        """Move the high watermark as the module doc says; True when it moved."""
        log = self.log
        if self.single_replica:
            new_hw = log.log_end_offset
        elif self.role is not Role.LEADER or len(self.isr) < self.effective_min_isr:
            return False
        else:
            new_hw = rules.high_watermark(
                log.high_watermark,
                log.log_end_offset,
                self.maximal_isr(),
                self.node_id,
                self.followers,
                now_ms,
                self.lag_ms,
            )
        if new_hw != log.high_watermark:
            log.high_watermark = new_hw
            return True
        return False

    # -- checks -------------------------------------------------------------------------------
    def check_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        if current_leader_epoch == -1 or current_leader_epoch == self.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.FENCED_LEADER_EPOCH

    def check_leader(self, current_leader_epoch: int) -> ErrorCode:
        """The epoch check, then NOT_LEADER_OR_FOLLOWER unless leader (Kafka's getLocalLog)."""
        code = self.check_leader_epoch(current_leader_epoch)
        if code is ErrorCode.NONE and self.role is not Role.LEADER:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return code

    def replication_status(
        self, required_offset: int, leader_epoch: int | None = None
    ) -> ErrorCode | None:
        """Where an acks=-1 append waiting for `required_offset` stands (Kafka's
        checkEnoughReplicasReachOffset): None while the HW is below it; NONE once reached with
        the ISR at min.insync.replicas, else NOT_ENOUGH_REPLICAS_AFTER_APPEND;
        NOT_LEADER_OR_FOLLOWER once not leader, or when the append's `leader_epoch` is older
        than this leadership (it was made in a leadership lost since). A later epoch of the
        same leadership (the controller changed the ISR, which bumps the leader epoch in
        ZooKeeper mode) keeps the wait going, as Kafka's DelayedProduce does: the records
        are in this leader's log and become committed as the followers catch up."""
        if self.role is not Role.LEADER or (
            leader_epoch is not None and leader_epoch < self.led_since_epoch
        ):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark >= required_offset:
            if len(self.isr) >= self.effective_min_isr:
                return ErrorCode.NONE
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return None

    def low_watermark(self, is_alive: Callable[[int], bool]) -> int:
        """The least log start offset of this leader and its followers on live brokers
        (`rules.low_watermark`); for a single replica, its own log start offset."""
        return rules.low_watermark(self.log.log_start_offset, self.followers.values(), is_alive)

    def delete_records_status(
        self, required_offset: int, is_alive: Callable[[int], bool]
    ) -> tuple[ErrorCode, int] | None:
        """Where a DeleteRecords to `required_offset` stands (Kafka's DelayedDeleteRecords
        tryComplete): None while the low watermark is below it; (NONE, low watermark) once
        reached; (NOT_LEADER_OR_FOLLOWER, -1) once not leader."""
        if self.role is not Role.LEADER:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
        low = self.low_watermark(is_alive)
        if low >= required_offset:
            return ErrorCode.NONE, low
        return None

    def fetch_upper_bound(
        self, isolation_level: int = READ_UNCOMMITTED, *, from_follower: bool = False
    ) -> int:
        """The offset a fetcher may read up to (exclusive)."""
        if from_follower:
            return self.log_end_offset
        if isolation_level == READ_COMMITTED:
            return self.last_stable_offset
        return self.high_watermark

    # -- role transitions ---------------------------------------------------------------------
    def _is_newer(self, leader_epoch: int, partition_epoch: int) -> bool:
        if leader_epoch != self.leader_epoch:
            return leader_epoch > self.leader_epoch
        return self.role is Role.NONE or partition_epoch > self.partition_epoch

    def become_leader(
        self,
        *,
        leader_epoch: int,
        partition_epoch: int,
        isr: Sequence[int],
        replicas: Sequence[int],
        now_ms: int,
    ) -> bool:
        """Lead at `leader_epoch` (see the module doc); False when the state is not newer.
        Raises a StorageError when the epoch checkpoint cannot be written."""
        if not self._is_newer(leader_epoch, partition_epoch):
            return False
        new_leadership = self.role is not Role.LEADER or leader_epoch != self.leader_epoch
        if new_leadership:
            self.log.assign_epoch_start_offset(leader_epoch)
            entries = self.log.leader_epoch_entries()
            # the epoch's start: the log end, unless it led this epoch before (stop, resume)
            self.epoch_start_offset = (
                entries[-1][1]
                if entries and entries[-1][0] == leader_epoch
                else self.log_end_offset
            )
        if self.role is not Role.LEADER:
            self.led_since_epoch = leader_epoch
        self.role = Role.LEADER
        self.leader_id = self.node_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        self.pending_isr = None
        self.isr_fenced = False
        self.single_replica = self.replicas == [self.node_id] and self.isr == [self.node_id]
        others = [r for r in self.replicas if r != self.node_id]
        if new_leadership:
            self.followers = {
                r: FollowerState(r, last_caught_up_ms=now_ms if r in self.isr else -1)
                for r in others
            }
        else:
            self.followers = {r: self.followers.get(r, FollowerState(r)) for r in others}
        self._maybe_advance_high_watermark(now_ms)
        return True

    def become_follower(
        self,
        *,
        leader_id: int,
        leader_epoch: int,
        partition_epoch: int,
        isr: Sequence[int],
        replicas: Sequence[int],
    ) -> bool:
        """Follow `leader_id` at `leader_epoch`; False when the state is not newer. The log
        is not truncated here: the fetcher does it from the leader's answer (KIP-279)."""
        if not self._is_newer(leader_epoch, partition_epoch):
            return False
        self.role = Role.FOLLOWER
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        self._clear_leader_state()
        return True

    def take_replicas(self, replicas: Sequence[int], now_ms: int) -> bool:
        """Take a replica set changed without a newer state: a leader tracks the new
        followers (never caught up) and forgets the replicas gone (their fetches refused).
        True when it changed (never in NONE: the next role brings its replicas)."""
        new = list(replicas)
        if new == self.replicas or self.role is Role.NONE:
            return False
        self.replicas = new
        if self.role is Role.LEADER:
            self.followers = {
                r: self.followers.get(r, FollowerState(r)) for r in new if r != self.node_id
            }
            self.single_replica = self.replicas == [self.node_id] and self.isr == [self.node_id]
            self._maybe_advance_high_watermark(now_ms)
        return True

    def stop(self) -> None:
        """Neither lead nor follow any more (StopReplica, deletion)."""
        self.role = Role.NONE
        self.leader_id = NO_LEADER
        self._clear_leader_state()

    def _clear_leader_state(self) -> None:
        self.followers = {}
        self.pending_isr = None
        self.isr_fenced = False
        self.single_replica = False

    # -- leader: followers and the ISR ---------------------------------------------------------
    def record_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        now_ms: int,
        *,
        log_start_offset: int | None = None,
    ) -> bool:
        """A follower fetched at `fetch_offset` (its log end) and reported `log_start_offset`
        (None: not reported): update its state and the high watermark; True when the HW
        moved. NotLeaderOrFollowerError unless leader and `replica_id` is one of the follower
        replicas."""
        state = self.followers.get(replica_id)
        if self.role is not Role.LEADER or state is None:
            raise NotLeaderOrFollowerError(
                f"{self.topic}-{self.index}: fetch from broker {replica_id}, which is not a "
                f"follower of this leader (replicas {self.replicas}, role {self.role.value})"
            )
        self.followers[replica_id] = rules.record_fetch(
            state, fetch_offset, self.log.log_end_offset, now_ms, log_start_offset=log_start_offset
        )
        return self._maybe_advance_high_watermark(now_ms)

    def quiet_follower_stamp(self, replica_id: int) -> tuple[int, int, int, int] | None:
        """(leader epoch, log end, log start, last stable offset) when follower `replica_id`
        is quiet here: this broker leads, the follower is in the ISR and at the log end, and
        the high watermark is there too; else None. While the stamp stays the same, a fetch
        at the log end by that follower reads nothing, moves neither the HW nor the ISR and
        only refreshes its caught-up time (`touch_quiet_follower`): what a fetch session
        relies on to skip its idle partitions (handlers/fetch.py)."""
        log = self.log
        leo = log.log_end_offset
        if self.role is not Role.LEADER or log.high_watermark != leo or replica_id not in self.isr:
            return None
        state = self.followers.get(replica_id)
        if state is None or state.log_end_offset != leo:
            return None
        return (self.leader_epoch, leo, log.log_start_offset, log.last_stable_offset)

    def quiet_consumer_stamp(
        self, fetch_offset: int, isolation_level: int
    ) -> tuple[int, int, int, int] | None:
        """(leader epoch, high watermark, log start, last stable offset) when a consumer
        fetching from `fetch_offset` is at the end of what it may read here (this broker
        leads, the offset is the high watermark, or the last stable offset for
        read_committed); else None. While the stamp stays the same such a fetch reads nothing
        and answers nothing new: what a consumer's fetch session relies on to skip its idle
        partitions (handlers/fetch.py)."""
        if self.role is not Role.LEADER or fetch_offset != self.fetch_upper_bound(isolation_level):
            return None
        log = self.log
        return (self.leader_epoch, log.high_watermark, log.log_start_offset, log.last_stable_offset)

    def touch_quiet_follower(self, replica_id: int, now_ms: int) -> None:
        """Record a fetch at the log end by a follower whose `quiet_follower_stamp` has not
        changed: the state `record_follower_fetch` would leave, without the HW and ISR checks
        that cannot move anything then."""
        state = self.followers[replica_id]
        leo = self.log.log_end_offset
        self.followers[replica_id] = rules.record_fetch(state, leo, leo, now_ms)

    def isr_to_expand(self, replica_id: int) -> list[int] | None:
        """The ISR with `replica_id` added when it may join now (Kafka's maybeExpandIsr),
        else None (not leader, a proposal in flight or fenced, already in, not caught up)."""
        if self.role is not Role.LEADER or self.pending_isr is not None or self.isr_fenced:
            return None
        state = self.followers.get(replica_id)
        if state is None or replica_id in self.isr:
            return None
        if rules.may_join_isr(state, self.log.high_watermark, self.epoch_start_offset):
            return [*self.isr, replica_id]
        return None

    def isr_to_shrink(self, now_ms: int) -> list[int] | None:
        """The ISR without its members that are out of sync (Kafka's maybeShrinkIsr), or None
        when nothing is to be dropped (or not leader, a proposal in flight, fenced)."""
        if self.role is not Role.LEADER or self.pending_isr is not None or self.isr_fenced:
            return None
        out = rules.out_of_sync(
            self.isr, self.node_id, self.followers, self.log.log_end_offset, now_ms, self.lag_ms
        )
        if not out:
            return None
        return [r for r in self.isr if r not in out]

    def isr_without_non_replicas(self) -> list[int] | None:
        """The ISR without its members that are not replicas, when it has any and this leader
        may propose a change now; else None (Kafka's ISR is always within the replicas)."""
        if self.role is not Role.LEADER or self.pending_isr is not None or self.isr_fenced:
            return None
        isr = [r for r in self.isr if r == self.node_id or r in self.followers]
        return isr if len(isr) != len(self.isr) else None

    def propose_isr(self, isr: Sequence[int]) -> None:
        """A proposal is in flight from now until `commit_isr` or `reject_isr`."""
        self.pending_isr = list(isr)

    def commit_isr(self, isr: Sequence[int], partition_epoch: int, now_ms: int) -> bool:
        """An ISR change was stored at `partition_epoch` (ignored unless newer). True when the
        HW moved (a smaller ISR may let it advance)."""
        if partition_epoch <= self.partition_epoch:
            return False
        self.isr = list(isr)
        self.partition_epoch = partition_epoch
        self.pending_isr = None
        if self.role is not Role.LEADER:
            return False
        self.single_replica = self.replicas == [self.node_id] and self.isr == [self.node_id]
        return self._maybe_advance_high_watermark(now_ms)

    def reject_isr(self) -> None:
        """The proposal was refused (the state changed under us): no more ISR changes until
        the next accepted `become_leader`."""
        self.pending_isr = None
        if self.role is Role.LEADER:
            self.isr_fenced = True

    def maybe_advance_high_watermark(self, now_ms: int) -> bool:
        """Re-evaluate the HW (time passes: a follower outside the ISR stops counting once it
        is no longer caught up); True when it moved."""
        return self._maybe_advance_high_watermark(now_ms)

    # -- operations ---------------------------------------------------------------------------
    def append_records(
        self,
        records: bytes | bytearray | memoryview,
        *,
        now_ms: int,
        required_acks: int = -1,
        batches: Sequence[tuple[int, BatchHeader]] | None = None,
        coordinator: bool = False,
    ) -> AppendResult:
        """Append as leader; raises wirebroker.log.errors.LogError, NotEnoughReplicasError or
        NotLeaderOrFollowerError. `batches`: the records' batch headers, when the caller
        parsed them (not parsed again); `coordinator`: see `PartitionLog.append_as_leader`."""
        if self.role is not Role.LEADER:
            raise NotLeaderOrFollowerError(
                f"This server is not the leader for partition {self.topic}-{self.index}"
            )
        if required_acks == -1 and len(self.isr) < self.effective_min_isr:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {self.isr} is insufficient to satisfy the min.isr "
                f"requirement of {self.effective_min_isr} for partition {self.topic}-"
                f"{self.index}"
            )
        result = self.log.append_as_leader(
            records,
            leader_epoch=self.leader_epoch,
            now_ms=now_ms,
            batches=batches,
            coordinator=coordinator,
        )
        self._maybe_advance_high_watermark(now_ms)
        return result

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> AppendResult:
        """Write a COMMIT/ABORT transaction marker as leader (WriteTxnMarkers; see
        `PartitionLog.append_marker`). Raises NotLeaderOrFollowerError unless leader, LogError
        from the log. The caller wakes fetchers (`ReplicaManager.notify_data`) and, for
        acks=all semantics, waits for the HW to pass the marker's offset, as for a Produce.
        An ISR below min.insync.replicas raises NotEnoughReplicasError (nothing written; the
        coordinator retries), as Kafka's acks=-1 append of a marker."""
        if self.role is not Role.LEADER:
            raise NotLeaderOrFollowerError(
                f"This server is not the leader for partition {self.topic}-{self.index}"
            )
        if len(self.isr) < self.effective_min_isr:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {self.isr} is insufficient to satisfy the min.isr "
                f"requirement of {self.effective_min_isr} for partition {self.topic}-"
                f"{self.index}"
            )
        result = self.log.append_marker(
            producer_id,
            producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            leader_epoch=self.leader_epoch,
            now_ms=now_ms,
        )
        self._maybe_advance_high_watermark(now_ms)
        return result

    def append_as_follower(
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_high_watermark: int,
        leader_log_start_offset: int = -1,
        now_ms: int,
    ) -> AppendResult | None:
        """Append what the leader sent (nothing when `records` is empty), then take the HW
        min(leader's HW, own log end) and follow the leader's log start offset. Raises
        NotLeaderOrFollowerError unless follower, LogError from the log."""
        if self.role is not Role.FOLLOWER:
            raise NotLeaderOrFollowerError(f"{self.topic}-{self.index} is not a follower here")
        result = self.log.append_as_follower(records, now_ms=now_ms) if records else None
        self.log.high_watermark = leader_high_watermark
        if leader_log_start_offset > self.log.log_start_offset:
            self.log.advance_log_start_offset(leader_log_start_offset)
        return result

    def read(
        self,
        offset: int,
        *,
        max_bytes: int,
        isolation_level: int = READ_UNCOMMITTED,
        from_follower: bool = False,
        min_one_batch: bool = True,
        zero_copy: bool = False,
    ) -> bytes | FileSlice:
        """Whole batches from the one containing `offset`, none starting at or past the bound;
        `zero_copy`: as a `FileSlice` where the log can make one (`PartitionLog.read_to_send`).

        Raises wirebroker.log.errors.OffsetOutOfRangeError when offset < log start or
        > log end offset.
        """
        bound = self.fetch_upper_bound(isolation_level, from_follower=from_follower)
        if offset >= bound and offset <= self.log_end_offset and offset >= self.log_start_offset:
            return b""  # nothing visible yet (out of range: the read below raises)
        return self.log.read_to_send(
            offset,
            max_bytes=max_bytes,
            max_offset=bound,
            min_one_batch=min_one_batch,
            zero_copy=zero_copy,
        )

    def update_config(self, config: LogConfig, min_insync_replicas: int) -> None:
        """The topic's configs changed: new LogConfig and min.insync.replicas."""
        self.log.update_config(config)
        self.min_insync_replicas = min_insync_replicas
