"""SCRAM users as the broker serves them: what the DescribeUserScramCredentials and
AlterUserScramCredentials handlers call, and what SASL/SCRAM authentication asks.

    users.describe(["alice"])                  # the answer's results (a CredentialStore's)
    await users.alter(deletions, upsertions)   # per user: (user, code, message)
    users.credential(mechanism, "alice")       # ScramCredential | None (for ScramServer)
    users.lookup(mechanism)                    # username -> credential, ScramServer's shape
    users.sasl_lookup(jaas_lookup)             # SaslServerConfig.scram_lookup: these users
                                               # first, then a listener's JAAS user_ entries

Two implementations: `wirebroker.cluster.zk_scram_users.ZkScramUsers` keeps the credentials
in ZooKeeper (`/config/users/<user>`, as Kafka's ZooKeeper mode did) and mirrors them into
every broker's memory by watches, a single broker's over its in-process ZooKeeper, persisted in
its topic store; `LocalScramUsers` (below) holds them in memory (a broker without
coordination, and tests). Both answer describe from memory, so authentication never waits;
`alter` returns once this broker's memory holds the change (read-your-writes on one broker).

`alter` raises `ScramStoreError` when the change could not be stored (ZooKeeper unreachable,
not applied in time): the handler answers its code for every user of the request.
Pure: no trio, no I/O (ZkScramUsers is the trio runtime).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from wirebroker.security.credentials import (
    CredentialStore,
    DescribedUser,
    ScramDeletion,
    ScramUpsertion,
    UserAlterResult,
)
from wirebroker.security.scram import ScramCredential, ScramMechanism

if TYPE_CHECKING:
    import trio

__all__ = ["LocalScramUsers", "ScramLookup", "ScramStoreError", "ScramUsers"]

#: `mechanism -> (username -> credential | None)`: what a SASL listener asks
#: (`wirebroker.security.sasl_server.SaslServerConfig.scram_lookup`).
ScramLookup = Callable[[ScramMechanism], Callable[[str], ScramCredential | None]]


class ScramStoreError(Exception):
    """The alteration could not be stored: `code` for every user of the request."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ScramUsers(abc.ABC):
    """Every user's SCRAM credentials, as this broker knows them (see the module docstring)."""

    @property
    @abc.abstractmethod
    def store(self) -> CredentialStore:
        """The credentials in memory (describe and authentication read them)."""

    def credential(self, mechanism: ScramMechanism, username: str) -> ScramCredential | None:
        return self.store.get(username, mechanism)

    def lookup(self, mechanism: ScramMechanism) -> Callable[[str], ScramCredential | None]:
        """`username -> credential | None` for `mechanism` (what ScramServer asks)."""
        return lambda username: self.credential(mechanism, username)

    def sasl_lookup(self, fallback: ScramLookup | None = None) -> ScramLookup:
        """A SASL listener's lookup: these users first (so a credential altered through the API
        wins), then `fallback`'s (wirebroker's JAAS `user_<name>` entries; Kafka has only the
        former)."""

        def by_mechanism(mechanism: ScramMechanism) -> Callable[[str], ScramCredential | None]:
            static = fallback(mechanism) if fallback is not None else None

            def find(username: str) -> ScramCredential | None:
                found = self.credential(mechanism, username)
                if found is None and static is not None:
                    found = static(username)
                return found

            return find

        return by_mechanism

    def describe(self, users: Sequence[str] | None) -> list[DescribedUser]:
        """DescribeUserScramCredentials' results (None or []: every user with a credential)."""
        return self.store.describe(users)

    @abc.abstractmethod
    async def alter(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> list[UserAlterResult]:
        """AlterUserScramCredentials: the results, once the changes are stored and applied
        here; ScramStoreError when they could not be stored."""

    async def run(self, *, task_status: trio.TaskStatus[Any]) -> None:
        """Keep the credentials current until `close` (the broker starts it before it serves;
        started once the credentials are loaded). In memory: nothing to do."""
        task_status.started()

    def close(self) -> None:  # noqa: B027 (nothing to end in memory)
        """End `run`."""


class LocalScramUsers(ScramUsers):
    """Credentials in memory only (a broker without coordination; tests)."""

    def __init__(self, store: CredentialStore | None = None) -> None:
        self._store = store or CredentialStore()

    @property
    def store(self) -> CredentialStore:
        return self._store

    async def alter(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> list[UserAlterResult]:
        return self._store.alter(deletions, upsertions)
