"""`LogAppender`: the append path of one `PartitionLog` (Kafka's UnifiedLog.append).

A client's batches as a leader (`as_leader`: validate, deduplicate against producer state,
stamp offsets and leader epoch, check sequences, write; all or nothing, docs/log.md "Append"),
a transaction marker (`marker`), and a follower's replicated batches (`as_follower`: kept as
the leader wrote them). It owns the `LogValidator` and what it remembers between appends (the
producers whose last leader write failed); the log's offsets, producer state, leader epochs and
segments stay the `PartitionLog`'s and its `LocalLog`'s, which it updates in that order:
epoch cache, roll, segment write, producer state, transaction index, flush.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.records import BatchHeader, parse_header
from wirebroker.log.config import LogConfig
from wirebroker.log.control import ControlError, marker_batch, parse_marker
from wirebroker.log.errors import (
    OutOfOrderSequenceError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from wirebroker.log.producer_state import CompletedTxn
from wirebroker.log.segment import Segment
from wirebroker.log.txn_index import AbortedTxn
from wirebroker.log.validator import LogValidator

if TYPE_CHECKING:
    from wirebroker.log.partition_log import PartitionLog

__all__ = ["AppendResult", "LogAppender"]

# the messages keep the logger of the log as a whole (operators and tests look for them)
log = logging.getLogger("wirebroker.log.partition_log")


@dataclass(frozen=True)
class AppendResult:
    first_offset: int
    last_offset: int
    log_append_time: int  # -1 for CreateTime topics
    log_start_offset: int
    duplicate: bool = False  # True: idempotent retry, nothing appended


class LogAppender:
    """The append path of `log` (module doc)."""

    def __init__(self, log: PartitionLog) -> None:
        self._log = log
        self.validator = LogValidator(log.config, log.name)
        #: producer id -> leader epoch of its leader append whose write failed (undone, the
        #: log stays online) and no write of it since: see `as_leader`
        self._write_failed: dict[int, int] = {}

    def update_config(self, config: LogConfig) -> None:
        self.validator = LogValidator(config, self._log.name)

    def as_leader(
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_epoch: int,
        now_ms: int,
        batches: Sequence[tuple[int, BatchHeader]] | None = None,
        coordinator: bool = False,
    ) -> AppendResult:
        """Validate, deduplicate, stamp and write a client append (all or nothing; see
        docs/log.md, "Append"). `batches`: the (position, header) of every batch of
        `records` as `iter_batches` parsed them, so they are not parsed again.
        `coordinator`: the group coordinator's transactional offset commit (no duplicate or
        sequence checks, as Kafka's AppendOrigin.COORDINATOR)."""
        plog = self._log
        plog._check_online()
        # stamped where it lies when writable (a large request is received in place into
        # its own bytearray, nobody else's: protocol/framing.py), else in a copy
        buf = (
            records
            if isinstance(records, memoryview) and not records.readonly
            else bytearray(records)
        )
        checked = self.validator.validate(buf, now_ms, batches)
        log_append_time = now_ms if plog.config.log_append_time else -1

        # idempotence: duplicates first, against committed state, as Kafka does (for a
        # LogAppendTime topic the original batch's append time is reported)
        dup = None if coordinator else plog._producers.find_first_duplicate(h for _, h in checked)
        if dup is not None:
            return AppendResult(
                dup.first_offset,
                dup.last_offset,
                dup.timestamp if log_append_time >= 0 else -1,
                plog.log_start_offset,
                duplicate=True,
            )

        # stamp offsets, leader epoch, LogAppendTime (buf is the request's or our copy:
        # nothing else reads it, so nothing leaks on error)
        first_offset = plog.log_end_offset
        stamped = self.validator.assign_offsets(buf, checked, first_offset, leader_epoch, now_ms)
        last_offset = stamped[-1][1].last_offset
        max_ts = max(h.max_timestamp for _, h in stamped)

        # sequences and epochs, on staged copies (committed after the write). A producer
        # whose last write failed here (full disk) in this leader epoch and none since gets a
        # storage error instead of OUT_OF_ORDER_SEQUENCE_NUMBER: its batch is most likely
        # pipelined behind the failed one (docs/log.md, "Append", step 5)
        pids = {h.producer_id for _, h in stamped if h.producer_id >= 0}
        try:
            staged = plog._producers.validate_all((h for _, h in stamped), coordinator=coordinator)
        except OutOfOrderSequenceError as exc:
            if any(self._write_failed.get(pid) == leader_epoch for pid in pids):
                raise StorageError(
                    f"{plog.name}: the producer's previous append failed to write; its "
                    f"sequence is not checked until one is written ({exc})"
                ) from exc
            raise

        try:
            self._write_leader(buf, stamped, leader_epoch, now_ms, max_ts)
        except StorageError:
            self._write_failed.update(dict.fromkeys(pids, leader_epoch))
            raise
        for pid in pids:
            self._write_failed.pop(pid, None)
        plog._producers.commit(staged)
        plog._local.maybe_flush_messages(now_ms)
        return AppendResult(first_offset, last_offset, log_append_time, plog.log_start_offset)

    def _write_leader(
        self,
        buf: bytearray | memoryview,
        stamped: Sequence[tuple[int, BatchHeader]],
        leader_epoch: int,
        now_ms: int,
        max_ts: int,
    ) -> Segment:
        """Epoch cache, roll, segment append of stamped batches; -> the segment written."""
        plog = self._log
        first_offset = stamped[0][1].base_offset
        last_offset = stamped[-1][1].last_offset
        with plog._io("append", offline_on_error=True):
            if leader_epoch >= 0:
                plog._epochs.assign(leader_epoch, first_offset)
            if plog._epochs.changed:  # also an entry `assign_epoch_start_offset` deferred
                # unsynced: recovery reassigns epochs above the recovery point from the
                # batches (`PartitionLog.sync_epoch_checkpoint`)
                plog._write_epoch_checkpoint(durable=False)
            seg = plog._local.maybe_roll(len(buf), max_ts, last_offset, now_ms, plog._take_snapshot)
        plog._local.append(seg, buf, list(stamped), now_ms)
        return seg

    def marker(
        self,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        leader_epoch: int,
        now_ms: int,
    ) -> AppendResult:
        """Write a COMMIT or ABORT marker (control.py) ending `producer_id`'s ongoing
        transaction, as the transaction coordinator's WriteTxnMarkers asks the leader.

        Checks (`ProducerStateManager.check_marker`): the producer epoch is not older than
        the producer's (`InvalidProducerEpochError`; newer is a KIP-890 bump), the
        coordinator epoch not older than the last marker's (`TransactionCoordinatorFencedError`).
        A marker without an ongoing transaction is still written (Kafka does: the
        coordinator may retry). An ABORT adds (producer, first offset, marker offset, LSO
        after it) to the `.txnindex` of the marker's segment. The marker's batch takes the
        log's next offset; it stays unstable (LSO <= its transaction's first offset) until the
        high watermark passes it."""
        plog = self._log
        plog._check_online()
        plog._producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        buf = bytearray(
            marker_batch(
                producer_id,
                producer_epoch,
                commit=commit,
                coordinator_epoch=coordinator_epoch,
                now_ms=now_ms,
            )
        )
        header = parse_header(buf, 0)
        offset = plog.log_end_offset
        stamped = self.validator.assign_offsets(buf, [(0, header)], offset, leader_epoch, now_ms)
        h = stamped[0][1]
        seg = self._write_leader(buf, stamped, leader_epoch, now_ms, h.max_timestamp)
        txn = plog._producers.end_txn(
            producer_id,
            producer_epoch,
            coordinator_epoch,
            offset,
            h.max_timestamp,
            aborted=not commit,
        )
        if txn.aborted:
            self._index_aborted(seg, txn)
        plog._local.maybe_flush_messages(now_ms)
        log_append_time = now_ms if plog.config.log_append_time else -1
        return AppendResult(offset, offset, log_append_time, plog.log_start_offset)

    def _index_aborted(self, seg: Segment, txn: CompletedTxn) -> None:
        plog = self._log
        entry = AbortedTxn(
            txn.producer_id, txn.first_offset, txn.last_offset, plog._producers.lso_after(txn)
        )
        with plog._io("transaction index", offline_on_error=True):
            seg.txn_index.append(entry)

    def as_follower(self, records: bytes | bytearray | memoryview, *, now_ms: int) -> AppendResult:
        """Append batches fetched from the leader as they are: their offsets, leader epochs,
        timestamps and producer fields are kept (Kafka's appendAsFollower). All or nothing.

        Checked (`LogValidator.validate_replicated`): headers, CRC, offsets increasing; the
        first batch may not start below the log end offset (`UnexpectedAppendOffsetError`;
        above it is allowed: a compacted leader may have removed whole batches). Each batch's
        partition leader epoch enters the epoch cache at its base offset when it is newer
        (checkpointed); producer state follows the batches without sequence checks, so a new
        leader still recognises an idempotent producer's retries. The bytes are in the kernel
        when this returns, as for a leader append."""
        plog = self._log
        plog._check_online()
        checked = self.validator.validate_replicated(records)
        first = checked[0][1].base_offset
        leo = plog.log_end_offset
        if first < leo:
            raise UnexpectedAppendOffsetError(
                f"{plog.name}: replicated records start at {first}, below the log end {leo}"
            )
        last_offset = checked[-1][1].last_offset
        max_ts = max(h.max_timestamp for _, h in checked)
        with plog._io("append", offline_on_error=True):
            seg = plog._local.maybe_roll(
                len(records), max_ts, last_offset, now_ms, plog._take_snapshot
            )
        plog._local.append(seg, records, checked, now_ms)
        for pos, h in checked:
            if h.partition_leader_epoch >= 0:
                plog._epochs.assign(h.partition_leader_epoch, h.base_offset)
            marker = None
            if h.is_control and h.is_transactional and h.producer_id >= 0:
                try:
                    marker = parse_marker(memoryview(records)[pos : pos + h.size])
                except ControlError as exc:
                    log.warning(
                        "%s: replicated control batch at %d: %s", plog.name, h.base_offset, exc
                    )
            txn = plog._producers.apply(h, marker)
            if txn is not None and txn.aborted:
                self._index_aborted(seg, txn)
        if plog._epochs.changed:  # unsynced, as a leader's (`_write_leader`)
            with plog._io("leader epoch checkpoint", offline_on_error=True):
                plog._write_epoch_checkpoint(durable=False)
        plog._local.maybe_flush_messages(now_ms)
        return AppendResult(first, last_offset, -1, plog.log_start_offset)
