"""SCRAM users in ZooKeeper, as Kafka's ZooKeeper mode kept them, mirrored into every broker.

`/config/users/<user>` (the name sanitized as Kafka's `Sanitizer` does) holds
`{"version":1,"config":{"SCRAM-SHA-256":"salt=..,stored_key=..,server_key=..,iterations=n"}}`
(wirebroker.security.credentials encodes it; the node is the user's config node, which also
holds its quotas: other keys are kept as they are); a change also writes
`/config/changes/config_change_<seq>` (`{"version":2,"entity_path":"users/<user>"}`), as Kafka
did for its brokers and tools to notice.

Mirror (`run`): a children watch on `/config/users` and a data watch on each user's node;
every call replaces that user's credentials in the broker's `CredentialStore` (what describe
and SCRAM authentication read, so neither ever waits for ZooKeeper). A credential that does not
parse (written by another tool) is left out with a warning. `run` reports started once every
user present at start is applied (before the broker serves).

Alteration (`alter`): read the node of every user named, check the request against what they
hold (`CredentialStore.plan_alter`: Kafka's codes and texts), write the changed nodes and their
notifications in one `multi`, conditional on the versions read (a concurrent change makes it
read and check again), then wait until this broker's watches applied the writes, so a describe
right after the answer sees them (REQUEST_TIMED_OUT after `timeout_s`).

A single broker (`store` given) runs this over its in-process ZooKeeper and writes every
applied user's configs into its topic store (durable, fsynced) before the alteration is
answered; `LocalCluster.seed` writes them back into the tree at start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_config_mirror import ZkConfigMirror, entity_configs, notification
from wirebroker.coordination.api import Create, Op, SetData, Stat, Watch
from wirebroker.security.credentials import (
    CredentialChange,
    CredentialStore,
    ScramDeletion,
    ScramUpsertion,
    UserAlterResult,
    decode_credential,
    parse_user_node,
    user_node,
    with_credential,
)
from wirebroker.security.scram import ScramCredential, ScramMechanism
from wirebroker.security.scram_users import ScramStoreError, ScramUsers

if TYPE_CHECKING:
    from wirebroker.coordination.api import Coordination
    from wirebroker.metadata.topic_store import TopicStore

__all__ = ["ZkScramUsers", "valid_credentials"]

log = logging.getLogger(__name__)

#: (user, configs read, stat read or None when the node does not exist)
_Read = tuple[str, dict[str, str], Stat | None]


def valid_credentials(
    user: str, configs: Mapping[str, str]
) -> dict[ScramMechanism, ScramCredential]:
    """The SCRAM credentials among a user's configs, without those that do not parse."""
    found = {}
    for mechanism in ScramMechanism:
        text = configs.get(mechanism.mechanism_name)
        if text is None:
            continue
        try:
            found[mechanism] = decode_credential(text)
        except ValueError:
            log.warning(
                "ignoring the %s credential of user %r: it does not parse",
                mechanism.mechanism_name,
                user,
            )
    return found


class ZkScramUsers(ZkConfigMirror[list[str]], ScramUsers):
    """Every user's SCRAM credentials, kept in ZooKeeper (see the module docstring)."""

    def __init__(
        self, coord: Coordination, *, store: TopicStore | None = None, timeout_s: float = 30.0
    ) -> None:
        super().__init__(coord, store=store, timeout_s=timeout_s)
        self._store = CredentialStore()
        self._children: Watch | None = None
        self._watches: dict[str, Watch] = {}  # by user

    @property
    def store(self) -> CredentialStore:
        return self._store

    # -- the mirror ----------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        """Mirror `/config/users` until cancelled or `close`; started once the current users
        are applied. Each child list is whole: only the newest queued one is followed."""
        await self._mirror(
            task_status,
            self._watch,
            self._follow,
            lambda: [self._children, *self._watches.values()],
            latest_only=True,
        )

    async def _watch(self) -> None:
        self._children = await self.coord.watch_children(
            zl.CONFIG_USERS, lambda names: self._events_send.send_nowait(names or [])
        )

    async def _follow(self, names: list[str]) -> None:
        users = {zl.desanitize_user(name) for name in names}
        for user in set(self._watches) - users:
            self._watches.pop(user).cancel()
            self._applied_node(user, None, None)
        for user in sorted(users - set(self._watches)):
            self._watches[user] = await self.coord.watch_data(
                zl.user_config_path(user), self._on_data(user)
            )

    def _applied_node(self, key: str, data: bytes | None, stat: Stat | None) -> None:
        configs: dict[str, str] = {}
        if data:
            try:
                configs = parse_user_node(data)
            except ValueError as exc:
                log.warning("ignoring %s: %s", zl.user_config_path(key), exc)
        credentials = valid_credentials(key, configs)
        self._store.apply(
            CredentialChange(key, mechanism, credentials.get(mechanism))
            for mechanism in ScramMechanism
        )
        if self.topic_store is not None:
            self.topic_store.set_user_configs(key, configs)
        self._applied.mark(key, stat)

    # -- alterations ---------------------------------------------------------------------------
    async def alter(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> list[UserAlterResult]:
        return await self._write_applied(
            lambda: self._write(deletions, upsertions), ScramStoreError
        )

    async def _write(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> tuple[list[UserAlterResult], dict[str, Stat]]:
        """Check and write conditionally; the answer and each written user's node stat."""
        names = sorted(({d.name for d in deletions} | {u.name for u in upsertions}) - {""})
        while True:
            reads = [(user, *await self._read_user(user)) for user in names]
            current = CredentialStore(
                {user: valid_credentials(user, configs) for user, configs, _stat in reads}
            )
            results, changes = current.plan_alter(deletions, upsertions)
            if not changes:
                return results, {}
            ops = _write_ops(reads, changes)
            await self.coord.ensure_path(zl.CONFIG_USERS)
            await self.coord.ensure_path(zl.CONFIG_CHANGES)
            if not await self._multi(ops):
                continue  # changed meanwhile: read and check again
            written = {}
            for user in {change.user for change in changes}:
                stat = await self.coord.exists(zl.user_config_path(user))
                if stat is not None:
                    written[user] = stat
            return results, written

    async def _read_user(self, user: str) -> tuple[dict[str, str], Stat | None]:
        return await self._read(zl.user_config_path(user), entity_configs)


def _write_ops(reads: Sequence[_Read], changes: Sequence[CredentialChange]) -> list[Op]:
    """The node writes (conditional on the versions read) and a notification per user."""
    configs = {user: dict(read) for user, read, _stat in reads}
    stats = {user: stat for user, _read, stat in reads}
    for change in changes:
        configs[change.user] = with_credential(
            configs[change.user], change.mechanism, change.credential
        )
    ops: list[Op] = []
    for user in sorted({change.user for change in changes}):
        path, data, stat = zl.user_config_path(user), user_node(configs[user]), stats[user]
        ops.append(Create(path, data) if stat is None else SetData(path, data, stat.version))
        ops.append(notification(f"users/{zl.sanitize_user(user)}"))
    return ops
