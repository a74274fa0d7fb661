"""An in-process ZooKeeper: `MemoryZooKeeper` (the server) and `MemoryCoordination` (a session).

For a single broker (no zookeeper.connect) and for tests: deterministic, no threads, no I/O,
works under trio's MockClock. Several `MemoryCoordination(server)` objects sharing one server
behave like brokers sharing one ZooKeeper ensemble.

Server model (ZooKeeper's DataTree, reduced to what the api needs):
- znodes in a dict path -> `_Znode` (data, version = setData count, czxid / mzxid, ephemeral
  owner, cversion = child creates + deletes, child names); "/" exists from the start;
- one global zxid counter; every committed write transaction (a single op, a `multi`, a
  session close) takes the next zxid, shared by all its ops (like ZooKeeper's multi);
- sequential creates append the parent's cversion, zero-padded to 10 digits (ZooKeeper's
  rule, so names skip numbers after deletes; a real server may count a delete only once it is
  applied, so right after a delete its number can be one lower: callers rely on order only);
- ephemerals belong to a session and vanish when it is closed or expired; they cannot have
  children (NoChildrenForEphemeralsError); check order as ZooKeeper's PrepRequestProcessor:
  create: parent missing (NoNode), name taken (NodeExists), parent ephemeral; setData/check:
  NoNode, BadVersion; delete: NoNode, BadVersion, NotEmpty;
- one-shot watches per session: data watches (set by get on an existing znode or by exists)
  fire "created" / "changed" / "deleted"; child watches (set by get_children on an existing
  znode) fire "child" when a child is created or deleted and "deleted" when the znode goes.
  Firing removes the watch and queues `notify(kind)` on the session's client channel;
- a write runs as a transaction with an undo log: each op is applied in turn (later ops see
  earlier ones), the first failure undoes everything and raises (`multi`:
  TransactionError(index, cause)); watches fire only after a commit, in op order.

Sessions: `MemoryCoordination.run` opens one (ids 1, 2, ...) and closes it when it ends
(ephemerals vanish at once). `server.expire_session(id)` models ZooKeeper expiring it: the
session's watches are dropped, its ephemerals deleted (other sessions' watches fire), and the
client, through its run loop, reports SUSPENDED, LOST, opens a new session and reports
CONNECTED (with the new `session_id`), then re-reads its watches, as kazoo does.
`server.disconnect_session(id)` models a connection loss that the session survives: its
server-side watches are dropped, the client reports SUSPENDED then CONNECTED (same id) and
re-reads. Every client operation first passes a trio checkpoint, like real I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

import trio

from wirebroker.coordination._session import (
    ChildrenValue,
    DataValue,
    SessionClient,
    _WatchEntry,
)
from wirebroker.coordination.api import (
    BadVersionError,
    Check,
    CoordinationError,
    Create,
    Delete,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    SessionState,
    SetData,
    Stat,
    TransactionError,
)

__all__ = ["MemoryCoordination", "MemoryZooKeeper"]

Notify = Callable[[str], None]


@dataclass(eq=False)
class _Znode:
    data: bytes
    czxid: int
    ephemeral_owner: int = 0
    version: int = 0
    mzxid: int = 0
    cversion: int = 0
    children: set[str] = field(default_factory=set)

    def stat(self) -> Stat:
        return Stat(
            version=self.version,
            czxid=self.czxid,
            ephemeral_owner=self.ephemeral_owner,
            mzxid=self.mzxid,
        )


@dataclass(eq=False)
class _Session:
    id: int
    client: MemoryCoordination
    ephemerals: set[str] = field(default_factory=set)


def _check_path(path: str) -> None:
    if not path.startswith("/") or (path != "/" and (path.endswith("/") or "//" in path)):
        raise ValueError(f"invalid znode path {path!r}")


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _name(path: str) -> str:
    return path.rsplit("/", 1)[1]


def _join(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


class _Txn:
    """One write transaction: applied op by op, undone as a whole on failure."""

    def __init__(self, server: MemoryZooKeeper) -> None:
        self.server = server
        self.zxid = server._zxid + 1
        self.undo: list[Callable[[], None]] = []
        self.fire: list[tuple[dict[str, dict[Notify, int]], str, str]] = []

    def rollback(self) -> None:
        for undo in reversed(self.undo):
            undo()
        self._done()

    def commit(self) -> None:
        server = self.server
        if self.undo:
            server._zxid = self.zxid
        for watches, path, kind in self.fire:
            server._trigger(watches, path, kind)
        self._done()

    def _done(self) -> None:
        # The undo closures refer to this transaction: drop them, so that it is freed at once
        # instead of waiting for the cyclic garbage collector (a broker's big heap makes
        # every full collection expensive).
        self.undo.clear()
        self.fire.clear()

    def create(self, session: int, path: str, data: bytes, ephemeral: bool, seq: bool) -> str:
        _check_path(path)
        nodes = self.server._nodes
        parent_path = _parent(path)
        parent = nodes.get(parent_path)
        if parent is None:
            raise NoNodeError(parent_path)
        if path == "/":
            raise NodeExistsError(path)
        if seq:
            path = f"{path}{parent.cversion:010d}"
        if path in nodes:
            raise NodeExistsError(path)
        if parent.ephemeral_owner:
            raise NoChildrenForEphemeralsError(path)
        owner = session if ephemeral else 0
        nodes[path] = _Znode(data, czxid=self.zxid, ephemeral_owner=owner, mzxid=self.zxid)
        name = _name(path)
        parent.children.add(name)
        parent.cversion += 1
        if owner:
            self.server._sessions[owner].ephemerals.add(path)

        def undo() -> None:
            del nodes[path]
            parent.children.discard(name)
            parent.cversion -= 1
            if owner:
                self.server._sessions[owner].ephemerals.discard(path)

        self.undo.append(undo)
        self.fire.append((self.server._data_watches, path, "created"))
        self.fire.append((self.server._child_watches, parent_path, "child"))
        return path

    def _existing(self, path: str, version: int) -> _Znode:
        _check_path(path)
        node = self.server._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if version != -1 and version != node.version:
            raise BadVersionError(path)
        return node

    def check(self, path: str, version: int) -> None:
        self._existing(path, version)

    def set(self, path: str, data: bytes, version: int) -> Stat:
        node = self._existing(path, version)
        old = (node.data, node.version, node.mzxid)
        node.data, node.version, node.mzxid = data, node.version + 1, self.zxid

        def undo() -> None:
            node.data, node.version, node.mzxid = old

        self.undo.append(undo)
        self.fire.append((self.server._data_watches, path, "changed"))
        return node.stat()

    def delete(self, path: str, version: int) -> None:
        node = self._existing(path, version)
        if node.children:
            raise NotEmptyError(path)
        if path == "/":
            raise CoordinationError("the root znode cannot be deleted")
        nodes = self.server._nodes
        parent_path = _parent(path)
        parent = nodes[parent_path]
        name = _name(path)
        del nodes[path]
        parent.children.discard(name)
        parent.cversion += 1
        owner = self.server._sessions.get(node.ephemeral_owner)
        if owner is not None:
            owner.ephemerals.discard(path)

        def undo() -> None:
            nodes[path] = node
            parent.children.add(name)
            parent.cversion -= 1
            if owner is not None:
                owner.ephemerals.add(path)

        self.undo.append(undo)
        self.fire.append((self.server._data_watches, path, "deleted"))
        self.fire.append((self.server._child_watches, path, "deleted"))
        self.fire.append((self.server._child_watches, parent_path, "child"))

    def apply(self, session: int, op: Op) -> str | Stat | None:
        match op:
            case Create(path, data, ephemeral, sequential):
                return self.create(session, path, data, ephemeral, sequential)
            case SetData(path, data, version):
                return self.set(path, data, version)
            case Delete(path, version):
                self.delete(path, version)
                return None
            case Check(path, version):
                self.check(path, version)
                return None
        raise TypeError(f"not an Op: {op!r}")


class MemoryZooKeeper:
    """The in-memory server (see the module docstring)."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Znode] = {"/": _Znode(b"", czxid=0)}
        self._zxid = 0
        self._next_session = 1
        self._sessions: dict[int, _Session] = {}
        self._data_watches: dict[str, dict[Notify, int]] = {}
        self._child_watches: dict[str, dict[Notify, int]] = {}

    # -- inspection and fault injection (tests) --------------------------------------------
    @property
    def zxid(self) -> int:
        return self._zxid

    @property
    def sessions(self) -> list[int]:
        return sorted(self._sessions)

    def paths(self) -> Iterator[str]:
        """Every znode path, sorted."""
        return iter(sorted(self._nodes))

    def expire_session(self, session_id: int) -> None:
        """Expire a live session (see the module docstring)."""
        session = self._sessions.get(session_id)
        if session is None:
            raise KeyError(f"no session {session_id}")
        self._close_session(session_id)
        session.client._post(session.client._expired)

    def disconnect_session(self, session_id: int) -> None:
        """A connection loss the session survives: SUSPENDED, then CONNECTED (same id)."""
        session = self._sessions.get(session_id)
        if session is None:
            raise KeyError(f"no session {session_id}")
        self._drop_watches(session_id)
        client = session.client
        client._post(partial(client._session_event, SessionState.SUSPENDED))
        client._post(partial(client._session_event, SessionState.CONNECTED, session_id))

    # -- sessions --------------------------------------------------------------------------
    def _open_session(self, client: MemoryCoordination) -> int:
        session_id = self._next_session
        self._next_session += 1
        self._sessions[session_id] = _Session(session_id, client)
        return session_id

    def _close_session(self, session_id: int) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        self._drop_watches(session_id)
        txn = _Txn(self)
        for path in sorted(session.ephemerals):
            txn.delete(path, -1)
        del self._sessions[session_id]
        txn.commit()

    def _live(self, session_id: int) -> None:
        if session_id not in self._sessions:
            raise CoordinationError(f"session 0x{session_id:x} expired or closed")

    def _drop_watches(self, session_id: int) -> None:
        for watches in (self._data_watches, self._child_watches):
            for path in list(watches):
                by_notify = watches[path]
                for notify in [n for n, s in by_notify.items() if s == session_id]:
                    del by_notify[notify]
                if not by_notify:
                    del watches[path]

    # -- watches ---------------------------------------------------------------------------
    def _trigger(self, watches: dict[str, dict[Notify, int]], path: str, kind: str) -> None:
        for notify, session_id in watches.pop(path, {}).items():
            session = self._sessions.get(session_id)
            if session is not None:
                session.client._post(partial(notify, kind))

    @staticmethod
    def _add_watch(
        watches: dict[str, dict[Notify, int]], path: str, notify: Notify, sid: int
    ) -> None:
        watches.setdefault(path, {})[notify] = sid

    # -- operations (synchronous; the client awaits a checkpoint first) --------------------
    def _write(self, session_id: int, ops: Sequence[Op], *, multi: bool) -> list[str | Stat | None]:
        self._live(session_id)
        txn = _Txn(self)
        results: list[str | Stat | None] = []
        for index, op in enumerate(ops):
            try:
                results.append(txn.apply(session_id, op))
            except CoordinationError as cause:
                txn.rollback()
                if multi:
                    raise TransactionError(index, cause) from cause
                raise
        txn.commit()
        return results

    def _create(
        self, session_id: int, path: str, data: bytes, ephemeral: bool, seq: bool, makepath: bool
    ) -> str:
        if makepath:
            self._ensure(session_id, _parent(path))
        created = self._write(session_id, [Create(path, data, ephemeral, seq)], multi=False)[0]
        assert isinstance(created, str)
        return created

    def _ensure(self, session_id: int, path: str) -> None:
        _check_path(path)
        missing: list[str] = []
        while path not in self._nodes:
            missing.append(path)
            path = _parent(path)
        for each in reversed(missing):
            self._write(session_id, [Create(each)], multi=False)

    def _get(self, session_id: int, path: str) -> tuple[bytes, Stat]:
        self._live(session_id)
        _check_path(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        return node.data, node.stat()

    def _exists(self, session_id: int, path: str) -> Stat | None:
        self._live(session_id)
        _check_path(path)
        node = self._nodes.get(path)
        return None if node is None else node.stat()

    def _children(self, session_id: int, path: str) -> list[str]:
        self._live(session_id)
        _check_path(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        return sorted(node.children)

    def _delete_tree(self, session_id: int, path: str, version: int) -> None:
        self._get(session_id, path)
        if version != -1 and self._nodes[path].version != version:
            raise BadVersionError(path)
        order: list[str] = []
        stack = [path]
        while stack:
            each = stack.pop()
            order.append(each)
            stack.extend(_join(each, c) for c in sorted(self._nodes[each].children))
        self._write(session_id, [Delete(p) for p in reversed(order)], multi=False)

    def _watch_data(self, session_id: int, path: str, notify: Notify) -> DataValue:
        self._live(session_id)
        _check_path(path)
        self._add_watch(self._data_watches, path, notify, session_id)
        node = self._nodes.get(path)
        return None if node is None else (node.data, node.stat())

    def _watch_children(self, session_id: int, path: str, notify: Notify) -> ChildrenValue:
        self._live(session_id)
        _check_path(path)
        node = self._nodes.get(path)
        if node is None:
            self._add_watch(self._data_watches, path, notify, session_id)
            return None
        self._add_watch(self._child_watches, path, notify, session_id)
        return sorted(node.children)


class MemoryCoordination(SessionClient):
    """One client session of a `MemoryZooKeeper` (see the module docstring)."""

    def __init__(self, server: MemoryZooKeeper) -> None:
        super().__init__()
        self._server = server

    @property
    def server(self) -> MemoryZooKeeper:
        return self._server

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await self._serve(self._connect, task_status)
        finally:
            self._server._close_session(self._session)

    async def _connect(self) -> None:
        self._session = self._server._open_session(self)

    def _expired(self) -> None:
        """Run loop: the server expired our session; reconnect with a new one (like kazoo)."""
        if self._phase != "running":
            return
        self._session_event(SessionState.SUSPENDED)
        self._session_event(SessionState.LOST)
        self._session_event(SessionState.CONNECTED, self._server._open_session(self))

    async def _op(self) -> int:
        self._check_running()
        await trio.lowlevel.checkpoint()
        self._check_running()
        return self._session

    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        session = await self._op()
        return self._server._create(session, path, data, ephemeral, sequential, makepath)

    async def ensure_path(self, path: str) -> None:
        self._server._ensure(await self._op(), path)

    async def get(self, path: str) -> tuple[bytes, Stat]:
        return self._server._get(await self._op(), path)

    async def exists(self, path: str) -> Stat | None:
        return self._server._exists(await self._op(), path)

    async def get_children(self, path: str) -> list[str]:
        return self._server._children(await self._op(), path)

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        result = self._server._write(await self._op(), [SetData(path, data, version)], multi=False)
        assert isinstance(result[0], Stat)
        return result[0]

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        session = await self._op()
        if recursive:
            self._server._delete_tree(session, path, version)
        else:
            self._server._write(session, [Delete(path, version)], multi=False)

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        return self._server._write(await self._op(), ops, multi=True)

    async def _read_data(self, entry: _WatchEntry) -> DataValue:
        return self._server._watch_data(await self._op(), entry.path, entry.notify)

    async def _read_children(self, entry: _WatchEntry) -> ChildrenValue:
        return self._server._watch_children(await self._op(), entry.path, entry.notify)
