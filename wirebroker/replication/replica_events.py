"""`ReplicaEvents`: who hears of a hosted partition's changes (the `ReplicaManager`'s
listeners, see replica_manager.py for what each kind hears and why). Pure: listeners are
plain callables, called at once, in the order they were added.
"""

from __future__ import annotations

from collections.abc import Callable

from wirebroker.replication.partition import Partition

__all__ = ["DataListener", "ReplicaEvents", "RoleListener"]

DataListener = Callable[[str, int], None]
RoleListener = Callable[[Partition], None]


class ReplicaEvents:
    """The data, high-watermark and role listeners of the hosted partitions."""

    def __init__(self, on_data: DataListener | None = None) -> None:
        self.data_listeners: list[DataListener] = [on_data] if on_data is not None else []
        self.hw_listeners: list[DataListener] = []
        self.role_listeners: list[RoleListener] = []

    def data(self, topic: str, index: int) -> None:
        """The partition changed (new data, new HW, or deleted): data listeners."""
        for listener in list(self.data_listeners):
            listener(topic, index)

    def state_changed(self, part: Partition) -> None:
        """HW, ISR or role changed: data listeners and hw listeners."""
        self.data(part.topic, part.index)
        for listener in list(self.hw_listeners):
            listener(part.topic, part.index)

    def hw_advanced(self, part: Partition) -> None:
        """Only the HW moved (a follower's fetch): hw listeners."""
        for listener in list(self.hw_listeners):
            listener(part.topic, part.index)

    def role_changed(self, part: Partition) -> None:
        """The partition became leader, follower or neither: role listeners, then as
        `state_changed`."""
        for listener in list(self.role_listeners):
            listener(part)
        self.state_changed(part)
