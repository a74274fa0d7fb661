"""ShareGroupDescribe (API key 77, KIP-932): serves v1, as Kafka 4.4.

One entry per requested group id (`GroupCoordinatorRuntime.share_group_describe`): state
(Empty, Stable), group and assignment epochs, the assignor ("simple"), and each member with
its epoch, client, rack, subscription and assignment (topic ids with their names). An
unknown group: GROUP_ID_NOT_FOUND "Group <id> not found."; a group of another type: "Group
<id> is not a share group.". authorized_operations: as DescribeGroups. No group
coordinator: COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from wirebroker.group.share.messages import DescribedShareGroup, DescribedShareMember
from wirebroker.handlers import _modern_groups
from wirebroker.handlers._modern_groups import NameOf, assignment
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages import share_group_describe as wire
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _member(m: DescribedShareMember, name_of: NameOf) -> dict[str, Any]:
    return {
        "member_id": m.member_id,
        "rack_id": m.rack_id,
        "member_epoch": m.member_epoch,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "assignment": assignment(m.assignment, name_of),
    }


@handler(ApiKey.SHARE_GROUP_DESCRIBE)
async def handle(
    ctx: RequestContext, req: wire.ShareGroupDescribeRequest
) -> wire.ShareGroupDescribeResponse:
    answer: Any = _modern_groups.describe(
        ctx,
        req,
        lambda coordinator, ids: coordinator.share_group_describe(ids),
        DescribedShareGroup,
        _member,
    )
    return answer
