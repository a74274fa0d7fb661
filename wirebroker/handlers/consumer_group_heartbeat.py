"""ConsumerGroupHeartbeat (API key 68, KIP-848): serves v0-1, as Kafka 4.4.

The request becomes a `ConsumerHeartbeatRequest` (v1+: the client names its member id; v0: an
empty one at epoch 0 gets one from the coordinator); `GroupCoordinatorRuntime
.consumer_group_heartbeat` answers once its `__consumer_offsets` records are replicated.
Subscribed topic names are looked up in the cluster view (id, partition count). The
assignment is sent only when Kafka sends it (a join, a full request, a changed assignment).
An error answer carries Kafka's text, no member id and epoch 0. Regular-expression
subscriptions (v1 `subscribed_topic_regex`) are matched against every topic's whole name at
each heartbeat.
No group coordinator: COORDINATOR_NOT_AVAILABLE. GROUP READ is checked (Kafka also checks
DESCRIBE on the subscribed topics: skipped).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.consumer.messages import ConsumerHeartbeatRequest, ConsumerHeartbeatResult
from wirebroker.handlers import _authz, _modern_groups
from wirebroker.handlers._topics import topic_lookup
from wirebroker.handlers.join_group import client_host
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages import consumer_group_heartbeat as wire
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle", "heartbeat_response"]

_MEMBER_ID_REQUIRED_VERSION = 1


def heartbeat_response(result: ConsumerHeartbeatResult) -> wire.ConsumerGroupHeartbeatResponse:
    answer: Any = _modern_groups.heartbeat_response(result)
    return answer


def heartbeat_request(
    ctx: RequestContext, req: wire.ConsumerGroupHeartbeatRequest
) -> ConsumerHeartbeatRequest:
    names = req.get("subscribed_topic_names")
    owned = req.get("topic_partitions")
    return ConsumerHeartbeatRequest(
        group_id=str(req.get("group_id") or ""),
        member_id=str(req.get("member_id") or ""),
        member_epoch=int(req.get("member_epoch")),
        instance_id=req.get("instance_id"),
        rack_id=req.get("rack_id"),
        rebalance_timeout_ms=int(req.get("rebalance_timeout_ms", -1)),
        subscribed_topic_names=None if names is None else tuple(str(n) for n in names),
        subscribed_topic_regex=req.get("subscribed_topic_regex"),
        server_assignor=req.get("server_assignor"),
        owned=None
        if owned is None
        else {
            uuid.UUID(str(t["topic_id"])): frozenset(int(p) for p in t["partitions"]) for t in owned
        },
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
        member_id_required=ctx.api_version >= _MEMBER_ID_REQUIRED_VERSION,
    )


@handler(ApiKey.CONSUMER_GROUP_HEARTBEAT)
async def handle(
    ctx: RequestContext, req: wire.ConsumerGroupHeartbeatRequest
) -> wire.ConsumerGroupHeartbeatResponse:
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return heartbeat_response(ConsumerHeartbeatResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    if not _authz.allowed(ctx, ResourceType.GROUP, str(req.get("group_id") or "")):
        return heartbeat_response(ConsumerHeartbeatResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    view = ctx.services.cluster

    def names() -> list[str]:
        return [t.name for t in view.all_topics()]

    request = heartbeat_request(ctx, req)
    result = await coordinator.consumer_group_heartbeat(
        request, topic_lookup(ctx.services.cluster), names
    )
    return heartbeat_response(result)
