"""acks=-1 purgatory: wait until the in-sync replicas have an append (trio runtime).

Kafka's DelayedProduce: after the leader appended, an acks=-1 produce is answered once the high
watermark reaches the append's last offset + 1 (`required_offset`), and then with
`Partition.replication_status`:

    HW >= required, ISR >= min.insync.replicas   NONE
    HW >= required, ISR smaller                  NOT_ENOUGH_REPLICAS_AFTER_APPEND
    not leader any more (or another epoch)       NOT_LEADER_OR_FOLLOWER
    deadline (the request's timeout_ms) passed   REQUEST_TIMED_OUT

`ProduceWaiters` is an hw listener of the `ReplicaManager` (`replicas.add_hw_listener(
waiters.notify)`): the manager calls it whenever a replicated partition's HW, ISR or role
changes outside an append, and each waiter of that partition re-checks. The check runs before
parking, so a partition whose HW is already there (a single replica: HW = log end after every
append) costs no await; callers on the hot path compare `part.high_watermark >= required`
themselves and do not call `wait` at all. There is no lost wake-up: the check and the
subscription happen without an await in between (as in `FetchWaiters`).

`wait` is also what the group coordinator awaits for its offset commits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wirebroker.replication.partition import Partition

__all__ = ["ProduceWaiters"]

Key = tuple[str, int]


class ProduceWaiters:
    def __init__(self) -> None:
        self._waiting: dict[Key, set[trio.Event]] = {}

    def notify(self, topic: str, index: int) -> None:
        """Wake every waiter of this partition (sync; an hw listener)."""
        events = self._waiting.get((topic, index))
        if events:
            for event in events:
                event.set()

    def __call__(self, topic: str, index: int) -> None:
        self.notify(topic, index)

    async def wait(
        self,
        part: Partition,
        required_offset: int,
        timeout_s: float,
        *,
        leader_epoch: int | None = None,
    ) -> ErrorCode:
        """Wait until `part`'s HW reaches `required_offset` (see the module doc for the
        answers). `leader_epoch`: the epoch the append was made in (default: the current
        one), so a leadership lost and regained meanwhile answers NOT_LEADER_OR_FOLLOWER."""
        epoch = part.leader_epoch if leader_epoch is None else leader_epoch
        status = part.replication_status(required_offset, epoch)
        if status is not None:
            return status
        key = (part.topic, part.index)
        with trio.move_on_after(max(0.0, timeout_s)):
            while True:
                event = trio.Event()
                events = self._waiting.setdefault(key, set())
                events.add(event)
                try:
                    await event.wait()
                finally:
                    events.discard(event)
                    if not events and self._waiting.get(key) is events:
                        del self._waiting[key]
                status = part.replication_status(required_offset, epoch)
                if status is not None:
                    return status
        return ErrorCode.REQUEST_TIMED_OUT

    def waiting_count(self) -> int:
        """Number of parked waits; for tests and metrics."""
        return sum(len(v) for v in self._waiting.values())
