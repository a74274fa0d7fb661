"""Topic lookups the share group offsets handlers (API keys 90-92) give
`wirebroker.share_coordinator.offsets_admin`: by name (id, partition count) and by id (name),
from the cluster view, and a partition's end offset (its high watermark where this broker
leads it)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wirebroker.handlers.context import RequestContext

__all__ = ["end_offset", "topic_by_name", "topic_name"]


def topic_by_name(ctx: RequestContext, name: str) -> tuple[uuid.UUID, int] | None:
    info = ctx.services.cluster.topic(name)
    return None if info is None else (info.topic_id, info.partitions)


def topic_name(ctx: RequestContext, topic_id: uuid.UUID) -> str | None:
    info = ctx.services.cluster.topic_by_id(topic_id)
    return None if info is None else info.name


def end_offset(ctx: RequestContext, topic_id: uuid.UUID, partition: int) -> int | None:
    """The partition's high watermark when this broker leads it (None otherwise)."""
    name = topic_name(ctx, topic_id)
    part = None if name is None else ctx.services.replicas.partition(name, partition)
    return None if part is None or not part.is_leader else part.high_watermark
