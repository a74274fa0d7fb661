"""The transaction coordinator's trio runtime: drives the pure `TxnCoordinatorCore`.

The only module of `wirebroker.txn` besides the marker sender (`wirebroker.txn.markers`)
that imports trio. What every coordinator needs (the internal topic, loads on leadership,
appends through the log, replication waits, timers) is the shared
`wirebroker.coordinator.runtime.CoordinatorRuntime` (`self.runtime`); this module is the
transaction coordinator's own part. Handlers call its typed methods; each runs one core call
with `now_ms` from the clock and applies the `TxnResult` (contract: `wirebroker.txn.effects`):

- appends: each record is appended to its `__transaction_state` partition at once (the append
  is synchronous, so records keep the order of the core calls), then the runtime waits until
  the partition's high watermark is past it (acks=-1, the injected `ReplicationWaiter`) and
  calls `core.append_done`. The request that caused the append (InitProducerId, AddPartitions,
  AddOffsets, EndTxn) waits for that and answers what `append_done` returns; coordinator-driven
  appends (timeouts, completions, expirations) run as background tasks.
- markers: handed to the `MarkerSink` (`wirebroker.txn.markers.MarkerSender` over the wire;
  a fake in unit tests), which calls `marker_done(request, partition)` per partition written.

Producer ids: the core allocates synchronously; the runtime takes one id from the
`ProducerIdManager` (async: a ZooKeeper block in a cluster) before each InitProducerId and
hands it to the core, keeping it for the next call when unused.

Ownership: the coordinator serves the transactional ids of the `__transaction_state`
partitions this broker leads (the broker's role listener calls `on_became_leader` /
`on_resigned`, as for the group coordinator and `__consumer_offsets`; the table:
`wirebroker.coordinator.ownership`). A load replays the partition up to its log end
(`wirebroker.txn.loader`) and completes with the leader epoch that started the ownership as
coordinator epoch; PrepareCommit/PrepareAbort transactions found there get their markers sent
again. Loads run one at a time, in the order scheduled (Kafka's transaction-log-manager
thread). A new leader epoch without a leadership lost in between (the controller changed the
ISR) is no new election: no reload, the coordinator epoch stays (`on_became_leader`).
`__transaction_state` is created on the first FindCoordinator for a transactional id
(`transaction.state.log.num.partitions`, replication factor
`transaction.state.log.replication.factor` capped by the live brokers, min.insync.replicas
`transaction.state.log.min.isr`, cleanup.policy=compact, segment.bytes
`transaction.state.log.segment.bytes`).

Timers (the shared runtime's timer task, on the injected clock; or `run_timers(now)` from
tests): every transaction.abort.timed.out.transaction.cleanup.interval.ms
`core.abort_timed_out`, every transaction.remove.expired.transaction.cleanup.interval.ms
`core.expire_transactional_ids`, the first ones an interval after `run` starts.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio

from protocol.errors import ErrorCode
from wirebroker.coordinator.log_reader import LatestFold
from wirebroker.coordinator.runtime import (
    Appended,
    CoordinatorRuntime,
    ReplicationWaiter,
    replicated_at_once,
)
from wirebroker.coordinator.service import CoordinatorService, topic_partitions
from wirebroker.coordinator.timers import PeriodicTimers
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.txn.config import TxnConfig
from wirebroker.txn.coordinator import ListResult, TxnCoordinatorCore, TxnDescription
from wirebroker.txn.effects import EndTxnResult, InitPidResult, MarkerRequest, TxnAppend, TxnResult
from wirebroker.txn.loader import replay
from wirebroker.txn.metadata import PREPARING, TopicPartition, TxnMetadata, TxnState

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig
    from wirebroker.metadata.topic_admin import TopicAdmin
    from wirebroker.replication.producer_ids import ProducerIdManager
    from wirebroker.replication.replica_manager import ReplicaManager

__all__ = ["TXN_TOPIC", "MarkerSink", "TxnCoordinatorRuntime"]

log = logging.getLogger(__name__)

R = TypeVar("R")
TXN_TOPIC = "__transaction_state"
#: Pause before writing again a record whose append failed (Kafka retries its CompleteCommit /
#: CompleteAbort appends on the marker channel's next round).
RETRY_BACKOFF_S = 0.1


class MarkerSink(Protocol):
    """Where the runtime sends WriteTxnMarkers work (`wirebroker.txn.markers.MarkerSender`)."""

    def send(self, request: MarkerRequest, partitions: Iterable[TopicPartition]) -> None: ...


class TxnCoordinatorRuntime(CoordinatorService):
    """Runs a `TxnCoordinatorCore` for the broker (see the module docstring); the
    `CoordinatorShard` of its `CoordinatorRuntime`. A resigned partition's markers still in
    flight are dropped by the sender (`marker_wanted` turns false)."""

    core: TxnCoordinatorCore

    def __init__(
        self,
        config: BrokerConfig,
        replicas: ReplicaManager,
        *,
        admin: TopicAdmin,
        producer_ids: ProducerIdManager,
        clock: Callable[[], int],
        live_brokers: Callable[[], int] = lambda: 1,
        replication_factor: int | None = None,
        replication_waiter: ReplicationWaiter = replicated_at_once,
        markers: MarkerSink | None = None,
    ) -> None:
        self.replicas = replicas
        self.admin = admin
        self.producer_ids = producer_ids
        self.clock = clock
        self.live_brokers = live_brokers
        txn_config = TxnConfig.from_broker_config(config)
        partitions = topic_partitions(admin, TXN_TOPIC, txn_config.num_partitions)
        txn_config = dataclasses.replace(txn_config, num_partitions=partitions)
        self._spare_pid: int | None = None
        self.core = TxnCoordinatorCore(txn_config, self._take_pid)
        self.replication_factor = (
            config.get_int("transaction.state.log.replication.factor")
            if replication_factor is None
            else replication_factor
        )
        self.min_isr = config.get_int("transaction.state.log.min.isr")
        self.segment_bytes = config.get_int("transaction.state.log.segment.bytes")
        self.append_timeout_s = config.get_int("request.timeout.ms") / 1000
        self.markers: MarkerSink | None = markers
        self.runtime = CoordinatorRuntime(
            topic=TXN_TOPIC,
            partitions=txn_config.num_partitions,
            shard=self,
            replicas=replicas,
            admin=admin,
            clock=clock,
            new_topic=self._new_topic,
            replication_waiter=replication_waiter,
            role="transaction coordinator",
        )
        #: the abort and the transactional id expiry rounds
        self.timers = PeriodicTimers(
            abort=txn_config.abort_check_interval_ms, expire=txn_config.expire_check_interval_ms
        )

    # -- the CoordinatorShard side (called by the runtime) -----------------------------------
    def new_fold(self, partition: int) -> LatestFold:
        del partition
        return LatestFold()

    def replay(self, partition: int, fold: LatestFold) -> dict[str, TxnMetadata]:
        del partition
        return replay(fold.latest.items())

    def complete_loading(
        self, partition: int, epoch: int, replayed: dict[str, TxnMetadata], started_ms: int
    ) -> None:
        self._apply(self.core.complete_loading(partition, epoch, replayed, self.clock()))
        if replayed:
            log.info(
                "loaded %s-%d (coordinator epoch %d) in %d ms: %d transactional id(s), "
                "%d ongoing, %d completing (markers sent again)",
                TXN_TOPIC,
                partition,
                epoch,
                self.clock() - started_ms,
                len(replayed),
                sum(m.state is TxnState.ONGOING for m in replayed.values()),
                sum(m.state in PREPARING for m in replayed.values()),
            )

    def fire_timers(self, now_ms: int) -> None:
        """The timer rounds due at `now_ms`; each next one an interval later."""
        due = self.timers.due(now_ms)
        self.run_timers(now_ms, abort="abort" in due, expire="expire" in due)

    # == topic =============================================================================
    def partition_for(self, transactional_id: str) -> int:
        return self.core.partition_for(transactional_id)

    def _new_topic(self) -> NewTopic:
        factor = max(1, min(self.replication_factor, self.live_brokers()))
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": str(self.segment_bytes),
            "min.insync.replicas": str(min(self.min_isr, factor)),
            "unclean.leader.election.enable": "false",
            "compression.type": "uncompressed",
        }
        return NewTopic(TXN_TOPIC, self.core.config.num_partitions, factor, configs)

    # == requests ==========================================================================
    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> InitPidResult:
        if self._spare_pid is None:
            self._spare_pid = await self.producer_ids.allocate()
        response = await self._call(
            lambda now: self.core.init_producer_id(transactional_id, timeout_ms, now, expected)
        )
        assert isinstance(response, InitPidResult)
        return response

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        client_tv: int | None = None,
    ) -> ErrorCode:
        parts = list(partitions)
        return await self._call_for_error(
            lambda now: self.core.add_partitions(
                transactional_id, producer_id, producer_epoch, parts, now, client_tv
            )
        )

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        return self.core.verify_partitions(
            transactional_id, producer_id, producer_epoch, partitions
        )

    async def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode:
        return await self._call_for_error(
            lambda now: self.core.add_offsets(
                transactional_id, producer_id, producer_epoch, group_id, now
            )
        )

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        return await self._call_for_error(
            lambda now: self.core.end_txn(
                transactional_id, producer_id, producer_epoch, commit, now
            )
        )

    async def end_txn_v2(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> EndTxnResult:
        """EndTxn v5 (transaction version 2): the epoch bump per transaction. A producer id
        is reserved first, as for InitProducerId: the core takes it on an epoch rollover."""
        if self._spare_pid is None:
            self._spare_pid = await self.producer_ids.allocate()
        response = await self._call(
            lambda now: self.core.end_txn(
                transactional_id, producer_id, producer_epoch, commit, now, tv2=True
            )
        )
        assert isinstance(response, EndTxnResult)
        return response

    def describe(self, transactional_id: str) -> TxnDescription:
        return self.core.describe(transactional_id)

    def list_transactions(
        self,
        state_filters: Iterable[str] = (),
        producer_id_filters: Iterable[int] = (),
        min_duration_ms: int = -1,
    ) -> ListResult:
        return self.core.list_transactions(
            self.clock(), state_filters, producer_id_filters, min_duration_ms
        )

    # == markers ===========================================================================
    def marker_done(self, request: MarkerRequest, partition: TopicPartition) -> None:
        """The sender wrote `request`'s marker on `partition` (or its topic is gone)."""
        self._apply(self.core.marker_done(request, partition, self.clock()))

    def marker_wanted(self, request: MarkerRequest) -> bool:
        """False once the transaction's partition was unloaded or changed coordinator epoch
        (the sender then drops the request, as Kafka's marker channel does)."""
        return self.core.marker_pending(request)

    # == timers ============================================================================
    def run_timers(self, now_ms: int, *, abort: bool = True, expire: bool = True) -> None:
        """Abort timed-out transactions / expire idle transactional ids now."""
        if abort:
            self._apply(self.core.abort_timed_out(now_ms))
        if expire:
            self._apply(self.core.expire_transactional_ids(now_ms))

    # == applying core results =============================================================
    def _take_pid(self) -> int:
        pid = self._spare_pid
        if pid is None:
            raise RuntimeError("no producer id reserved before the core call")
        self._spare_pid = None
        return pid

    async def _call_for_error(self, call: Callable[[int], TxnResult[Any]]) -> ErrorCode:
        """`_call` of a core call that answers an error code only."""
        response = await self._call(call)
        assert isinstance(response, ErrorCode)
        return response

    async def _call(self, call: Callable[[int], TxnResult[Any]]) -> Any:
        """One core call: its answer now, or after its (single) append is replicated."""
        result = call(self.clock())
        if result.response is not None:
            self._apply(result)
            return result.response
        appends, result.appends = result.appends, []
        assert len(appends) == 1, "a waiting core call appends exactly one record"
        self._apply(result)
        return await self._append_and_complete(appends[0])

    def _apply(self, result: TxnResult[Any], *, retry: bool = False) -> None:
        """Background effects: appends in their own tasks, markers to the sink. `retry`: the
        appends are retries of one that failed (a CompleteCommit/CompleteAbort the core writes
        again): they wait `RETRY_BACKOFF_S` first, so an unavailable partition (too few
        in-sync replicas, say) is not hammered."""
        for append in result.appends:
            if retry:
                self._spawn(self._retry_append, append)
            else:
                self._spawn(self._append_and_complete, append)
        if result.markers:
            if self.markers is None:
                log.error("no marker sender: %d marker request(s) dropped", len(result.markers))
            else:
                for request in result.markers:
                    self.markers.send(request, request.partitions)

    def _spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self.runtime.spawn(fn, *args)

    async def _append_and_complete(self, append: TxnAppend) -> Any:
        """Append one record, wait for its replication, `append_done`, apply the result;
        the result's response (for a waiting request)."""
        appended = self._append(append)
        error: ErrorCode | None
        if isinstance(appended, Appended):
            error = await self._wait_replicated(appended, append.coordinator_epoch)
        else:
            error = appended
        result = self.core.append_done(append, error, self.clock())
        response = result.response
        result.response = None
        self._apply(result, retry=error is not None)
        return response

    async def _retry_append(self, append: TxnAppend) -> None:
        await trio.sleep(RETRY_BACKOFF_S)
        await self._append_and_complete(append)

    def _append(self, append: TxnAppend) -> Appended | ErrorCode:
        """Append the record now, while this broker leads its partition in the leadership
        that loaded it at its coordinator epoch: what to wait for, or the raw error."""
        return self.runtime.append_records(
            append.partition,
            [(append.key, append.value)],
            self.clock(),
            elected_epoch=append.coordinator_epoch,
        )

    async def _wait_replicated(
        self, appended: Appended, coordinator_epoch: int
    ) -> ErrorCode | None:
        """None once the high watermark passed the record, else the error. The waiter
        answers NOT_LEADER_OR_FOLLOWER when the leader epoch changes; when this broker still
        leads the partition in the same leadership (an ISR change by the controller), the
        log was not truncated and the wait goes on at the new epoch until the deadline."""
        part = appended.part
        deadline = trio.current_time() + self.append_timeout_s
        while True:
            epoch = part.leader_epoch
            timeout_s = max(0.0, deadline - trio.current_time())
            error = await self.runtime.wait_replicated(appended, timeout_s)
            if (
                error is ErrorCode.NOT_LEADER_OR_FOLLOWER
                and part.leader_epoch != epoch
                and self.runtime.leads(part, coordinator_epoch)
            ):
                continue
            return None if error is ErrorCode.NONE else error
