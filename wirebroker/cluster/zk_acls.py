"""ACLs in ZooKeeper, as Kafka's ZooKeeper mode kept them, mirrored into every broker.

Layout (Kafka's `AclAuthorizer` before KRaft; the encodings are
wirebroker.security.authorizer's `acl_node_path` / `encode_acl_node`):

    /kafka-acl/<ResourceType>/<name>                    LITERAL patterns
    /kafka-acl-extended/prefixed/<ResourceType>/<name>  PREFIXED patterns
        {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                              "operation":"Write","host":"*"}]}
    /kafka-acl-changes/acl_changes_<seq>                "Topic:orders" (a LITERAL change)
    /kafka-acl-extended-changes/acl_changes_<seq>       {"version":1,"resourceType":"Topic",
                                                         "name":"ord","patternType":"Prefixed"}

Mirror (`run`): children watches on both change roots; each change (and the start) reloads
the whole tree into this broker's `AclAuthorizer` (`replace`), so every decision is answered
from memory and never waits for ZooKeeper. A node that does not parse (written by another
tool) is left out with a warning. `run` reports started once the ACLs present at start are
loaded (before the broker serves).

Changes (`create_acls`, `delete_acls`): planned against this broker's ACLs (Kafka's checks
and texts: `AclAuthorizer.plan_create` / `plan_delete`), then each touched resource node is
read, changed and written in one `multi` with the notifications, conditional on the versions
read (a concurrent writer makes it read again); the answer waits until this broker's mirror
reloaded after the write (read-your-writes on this broker; the others once their watches
fire). Notifications beyond the newest `KEEP_CHANGES` are deleted by the writer.

A single broker (`store` given) runs this over its in-process ZooKeeper and writes every
reloaded tree into its topic store (`acl_nodes`, fsynced) before the change is answered;
`LocalCluster.seed` writes them back into the tree at start.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import trio

from protocol.errors import ErrorCode
from wirebroker.coordination.api import (
    BadVersionError,
    CoordinationError,
    Create,
    Delete,
    NodeExistsError,
    NoNodeError,
    Op,
    SetData,
    Stat,
    TransactionError,
    Watch,
)
from wirebroker.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclDeleteResult,
    AclError,
    PatternType,
)
from wirebroker.security.authorizer import (
    AclAuthorizer,
    acl_node_path,
    decode_acl_node,
    encode_acl_node,
    parse_acl_node_path,
    resource_type_name,
)

if TYPE_CHECKING:
    from wirebroker.coordination.api import Coordination
    from wirebroker.metadata.topic_store import TopicStore

__all__ = [
    "ACL_CHANGES",
    "ACL_EXTENDED_CHANGES",
    "ACL_ROOTS",
    "KEEP_CHANGES",
    "ZkAcls",
    "acl_node_parents",
    "change_notification",
]

log = logging.getLogger(__name__)

ACL_ROOTS = ("/kafka-acl", "/kafka-acl-extended/prefixed")
ACL_CHANGES = "/kafka-acl-changes"
ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
KEEP_CHANGES = 100


def change_notification(resource_type: int, pattern_type: int, name: str) -> Create:
    """The sequential change node Kafka's ZooKeeper authorizer wrote for a resource."""
    type_name = resource_type_name(resource_type)
    if pattern_type == PatternType.LITERAL:
        return Create(
            f"{ACL_CHANGES}/acl_changes_", f"{type_name}:{name}".encode(), sequential=True
        )
    doc = {"version": 1, "resourceType": type_name, "name": name, "patternType": "Prefixed"}
    data = json.dumps(doc, separators=(",", ":")).encode()
    return Create(f"{ACL_EXTENDED_CHANGES}/acl_changes_", data, sequential=True)


def acl_node_parents(paths: Iterable[str]) -> list[str]:
    """Every parent znode of these ACL node paths, parents first."""
    parents: dict[str, None] = {}
    for path in paths:
        parts = path.split("/")[1:-1]
        for end in range(1, len(parts) + 1):
            parents["/" + "/".join(parts[:end])] = None
    return sorted(parents, key=lambda p: (p.count("/"), p))


