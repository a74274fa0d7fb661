"""Answers that wait for the ISR (acks=-1 Produce, WriteTxnMarkers): each waiting append is
(its answer, partition, the offset the high watermark must reach, leader epoch at the append).

`await_replication` waits, until one deadline for all (trio time), for each append to be
replicated, through the broker's produce purgatory (`ProduceWaiters`) or, without one, by
asking the partition once (not replicated yet -> REQUEST_TIMED_OUT); an answer whose append
failed to replicate gets that error code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

import trio

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wirebroker.handlers.context import RequestContext
    from wirebroker.replication.partition import Partition

__all__ = ["Answer", "await_replication"]


class Answer(TypedDict):
    """What an answer waiting for replication needs: an error code to set."""

    error_code: int


async def await_replication(
    ctx: RequestContext, waiting: Sequence[tuple[Answer, Partition, int, int]], deadline: float
) -> None:
    waiters = ctx.services.produce_waiters
    for answer, part, required, epoch in waiting:
        if waiters is None:
            code = part.replication_status(required, epoch) or ErrorCode.REQUEST_TIMED_OUT
        else:
            remaining = deadline - trio.current_time()
            code = await waiters.wait(part, required, remaining, leader_epoch=epoch)
        if code != ErrorCode.NONE:
            answer["error_code"] = int(code)
