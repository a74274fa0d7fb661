"""The group coordinator of the handler tests (test_group_*.py, test_txn_partition_api.py).

trio_ms()                   START_MS + trio.current_time() in ms (START_MS outside trio):
                            the coordinator's clock, moved by trio's autojump clock
running_group_coordinator(services, nursery)
                            async context manager: a GroupCoordinatorRuntime on the
                            services' replicas and admin, set as
                            `services.group_coordinator` and running in `nursery`; shut
                            down on exit
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import trio

from tests.unit.local_metadata import coordinate_every_partition
from wirebroker.group.runtime import GroupCoordinatorRuntime
from wirebroker.handlers.context import Services

START_MS = 1_700_000_000_000


def trio_ms() -> int:
    try:
        return START_MS + round(trio.current_time() * 1000)
    except RuntimeError:
        return START_MS


@contextlib.asynccontextmanager
async def running_group_coordinator(
    services: Services, nursery: trio.Nursery
) -> AsyncIterator[GroupCoordinatorRuntime]:
    runtime = GroupCoordinatorRuntime(
        services.config, services.replicas, admin=services.admin, clock=trio_ms
    )
    services.group_coordinator = runtime
    await nursery.start(runtime.run)
    await coordinate_every_partition(runtime)
    yield runtime
    runtime.shutdown()
