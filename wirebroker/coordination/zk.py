"""`ZkCoordination`: the Coordination contract over a real ZooKeeper, through kazoo.

kazoo runs its own threads (a connection thread, a completion queue thread for results, a
callback queue thread for watch events); none of them touches our state. The bridge to trio:

- at `run`, `token = trio.lowlevel.current_trio_token()`;
- every kazoo callback (state listener, watch function, result link) only calls
  `token.run_sync_soon(fn)` with a function that cannot raise (an exception inside a
  run_sync_soon callback would crash `trio.run`): either `trio.Event.set` or
  `SessionClient._post`, which puts a zero-argument callable on the unbounded memory channel
  the run loop drains (RunFinishedError after the trio run ended is swallowed);
- an operation is `ar = client.<op>_async(...)`, `ar.rawlink(cb)` with cb setting a
  `trio.Event` through the token, `await event.wait()`, then `ar.get_nowait()` in the trio
  thread (no thread per operation; cancelling the wait drops the result, the op may still
  happen);
- blocking calls (`start_async`, `stop` + `close`, the chroot bootstrap) run in
  `trio.to_thread.run_sync`. Watches are not kazoo's DataWatch/ChildrenWatch recipes (those
  call back synchronously in the registering thread, and ChildrenWatch stops for good when
  its znode is deleted) but `_session.SessionClient`'s client-side entries that set kazoo
  one-shot watches on each read; kazoo drops its watchers on every connection loss (after a
  NONE event, ignored here) and the entries are re-read on every CONNECTED.

Sessions: kazoo's KazooState maps one to one (SUSPENDED, CONNECTED, LOST). After LOST kazoo
reconnects by itself with a new session; its CONNECTED carries the new session id
(`client.client_id[0]`, read in the listener, i.e. for exactly that connection). The
connection retry policy retries forever with backoff capped at 1 s, so a reconnection is
noticed within about a second of the server coming back.

Errors: kazoo's NoNodeError, NodeExistsError, BadVersionError, NotEmptyError,
NoChildrenForEphemeralsError map to the api's; everything else (ConnectionLoss,
SessionExpiredError, ConnectionClosedError, timeouts, other ZooKeeper errors) to
CoordinationError. A `multi` returns its per-op results as values: a failed one has
RolledBackError for ops before the culprit and RuntimeInconsistency after it, so the first
other exception gives TransactionError(index, cause).

`hosts` is kazoo's "h:p,h:p[/chroot]". With a chroot, `run` first creates the chroot path
through a short chroot-less connection (kazoo cannot create its own chroot). Cancelling `run`
stops the client (CloseSession: the server deletes the ephemerals at once) from a worker
thread, shielded but bounded by `connect_timeout_s`; past that the thread is abandoned (kazoo's
threads are daemons).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from functools import partial
from typing import Any, cast

import trio
from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError as KzBadVersionError,
)
from kazoo.exceptions import (
    KazooException,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.exceptions import (
    NoChildrenForEphemeralsError as KzNoChildrenForEphemeralsError,
)
from kazoo.exceptions import (
    NodeExistsError as KzNodeExistsError,
)
from kazoo.exceptions import (
    NoNodeError as KzNoNodeError,
)
from kazoo.exceptions import (
    NotEmptyError as KzNotEmptyError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, WatchedEvent, ZnodeStat
from kazoo.retry import KazooRetry

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

__all__ = ["ZkCoordination", "split_chroot"]

_ERRORS: tuple[tuple[type[Exception], type[CoordinationError]], ...] = (
    (KzNoNodeError, NoNodeError),
    (KzNodeExistsError, NodeExistsError),
    (KzBadVersionError, BadVersionError),
    (KzNotEmptyError, NotEmptyError),
    (KzNoChildrenForEphemeralsError, NoChildrenForEphemeralsError),
)
_NOT_THE_CAUSE = (RolledBackError, RuntimeInconsistency)  # a failed multi's other ops
_STATES = {
    KazooState.CONNECTED: SessionState.CONNECTED,
    KazooState.SUSPENDED: SessionState.SUSPENDED,
    KazooState.LOST: SessionState.LOST,
}


def _map_error(exc: BaseException) -> CoordinationError:
    for kazoo_type, api_type in _ERRORS:
        if isinstance(exc, kazoo_type):
            return api_type(str(exc) or kazoo_type.__name__)
    return CoordinationError(f"{type(exc).__name__}: {exc}")


def _stat(stat: ZnodeStat) -> Stat:
    return Stat(
        version=stat.version,
        czxid=stat.czxid,
        ephemeral_owner=stat.ephemeralOwner,
        mzxid=stat.mzxid,
    )


def split_chroot(hosts: str) -> tuple[str, str]:
    """ "h:p,h:p/a/b" -> ("h:p,h:p", "/a/b"); no chroot (or "/") -> (hosts, "")."""
    if "/" not in hosts:
        return hosts, ""
    servers, chroot = hosts.split("/", 1)
    chroot = "/" + chroot.strip("/")
    return servers, "" if chroot == "/" else chroot


def _connection_retry() -> KazooRetry:
    return KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_jitter=0.2, max_delay=1.0)


def _ensure_chroot(servers: str, chroot: str, session_timeout_s: float, timeout_s: float) -> None:
    """Worker thread: create the chroot path with a short chroot-less session."""
    client = KazooClient(
        hosts=servers, timeout=session_timeout_s, connection_retry=_connection_retry()
    )
    try:
        client.start(timeout=timeout_s)
        client.ensure_path(chroot)
    finally:
        client.stop()
        client.close()


def _stop_client(client: KazooClient) -> None:
    """Worker thread: close the session (CloseSession) and release the client's sockets."""
    try:
        client.stop()
    finally:
        client.close()


