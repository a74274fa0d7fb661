"""What the ZooKeeper config mirrors share: group configs (`zk_group_configs`), SCRAM users
(`zk_scram_users`) and client quotas (`zk_client_quotas`), each a tree of config nodes under
`/config` mirrored into every broker and changed as Kafka's ZooKeeper mode changed it.

`ZkConfigMirror[E]` holds the coordination client, the optional topic store of a single
broker, the change timeout and the record of applied nodes (`AppliedNodes`), and gives:

- `_mirror(...)`: the mirror's task: set the watches (their callbacks put events `E` on
  `_events_send`), follow the events queued until none is left (following may set more
  watches), report started, then follow each event as it comes (or, `latest_only`, only the
  newest queued: an event that holds the whole state), until cancelled or `close`; the
  watches are cancelled on the way out;
- `_on_data(key)`: a data watch's callback, `_applied_node(key, data, stat)`;
- `_read(path, parse)` (`entity_configs`: the users', clients' and ips' nodes): a node's
  configs and stat (({}, None): no node; a node that does not parse is taken as empty, with
  a warning, and will be overwritten);
- `_write_applied(write, error)`: a change: `write()` answers (result, {key: stat written})
  and the change returns once this broker applied those nodes; REQUEST_TIMED_OUT after
  `timeout_s`, UNKNOWN for a ZooKeeper failure, raised as `error(code, message)`;
- `_multi(ops)`: the conditional write (False: a concurrent change; read and compute again);
  `notification(rel)`: its `/config/changes/config_change_<seq>` node.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

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
    Stat,
    TransactionError,
    Watch,
)
from wirebroker.security.credentials import parse_user_node

if TYPE_CHECKING:
    from wirebroker.coordination.api import Coordination
    from wirebroker.metadata.topic_store import TopicStore

__all__ = ["ZkConfigMirror", "entity_configs", "notification"]

log = logging.getLogger(__name__)

E = TypeVar("E")
R = TypeVar("R")


def entity_configs(data: bytes) -> dict[str, str]:
    """The configs of a user's, client's or ip's node ({} for an empty one; ValueError when
    malformed): `{"version":1,"config":{...}}`."""
    return parse_user_node(data) if data else {}


def notification(rel: str) -> Create:
    """The change notification of the config node `/config/<rel>`, as Kafka wrote it."""
    return Create(
        f"{zl.CONFIG_CHANGES}/config_change_", zl.encode_entity_change(rel), sequential=True
    )


class ZkConfigMirror(Generic[E]):
    """The shared part of a ZooKeeper config mirror (see the module docstring)."""

    def __init__(
        self, coord: Coordination, *, store: TopicStore | None = None, timeout_s: float = 30.0
    ) -> None:
        self.coord = coord
        self.topic_store = store
        self.timeout_s = timeout_s
        self._applied = AppliedNodes()
        self._scope = trio.CancelScope()
        self._events_send, self._events = trio.open_memory_channel[E](math.inf)

    # -- the mirror ----------------------------------------------------------------------------
    async def _mirror(
        self,
        task_status: trio.TaskStatus[Any],
        watch: Callable[[], Awaitable[None]],
        follow: Callable[[E], Awaitable[None]],
        watches: Callable[[], Iterable[Watch | None]],
        *,
        latest_only: bool = False,
    ) -> None:
        with self._scope:
            try:
                await watch()
                while queued := self._queued(latest_only):  # what is there, before started
                    for event in queued:
                        await follow(event)
                task_status.started()
                async for event in self._events:
                    await follow(self._queued(True, event)[0] if latest_only else event)
            finally:
                for w in watches():
                    if w is not None:
                        w.cancel()

    def _queued(self, latest_only: bool, *first: E) -> list[E]:
        """`first` and the events queued after it (only the last one: `latest_only`)."""
        events = list(first)
        while True:
            try:
                events.append(self._events.receive_nowait())
            except trio.WouldBlock:
                return events[-1:] if latest_only else events

    def close(self) -> None:
        self._scope.cancel()

    def _on_data(self, key: str) -> DataCallback:
        def on_data(data: bytes | None, stat: Stat | None) -> None:
            self._applied_node(key, data, stat)

        return on_data

    def _applied_node(self, key: str, data: bytes | None, stat: Stat | None) -> None:
        raise NotImplementedError

    # -- changes -------------------------------------------------------------------------------
    async def _read(
        self, path: str, parse: Callable[[bytes], dict[str, str]]
    ) -> tuple[dict[str, str], Stat | None]:
        try:
            data, stat = await self.coord.get(path)
        except NoNodeError:
            return {}, None
        try:
            return parse(data), stat
        except ValueError as exc:
            log.warning("overwriting %s: %s", path, exc)
            return {}, stat

    async def _write_applied(
        self,
        write: Callable[[], Awaitable[tuple[R, Mapping[str, Stat]]]],
        error: Callable[[ErrorCode, str], Exception],
    ) -> R:
        try:
            with trio.fail_after(self.timeout_s):
                result, written = await write()
                await self._applied.wait_for(written)
                return result
        except trio.TooSlowError:
            raise error(
                ErrorCode.REQUEST_TIMED_OUT,
                f"The change was not applied within {self.timeout_s:g} s",
            ) from None
        except CoordinationError as exc:
            raise error(ErrorCode.UNKNOWN, f"ZooKeeper write failed: {exc}") from exc

    async def _multi(self, ops: Sequence[Op]) -> bool:
        """Write `ops` in one transaction: False when a node changed meanwhile."""
        try:
            await self.coord.multi(list(ops))
        except TransactionError as exc:
            if isinstance(exc.cause, (BadVersionError, NodeExistsError, NoNodeError)):
                return False
            raise
        return True
