"""Leader epoch cache: epoch -> start offset (Kafka's `LeaderEpochFileCache`, KIP-101/279).

Entries are kept sorted, epochs and start offsets strictly increasing. Persisted by the
owner (`PartitionLog`) to `leader-epoch-checkpoint` whenever `changed` is set.

Rules (as Kafka's):

- `assign(epoch, start)`: ignored for epoch < 0. Needed unless the latest entry already has
  this epoch with a start offset <= start. When needed, entries that the new one would make
  non-monotonic (epoch >= new epoch, or start >= new start) are removed first.
- `truncate_from_end(end)`: drop entries whose start offset >= end (log truncated to end).
- `truncate_from_start(start)`: drop entries whose start offset <= start, keeping the last
  of them re-based to `start` (log start offset advanced).
- `end_offset_for(epoch, log_end_offset)` (OffsetsForLeaderEpoch):
    epoch == -1 (undefined)                -> (-1, -1)
    epoch == latest epoch                  -> (epoch, log end offset)
    no entry above epoch                   -> (-1, -1)
    no entry at/below epoch (too old)      -> (epoch, start of the first higher entry)
    otherwise                              -> (floor entry's epoch, start of the next higher)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

__all__ = ["LeaderEpochCache"]

UNDEFINED = -1


class LeaderEpochCache:
    def __init__(self, entries: list[tuple[int, int]] | None = None) -> None:
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or []:
            self.assign(epoch, start)
        self.changed = False

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            return False
        if self._epochs and self._epochs[-1] == epoch and start_offset >= self._starts[-1]:
            return False
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        self.changed = True
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        keep = bisect_left(self._starts, end_offset)
        if keep < len(self._starts):
            del self._epochs[keep:]
            del self._starts[keep:]
            self.changed = True

    def truncate_from_start(self, start_offset: int) -> None:
        n = bisect_right(self._starts, start_offset)
        if n == 0:
            return
        epoch = self._epochs[n - 1]
        if n == 1 and self._starts[0] == start_offset:
            return
        del self._epochs[:n]
        del self._starts[:n]
        self._epochs.insert(0, epoch)
        self._starts.insert(0, start_offset)
        self.changed = True

    def clear(self) -> None:
        if self._epochs:
            self._epochs.clear()
            self._starts.clear()
            self.changed = True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        if epoch == UNDEFINED:
            return UNDEFINED, UNDEFINED
        if self._epochs and self._epochs[-1] == epoch:
            return epoch, log_end_offset
        higher = bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED, UNDEFINED
        if higher == 0:
            return epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]
