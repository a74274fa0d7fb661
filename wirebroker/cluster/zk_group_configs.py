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
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from protocol.errors import ErrorCode
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_events import AppliedNodes
from wirebroker.coordination.api import (
    BadVersionError,
    CoordinationError,
    Create,
    DataCallback,
    NodeExistsError,
    NoNodeError,
    Op,
    SetData,
    Stat,
    TransactionError,
    Watch,
)
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


class ZkGroupConfigs(GroupConfigs):
    """Every group's config overrides, kept in ZooKeeper (see the module docstring)."""

    def __init__(
        self, coord: Coordination, *, store: TopicStore | None = None, timeout_s: float = 30.0
    ) -> None:
        super().__init__()
        self.coord = coord
        self.topic_store = store
        self.timeout_s = timeout_s
        self._children: Watch | None = None
        self._data: dict[str, Watch] = {}  # node name -> its data watch
        self._applied = AppliedNodes()  # by node path
        self._scope = trio.CancelScope()
        self._events_send, self._events = trio.open_memory_channel[list[str]](math.inf)

    # -- the mirror ----------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        with self._scope:
            try:
                self._children = await self.coord.watch_children(
                    zl.CONFIG_GROUPS, lambda names: self._events_send.send_nowait(names or [])
                )
                while True:  # apply what is there before reporting started
                    try:
                        names = self._events.receive_nowait()
                    except trio.WouldBlock:
                        break
                    await self._follow(names)
                task_status.started()
                async for names in self._events:
                    await self._follow(names)
            finally:
                for watch in [self._children, *self._data.values()]:
                    if watch is not None:
                        watch.cancel()

    def close(self) -> None:
        self._scope.cancel()

    async def _follow(self, names: list[str]) -> None:
        """Reconcile the data watches with the children of /config/groups."""
        for name in [n for n in self._data if n not in names]:
            self._data.pop(name).cancel()
            self._applied_node(name, None, None)
        for name in sorted(set(names) - set(self._data)):
            path = f"{zl.CONFIG_GROUPS}/{name}"
            self._data[name] = await self.coord.watch_data(path, self._on_data(name))

    def _on_data(self, name: str) -> DataCallback:
        def on_data(data: bytes | None, stat: Stat | None) -> None:
            self._applied_node(name, data, stat)

        return on_data

    def _applied_node(self, name: str, data: bytes | None, stat: Stat | None) -> None:
        path = f"{zl.CONFIG_GROUPS}/{name}"
        try:
            group = zl.desanitize_user(name)
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
        try:
            with trio.fail_after(self.timeout_s):
                written = await self._write(group, path, compute, validate_only)
                if written is not None:
                    await self._applied.wait_for({path: written})
        except trio.TooSlowError:
            raise GroupConfigStoreError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"The change was not applied within {self.timeout_s:g} s",
            ) from None
        except CoordinationError as exc:
            raise GroupConfigStoreError(
                ErrorCode.UNKNOWN, f"ZooKeeper write failed: {exc}"
            ) from exc

    async def _write(
        self, group: str, path: str, compute: Compute, validate_only: bool
    ) -> Stat | None:
        """Compute from the node and write it with its notification, conditionally on the
        version read; the written stat (None: nothing written)."""
        while True:
            current, stat = await self._read(path)
            new = compute(current)
            if validate_only or (new == current and (stat is not None or not new)):
                return None  # nothing to write (no node made for a group without configs)
            data = zl.encode_group_config(new)
            ops: list[Op] = [
                Create(path, data) if stat is None else SetData(path, data, stat.version),
                Create(
                    f"{zl.CONFIG_CHANGES}/config_change_",
                    zl.encode_entity_change(path.removeprefix("/config/")),
                    sequential=True,
                ),
            ]
            await self.coord.ensure_path(zl.CONFIG_GROUPS)
            await self.coord.ensure_path(zl.CONFIG_CHANGES)
            try:
                await self.coord.multi(ops)
            except TransactionError as exc:
                if isinstance(exc.cause, (BadVersionError, NodeExistsError, NoNodeError)):
                    continue  # changed meanwhile: compute again from what is there now
                raise
            written = await self.coord.exists(path)
            if written is not None:
                return written

    async def _read(self, path: str) -> tuple[dict[str, str], Stat | None]:
        try:
            data, stat = await self.coord.get(path)
        except NoNodeError:
            return {}, None
        try:
            return zl.decode_group_config(path, data), stat
        except zl.LayoutError as exc:
            log.warning("overwriting %s: %s", path, exc)
            return {}, stat


def seed_group_ops(group_configs: Mapping[str, Mapping[str, str]]) -> list[Op]:
    """The creates of `/config/groups` and every group's node (a single broker's start)."""
    if not group_configs:
        return []
    ops: list[Op] = [Create(zl.CONFIG_GROUPS)]
    for group, configs in sorted(group_configs.items()):
        ops.append(Create(zl.group_config_path(group), zl.encode_group_config(configs)))
    return ops
