"""ShareAcknowledge (API key 79, KIP-932): serves v1-2 (Kafka 4.4's range).

Acknowledges records a share consumer acquired, outside a ShareFetch. Share session epochs
(`wirebroker.share.sessions`): 0 is INVALID_SHARE_SESSION_EPOCH, an unknown session
SHARE_SESSION_NOT_FOUND, a wrong epoch INVALID_SHARE_SESSION_EPOCH (top level, no partitions);
n > 0 moves the epoch on; -1 applies the acknowledgements and closes the session, releasing the
member's other acquired records. Each partition's outcome is its `error_code` (the request
checks and acknowledgement rules of `handlers._share`: INVALID_REQUEST, INVALID_RECORD_STATE,
NOT_LEADER_OR_FOLLOWER with leader hints, ...). v2 answers acquisition_lock_timeout_ms and
accepts RENEW (4) when is_renew_ack is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers._leader_hints import LeaderHints
from wirebroker.handlers._share import Key, Resolved, request_error, resolve
from wirebroker.handlers.registry import handler
from wirebroker.handlers.share_fetch import acknowledge_all
from wirebroker.share.sessions import FINAL_EPOCH, ShareSessionError

if TYPE_CHECKING:
    from protocol.messages.share_acknowledge import (
        ShareAcknowledgeRequest,
        ShareAcknowledgeResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]


def _error(code: ErrorCode) -> ShareAcknowledgeResponse:
    return {"throttle_time_ms": 0, "error_code": int(code), "responses": [], "node_endpoints": []}


@handler(ApiKey.SHARE_ACKNOWLEDGE)
async def handle(ctx: RequestContext, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    manager = ctx.services.share_partitions
    group_id, member_id = req.get("group_id"), req.get("member_id")
    code = request_error(ctx, group_id, member_id)
    if code is not ErrorCode.NONE or manager is None or not member_id:
        return _error(code if code is not ErrorCode.NONE else ErrorCode.COORDINATOR_NOT_AVAILABLE)
    group_id = group_id or ""
    epoch = int(req["share_session_epoch"])
    try:
        manager.sessions.for_acknowledge(group_id, member_id, epoch, now_ms=ctx.now_ms())
    except ShareSessionError as exc:
        return _error(exc.code)
    settings = manager.settings(group_id)
    acks: dict[Key, list[Any]] = {}
    for topic in req.get("topics") or []:
        for p in topic.get("partitions") or []:
            key = (topic["topic_id"], int(p["partition_index"]))
            acks.setdefault(key, []).extend(p.get("acknowledgement_batches") or [])
    hints = LeaderHints(ctx.services, ctx.session.listener)
    resolved = resolve(ctx, acks, hints)
    entries: dict[Key, dict[str, Any]] = {}

    def entry(key: Key, res: Resolved) -> dict[str, Any]:
        if key not in entries:
            entries[key] = {
                "partition_index": key[1],
                "error_code": int(res.error),
                "current_leader": res.current_leader,
            }
        return entries[key]

    await acknowledge_all(
        manager,
        entry,
        resolved,
        acks,
        group_id=group_id,
        member_id=member_id,
        renew=bool(req.get("is_renew_ack", False)),
        settings=settings,
        field="error_code",
    )
    if epoch == FINAL_EPOCH:
        closed = manager.sessions.close(group_id, member_id)
        if closed is not None:
            await manager.release_session(closed)
    responses: list[dict[str, Any]] = []
    for key in acks:
        if responses and responses[-1]["topic_id"] == key[0]:
            responses[-1]["partitions"].append(entries[key])
        else:
            responses.append({"topic_id": key[0], "partitions": [entries[key]]})
    body: ShareAcknowledgeResponse = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "responses": responses,  # type: ignore[typeddict-item]
        "node_endpoints": hints.node_endpoints(),  # type: ignore[typeddict-item]
    }
    if ctx.api_version >= 2:
        body["acquisition_lock_timeout_ms"] = settings.partition.lock_duration_ms
    return body
