"""Dynamic broker configs in ZooKeeper, as Kafka's ZooKeeper mode kept them.

`/config/brokers/<id>` holds one broker's dynamic configs and `/config/brokers/<default>` the
cluster-wide default (`{"version":1,"config":{...}}`); a change also writes
`/config/changes/config_change_<seq>` (`{"version":2,"entity_path":"brokers/<id>"}`), as Kafka
did for its brokers (and its tools) to notice. Every broker watches its own znode and the
default's (`ZkBrokerConfigs.start`) and applies what they hold to its `BrokerConfig`
(wirebroker.dynamic_configs): at start, before it serves, and after every change. A value that
does not parse (written by another tool) is left out with a warning, as Kafka skips an invalid
dynamic config.

A change (`update`): read the znode, compute the new configs from it (the handler's checks
run there and may refuse), write them conditionally on the version read (a concurrent change
makes it read and compute again), write the change notification, then wait until this
broker's watch has applied the write (so a DescribeConfigs right after the answer sees it;
REQUEST_TIMED_OUT after `timeout_s`). The other brokers apply the cluster default when their
watches fire.

A single broker (`store` given) runs this over its in-process ZooKeeper and mirrors every
applied change into its topic store before applying it; `LocalCluster.seed` writes the store's
configs back into the tree at start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.config import BROKER_CONFIGS, BROKER_QUOTA_CONFIGS, ConfigError
from wirebroker.coordination.api import (
    BadVersionError,
    CoordinationError,
    DataCallback,
    NodeExistsError,
    NoNodeError,
    Stat,
    Watch,
)
from wirebroker.dynamic_configs import DEFAULT_ENTITY, BrokerConfigUpdates, Compute, OnChange

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig
    from wirebroker.coordination.api import Coordination
    from wirebroker.metadata.topic_store import TopicStore

__all__ = ["BrokerConfigStoreError", "ZkBrokerConfigs"]

log = logging.getLogger(__name__)

REQUEST_TIMED_OUT = 7
UNKNOWN_SERVER_ERROR = -1


class BrokerConfigStoreError(Exception):
    """The change could not be written or was not applied in time (`error_code`: Kafka's)."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def valid_configs(entity: str, configs: Mapping[str, str]) -> dict[str, str]:
    """`configs` without the values that do not parse (each logged)."""
    out = {}
    for name, value in configs.items():
        d = BROKER_CONFIGS.get(name) or BROKER_QUOTA_CONFIGS.get(name)
        try:
            if d is not None:
                d.parse(value)
        except ConfigError as exc:
            log.warning("ignoring the dynamic config %s of %s: %s", name, entity, exc)
            continue
        out[name] = value
    return out


class ZkBrokerConfigs(BrokerConfigUpdates):
    """This broker's and the cluster default's dynamic configs, kept in ZooKeeper."""

    def __init__(
        self,
        coord: Coordination,
        config: BrokerConfig,
        node_id: int,
        on_change: OnChange,
        *,
        store: TopicStore | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        super().__init__(config, node_id, on_change)
        self.coord = coord
        self.store = store
        self.timeout_s = timeout_s
        self._seen: dict[str, tuple[int, int]] = {}
        self._applied = trio.Event()
        self._watches: list[Watch] = []

    async def start(self) -> None:
        """Watch both znodes; returns once their current values are applied."""
        for entity in (DEFAULT_ENTITY, str(self.node_id)):
            path = zl.broker_config_path(entity)
            self._watches.append(await self.coord.watch_data(path, self._callback(entity)))

    def _callback(self, entity: str) -> DataCallback:
        def on_data(data: bytes | None, stat: Stat | None) -> None:
            try:
                configs = zl.decode_broker_config(entity, data)
            except zl.LayoutError as exc:
                log.warning("ignoring %s: %s", zl.broker_config_path(entity), exc)
                configs = {}
            if self.store is not None:
                self.store.set_broker_configs(entity, configs)
            self.apply(entity, valid_configs(entity, configs))
            self._seen[entity] = (stat.czxid, stat.version) if stat is not None else (0, -1)
            self._applied.set()
            self._applied = trio.Event()

        return on_data

    async def update(self, entity: str, compute: Compute, *, validate_only: bool) -> None:
        path = zl.broker_config_path(entity)
        try:
            written = await self._write(path, entity, compute, validate_only=validate_only)
            if written is None:
                return
            await self.coord.create(
                f"{zl.CONFIG_CHANGES}/config_change_",
                zl.encode_entity_change(f"brokers/{entity}"),
                sequential=True,
                makepath=True,
            )
        except CoordinationError as exc:
            raise BrokerConfigStoreError(
                UNKNOWN_SERVER_ERROR, f"ZooKeeper write failed: {exc}"
            ) from exc
        with trio.move_on_after(self.timeout_s):
            while not self._has_seen(entity, written):
                await self._applied.wait()
            return
        raise BrokerConfigStoreError(
            REQUEST_TIMED_OUT, f"The change was not applied within {self.timeout_s:g} s"
        )

    async def _write(
        self, path: str, entity: str, compute: Compute, *, validate_only: bool
    ) -> Stat | None:
        """Compute from the znode and write conditionally; the written stat (None: nothing
        written, validate_only)."""
        while True:
            try:
                data, stat = await self.coord.get(path)
            except NoNodeError:
                data, stat = b"", None
            new = compute(zl.decode_broker_config(entity, data))
            if validate_only:
                return None
            encoded = zl.encode_broker_config(new)
            try:
                if stat is not None:
                    return await self.coord.set(path, encoded, stat.version)
                await self.coord.create(path, encoded, makepath=True)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # changed meanwhile: compute again from what is there now
            created = await self.coord.exists(path)
            if created is not None:
                return created

    def _has_seen(self, entity: str, written: Stat) -> bool:
        czxid, version = self._seen.get(entity, (0, -1))
        return (czxid == written.czxid and version >= written.version) or czxid > written.czxid
