"""ListPartitionReassignments (key 46), version 0.

wirebroker never has a reassignment in progress (one broker; AlterPartitionReassignments to
the current replica completes at once), and Kafka lists only partitions with one in progress:
the answer is always error NONE with no topics, for `topics` null (every partition) and for
any listed partitions, known or not (Kafka also leaves out partitions it does not know).

Skipped: authorization, timeout_ms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.list_partition_reassignments import (
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
    )


@handler(ApiKey.LIST_PARTITION_REASSIGNMENTS)
async def handle(
    ctx: RequestContext, req: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topics": [],
    }
