"""ShareGroupHeartbeat (API key 76, KIP-932): serves v1, as Kafka 4.4.

The request becomes a `ShareHeartbeatRequest` (the client names its member id: an empty one
is INVALID_REQUEST without a text, answered first, as Kafka 4.4's KafkaApis does);
`GroupCoordinatorRuntime.share_group_heartbeat` answers once its `__consumer_offsets` records
are replicated and the share states it started initializing are initialized
(`wirebroker.group.share.service`). Subscribed topic names are looked up in
the cluster view (id, partition count). The assignment is sent on a join, a full request
(subscribed topic names sent) or a changed assignment, as Kafka. An error answer carries
Kafka's text, no member id and epoch 0.
No group coordinator: COORDINATOR_NOT_AVAILABLE. GROUP READ is checked (Kafka also checks
DESCRIBE on the subscribed topics: skipped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.share.messages import ShareHeartbeatRequest, ShareHeartbeatResult
from wirebroker.handlers import _authz, _modern_groups
from wirebroker.handlers._topics import topic_lookup
from wirebroker.handlers.join_group import client_host
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclOperation, ResourceType

if TYPE_CHECKING:
    from protocol.messages import share_group_heartbeat as wire
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle", "heartbeat_request", "heartbeat_response"]


def heartbeat_response(result: ShareHeartbeatResult) -> wire.ShareGroupHeartbeatResponse:
    answer: Any = _modern_groups.heartbeat_response(result)
    return answer


def heartbeat_request(
    ctx: RequestContext, req: wire.ShareGroupHeartbeatRequest
) -> ShareHeartbeatRequest:
    names = req.get("subscribed_topic_names")
    return ShareHeartbeatRequest(
        group_id=str(req.get("group_id") or ""),
        member_id=str(req.get("member_id") or ""),
        member_epoch=int(req.get("member_epoch")),
        rack_id=req.get("rack_id"),
        subscribed_topic_names=None if names is None else tuple(str(n) for n in names),
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
    )


@handler(ApiKey.SHARE_GROUP_HEARTBEAT)
async def handle(
    ctx: RequestContext, req: wire.ShareGroupHeartbeatRequest
) -> wire.ShareGroupHeartbeatResponse:
    if not req.get("member_id"):  # Kafka 4.4's KafkaApis: before anything else, no text
        return heartbeat_response(ShareHeartbeatResult(ErrorCode.INVALID_REQUEST))
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return heartbeat_response(ShareHeartbeatResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    group_id = str(req.get("group_id") or "")
    if not _authz.allowed(ctx, ResourceType.GROUP, group_id, AclOperation.READ):
        return heartbeat_response(ShareHeartbeatResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    request = heartbeat_request(ctx, req)
    result = await coordinator.share_group_heartbeat(request, topic_lookup(ctx.services.cluster))
    return heartbeat_response(result)
