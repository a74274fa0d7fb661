"""Controlled shutdown, this broker's side: ask the controller to move its leaderships away.

`request_controlled_shutdown` (called by `ClusterMember.controlled_shutdown`, once the member
stopped following outside the ISRs and stopped its controller) gives up /controller when this
broker holds it, creates /wirebroker/controlled_shutdown/<id> (the controller's trigger), then
waits, bounded, until this broker leads nothing that has another live in-sync replica
(`ZkMetadataCache.movable_leaderships`). True when nothing movable is left.
"""

from __future__ import annotations

import contextlib
import logging

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_events import EventQueue
from wirebroker.cluster.zk_metadata_cache import ZkMetadataCache
from wirebroker.coordination.api import Coordination, CoordinationError, NodeExistsError

__all__ = ["request_controlled_shutdown"]

log = logging.getLogger("wirebroker.cluster")


async def request_controlled_shutdown(
    coord: Coordination,
    *,
    node_id: int,
    cache: ZkMetadataCache,
    queue: EventQueue,
    timeout_s: float,
) -> bool:
    """Ask the controller to move leaderships away; True when nothing movable is left."""
    if cache.controller == node_id:
        with contextlib.suppress(CoordinationError):
            await coord.delete(zl.CONTROLLER)
    path = f"{zl.CONTROLLED_SHUTDOWN}/{node_id}"
    try:
        await coord.create(path, b'{"version":1}')
    except NodeExistsError:
        pass
    except CoordinationError as exc:  # no session: nobody to ask; stop without it
        log.warning("controlled shutdown: cannot ask the controller (%s)", exc)
        return False
    with trio.move_on_after(timeout_s):
        while cache.movable_leaderships(node_id):
            await queue.changed.wait()
        return True
    log.warning("controlled shutdown: leaderships still here after %.1f s", timeout_s)
    return False