class ZkAcls:
    """The broker's authorizer: ACLs in ZooKeeper, decided from memory (module docstring)."""

    enabled = True

    def __init__(
        self,
        coord: Coordination,
        authorizer: AclAuthorizer,
        *,
        store: TopicStore | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.coord = coord
        self.acls = authorizer
        self.topic_store = store
        self.timeout_s = timeout_s
        self._requested = 0  # reloads asked for
        self._loaded = -1  # the newest request a finished reload covers
        self._wake = trio.Event()
        self._reloaded = trio.Event()
        self._scope = trio.CancelScope()

    # -- decisions (from memory) ------------------------------------------------------------
    def authorize(
        self, principal: str, host: str, operation: int, resource_type: int, resource_name: str
    ) -> bool:
        return self.acls.authorize(principal, host, operation, resource_type, resource_name)

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: int, resource_type: int
    ) -> bool:
        return self.acls.authorize_by_resource_type(principal, host, operation, resource_type)

    # -- the mirror ----------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        """Mirror the ACL tree until cancelled or `close`; started once it is loaded."""
        with self._scope:
            watches: list[Watch] = []
            try:
                for root in (ACL_CHANGES, ACL_EXTENDED_CHANGES):
                    await self.coord.ensure_path(root)
                    watches.append(await self.coord.watch_children(root, self._poke))
                await self._reload()
                task_status.started()
                while True:
                    await self._wake.wait()
                    self._wake = trio.Event()
                    await self._reload()
            finally:
                for watch in watches:
                    watch.cancel()

    def close(self) -> None:
        self._scope.cancel()

    def _poke(self, _children: list[str] | None = None) -> None:
        self._requested += 1
        self._wake.set()

    async def _reload(self) -> None:
        generation = self._requested
        nodes = await self._read_tree()
        bindings = []
        for path, data in nodes.items():
            try:
                bindings += decode_acl_node(*parse_acl_node_path(path), data)
            except ValueError as exc:
                log.warning("ignoring ACL node %s: %s", path, exc)
        self.acls.replace(bindings)
        if self.topic_store is not None:
            self.topic_store.set_acl_nodes({p: d.decode() for p, d in nodes.items()})
        self._loaded = generation
        self._reloaded.set()
        self._reloaded = trio.Event()

    async def _read_tree(self) -> dict[str, bytes]:
        nodes: dict[str, bytes] = {}
        for root in ACL_ROOTS:
            for type_name in await self._children(root):
                for name in await self._children(f"{root}/{type_name}"):
                    path = f"{root}/{type_name}/{name}"
                    try:
                        data, _stat = await self.coord.get(path)
                    except NoNodeError:
                        continue
                    if data:
                        nodes[path] = data
        return nodes

    async def _children(self, path: str) -> list[str]:
        try:
            return await self.coord.get_children(path)
        except NoNodeError:
            return []

    async def _wait_reloaded(self) -> None:
        """Until a reload that began after now has finished."""
        self._poke()
        target = self._requested
        while self._loaded < target:
            await self._reloaded.wait()

    # -- the ACL APIs --------------------------------------------------------------------------
    async def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return self.acls.acls(acl_filter)

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclError | None]:
        outcomes, new = self.acls.plan_create(bindings)
        held = set(self.acls.bindings())
        fresh = [b for b in new if b not in held]
        if fresh:
            error = await self._change(added=fresh, removed=())
            if error is not None:
                return [error if outcome is None else outcome for outcome in outcomes]
        return outcomes

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        results, doomed = self.acls.plan_delete(filters)
        if doomed:
            error = await self._change(added=(), removed=doomed)
            if error is not None:
                return [AclDeleteResult(error) if r.error is None else r for r in results]
        return results

    async def _change(
        self, *, added: Sequence[AclBinding], removed: Sequence[AclBinding]
    ) -> AclError | None:
        """Write the changes and wait for this broker's mirror; an error for every outcome
        when they could not be stored."""
        try:
            with trio.fail_after(self.timeout_s):
                await self._write(added, removed)
                await self._wait_reloaded()
        except trio.TooSlowError:
            return AclError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"The change was not applied within {self.timeout_s:g} s",
            )
        except CoordinationError as exc:
            log.warning("ACL change not stored: %s", exc)
            return AclError(ErrorCode.UNKNOWN, f"ZooKeeper write failed: {exc}")
        return None

    async def _write(self, added: Sequence[AclBinding], removed: Sequence[AclBinding]) -> None:
        by_node: dict[tuple[int, int, str], tuple[set[AclBinding], set[AclBinding]]] = {}
        for bindings, index in ((added, 0), (removed, 1)):
            for b in bindings:
                key = (b.resource_type, b.pattern_type, b.resource_name)
                by_node.setdefault(key, (set(), set()))[index].add(b)
        paths = {key: acl_node_path(*key) for key in by_node}
        for parent in acl_node_parents(paths.values()):
            await self.coord.ensure_path(parent)
        while True:
            ops: list[Op] = []
            for key, (adds, removes) in sorted(by_node.items()):
                ops += await self._node_ops(key, paths[key], adds, removes)
            if not ops:
                return
            try:
                await self.coord.multi(ops)
            except TransactionError as exc:
                if isinstance(exc.cause, (BadVersionError, NodeExistsError, NoNodeError)):
                    continue  # changed meanwhile: read again
                raise
            await self._trim_changes()
            return

    async def _node_ops(
        self,
        key: tuple[int, int, str],
        path: str,
        adds: set[AclBinding],
        removes: set[AclBinding],
    ) -> list[Op]:
        """The conditional write of one resource node and its notification (none: no change)."""
        stat: Stat | None
        try:
            data, stat = await self.coord.get(path)
            current = set(decode_acl_node(*key, data)) if data else set()
        except NoNodeError:
            current, stat = set(), None
        except ValueError as exc:
            log.warning("overwriting ACL node %s: %s", path, exc)
            current = set()
            stat = await self.coord.exists(path)
        wanted = (current | adds) - removes
        if wanted == current and stat is not None:
            return []
        notification = change_notification(*key)
        if not wanted:
            return [] if stat is None else [Delete(path, stat.version), notification]
        data = encode_acl_node(wanted)
        write: Op = Create(path, data) if stat is None else SetData(path, data, stat.version)
        return [write, notification]

    async def _trim_changes(self) -> None:
        """Delete all but the newest KEEP_CHANGES notifications under each change root."""
        for root in (ACL_CHANGES, ACL_EXTENDED_CHANGES):
            children = await self._children(root)
            for name in sorted(children)[:-KEEP_CHANGES]:
                with contextlib.suppress(NoNodeError):
                    await self.coord.delete(f"{root}/{name}")
