"""`LogView`: a partition's log as the request handlers and the replica fetcher see it.

`Partition` (partition.py) is one; its replica state (role, ISR, followers, high watermark
rules) is its own; the log's offsets, leader epochs, timestamps, aborted transactions and the
changes a handler or fetcher may make (DeleteRecords, truncation) come through here rather
than through `log` (a `PartitionLog`). Pure delegation: no trio, no state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wirebroker.log.partition_log import PartitionLog

__all__ = ["LogView"]


class LogView:
    """The log of a partition, read and changed only through these (module doc)."""

    log: PartitionLog

    # -- offsets -------------------------------------------------------------------------
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
        """min(first offset of the oldest ongoing transaction, high watermark) (log side)."""
        return self.log.last_stable_offset

    def aborted_transactions(
        self, fetch_offset: int, records: bytes | bytearray | memoryview
    ) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping the batches
        `records` a read_committed read from `fetch_offset` returned."""
        return [(t.producer_id, t.first_offset) for t in self.log.aborted_in(fetch_offset, records)]

    # -- log queries and changes the handlers need ----------------------------------------
    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch of the data in the log (-1 when it never had any)."""
        latest = self.log.latest_epoch
        return -1 if latest is None else int(latest)

    def epoch_entries(self) -> list[tuple[int, int]]:
        """The leader-epoch cache: (epoch, start offset), ascending."""
        return self.log.leader_epoch_entries()

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

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at and above `offset` (the HW follows down)."""
        self.log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at `offset` (leader's log start beyond our end)."""
        self.log.truncate_fully_and_start_at(offset)
