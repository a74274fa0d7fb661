"""The controller election: which broker runs the controller, and running it when elected.

When /controller is empty (its watch, or a new session) every eligible broker tries the
election multi [create /controller (ephemeral), setData /controller_epoch = e+1 at its
version]; the winner builds a controller with the factory it was given (the composition root
passes `ZkController`: this module never imports the controller) and runs it as a task of the
member until it loses the znode or its session (`stop`), or the controller epoch moves on
(its `run` returns: it resigns).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_metadata_cache import ZkMetadataCache
from wirebroker.coordination.api import (
    Coordination,
    CoordinationError,
    Create,
    NoNodeError,
    SetData,
    Stat,
    TransactionError,
)

__all__ = ["Controller", "ControllerElection"]

log = logging.getLogger("wirebroker.cluster")


class Controller(Protocol):
    async def run(self) -> None: ...


class ControllerElection:
    """This broker's part in the controller election (see the module docstring)."""

    def __init__(
        self,
        coord: Coordination,
        *,
        node_id: int,
        cache: ZkMetadataCache,
        clock: Callable[[], int],
        make_controller: Callable[[int, int], Controller],
        eligible: Callable[[], bool],
        start_soon: Callable[..., None],
    ) -> None:
        self.coord = coord
        self.node_id = node_id
        self.cache = cache
        self.clock = clock
        #: (controller epoch, /controller_epoch's version) -> the controller to run
        self.make_controller = make_controller
        #: whether this broker may run for controller now (registered, not shutting down)
        self.eligible = eligible
        self._start_soon = start_soon
        self._scope: trio.CancelScope | None = None

    @property
    def is_controller(self) -> bool:
        return self._scope is not None

    async def on_controller(self, data: bytes | None, _stat: Stat | None) -> None:
        """/controller changed (an event)."""
        if data is None:
            # The notification may be stale (a watch collapses changes): read the znode.
            try:
                data, _stat = await self.coord.get(zl.CONTROLLER)
            except NoNodeError:
                self.cache.controller = -1
                self.stop()
                await self.try_elect()
                return
        try:
            self.cache.controller = zl.decode_controller(data)
        except zl.LayoutError as exc:
            log.warning("unreadable /controller: %s", exc)
            return
        if self.cache.controller != self.node_id:
            self.stop()

    async def try_elect(self) -> None:
        if not self.eligible():
            return
        try:
            data, stat = await self.coord.get(zl.CONTROLLER_EPOCH)
            epoch = zl.decode_controller_epoch(data)
            results = await self.coord.multi(
                [
                    Create(
                        zl.CONTROLLER,
                        zl.encode_controller(self.node_id, self.clock()),
                        ephemeral=True,
                    ),
                    SetData(
                        zl.CONTROLLER_EPOCH, zl.encode_controller_epoch(epoch + 1), stat.version
                    ),
                ]
            )
        except TransactionError:
            return  # another broker won
        epoch_stat = results[1]
        assert isinstance(epoch_stat, Stat)
        self.cache.controller = self.node_id
        log.info("broker %d is the controller (controller epoch %d)", self.node_id, epoch + 1)
        controller = self.make_controller(epoch + 1, epoch_stat.version)
        scope = trio.CancelScope()
        self._scope = scope
        self._start_soon(self._run, controller, scope)

    async def _run(self, controller: Controller, scope: trio.CancelScope) -> None:
        with scope:
            try:
                await controller.run()
            except* CoordinationError as group:  # raised in the controller's nursery too
                log.warning("controller stopped: %s", group.exceptions[0])
        if self._scope is scope:
            self._scope = None

    def stop(self) -> None:
        """Stop the controller running here, if any."""
        if self._scope is not None:
            log.info("broker %d stops being the controller", self.node_id)
            self._scope.cancel()
            self._scope = None
