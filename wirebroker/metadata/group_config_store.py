"""Where the groups' config overrides live, and what the group coordinator reads of them.

`GroupConfigs` is the interface: `get(group)` the group's overrides (name -> value as set;
empty when none: wirebroker.metadata.group_configs gives their meaning and defaults),
`add_listener(callback)` called with (group, overrides) after every applied change of a group,
`update(group, compute, validate_only=...)` a change computed from the current overrides and
applied here before it returns, `run` / `close` the mirror's lifetime.

Two implementations: `LocalGroupConfigs` (memory; services built without coordination, unit
tests) and the broker's `wirebroker.cluster.zk_group_configs.ZkGroupConfigs` (ZooKeeper
`/config/groups/<group>`, mirrored by every broker; a single broker over its in-process
ZooKeeper, kept in its topic store).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import trio

from wirebroker.metadata.group_configs import Compute

__all__ = ["GroupConfigs", "Listener", "LocalGroupConfigs"]

log = logging.getLogger(__name__)

#: Called with (group, its overrides) once a change of the group is applied on this broker.
Listener = Callable[[str, Mapping[str, str]], None]


class GroupConfigs:
    """Every group's config overrides as this broker has applied them."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[str, str]] = {}
        self._listeners: list[Listener] = []

    def get(self, group: str) -> Mapping[str, str]:
        """The group's overrides (empty: none)."""
        return dict(self._groups.get(group, {}))

    def all(self) -> dict[str, dict[str, str]]:
        """Every group with overrides."""
        return {group: dict(configs) for group, configs in self._groups.items()}

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def apply(self, group: str, configs: Mapping[str, str]) -> None:
        """Make `configs` the group's overrides here; the listeners hear of a change."""
        if dict(configs) == self._groups.get(group, {}):
            return
        if configs:
            self._groups[group] = dict(configs)
        else:
            self._groups.pop(group, None)
        for listener in list(self._listeners):
            try:
                listener(group, dict(configs))
            except Exception:
                log.exception("group config listener failed for group %r", group)

    async def update(self, group: str, compute: Compute, *, validate_only: bool) -> None:
        """Compute the group's new overrides from its current ones (which may refuse) and
        apply them, durably where kept, before returning."""
        raise NotImplementedError

    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    def close(self) -> None:
        """Stop mirroring (nothing to stop in memory)."""


class LocalGroupConfigs(GroupConfigs):
    """Group configs in memory (a broker without coordination; tests)."""

    async def update(self, group: str, compute: Compute, *, validate_only: bool) -> None:
        new = compute(self.get(group))
        if not validate_only:
            self.apply(group, new)
