"""ConsumerGroupDescribe (API key 69, KIP-848): serves v0-1, as Kafka 4.4.

One entry per requested group id (`GroupCoordinatorRuntime.consumer_group_describe`): state
(Empty, Assigning, Reconciling, Stable), group and assignment epochs, the assignor, and each
member with its epoch, client, subscription, current and target assignment (topic ids with
their names; member_type v1+: 1, a consumer-protocol member, 0 a classic one). An unknown group:
GROUP_ID_NOT_FOUND "Group <id> not found."; a classic group: "Group <id> is not a consumer
group." (librdkafka and the Java admin then fall back to DescribeGroups).
authorized_operations: as DescribeGroups. No group coordinator: COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from wirebroker.group.consumer.messages import DescribedConsumerGroup, DescribedConsumerMember
from wirebroker.handlers import _modern_groups
from wirebroker.handlers._modern_groups import NameOf, assignment
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages import consumer_group_describe as wire
    from wirebroker.handlers.context import RequestContext

__all__ = ["describe_response", "handle"]

#: the member type of a consumer-protocol member (v1+; 0 is a classic member)
_CLASSIC_MEMBER = 0
_CONSUMER_MEMBER = 1


def _member(m: DescribedConsumerMember, name_of: NameOf) -> dict[str, Any]:
    return {
        "member_id": m.member_id,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "member_epoch": m.member_epoch,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex or "",
        "assignment": assignment(m.assignment, name_of),
        "target_assignment": assignment(m.target_assignment, name_of),
        "member_type": _CLASSIC_MEMBER if m.classic else _CONSUMER_MEMBER,
    }


def describe_response(
    groups: list[DescribedConsumerGroup], name_of: NameOf
) -> wire.ConsumerGroupDescribeResponse:
    answer: Any = _modern_groups.describe_response(groups, name_of, _member)
    return answer


@handler(ApiKey.CONSUMER_GROUP_DESCRIBE)
async def handle(
    ctx: RequestContext, req: wire.ConsumerGroupDescribeRequest
) -> wire.ConsumerGroupDescribeResponse:
    answer: Any = _modern_groups.describe(
        ctx,
        req,
        lambda coordinator, ids: coordinator.consumer_group_describe(ids),
        DescribedConsumerGroup,
        _member,
    )
    return answer
