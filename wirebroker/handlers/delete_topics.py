"""DeleteTopics (key 20), versions 1-6.

v1-5 name topics by `topic_names`; v6 by `topics` [{name (nullable), topic_id}], each naming
a topic by name or by id (Kafka 4.x ControllerApis.deleteTopics semantics):

    delete.topic.enable=false     every topic: TOPIC_DELETION_DISABLED (v3+) or
                                  INVALID_REQUEST (v1-2), no message
    neither name nor id           INVALID_REQUEST "Neither topic name nor id were specified."
    both name and id              INVALID_REQUEST "You may not specify both topic name and
                                  topic id."
    a name twice / an id twice    INVALID_REQUEST "Duplicate topic name." / "Duplicate topic id."
    unknown name                  UNKNOWN_TOPIC_OR_PARTITION "This server does not host this
                                  topic-partition."
    unknown id                    UNKNOWN_TOPIC_ID "This server does not host this topic ID."
                                  (name null)
    a name whose id was also      INVALID_REQUEST "The provided topic name maps to an ID that
    given                         was already supplied."

Internal topics (`__consumer_offsets`, `__transaction_state`) are deleted like any other, as
Kafka 4.x does (only the kafka-topics tool refuses them on the client side).

Results carry `name`, `topic_id` (v6; the zero uuid when unknown), `error_code` and
`error_message` (v5+). Deletion is synchronous: the topic is gone from metadata and disk when
the response is sent.

Last, the controller mutation quota (KIP-599, as in create_topics.py): each topic found and
allowed takes its partitions from the `controller_mutation_rate` of (user, client id); v5+
(strict): refused THROTTLING_QUOTA_EXCEEDED (no message) once the quota is exhausted; v1-4:
deleted, and throttled.

Skipped: `timeout_ms`; Kafka shuffles the results (and so which topics of a request meet an
exhausted quota), wirebroker keeps them (and counts them) in a stable order.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._configs import error_of
from wirebroker.handlers._topics import NIL_UUID, resolve_topic
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler
from wirebroker.handlers.throttle import mutation_permit
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.delete_topics import (
        DeletableTopicResult,
        DeleteTopicsRequest,
        DeleteTopicsResponse,
    )
    from wirebroker.metadata.view import ClusterView

UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."


def _result(
    name: str | None,
    topic_id: uuid.UUID,
    code: ErrorCode = ErrorCode.NONE,
    message: str | None = None,
) -> DeletableTopicResult:
    return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}


def _requested(ctx: RequestContext, req: DeleteTopicsRequest) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.api_version >= 6:
        return [(t["name"], t["topic_id"] or NIL_UUID) for t in (req.get("topics") or [])]
    return [(name, NIL_UUID) for name in (req.get("topic_names") or [])]


def _sort_requested(
    requested: list[tuple[str | None, uuid.UUID]], results: list[DeletableTopicResult]
) -> tuple[Counter[str], Counter[uuid.UUID]]:
    """Requested names and ids, counted in request order; entries naming both or neither, and
    duplicates, are answered INVALID_REQUEST into `results`."""
    names: Counter[str] = Counter()
    ids: Counter[uuid.UUID] = Counter()
    for name, tid in requested:
        if name is None and tid == NIL_UUID:
            message = "Neither topic name nor id were specified."
            results.append(_result(None, NIL_UUID, ErrorCode.INVALID_REQUEST, message))
        elif name is None:
            ids[tid] += 1
        elif tid == NIL_UUID:
            names[name] += 1
        else:
            message = "You may not specify both topic name and topic id."
            results.append(_result(name, tid, ErrorCode.INVALID_REQUEST, message))
    for name, n in names.items():
        if n > 1:
            message = "Duplicate topic name."
            results.append(_result(name, NIL_UUID, ErrorCode.INVALID_REQUEST, message))
    for tid, n in ids.items():
        if n > 1:
            results.append(_result(None, tid, ErrorCode.INVALID_REQUEST, "Duplicate topic id."))
    return names, ids


def _resolve(
    view: ClusterView,
    names: Counter[str],
    ids: Counter[uuid.UUID],
    results: list[DeletableTopicResult],
) -> dict[uuid.UUID, str]:
    """The topics to delete (id -> name): ids first, then names; a name that maps to an id
    already given is refused, and so is that id."""
    to_delete: dict[uuid.UUID, str] = {}
    refused = {tid for tid, n in ids.items() if n > 1}
    for tid in ids:
        if tid in refused:
            continue
        info, missing = resolve_topic(view, by_id=True, topic_id=tid)
        if info is None:
            results.append(_result(None, tid, missing, UNKNOWN_TOPIC_ID_MESSAGE))
        else:
            to_delete[tid] = info.name
    for name, n in names.items():
        if n > 1:
            continue
        info, missing = resolve_topic(view, by_id=False, name=name)
        if info is None:
            results.append(_result(name, NIL_UUID, missing, UNKNOWN_TOPIC_MESSAGE))
        elif info.topic_id in to_delete or info.topic_id in refused:
            to_delete.pop(info.topic_id, None)
            refused.add(info.topic_id)
            message = "The provided topic name maps to an ID that was already supplied."
            results.append(_result(name, info.topic_id, ErrorCode.INVALID_REQUEST, message))
        else:
            to_delete[info.topic_id] = name
    return to_delete


@handler(ApiKey.DELETE_TOPICS)
async def handle(ctx: RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
    services = ctx.services
    requested = _requested(ctx, req)
    if not services.config.get_bool("delete.topic.enable"):
        code = (
            ErrorCode.INVALID_REQUEST if ctx.api_version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        )
        return {
            "throttle_time_ms": 0,
            "responses": [_result(name, tid, code) for name, tid in requested],
        }

    results: list[DeletableTopicResult] = []
    names, ids = _sort_requested(requested, results)
    any_topic = _authz.cluster(ctx)  # DELETE on the cluster (Kafka's controller), else each
    permit = mutation_permit(ctx)
    for tid, name in _resolve(services.cluster, names, ids, results).items():
        if not any_topic and not _authz.allowed(ctx, ResourceType.TOPIC, name):
            results.append(_result(name, tid, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        info = services.cluster.topic(name)
        partitions = info.partitions if info is not None else 0
        if not permit.record(partitions, ctx.now_ms()):
            results.append(_result(name, tid, ErrorCode.THROTTLING_QUOTA_EXCEEDED))
            continue
        try:
            services.admin.delete_topic(name)
        except Exception as exc:
            found = error_of(exc)
            if found is None:
                raise
            results.append(_result(name, tid, *found))
            continue
        results.append(_result(name, tid))
    deleted = [r["name"] for r in results if r["error_code"] == 0 and r["name"] is not None]
    if deleted:
        await services.admin.wait_settled(deleted, max(int(req["timeout_ms"]), 0) / 1000)
    if ctx.api_version < 6:
        # Before v6 the name is not nullable; every result names a requested topic.
        for r in results:
            if r["name"] is None:
                r["name"] = ""
    return {"throttle_time_ms": 0, "responses": results}
