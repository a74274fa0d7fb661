"""What ShareFetch and ShareAcknowledge share (KIP-932): the request's checks, the partitions
resolved by topic id, acknowledgement batches read and validated, leader hints.

Request checks, in this order (Kafka 4.4's KafkaApis): READ on the group refused ->
GROUP_AUTHORIZATION_FAILED, a member id empty or over 36 characters -> INVALID_REQUEST (top
level; as Kafka 4.4 answers, tests/unit/handlers/test_share_fetch.py). An empty group id is no
error: its share partitions were never initialised (UNKNOWN_SERVER_ERROR per partition).
Per partition: an unknown topic id -> UNKNOWN_TOPIC_ID, READ on the topic refused ->
TOPIC_AUTHORIZATION_FAILED, a partition the topic lacks -> UNKNOWN_TOPIC_OR_PARTITION, one
this broker does not lead -> NOT_LEADER_OR_FOLLOWER (with `current_leader` and the answer's
`node_endpoints`, as KIP-951 gives Fetch). Every other partition's `current_leader` is the
struct's zero default {0, 0}, as Kafka 4.4 answers (compat/CONFORMANCE.md, share.fetch and
share.fetch_unknown_topic: the same for a served partition and an unknown topic id).

Acknowledgement batches of one partition (Kafka's validateAcknowledgementBatches): each
first_offset <= last_offset, not below the previous batch's last offset, one type or one per
offset, every type 0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT (4 RENEW from v2 when the request
says is_renew_ack and the group's share.renew.acknowledge.enable is true); otherwise the
partition's acknowledgement is INVALID_REQUEST and nothing of it is applied.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._leader_hints import FETCH_HINT_CODES, LeaderHints
from wirebroker.security.acls import AclOperation, ResourceType
from wirebroker.share.partition import AckBatch, AckType

if TYPE_CHECKING:
    from wirebroker.handlers.context import RequestContext
    from wirebroker.replication.partition import Partition

__all__ = [
    "Resolved",
    "ack_batches",
    "endpoints_for",
    "request_error",
    "resolve",
]

Key = tuple[uuid.UUID, int]


@dataclass
class Resolved:
    """A partition of the request: its topic name and replica, or the error it is answered."""

    key: Key
    topic: str | None = None
    part: Partition | None = None
    error: ErrorCode = ErrorCode.NONE
    current_leader: dict[str, int] = field(
        default_factory=lambda: {"leader_id": 0, "leader_epoch": 0}
    )


#: the longest member id Kafka takes (a UUID's text)
MAX_MEMBER_ID = 36


def request_error(ctx: RequestContext, group_id: str | None, member_id: str | None) -> ErrorCode:
    """The whole request's refusal, if any (module docstring)."""
    if not _authz.allowed(ctx, ResourceType.GROUP, group_id or "", AclOperation.READ):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not member_id or len(member_id) > MAX_MEMBER_ID:
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


def resolve(ctx: RequestContext, keys: Iterable[Key], hints: LeaderHints) -> dict[Key, Resolved]:
    """Each (topic id, partition) resolved against the cluster view and the replicas."""
    view = ctx.services.cluster
    replicas = ctx.services.replicas
    out: dict[Key, Resolved] = {}
    allowed: dict[str, bool] = {}
    for key in keys:
        topic_id, index = key
        res = Resolved(key)
        out[key] = res
        info = view.topic_by_id(topic_id)
        if info is None:
            res.error = ErrorCode.UNKNOWN_TOPIC_ID
            continue
        name = info.name
        if name not in allowed:
            allowed[name] = _authz.allowed(ctx, ResourceType.TOPIC, name, AclOperation.READ)
        if not allowed[name]:
            res.error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        res.topic = name
        part = replicas.partition(name, index)
        code = replicas.missing_code(name, index) if part is None else part.check_leader(-1)
        if code is not ErrorCode.NONE:
            res.error = code
            if int(code) in FETCH_HINT_CODES:
                res.current_leader = hints.leader_of(name, index)
            continue
        res.part = part
    return out


def endpoints_for(hints: LeaderHints) -> list[dict[str, Any]]:
    return hints.node_endpoints()


def ack_batches(raw: Iterable[Any], *, renew: bool) -> list[AckBatch] | None:
    """A partition's acknowledgement batches, or None when they are invalid (INVALID_REQUEST)."""
    out: list[AckBatch] = []
    last = -1
    allowed = {int(t) for t in AckType if renew or t is not AckType.RENEW}
    for b in raw:
        first, final = int(b["first_offset"]), int(b["last_offset"])
        types = tuple(int(t) for t in b.get("acknowledge_types") or ())
        if first > final or first < last:
            return None
        if len(types) != 1 and len(types) != final - first + 1:
            return None
        if any(t not in allowed for t in types):
            return None
        out.append(AckBatch(first, final, types))
        last = final
    return out
