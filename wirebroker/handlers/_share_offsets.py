"""What the share group offsets handlers (API keys 90-92) share around
`wirebroker.share_coordinator.offsets_admin`: the topic lookups it is given (by id: the name;
a partition's end offset: its high watermark where this broker leads it; by name:
`_topics.topic_lookup`), and `change_offsets`, the one shape of AlterShareGroupOffsets and
DeleteShareGroupOffsets.

`change_offsets(ctx, req, group_op, change, denied_entry)`: without `group_op` on the group,
GROUP_AUTHORIZATION_FAILED at the top level; without a share persister,
COORDINATOR_NOT_AVAILABLE; otherwise `change` runs over the topics the principal may READ,
and each other listed topic is answered after them, in request order, by
`denied_entry(topic, TOPIC_AUTHORIZATION_FAILED)`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._topics import topic_lookup
from wirebroker.security.acls import AclOperation, ResourceType
from wirebroker.share_coordinator.offsets_admin import message

if TYPE_CHECKING:
    from wirebroker.handlers.context import RequestContext
    from wirebroker.share_coordinator.offsets_admin import (
        ShareGroups,
        StatePersister,
        TopicLookup,
    )

__all__ = ["change_offsets", "end_offset", "error_fields", "topic_name"]

#: offsets_admin.alter_offsets / delete_offsets: the response body without throttle time
Change = Callable[
    ["StatePersister", "ShareGroups | None", Mapping[str, Any], "TopicLookup"],
    Awaitable[dict[str, Any]],
]


def topic_name(ctx: RequestContext, topic_id: uuid.UUID) -> str | None:
    info = ctx.services.cluster.topic_by_id(topic_id)
    return None if info is None else info.name


def end_offset(ctx: RequestContext, topic_id: uuid.UUID, partition: int) -> int | None:
    """The partition's high watermark when this broker leads it (None otherwise)."""
    name = topic_name(ctx, topic_id)
    part = None if name is None else ctx.services.replicas.partition(name, partition)
    return None if part is None or not part.is_leader else part.high_watermark


def error_fields(error: ErrorCode) -> dict[str, Any]:
    return {"error_code": int(error), "error_message": message(error)}


async def change_offsets(
    ctx: RequestContext,
    req: Mapping[str, Any],
    group_op: AclOperation,
    change: Change,
    denied_entry: Callable[[Mapping[str, Any], ErrorCode], dict[str, Any]],
) -> dict[str, Any]:
    """An Alter/DeleteShareGroupOffsets answer (see the module docstring)."""
    group_id = str(req.get("group_id") or "")
    if not _authz.allowed(ctx, ResourceType.GROUP, group_id, group_op):
        return _failed(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    persister = ctx.services.share_persister
    if persister is None:
        return _failed(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    topics = req.get("topics") or []
    names = [t["topic_name"] for t in topics]
    denied = _authz.denied_names(ctx, ResourceType.TOPIC, names, AclOperation.READ)
    allowed = dict(req)
    allowed["topics"] = [t for t in topics if t["topic_name"] not in denied]
    lookup = topic_lookup(ctx.services.cluster)
    body = await change(persister, ctx.services.share_groups, allowed, lookup)
    body["responses"].extend(
        denied_entry(t, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for t in topics
        if t["topic_name"] in denied
    )
    return {"throttle_time_ms": 0, **body}


def _failed(error: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, **error_fields(error), "responses": []}
