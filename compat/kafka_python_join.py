"""A workaround for a kafka-python 3.0.12 group-join race, shared by the compat adapter
(compat/kafka-python/adapter.py) and the test suite (tests/conftest.py).

The race (compat/kafka-python/FINDINGS.md): a rebalance started by a metadata change (the
subscribed topic's partitions arrive after a first join that assigned nothing) runs as a
background join task. When `poll(timeout_ms)` expires before its SyncGroup answer, the task
finishes on its own, but the leader's `_perform_assignment` has already set the assignment
snapshot to the metadata snapshot, so `need_rejoin()` is false and no later poll consumes the
finished task: `_on_join_complete` never runs and the member keeps its old (empty)
assignment for good. Not a broker gap: it happens against any broker when the machine is
slow enough for the join to outlast one poll.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["unstick_join"]

_log = logging.getLogger(__name__)


def unstick_join(consumer: Any) -> bool:
    """Ask for a fresh rebalance when `consumer` (a kafka.KafkaConsumer) is in the stuck state
    (a finished, unconsumed join task with nothing left to rejoin for); the next poll then runs
    and applies it. Returns whether it did. Does nothing in any other state."""
    coordinator = getattr(consumer, "_coordinator", None)
    task = getattr(coordinator, "_join_task", None)
    if coordinator is None or task is None or not task.is_done or coordinator.need_rejoin():
        return False
    _log.info("kafka-python join race: a finished join was never applied; asking for a rebalance")
    coordinator.request_rejoin()
    return True
