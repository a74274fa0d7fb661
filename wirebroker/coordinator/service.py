"""What a coordinator that only hands on to the shared runtime has in common (trio).

The transaction and share coordinators are each a pure core (`core`: `begin_loading(p)`,
`unload(ps)`) driven through a `CoordinatorRuntime` (`runtime`), with periodic rounds
(`timers`, `wirebroker.coordinator.timers`). `CoordinatorService` is that shape once: the
lifetime (`run` starts the rounds an interval after it begins, `shutdown` unloads the core),
the broker's leadership calls (`on_became_leader`, `on_resigned`), the `CoordinatorShard`
calls that go straight to the core (`begin_loading`, `unload`) and to the timers
(`next_deadline`), the internal topic (`ensure_topic`: COORDINATOR_NOT_AVAILABLE once shut
down). A coordinator subclasses it with its requests, its fold and replay, and
`fire_timers`. (The group coordinator's runtime, whose core answers through parked requests,
has its own.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import trio

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wirebroker.coordinator.runtime import CoordinatorRuntime
    from wirebroker.coordinator.timers import PeriodicTimers
    from wirebroker.metadata.topic_admin import TopicAdmin

__all__ = ["CoordinatorService", "topic_partitions"]


class _Core(Protocol):
    def begin_loading(self, partition: int, /) -> Any: ...

    def unload(self, partitions: list[int], /) -> Any: ...


def topic_partitions(admin: TopicAdmin, topic: str, configured: int) -> int:
    """The partition count of `topic` when it exists already (a topic keeps its partitions
    whatever the setting says now), else `configured`."""
    existing = admin.describe(topic)
    return configured if existing is None else existing.partitions


class CoordinatorService:
    """The shared part of a coordinator's runtime (see the module docstring)."""

    runtime: CoordinatorRuntime
    core: _Core
    timers: PeriodicTimers
    clock: Callable[[], int]

    # == lifetime ==========================================================================
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled: loads, background work, the periodic rounds."""
        await self.runtime.run(self._start, task_status=task_status)

    async def _start(self) -> None:
        self.timers.start(self.clock())
        self.runtime.run_due_timers()
        await trio.lowlevel.checkpoint()

    def shutdown(self) -> None:
        """Unload everything; later requests are refused."""
        self.core.unload(self.runtime.shutdown())

    @property
    def active(self) -> bool:
        return not self.runtime.stopped

    # == leadership ========================================================================
    def on_became_leader(self, partition: int, leader_epoch: int) -> None:
        """This broker leads `partition` at `leader_epoch`: load it (its keys answer
        COORDINATOR_LOAD_IN_PROGRESS meanwhile). A new leader epoch while this broker already
        leads the partition (the controller only changed the ISR) is no new election: the
        coordinator keeps its state and epoch (`CoordinatorRuntime.on_became_leader`)."""
        self.runtime.on_became_leader(partition, leader_epoch)

    def on_resigned(self, partition: int, leader_epoch: int | None = None) -> None:
        """This broker no longer leads `partition`: unload it."""
        self.runtime.on_resigned(partition, leader_epoch)

    # -- the CoordinatorShard side (called by the runtime) -----------------------------------
    def begin_loading(self, partition: int) -> None:
        self.core.begin_loading(partition)

    def unload(self, partitions: list[int]) -> None:
        self.core.unload(partitions)

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    # == topic =============================================================================
    def ensure_topic(self) -> ErrorCode:
        """Create the internal topic unless it exists; NONE or COORDINATOR_NOT_AVAILABLE."""
        if self.runtime.stopped:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return self.runtime.ensure_topic()
