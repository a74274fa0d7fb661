"""What the five share-state handlers (API keys 83-87) share: Kafka's ShareCoordinatorService
request rules, one share-partition key at a time.

`each_key(ctx, req, call)` answers a request's `topics` [topic_id, partitions [...]]: an empty
topic list, a topic without partitions, or an empty group id answer no results at all (Kafka's
service returns an empty response for these); no share coordinator (or one shut down) answers
COORDINATOR_NOT_AVAILABLE "Share coordinator is not available." for every partition; a
principal without CLUSTER_ACTION on the cluster CLUSTER_AUTHORIZATION_FAILED (these are
inter-broker requests). Otherwise `call(key, partition_data)` runs per partition, in request
order, and its `Outcome` is turned into the partition result by `build(outcome, data)`
(`partition_result` unless told: the partition, its error code and message).
Results are grouped per topic in request order; `answer` is the whole response.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.security.acls import AclOperation
from wirebroker.share_coordinator.core import MESSAGES, Outcome
from wirebroker.share_coordinator.keys import SharePartitionKey

if TYPE_CHECKING:
    from wirebroker.handlers.context import RequestContext
    from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime

__all__ = ["answer", "each_key", "error_fields", "partition_result"]

NOT_AVAILABLE = "Share coordinator is not available."

Call = Callable[
    ["ShareCoordinatorRuntime", SharePartitionKey, Mapping[str, Any]], Awaitable[Outcome]
]
Build = Callable[[Outcome, Mapping[str, Any]], dict[str, Any]]


def _empty(req: Mapping[str, Any]) -> bool:
    topics = req.get("topics") or []
    if not topics or any(not t.get("partitions") for t in topics):
        return True
    return not req.get("group_id")


async def each_key(
    ctx: RequestContext, req: Mapping[str, Any], call: Call, build: Build
) -> list[dict[str, Any]]:
    """The `results` of a share-state request (see the module docstring)."""
    if _empty(req):
        return []
    coordinator = ctx.services.share_coordinator
    refused: Outcome | None = None
    if not _authz.cluster(ctx, AclOperation.CLUSTER_ACTION):
        refused = Outcome(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _authz.CLUSTER_DENIED)
    elif coordinator is None or not coordinator.active:
        refused = Outcome(ErrorCode.COORDINATOR_NOT_AVAILABLE, NOT_AVAILABLE)
    results: list[dict[str, Any]] = []
    for topic in req["topics"]:
        topic_id = uuid.UUID(str(topic["topic_id"]))
        partitions = []
        for data in topic["partitions"]:
            if refused is not None:
                outcome = refused
            else:
                assert coordinator is not None
                key = SharePartitionKey(str(req["group_id"]), topic_id, int(data["partition"]))
                outcome = await call(coordinator, key, data)
            partitions.append(build(outcome, data))
        results.append({"topic_id": topic_id, "partitions": partitions})
    return results


async def answer(
    ctx: RequestContext, req: Mapping[str, Any], call: Call, build: Build | None = None
) -> dict[str, Any]:
    """The response of a share-state request: its `results` (`each_key`)."""
    return {"results": await each_key(ctx, req, call, build or partition_result)}


def partition_result(outcome: Outcome, data: Mapping[str, Any]) -> dict[str, Any]:
    """A partition's result without data: its index, error code and message."""
    return {"partition": int(data["partition"]), **error_fields(outcome)}


def error_fields(outcome: Outcome) -> dict[str, Any]:
    """`error_code` and `error_message` (None on success, Kafka's text otherwise)."""
    message = outcome.message
    if outcome.error is not ErrorCode.NONE and message is None:
        message = MESSAGES.get(outcome.error)
    return {"error_code": int(outcome.error), "error_message": message}
