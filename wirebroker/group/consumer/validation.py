"""The checks Kafka's GroupCoordinatorService makes on a ConsumerGroupHeartbeat before the
group is looked at (`throwIfConsumerGroupHeartbeatRequestIsInvalid`): INVALID_REQUEST or
UNSUPPORTED_ASSIGNOR with Kafka's texts, else None."""

from __future__ import annotations

from collections.abc import Collection

from protocol.errors import ErrorCode
from wirebroker.group.consumer.messages import ConsumerHeartbeatRequest
from wirebroker.group.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
)
from wirebroker.group.regex import InvalidRegularExpression, compile_subscription

Invalid = tuple[ErrorCode, str]


def _bad(text: str) -> Invalid:
    return ErrorCode.INVALID_REQUEST, text


def check_heartbeat(req: ConsumerHeartbeatRequest, assignors: Collection[str]) -> Invalid | None:
    epoch = req.member_epoch
    if (req.member_id_required or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) and (
        req.member_id == ""
    ):
        return _bad("MemberId can't be empty.")
    if req.group_id == "":
        return _bad("GroupId can't be empty.")
    if req.instance_id == "":
        return _bad("InstanceId can't be empty.")
    if req.rack_id == "":
        return _bad("RackId can't be empty.")
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            return _bad("RebalanceTimeoutMs must be provided in first request.")
        if req.owned is None or any(req.owned.values()):
            return _bad("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            return _bad(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                "(re-)joining."
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            return _bad("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return _bad("MemberEpoch is invalid.")
    if req.subscribed_topic_regex:
        try:
            compile_subscription(req.subscribed_topic_regex)
        except InvalidRegularExpression as e:
            return ErrorCode.INVALID_REGULAR_EXPRESSION, str(e)
    if req.server_assignor is not None and req.server_assignor not in assignors:
        return (
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )
    return None
