"""acks=-1 purgatory: wait until the in-sync replicas have an append (trio runtime).

Kafka's DelayedProduce: after the leader appended, an acks=-1 produce is answered once the high
watermark reaches the append's last offset + 1 (`required_offset`), and then with
`Partition.replication_status`:

    HW >= required, ISR >= min.insync.replicas   NONE
    HW >= required, ISR smaller                  NOT_ENOUGH_REPLICAS_AFTER_APPEND
    not leader any more (or since the append)    NOT_LEADER_OR_FOLLOWER
    deadline (the request's timeout_ms) passed   REQUEST_TIMED_OUT

`ProduceWaiters` is an hw listener of the `ReplicaManager` (`replicas.add_hw_listener(
waiters.notify)`): the manager calls it whenever a replicated partition's HW, ISR or role
changes outside an append, and each waiter of that partition re-checks. The check runs before
parking, so a partition whose HW is already there (a single replica: HW = log end after every
append) costs no await; callers on the hot path compare `part.high_watermark >= required`
themselves and do not call `wait` at all. There is no lost wake-up: the check and the
subscription happen without an await in between (as in `FetchWaiters`; both are a
`partition_events.PartitionEvents`, this one parking through its `wait_until`).

`wait` is also what the group coordinator awaits for its offset commits.

DeleteRecords waits in the same purgatory (Kafka's DelayedDeleteRecords, `wait_low_watermark`):
in a replicated partition the leader answers once the partition's low watermark (the least log
start offset of the leader and of the followers on live brokers, `Partition.low_watermark`)
reaches the requested offset, with that low watermark; NOT_LEADER_OR_FOLLOWER once not leader;
REQUEST_TIMED_OUT at the deadline. The manager calls its hw listeners when a follower reports a
higher log start offset, so the waiters re-check then (and on every HW, ISR or role change).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from protocol.errors import ErrorCode
from wirebroker.replication.partition_events import PartitionEvents

if TYPE_CHECKING:
    from wirebroker.replication.partition import Partition

__all__ = ["ProduceWaiters"]


class ProduceWaiters(PartitionEvents):
    """The replication purgatory (see the module doc); `notify` is an hw listener."""

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
        one), so a leadership lost and regained meanwhile answers NOT_LEADER_OR_FOLLOWER (an
        epoch bump while leading does not: `Partition.replication_status`)."""
        epoch = part.leader_epoch if leader_epoch is None else leader_epoch
        deadline = trio.current_time() + max(0.0, timeout_s)
        found = await self.wait_until(
            (part.topic, part.index),
            lambda: part.replication_status(required_offset, epoch),
            deadline,
        )
        return ErrorCode.REQUEST_TIMED_OUT if found is None else found

    async def wait_low_watermark(
        self,
        part: Partition,
        required_offset: int,
        deadline: float,
        is_alive: Callable[[int], bool],
    ) -> tuple[ErrorCode, int]:
        """DeleteRecords: (NONE, low watermark) once `part`'s low watermark (over the
        followers `is_alive` accepts) reaches `required_offset`; (NOT_LEADER_OR_FOLLOWER, -1)
        once not leader; (REQUEST_TIMED_OUT, the low watermark then) at trio time `deadline`."""
        found = await self.wait_until(
            (part.topic, part.index),
            lambda: part.delete_records_status(required_offset, is_alive),
            deadline,
        )
        if found is not None:
            return found
        if not part.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
        return ErrorCode.REQUEST_TIMED_OUT, part.low_watermark(is_alive)
