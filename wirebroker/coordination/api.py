"""The coordination interface: a small ZooKeeper-shaped store the cluster layer runs on.

Two implementations share this contract (and one contract test suite):
- `wirebroker.coordination.zk.ZkCoordination`: a real ZooKeeper through kazoo; kazoo's threads
  never touch broker state, their callbacks only hand events to the trio task `run()`;
- `wirebroker.coordination.memory.MemoryCoordination`: sessions of an in-process
  `MemoryZooKeeper` (versions, czxids, ephemerals, sequential nodes, watches, session expiry),
  used by a single broker and by tests (runs under trio's MockClock).

Model (ZooKeeper's): a tree of znodes addressed by absolute paths ("/brokers/ids/1"); every
znode has data (bytes), a `Stat` (version = number of setData since creation, czxid = the
transaction id that created it, mzxid = the one that last changed it, ephemeral_owner = the
creating session id or 0), and children.
Ephemeral znodes vanish when their session ends. Sequential creates append a 10-digit counter
to the name. Conditional writes pass `version` (-1: any).

Lifetime: `await nursery.start(coord.run)` connects (raises CoordinationError when it cannot
within the connect timeout), calls `task_status.started()`, then delivers watch callbacks and
session events one at a time, in order, in the trio task, until cancelled (then the session is
closed: its ephemerals vanish at once). Every other method may be awaited only while `run` is
running.

Watches: `watch_data(path, cb)` calls `cb(data, stat)` (both None while the znode does not
exist) once with the current value and again after every change, with the latest value (fast
successive changes may be collapsed into one call, as ZooKeeper's one-shot watches do).
`watch_children(path, cb)` calls `cb(children)` (sorted names; None while the znode does not
exist) the same way. `watch_*` returns once the first call has run. Callbacks run in the trio
task of `run`, synchronously, one at a time, in the order the store reported the events; they
must not block and may start async work through a nursery or a memory channel (an exception
from a callback ends `run`). A watch lives until `Watch.cancel()` or the end of `run`, and
survives session loss and reconnection: it is re-read on every `CONNECTED`. Rule for calls: a
change notification from the store always gives one call (even when the re-read value equals
the last one, e.g. a child deleted and re-created before the re-read); a re-read after a
reconnection gives a call only when the value differs from the last one delivered.

Session events (`add_session_listener(cb)`): `SessionState.SUSPENDED` (connection lost, session
may still live), `CONNECTED` (connection back; after LOST: a new session), `LOST` (session
expired: every ephemeral of this client is gone; the client opens a new session by itself and
reports `CONNECTED` once it has one; `session_id` changes). A client learns of an expiry only
when it reconnects, so LOST comes after SUSPENDED. The first connection made by `run` is not
reported (the listeners hear about changes after `run` started). Operations during SUSPENDED
wait for the reconnection (bound them with trio timeouts); an operation cut by a connection
loss raises CoordinationError and may or may not have been applied. Cancelling an awaited
operation drops its result; the store may still apply it.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import trio

__all__ = [
    "BadVersionError",
    "Check",
    "Coordination",
    "CoordinationError",
    "Create",
    "Delete",
    "NoChildrenForEphemeralsError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "Op",
    "SessionState",
    "SetData",
    "Stat",
    "TransactionError",
    "Watch",
]


@dataclass(frozen=True)
class Stat:
    version: int
    czxid: int
    ephemeral_owner: int = 0
    #: the zxid of the znode's last change (its creation or its last setData); znodes
    #: written by one multi share it
    mzxid: int = 0


class CoordinationError(Exception):
    """The store could not do the operation (connection lost, session expired, ...)."""


class NoNodeError(CoordinationError):
    pass


class NodeExistsError(CoordinationError):
    pass


class BadVersionError(CoordinationError):
    pass


class NotEmptyError(CoordinationError):
    pass


class NoChildrenForEphemeralsError(CoordinationError):
    """A create under an ephemeral znode (ephemerals cannot have children)."""


class TransactionError(CoordinationError):
    """A `multi` failed as a whole: `index` is the first failing op, `cause` its error."""

    def __init__(self, index: int, cause: CoordinationError) -> None:
        super().__init__(f"op {index} failed: {type(cause).__name__}")
        self.index = index
        self.cause = cause


class SessionState(enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"
    LOST = "lost"


@dataclass(frozen=True)
class Check:
    path: str
    version: int


@dataclass(frozen=True)
class Create:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True)
class Delete:
    path: str
    version: int = -1


Op = Check | Create | SetData | Delete

DataCallback = Callable[[bytes | None, Stat | None], None]
ChildrenCallback = Callable[[list[str] | None], None]
SessionCallback = Callable[[SessionState], None]


class Watch(abc.ABC):
    @abc.abstractmethod
    def cancel(self) -> None:
        """No more callbacks after this returns."""


class Coordination(abc.ABC):
    """A session with a ZooKeeper-shaped store (see the module docstring)."""

    @property
    @abc.abstractmethod
    def session_id(self) -> int:
        """The current session's id (changes after LOST)."""

    @abc.abstractmethod
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect, report started, deliver callbacks until cancelled, then close the session."""

    @abc.abstractmethod
    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        """Create a znode; returns its path (with the sequence suffix). NodeExistsError,
        NoNodeError (parent missing and not makepath)."""

    @abc.abstractmethod
    async def ensure_path(self, path: str) -> None:
        """Create `path` and its missing parents (empty, persistent); no error if it exists."""

    @abc.abstractmethod
    async def get(self, path: str) -> tuple[bytes, Stat]:
        """Data and stat; NoNodeError."""

    @abc.abstractmethod
    async def exists(self, path: str) -> Stat | None: ...

    @abc.abstractmethod
    async def get_children(self, path: str) -> list[str]:
        """Sorted child names; NoNodeError."""

    @abc.abstractmethod
    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        """Replace the data when the version matches; NoNodeError, BadVersionError."""

    @abc.abstractmethod
    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """NoNodeError, BadVersionError, NotEmptyError (children and not recursive)."""

    @abc.abstractmethod
    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        """All ops or none. Results per op: Create -> path, SetData -> Stat, Check/Delete -> None.
        Raises TransactionError(index, cause) when any op fails (nothing applied)."""

    @abc.abstractmethod
    async def watch_data(self, path: str, callback: DataCallback) -> Watch:
        """`callback(data, stat)` now and after every change (see the module docstring)."""

    @abc.abstractmethod
    async def watch_children(self, path: str, callback: ChildrenCallback) -> Watch:
        """`callback(children)` now and after every change of the child list."""

    @abc.abstractmethod
    def add_session_listener(self, callback: SessionCallback) -> None:
        """`callback(state)` on every session state change, in the trio task of `run`."""
