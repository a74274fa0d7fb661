"""Client quotas in ZooKeeper, as Kafka's ZooKeeper mode kept them, mirrored into every broker.

Nodes (`{"version":1,"config":{"producer_byte_rate":"102400",...}}`; names sanitized as
Kafka's `Sanitizer` does, `<default>` the default entity):

    /config/users/<user>                     a user's quotas (and its SCRAM credentials:
                                             wirebroker.cluster.zk_scram_users; each keeps the
                                             other's keys)
    /config/users/<user>/clients/<id>        a user's quotas for one client id
    /config/clients/<id>                     a client id's quotas
    /config/ips/<ip>                         an ip's connection_creation_rate (stored and
                                             described; not enforced)

A change also writes `/config/changes/config_change_<seq>` (`{"version":2,"entity_path":
"users/<user>/clients/<id>"}`), as Kafka did for its brokers and tools to notice.

Mirror (`run`): children watches on `/config/users`, `/config/clients`, `/config/ips` and on
each user's `clients`, a data watch on every entity node; each call replaces that entity's
values in the broker's `QuotaStore` (what DescribeClientQuotas answers from and enforcement
reads, so neither waits for ZooKeeper). Values that do not parse are left out with a warning.
`run` reports started once the entities present at start are applied.

Alteration (`alter`): read the nodes of the entities named, check the request against them
(`QuotaStore.plan_alter`: Kafka's codes and texts), write the changed nodes (other keys kept)
and their notifications in one `multi` conditional on the versions read (a concurrent change:
read and check again), then wait until this broker's watches applied them.

A single broker (`store` given) runs this over its in-process ZooKeeper and writes every node
but users' (which the SCRAM mirror keeps whole) into its topic store ("quota_configs") before
the alteration is answered; `LocalCluster.seed` writes them back at start.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_config_mirror import ZkConfigMirror, entity_configs, notification
from wirebroker.coordination.api import Create, Op, SetData, Stat, Watch
from wirebroker.security.client_quotas import (
    BYTE_RATE_KEYS,
    CLIENT_ID,
    IP,
    IP_KEYS,
    QUOTA_KEYS,
    USER,
    AlterEntry,
    Entity,
    EntityResult,
    QuotaChange,
    QuotaStore,
    QuotaStoreError,
    make_entity,
)
from wirebroker.security.credentials import parse_user_node, user_node

if TYPE_CHECKING:
    from wirebroker.coordination.api import Coordination
    from wirebroker.metadata.topic_store import TopicStore

__all__ = ["ZkClientQuotas", "entity_rel_path", "quota_values"]

log = logging.getLogger(__name__)

DEFAULT = "<default>"
CONFIG_CLIENTS = "/config/clients"
CONFIG_IPS = "/config/ips"
_ALL_KEYS = QUOTA_KEYS | IP_KEYS


def _name(name: str | None) -> str:
    return DEFAULT if name is None else zl.sanitize_user(name)


def _unname(name: str) -> str | None:
    return None if name == DEFAULT else zl.desanitize_user(name)


def entity_rel_path(entity: Entity) -> str | None:
    """The entity's node under /config ("users/alice/clients/c1"); None: not storable."""
    names = dict(entity)
    if set(names) == {USER}:
        return f"users/{_name(names[USER])}"
    if set(names) == {CLIENT_ID}:
        return f"clients/{_name(names[CLIENT_ID])}"
    if set(names) == {USER, CLIENT_ID}:
        return f"users/{_name(names[USER])}/clients/{_name(names[CLIENT_ID])}"
    if set(names) == {IP}:
        return f"ips/{DEFAULT if names[IP] is None else names[IP]}"
    return None


def quota_values(path: str, configs: Mapping[str, str]) -> dict[str, float]:
    """The quota values among a node's configs (others, e.g. SCRAM credentials, left out)."""
    out = {}
    for key, text in configs.items():
        if key not in _ALL_KEYS:
            continue
        try:
            value = float(text)
        except ValueError:
            log.warning("ignoring %s's %s=%r: not a number", path, key, text)
            continue
        if math.isfinite(value) and value > 0:
            out[key] = value
    return out


def _with_values(configs: Mapping[str, str], values: Mapping[str, float]) -> dict[str, str]:
    out = {k: v for k, v in configs.items() if k not in _ALL_KEYS}
    for key, value in sorted(values.items()):
        out[key] = str(int(value)) if key in BYTE_RATE_KEYS else repr(float(value))
    return out


