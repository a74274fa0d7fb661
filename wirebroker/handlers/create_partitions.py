"""CreatePartitions (key 37), versions 0-3.

Grows topics to `count` partitions (Kafka 4.x ControllerApis.createPartitions +
ReplicationControlManager.createPartitions), per topic:

    name twice in the request     INVALID_REQUEST "Duplicate topic name." (once per name)
    more than 10,000 new          POLICY_VIOLATION "Excessively large number of additional
      partitions over the         partitions per request." for every (other) topic of the
      request's existing topics   request, as Kafka's controller refuses the whole operation
    unknown topic                 UNKNOWN_TOPIC_OR_PARTITION, no message
    count == current              INVALID_PARTITIONS "Topic already has 3 partition(s)."
    count < current               INVALID_PARTITIONS "The topic t currently has 3
                                  partition(s); 2 would not be an increase."
    assignments                   one per new partition, else INVALID_REPLICATION_ASSIGNMENT
                                  "Attempted to add 2 additional partition(s), but only 1
                                  assignment(s) were specified."; each list non-empty, only
                                  registered brokers (this node), no repeats, as many replicas
                                  as the topic's replication factor

Last, the controller mutation quota (KIP-599, as in create_topics.py): a topic that passed
every check takes its new partitions from the `controller_mutation_rate` of (user, client
id); v3 (strict): refused THROTTLING_QUOTA_EXCEEDED (no message) once the quota is exhausted;
v0-2: grown, and throttled. `validate_only` counts too (Kafka 4.4).

`validate_only` checks everything and changes nothing. Results: `name`, `error_code`,
`error_message` (null on success). Duplicated names come first, as in Kafka.

The checks are `wirebroker.metadata.TopicAdmin.create_partitions`'s; this handler maps them.

Skipped: `timeout_ms`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._configs import ConfigRequestError, as_request_error
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler
from wirebroker.handlers.throttle import mutation_permit
from wirebroker.metadata.topic_admin import MAX_PARTITIONS_PER_REQUEST, NewPartitions
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.create_partitions import (
        CreatePartitionsRequest,
        CreatePartitionsResponse,
        CreatePartitionsTopic,
        CreatePartitionsTopicResult,
    )
    from wirebroker.security.quota_manager import MutationPermit


_TOO_MANY = "Excessively large number of additional partitions per request."


def _additional(ctx: RequestContext, topics: list[CreatePartitionsTopic]) -> int:
    """The partitions the request would add to existing topics."""
    total = 0
    for topic in topics:
        info = ctx.services.cluster.topic(topic["name"])
        if info is not None:
            total += max(int(topic["count"]) - info.partitions, 0)
    return total


def _grow(
    ctx: RequestContext, topic: CreatePartitionsTopic, validate_only: bool, permit: MutationPermit
) -> None:
    """Check, count against the mutation quota (a refusal raises), then grow."""
    given = topic["assignments"]
    with as_request_error():
        replicas = None if given is None else [[int(b) for b in a["broker_ids"]] for a in given]
        wanted = NewPartitions(topic["name"], int(topic["count"]), replicas)
        now = ctx.now_ms()
        if permit.sensor is not None:
            ctx.services.admin.create_partitions(wanted, now_ms=now, validate_only=True)
            info = ctx.services.cluster.topic(topic["name"])
            added = int(topic["count"]) - (info.partitions if info is not None else 0)
            if not permit.record(added, now):
                raise ConfigRequestError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)
        ctx.services.admin.create_partitions(wanted, now_ms=now, validate_only=validate_only)


@handler(ApiKey.CREATE_PARTITIONS)
async def handle(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    topics = list(req["topics"] or [])
    counts = Counter(t["name"] for t in topics)
    validate_only = bool(req["validate_only"])
    results: list[CreatePartitionsTopicResult] = [
        {
            "name": name,
            "error_code": ErrorCode.INVALID_REQUEST,
            "error_message": "Duplicate topic name.",
        }
        for name, n in counts.items()
        if n > 1
    ]
    unique = [t for t in topics if counts[t["name"]] == 1]
    if _additional(ctx, unique) > MAX_PARTITIONS_PER_REQUEST:
        for topic in unique:
            results.append(
                {
                    "name": topic["name"],
                    "error_code": ErrorCode.POLICY_VIOLATION,
                    "error_message": _TOO_MANY,
                }
            )
        return {"throttle_time_ms": 0, "results": results}
    permit = mutation_permit(ctx)
    for topic in unique:
        if not _authz.allowed(ctx, ResourceType.TOPIC, topic["name"]):  # ALTER
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            results.append({"name": topic["name"], "error_code": denied, "error_message": None})
            continue
        try:
            _grow(ctx, topic, validate_only, permit)
        except ConfigRequestError as exc:
            results.append(
                {"name": topic["name"], "error_code": exc.error_code, "error_message": exc.message}
            )
            continue
        results.append({"name": topic["name"], "error_code": ErrorCode.NONE, "error_message": None})
    grown = [r["name"] for r in results if r["error_code"] == ErrorCode.NONE]
    if grown and not validate_only:
        await ctx.services.admin.wait_settled(grown, max(int(req["timeout_ms"]), 0) / 1000)
    return {"throttle_time_ms": 0, "results": results}