class ZkCoordination(SessionClient):
    """A ZooKeeper session through kazoo (see the module docstring)."""

    def __init__(self, hosts: str, *, session_timeout_s: float, connect_timeout_s: float) -> None:
        super().__init__()
        self._hosts = hosts
        self._session_timeout_s = session_timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._token: trio.lowlevel.TrioToken | None = None
        self._client: KazooClient | None = None

    @property
    def hosts(self) -> str:
        return self._hosts

    @property
    def client_id(self) -> tuple[int, bytes] | None:
        """(session id, session password) while connected: lets a test expire the session
        from outside (a second client that takes the session over and closes it)."""
        client = self._client
        client_id = None if client is None else client.client_id
        return None if client_id is None else (int(client_id[0]), bytes(client_id[1]))

    # -- the bridge ------------------------------------------------------------------------
    def _soon(self, fn: Callable[[], None]) -> None:
        """Any thread: run `fn` (which must not raise) in the trio thread."""
        token = self._token
        if token is None:
            return
        with suppress(trio.RunFinishedError):
            token.run_sync_soon(fn)

    def _from_kazoo(self, fn: Callable[[], None]) -> None:
        """Any thread: queue `fn` for the run loop."""
        self._soon(partial(self._post, fn))

    def _on_kazoo_state(self, state: str) -> None:
        """kazoo's connection thread: forward the state (never blocks, never calls kazoo)."""
        session_id = None
        client = self._client
        if state == KazooState.CONNECTED and client is not None:
            client_id = client.client_id
            session_id = client_id[0] if client_id else None
        self._from_kazoo(partial(self._session_event, _STATES[state], session_id))

    async def _call(self, make: Callable[[KazooClient], Any]) -> Any:
        """Start an *_async op and await its result without a thread."""
        self._check_running()
        client = self._client
        assert client is not None
        done = trio.Event()
        result = make(client)
        result.rawlink(lambda _result: self._soon(done.set))
        await done.wait()
        try:
            return result.get_nowait()
        except (KazooException, KazooTimeoutError) as exc:
            raise _map_error(exc) from exc

    # -- lifetime --------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self._token = trio.lowlevel.current_trio_token()
        try:
            await self._serve(self._connect, task_status)
        finally:
            client, self._client = self._client, None
            if client is not None:
                with trio.CancelScope(shield=True) as scope:
                    scope.relative_deadline = max(self._connect_timeout_s, 1.0)
                    await trio.to_thread.run_sync(_stop_client, client, abandon_on_cancel=True)

    async def _connect(self) -> None:
        servers, chroot = split_chroot(self._hosts)
        with trio.move_on_after(self._connect_timeout_s) as scope:
            if chroot:
                try:
                    await trio.to_thread.run_sync(
                        _ensure_chroot,
                        servers,
                        chroot,
                        self._session_timeout_s,
                        self._connect_timeout_s,
                        abandon_on_cancel=True,
                    )
                except (KazooException, KazooTimeoutError) as exc:
                    raise CoordinationError(
                        f"cannot create chroot {chroot} on {servers}: {exc!r}"
                    ) from exc
            client = KazooClient(
                hosts=self._hosts,
                timeout=self._session_timeout_s,
                connection_retry=_connection_retry(),
            )
            client.add_listener(self._on_kazoo_state)
            self._client = client
            await trio.to_thread.run_sync(client.start_async)
            await self._drain_until(self._first_connected)
        if scope.cancelled_caught:
            raise CoordinationError(
                f"no ZooKeeper session with {self._hosts} within {self._connect_timeout_s} s"
            )

    # -- operations ------------------------------------------------------------------------
    async def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        created = await self._call(
            lambda c: c.create_async(
                path, data, ephemeral=ephemeral, sequence=sequential, makepath=makepath
            )
        )
        return str(created)

    async def ensure_path(self, path: str) -> None:
        await self._call(lambda c: c.ensure_path_async(path))

    async def get(self, path: str) -> tuple[bytes, Stat]:
        data, stat = await self._call(lambda c: c.get_async(path))
        return data, _stat(stat)

    async def exists(self, path: str) -> Stat | None:
        stat = await self._call(lambda c: c.exists_async(path))
        return None if stat is None else _stat(stat)

    async def get_children(self, path: str) -> list[str]:
        return sorted(await self._call(lambda c: c.get_children_async(path)))

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return _stat(await self._call(lambda c: c.set_async(path, data, version)))

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        if recursive:
            stat = await self.exists(path)
            if stat is None:
                raise NoNodeError(path)
            if version != -1 and stat.version != version:
                raise BadVersionError(path)
            for child in await self._children_or_none(path) or []:
                await self._delete_tree(f"{path.rstrip('/')}/{child}")
        await self._call(lambda c: c.delete_async(path, version))

    async def _children_or_none(self, path: str) -> list[str] | None:
        try:
            return await self.get_children(path)
        except NoNodeError:
            return None

    async def _delete_tree(self, path: str) -> None:
        for child in await self._children_or_none(path) or []:
            await self._delete_tree(f"{path}/{child}")
        with suppress(NoNodeError):
            await self._call(lambda c: c.delete_async(path))

    async def multi(self, ops: Sequence[Op]) -> list[str | Stat | None]:
        def commit(client: KazooClient) -> Any:
            txn = client.transaction()
            for op in ops:
                match op:
                    case Create(path, data, ephemeral, sequential):
                        txn.create(path, data, ephemeral=ephemeral, sequence=sequential)
                    case SetData(path, data, version):
                        txn.set_data(path, data, version)
                    case Delete(path, version):
                        txn.delete(path, version)
                    case Check(path, version):
                        txn.check(path, version)
                    case _:
                        raise TypeError(f"not an Op: {op!r}")
            return txn.commit_async()

        results = await self._call(commit)
        failures = [
            (index, r)
            for index, r in enumerate(results)
            if isinstance(r, Exception) and not isinstance(r, _NOT_THE_CAUSE)
        ]
        if failures:
            index, cause = failures[0]
            raise TransactionError(index, _map_error(cause)) from cause
        if any(isinstance(r, Exception) for r in results) or len(results) != len(ops):
            raise CoordinationError(f"multi failed without a cause: {results!r}")
        out: list[str | Stat | None] = []
        for r in results:
            out.append(r if isinstance(r, str) else _stat(r) if isinstance(r, ZnodeStat) else None)
        return out

    # -- watches ---------------------------------------------------------------------------
    def _watcher(self, entry: _WatchEntry) -> Callable[[WatchedEvent], None]:
        """The kazoo watch function of an entry (one per entry, so kazoo's per-path watcher
        sets hold it once); runs on kazoo's callback thread."""
        if entry.impl is None:

            def watcher(event: WatchedEvent) -> None:
                kind = str(event.type).lower()
                if kind != "none":  # NONE: connection state; the next CONNECTED re-reads
                    self._from_kazoo(partial(entry.notify, kind))

            entry.impl = watcher
        return cast(Callable[[WatchedEvent], None], entry.impl)

    async def _read_data(self, entry: _WatchEntry) -> DataValue:
        watcher = self._watcher(entry)
        while True:
            try:
                data, stat = await self._call(lambda c: c.get_async(entry.path, watch=watcher))
                return data, _stat(stat)
            except NoNodeError:
                stat = await self._call(lambda c: c.exists_async(entry.path, watch=watcher))
                if stat is None:
                    return None  # created since the get: read again

    async def _read_children(self, entry: _WatchEntry) -> ChildrenValue:
        watcher = self._watcher(entry)
        while True:
            try:
                children = await self._call(
                    lambda c: c.get_children_async(entry.path, watch=watcher)
                )
                return sorted(children)
            except NoNodeError:
                stat = await self._call(lambda c: c.exists_async(entry.path, watch=watcher))
                if stat is None:
                    return None


class ZkPeek:
    """A short-lived, blocking ZooKeeper reader for command-line tools (no trio):
    `with ZkPeek("h:p/chroot", timeout_s=5) as zk: zk.children("/brokers/ids")`."""

    def __init__(self, hosts: str, *, timeout_s: float = 10.0) -> None:
        self._client = KazooClient(hosts=hosts, timeout=10.0)
        self._timeout_s = timeout_s

    def __enter__(self) -> ZkPeek:
        self._client.start(timeout=self._timeout_s)
        return self

    def __exit__(self, *exc: object) -> None:
        with suppress(Exception):
            self._client.stop()
            self._client.close()

    def children(self, path: str) -> list[str]:
        """Sorted child names ([] when `path` does not exist)."""
        if self._client.exists(path) is None:
            return []
        return sorted(self._client.get_children(path))

    def exists(self, path: str) -> bool:
        return self._client.exists(path) is not None

    def get(self, path: str) -> bytes | None:
        if self._client.exists(path) is None:
            return None
        data, _stat = self._client.get(path)
        return bytes(data)