class ZkClientQuotas(ZkConfigMirror[tuple[str, list[str]]]):
    """Every client quota entity's values, kept in ZooKeeper (see the module docstring)."""

    def __init__(
        self, coord: Coordination, *, store: TopicStore | None = None, timeout_s: float = 30.0
    ) -> None:
        super().__init__(coord, store=store, timeout_s=timeout_s)
        self.quotas = QuotaStore()
        self._children: dict[str, Watch] = {}  # parent path -> its children watch
        self._data: dict[str, Watch] = {}  # entity node path -> its data watch

    # -- the mirror ----------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        await self._mirror(
            task_status,
            self._watch,
            self._follow_event,
            lambda: [*self._children.values(), *self._data.values()],
        )

    async def _watch(self) -> None:
        for parent in (zl.CONFIG_USERS, CONFIG_CLIENTS, CONFIG_IPS):
            await self._watch_parent(parent)

    async def _watch_parent(self, parent: str) -> None:
        def on_children(names: list[str] | None) -> None:
            self._events_send.send_nowait((parent, names or []))

        self._children[parent] = await self.coord.watch_children(parent, on_children)

    async def _follow_event(self, event: tuple[str, list[str]]) -> None:
        await self._follow(*event)

    async def _follow(self, parent: str, names: list[str]) -> None:
        """Reconcile the watches under `parent` with its children `names`."""
        wanted = {f"{parent}/{name}": name for name in names}
        for path in [p for p in self._data if p.rsplit("/", 1)[0] == parent]:
            if path not in wanted:
                self._data.pop(path).cancel()
                self._applied_node(path, None, None)
        if parent == zl.CONFIG_USERS:
            for sub in [p for p in self._children if p.startswith(parent + "/")]:
                if sub.rsplit("/", 1)[0] not in wanted:
                    self._children.pop(sub).cancel()
                    await self._follow(sub, [])
        for path in sorted(set(wanted) - set(self._data)):
            self._data[path] = await self.coord.watch_data(path, self._on_data(path))
            if parent == zl.CONFIG_USERS:
                await self._watch_parent(f"{path}/clients")

    def _applied_node(self, key: str, data: bytes | None, stat: Stat | None) -> None:
        entity = _entity_of(key)
        if entity is None:
            return
        configs: dict[str, str] = {}
        if data:
            try:
                configs = parse_user_node(data)
            except ValueError as exc:
                log.warning("ignoring %s: %s", key, exc)
        self.quotas.apply([QuotaChange(entity, quota_values(key, configs))])
        rel = key.removeprefix("/config/")
        if self.topic_store is not None and not _is_user_node(rel):
            self.topic_store.set_quota_configs(rel, configs)
        self._applied.mark(key, stat)

    # -- alterations ---------------------------------------------------------------------------
    async def alter(
        self, entries: Sequence[AlterEntry], *, validate_only: bool = False
    ) -> list[EntityResult]:
        """AlterClientQuotas: the results, once the changes are stored and applied here;
        QuotaStoreError when they could not be stored."""
        return await self._write_applied(
            lambda: self._write(entries, validate_only), QuotaStoreError
        )

    async def _write(
        self, entries: Sequence[AlterEntry], validate_only: bool
    ) -> tuple[list[EntityResult], dict[str, Stat]]:
        paths = {}
        for entry in entries:
            entity = make_entity(entry.components)
            rel = entity_rel_path(entity) if "" not in dict(entity).values() else None
            if rel is not None:
                paths[entity] = f"/config/{rel}"
        while True:
            reads = {
                entity: await self._read(path, entity_configs) for entity, path in paths.items()
            }
            current = QuotaStore(
                {e: quota_values(paths[e], configs) for e, (configs, _stat) in reads.items()}
            )
            results, changes = current.plan_alter(entries)
            if validate_only or not changes:
                return results, {}
            ops: list[Op] = []
            for change in changes:
                path = paths[change.entity]
                configs, stat = reads[change.entity]
                data = user_node(_with_values(configs, change.values))
                if stat is None:
                    await self.coord.ensure_path(path.rsplit("/", 1)[0])
                    ops.append(Create(path, data))
                else:
                    ops.append(SetData(path, data, stat.version))
                ops.append(notification(path.removeprefix("/config/")))
            await self.coord.ensure_path(zl.CONFIG_CHANGES)
            if not await self._multi(ops):
                continue
            written = {}
            for change in changes:
                path = paths[change.entity]
                stat = await self.coord.exists(path)
                if stat is not None:
                    written[path] = stat
            return results, written


def _is_user_node(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) == 2 and parts[0] == "users"


def _entity_of(path: str) -> Entity | None:
    """The entity of a node path under /config; None: not an entity node."""
    parts = path.removeprefix("/config/").split("/")
    try:
        if len(parts) == 2 and parts[0] == "users":
            return make_entity([(USER, _unname(parts[1]))])
        if len(parts) == 2 and parts[0] == "clients":
            return make_entity([(CLIENT_ID, _unname(parts[1]))])
        if len(parts) == 2 and parts[0] == "ips":
            return make_entity([(IP, None if parts[1] == DEFAULT else parts[1])])
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
            return make_entity([(USER, _unname(parts[1])), (CLIENT_ID, _unname(parts[3]))])
    except ValueError:
        log.warning("ignoring %s: its name does not decode", path)
    return None
