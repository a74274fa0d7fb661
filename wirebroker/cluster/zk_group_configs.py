"""Group configs (the GROUP config resource) in ZooKeeper, mirrored into every broker.

Nodes: `/config/groups/<group>` (`{"version":1,"config":{"consumer.session.timeout.ms":
"50000"}}`; the name sanitized as Kafka's `Sanitizer` writes a user's, so "/" never splits a
path), laid out as Kafka's ZooKeeper mode laid out its other config entities. A change also
writes `/config/changes/config_change_<seq>` (`{"version":2,"entity_path":"groups/<group>"}`).

Mirror (`run`): a children watch on `/config/groups` and a data watch on every group's node;
each call replaces that group's overrides in this broker's `GroupConfigs` (what DescribeConfigs
answers from and the group coordinator reads, so neither waits for ZooKeeper), whose listeners
hear of it. A node that does not decode is taken as empty, with a warning. `run` reports
started once the groups present at start are applied.

A change (`update`): read the group's node, compute the new overrides from it (the handler's
checks run there and may refuse), write it and its notification in one `multi` conditional on
the version read (a concurrent change: read and compute again), then wait until this broker's
watch applied the write (REQUEST_TIMED_OUT after `timeout_s`). Deleting every override leaves
an empty node, as Kafka's ZooKeeper mode left an entity's.

A single broker (`store` given) runs this over its in-process ZooKeeper and mirrors every
applied group into its topic store ("group_configs") before applying it; `LocalCluster.seed`
writes them back into the tree at start, so they survive a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_config_mirror import ZkConfigMirror, notification
from wirebroker.coordination.api import Create, Op, SetData, Stat, Watch
from wirebroker.metadata.group_config_store import GroupConfigs
from wirebroker.metadata.group_configs import Compute

if TYPE_CHECKING:
    from wirebroker.coordination.api import Coordination
    from wirebroker.metadata.topic_store import TopicStore

__all__ = ["GroupConfigStoreError", "ZkGroupConfigs"]

log = logging.getLogger(__name__)


class GroupConfigStoreError(Exception):
    """The change could not be written or was not applied in time (`error_code`: Kafka's)."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class ZkGroupConfigs(ZkConfigMirror[list[str]], GroupConfigs):
    """Every group's config overrides, kept in ZooKeeper (see the module docstring)."""

    def __init__(
        self, coord: Coordination, *, store: TopicStore | None = None, timeout_s: float = 30.0
    ) -> None:
        GroupConfigs.__init__(self)
        ZkConfigMirror.__init__(self, coord, store=store, timeout_s=timeout_s)
        self._children: Watch | None = None
        self._data: dict[str, Watch] = {}  # node name -> its data watch

    # -- the mirror ----------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        await self._mirror(
            task_status,
            self._watch,
            self._follow,
            lambda: [self._children, *self._data.values()],
        )

    async def _watch(self) -> None:
        self._children = await self.coord.watch_children(
            zl.CONFIG_GROUPS, lambda names: self._events_send.send_nowait(names or [])
        )

    async def _follow(self, names: list[str]) -> None:
        """Reconcile the data watches with the children of /config/groups."""
        for name in [n for n in self._data if n not in names]:
            self._data.pop(name).cancel()
            self._applied_node(name, None, None)
        for name in sorted(set(names) - set(self._data)):
            path = f"{zl.CONFIG_GROUPS}/{name}"
            self._data[name] = await self.coord.watch_data(path, self._on_data(name))

    def _applied_node(self, key: str, data: bytes | None, stat: Stat | None) -> None:
        path = f"{zl.CONFIG_GROUPS}/{key}"
        try:
            group = zl.desanitize_user(key)
        except ValueError:
            log.warning("ignoring %s: its name does not decode", path)
            return
        try:
            configs = zl.decode_group_config(path, data)
        except zl.LayoutError as exc:
            log.warning("ignoring %s: %s", path, exc)
            configs = {}
        if self.topic_store is not None:
            self.topic_store.set_group_configs(group, configs)
        self.apply(group, configs)
        self._applied.mark(path, stat)

    # -- changes -------------------------------------------------------------------------------
    async def update(self, group: str, compute: Compute, *, validate_only: bool) -> None:
        path = zl.group_config_path(group)
        await self._write_applied(
            lambda: self._write(path, compute, validate_only), GroupConfigStoreError
        )

    async def _write(
        self, path: str, compute: Compute, validate_only: bool
    ) -> tuple[None, dict[str, Stat]]:
        """Compute from the node and write it with its notification, conditionally on the
        version read; the node's stat written (none: nothing written)."""
        while True:
            current, stat = await self._read(path, lambda data: zl.decode_group_config(path, data))
            new = compute(current)
            if validate_only or (new == current and (stat is not None or not new)):
                return None, {}  # nothing to write (no node made for a group without configs)
            data = zl.encode_group_config(new)
            ops: list[Op] = [
                Create(path, data) if stat is None else SetData(path, data, stat.version),
                notification(path.removeprefix("/config/")),
            ]
            await self.coord.ensure_path(zl.CONFIG_GROUPS)
            await self.coord.ensure_path(zl.CONFIG_CHANGES)
            if not await self._multi(ops):
                continue  # changed meanwhile: compute again from what is there now
            written = await self.coord.exists(path)
            if written is not None:
                return None, {path: written}


def seed_group_ops(group_configs: Mapping[str, Mapping[str, str]]) -> list[Op]:
    """The creates of `/config/groups` and every group's node (a single broker's start)."""
    if not group_configs:
        return []
    ops: list[Op] = [Create(zl.CONFIG_GROUPS)]
    for group, configs in sorted(group_configs.items()):
        ops.append(Create(zl.group_config_path(group), zl.encode_group_config(configs)))
    return ops
