"""One partition as its leader sees it (pure: no trio, no awaits).

State
-----
- `log`: the partition's `PartitionLog` (wirebroker.log).
- `leader_id`, `leader_epoch`: this broker leads every partition; a single broker never changes
  leader, so the epoch stays 0 (Kafka's first epoch) across restarts.
- `replicas`, `isr`: `[node_id]` for a single broker.
- high watermark: kept in `log.high_watermark`. `_maybe_advance_high_watermark` is the one
  place that moves it. With one replica in the ISR it is the log end offset after every append
  (and after loading: every byte in a single broker's log was acknowledged or is at least as
  durable as anything acknowledged). Replication will replace the rule with "the smallest log
  end offset over the ISR" fed by follower fetch positions.
- last stable offset: equal to the high watermark (no transactions are ever open).

Leader-epoch fencing (KIP-320), `check_leader_epoch(current)`:
    current == -1       no check (old clients, or the client does not know the epoch)
    current  > ours     UNKNOWN_LEADER_EPOCH (the client has newer metadata than us)
    current  < ours     FENCED_LEADER_EPOCH  (the client's metadata is stale)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.errors import KafkaError

if TYPE_CHECKING:
    import uuid
    from collections.abc import Sequence

    from protocol.records import BatchHeader
    from wirebroker.log.config import LogConfig
    from wirebroker.log.partition_log import AppendResult, PartitionLog

__all__ = ["NotEnoughReplicasError", "Partition"]

READ_UNCOMMITTED = 0
READ_COMMITTED = 1


class NotEnoughReplicasError(KafkaError, code=ErrorCode.NOT_ENOUGH_REPLICAS):
    """acks=-1 while the ISR is smaller than min.insync.replicas (checked before appending)."""


class Partition:
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
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.leader_id = node_id
        self.leader_epoch = leader_epoch
        self.replicas: list[int] = [node_id]
        self.isr: list[int] = [node_id]
        self.min_insync_replicas = min_insync_replicas
        self._maybe_advance_high_watermark()

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.index}, epoch={self.leader_epoch}, "
            f"hw={self.high_watermark}, leo={self.log_end_offset})"
        )

    # -- offsets ------------------------------------------------------------------------------
    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark

    def _maybe_advance_high_watermark(self) -> bool:
        """Move the high watermark to what every ISR member has; True when it moved.

        Single replica: the ISR is this broker, so the high watermark is the log end offset.
        """
        new_hw = self.log.log_end_offset
        if new_hw != self.log.high_watermark:
            self.log.high_watermark = new_hw
            return True
        return False

    # -- checks -------------------------------------------------------------------------------
    def check_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        if current_leader_epoch == -1 or current_leader_epoch == self.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.FENCED_LEADER_EPOCH

    def fetch_upper_bound(
        self, isolation_level: int = READ_UNCOMMITTED, *, from_follower: bool = False
    ) -> int:
        """The offset a fetcher may read up to (exclusive)."""
        if from_follower:
            return self.log_end_offset
        if isolation_level == READ_COMMITTED:
            return self.last_stable_offset
        return self.high_watermark

    # -- operations ---------------------------------------------------------------------------
    def append_records(
        self,
        records: bytes | bytearray | memoryview,
        *,
        now_ms: int,
        required_acks: int = -1,
        batches: Sequence[tuple[int, BatchHeader]] | None = None,
    ) -> AppendResult:
        """Append as leader; raises wirebroker.log.errors.LogError or NotEnoughReplicasError.
        `batches`: the records' batch headers, when the caller parsed them (not parsed again)."""
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"The size of the current ISR {self.isr} is insufficient to satisfy the min.isr "
                f"requirement of {self.min_insync_replicas} for partition {self.topic}-"
                f"{self.index}"
            )
        result = self.log.append_as_leader(
            records, leader_epoch=self.leader_epoch, now_ms=now_ms, batches=batches
        )
        self._maybe_advance_high_watermark()
        return result

    def read(
        self,
        offset: int,
        *,
        max_bytes: int,
        isolation_level: int = READ_UNCOMMITTED,
        from_follower: bool = False,
        min_one_batch: bool = True,
    ) -> bytes:
        """Whole batches from the one containing `offset`, none starting at or past the bound.

        Raises wirebroker.log.errors.OffsetOutOfRangeError when offset < log start or
        > log end offset.
        """
        bound = self.fetch_upper_bound(isolation_level, from_follower=from_follower)
        if offset >= bound:
            # Nothing visible yet, but still check the range (offset may be past the log end).
            if offset > self.log_end_offset or offset < self.log_start_offset:
                return self.log.read(
                    offset, max_bytes=max_bytes, max_offset=bound, min_one_batch=min_one_batch
                )
            return b""
        return self.log.read(
            offset, max_bytes=max_bytes, max_offset=bound, min_one_batch=min_one_batch
        )

    # -- log queries and changes the handlers need (they never reach into `log`) -------------
    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch of the data in the log (-1 when it never had any)."""
        latest = self.log.latest_epoch
        return -1 if latest is None else int(latest)

    @property
    def size(self) -> int:
        """Bytes of the log's segments."""
        return self.log.size_in_bytes()

    @property
    def deletes_records(self) -> bool:
        """Whether cleanup.policy includes delete (DeleteRecords needs it)."""
        return self.log.config.delete

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `timestamp`, else None."""
        return self.log.offset_for_timestamp(timestamp)

    def max_timestamp(self) -> tuple[int, int]:
        """(timestamp, offset) of the record with the largest timestamp; (-1, -1) if none."""
        return self.log.max_timestamp()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) per KIP-101/279 (OffsetForLeaderEpoch, Fetch divergence)."""
        return self.log.end_offset_for_epoch(epoch)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to `offset`; raises LogError."""
        return self.log.delete_records_before(offset)

    def update_config(self, config: LogConfig, min_insync_replicas: int) -> None:
        """The topic's configs changed: new LogConfig and min.insync.replicas."""
        self.log.update_config(config)
        self.min_insync_replicas = min_insync_replicas
