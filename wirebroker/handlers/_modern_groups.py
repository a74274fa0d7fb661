"""What the handlers of the two heartbeat group types share (Kafka's ModernGroup: KIP-848
consumer groups, API keys 68-69; KIP-932 share groups, 76-77).

`heartbeat_response(result)`: a ConsumerGroupHeartbeat / ShareGroupHeartbeat answer (the
assignment as topic ids and sorted partitions, topics in their id's text order; null when not
sent). `describe(ctx, req, ...)`: a ConsumerGroupDescribe / ShareGroupDescribe answer, one
entry per requested group id in request order: COORDINATOR_NOT_AVAILABLE for each without a
group coordinator; GROUP_AUTHORIZATION_FAILED for those the principal may not DESCRIBE; the
coordinator's description otherwise, authorized_operations as DescribeGroups.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from protocol.errors import ErrorCode
from wirebroker.group.messages import DescribedModernGroup, ModernHeartbeatResult
from wirebroker.handlers import _authz
from wirebroker.handlers.describe_groups import (
    AUTHORIZED_OPERATIONS_OMITTED,
    GROUP_ALL_OPERATIONS,
)
from wirebroker.security.acls import AclOperation, ResourceType

if TYPE_CHECKING:
    from wirebroker.group.runtime import GroupCoordinatorRuntime
    from wirebroker.handlers.context import RequestContext

__all__ = ["NameOf", "assignment", "describe", "describe_response", "heartbeat_response"]

M = TypeVar("M")
G = TypeVar("G", bound=DescribedModernGroup[Any])
#: topic id -> its name ("" when unknown)
NameOf = Callable[[uuid.UUID], str]
Assignment = Mapping[uuid.UUID, frozenset[int]]


def _sorted_topics(a: Assignment) -> list[tuple[uuid.UUID, frozenset[int]]]:
    return sorted(a.items(), key=lambda kv: str(kv[0]))


def heartbeat_response(result: ModernHeartbeatResult) -> dict[str, Any]:
    sent: Any = None
    if result.assignment is not None:
        sent = {
            "topic_partitions": [
                {"topic_id": t, "partitions": sorted(ps)}
                for t, ps in _sorted_topics(result.assignment)
            ]
        }
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "error_message": result.error_message,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
        "assignment": sent,
    }


def assignment(a: Assignment, name_of: NameOf) -> dict[str, Any]:
    """A described member's assignment (topic ids with their names)."""
    return {
        "topic_partitions": [
            {"topic_id": t, "topic_name": name_of(t), "partitions": sorted(ps)}
            for t, ps in _sorted_topics(a)
        ]
    }


def describe_response(
    groups: Sequence[DescribedModernGroup[M]],
    name_of: NameOf,
    member: Callable[[M, NameOf], dict[str, Any]],
) -> dict[str, Any]:
    """The Describe answer of `groups`, each member's fields from `member(m, name_of)`."""
    described = [
        {
            "error_code": int(g.error),
            "error_message": g.error_message,
            "group_id": g.group_id,
            "group_state": g.state,
            "group_epoch": g.group_epoch,
            "assignment_epoch": g.assignment_epoch,
            "assignor_name": g.assignor_name,
            "members": [member(m, name_of) for m in g.members],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }
        for g in groups
    ]
    return {"throttle_time_ms": 0, "groups": described}


def describe(
    ctx: RequestContext,
    req: Mapping[str, Any],
    lookup: Callable[[GroupCoordinatorRuntime, list[str]], Sequence[G]],
    refused: Callable[[str, ErrorCode], G],
    member: Callable[[Any, NameOf], dict[str, Any]],
) -> dict[str, Any]:
    """The Describe answer (see the module docstring): `lookup(coordinator, group_ids)`
    describes the groups the principal may describe, `refused(group_id, error)` stands for
    any other."""
    group_ids = [str(g) for g in req.get("group_ids") or []]
    coordinator = ctx.services.group_coordinator
    view = ctx.services.cluster

    def name_of(topic_id: uuid.UUID) -> str:
        info = view.topic_by_id(topic_id)
        return "" if info is None else info.name

    if coordinator is None:
        unavailable = [refused(g, ErrorCode.COORDINATOR_NOT_AVAILABLE) for g in group_ids]
        return describe_response(unavailable, name_of, member)
    denied = _authz.denied_names(ctx, ResourceType.GROUP, group_ids, AclOperation.DESCRIBE)
    described = {
        g.group_id: g for g in lookup(coordinator, [g for g in group_ids if g not in denied])
    }
    groups = [
        described.get(g) or refused(g, ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in group_ids
    ]
    answer = describe_response(groups, name_of, member)
    if req.get("include_authorized_operations"):
        for group in answer["groups"]:
            if group["error_code"] == 0:
                group["authorized_operations"] = _authz.operations_bits(
                    ctx, ResourceType.GROUP, group["group_id"], GROUP_ALL_OPERATIONS
                )
    return answer
