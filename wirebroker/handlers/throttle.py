"""Client quotas on the request path: what the Dispatcher records for each answered request
and the throttle time it answers (Kafka's KafkaApis + ClientQuotaManager; the rates and the
decisions are wirebroker.security.quota_manager, pure).

    prepare(ctx, request)            # before the handler: a consumer Fetch's max_bytes capped
    ms = throttle(ctx, request, frame_size, body, elapsed_s)   # sets body["throttle_time_ms"]

Per request, only when some quota is configured (else one attribute check):
- Produce: the request's size against the producer_byte_rate of (user, client id), recorded
  even when acks=0 (no answer: the connection is muted all the same);
- Fetch from a consumer (not a follower): the bytes of records answered against
  consumer_byte_rate; when throttled (by this or the request quota) the answer names no
  partition (Kafka's throttled fetch response, `getThrottledResponse`: empty, and the bytes
  unrecorded, so the consumer fetches them again after the throttle);
- every request but ApiVersions, SaslHandshake, SaslAuthenticate, WriteTxnMarkers (brokers'
  own) and follower fetches: its
  handling time (wall time minus what a long-poll Fetch spent parked) against
  request_percentage.
The throttle time is the largest of those, written into the answer's `throttle_time_ms`
(when its version has the field; never lowered); the connection then mutes the channel that
long (net/connection.py): after sending the answer for clients new enough to back off
themselves (KIP-219: `KIP219_FROM`), before sending it for older ones (the answer is
delayed, as Kafka did before KIP-219).
- CreateTopics, CreatePartitions, DeleteTopics: the partitions they create, add or delete,
  recorded by the handler against controller_mutation_rate (`mutation_permit`; strict from
  `STRICT_MUTATION_FROM`: a topic over the quota is answered THROTTLING_QUOTA_EXCEEDED) and
  its throttle time answered here (Kafka's ControllerMutationQuotaManager; the bucket is
  wirebroker.security.quota_manager's MutationQuotas).
The user is the principal's name (`ANONYMOUS` without authentication), as Kafka's sanitized
user; the client id the request header's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from wirebroker.security.quota_manager import MutationPermit

if TYPE_CHECKING:
    from wirebroker.handlers.context import RequestContext

__all__ = [
    "KIP219_FROM",
    "STRICT_MUTATION_FROM",
    "client_throttles_itself",
    "mutation_permit",
    "prepare",
    "throttle",
]

_INT32_MAX = 2**31 - 1

#: The first version of each API whose client backs off by itself (Kafka's
#: `shouldClientThrottle`); an API not listed: from v1.
KIP219_FROM: dict[int, int] = {
    int(ApiKey.PRODUCE): 6,
    int(ApiKey.FETCH): 8,
    int(ApiKey.LIST_OFFSETS): 3,
    int(ApiKey.METADATA): 6,
    int(ApiKey.OFFSET_COMMIT): 4,
    int(ApiKey.OFFSET_FETCH): 4,
    int(ApiKey.FIND_COORDINATOR): 2,
    int(ApiKey.JOIN_GROUP): 3,
    int(ApiKey.HEARTBEAT): 2,
    int(ApiKey.LEAVE_GROUP): 2,
    int(ApiKey.SYNC_GROUP): 2,
    int(ApiKey.DESCRIBE_GROUPS): 2,
    int(ApiKey.LIST_GROUPS): 2,
    int(ApiKey.API_VERSIONS): 2,
    int(ApiKey.CREATE_TOPICS): 3,
    int(ApiKey.DELETE_TOPICS): 2,
}

#: Never throttled: the connection's set-up, and inter-broker (cluster action) requests.
_EXEMPT = frozenset(
    {
        int(ApiKey.API_VERSIONS),
        int(ApiKey.SASL_HANDSHAKE),
        int(ApiKey.SASL_AUTHENTICATE),
        int(ApiKey.WRITE_TXN_MARKERS),
    }
)


#: The first version of each mutating API that knows THROTTLING_QUOTA_EXCEEDED: its
#: controller mutation quota is strict (Kafka's `newQuotaFor(request, strictSinceVersion)`);
#: older versions are permissive (accepted, then throttled).
STRICT_MUTATION_FROM: dict[int, int] = {
    int(ApiKey.CREATE_TOPICS): 6,
    int(ApiKey.CREATE_PARTITIONS): 3,
    int(ApiKey.DELETE_TOPICS): 5,
}


def mutation_permit(ctx: RequestContext) -> MutationPermit:
    """The controller mutation quota of this request (CreateTopics, CreatePartitions,
    DeleteTopics), kept in `ctx` so that `throttle` answers its throttle time; unbounded
    (`.sensor` None) when no controller_mutation_rate applies."""
    api = int(ctx.header.api_key)
    strict = ctx.api_version >= STRICT_MUTATION_FROM.get(api, 0)
    quotas = ctx.services.client_quotas
    if quotas is None or not quotas.store:
        permit = MutationPermit(None, strict)
    else:
        permit = quotas.mutation.permit(_user(ctx), ctx.header.client_id or "", strict=strict)
    ctx.mutation = permit
    return permit


def client_throttles_itself(api_key: int, version: int) -> bool:
    return version >= KIP219_FROM.get(api_key, 1)


def _user(ctx: RequestContext) -> str:
    principal = ctx.session.principal
    return principal.split(":", 1)[1] if ":" in principal else principal


def _fetch_bytes(body: Mapping[str, Any]) -> int:
    return sum(
        len(part.get("records") or b"")
        for topic in body.get("responses") or ()
        for part in topic.get("partitions") or ()
    )


def _is_follower_fetch(request: Any) -> bool:
    replica = request.get("replica_id", -1)
    state = request.get("replica_state")
    if state is not None:
        replica = max(int(replica), int(state.get("replica_id", -1)))
    return int(replica) >= 0


def prepare(ctx: RequestContext, request: Any) -> None:
    """Before the handler: a consumer Fetch asks for at most what its quota allows in the
    quota's windows (Kafka's `getMaxValueInQuotaWindow`: quota x (samples - 1) x window), so
    one answer cannot exceed it by much (a first batch larger than that is still answered
    whole, KIP-74)."""
    quotas = ctx.services.client_quotas
    if quotas is None or not quotas.store or int(ctx.header.api_key) != ApiKey.FETCH:
        return
    if _is_follower_fetch(request):
        return
    cap = quotas.fetch.max_in_window(_user(ctx), ctx.header.client_id or "")
    if cap is not None and int(request.get("max_bytes", _INT32_MAX)) > cap:
        request["max_bytes"] = max(1, cap)


def throttle(
    ctx: RequestContext,
    request: Any,
    frame_size: int,
    body: Mapping[str, Any] | None,
    elapsed_s: float,
) -> int:
    """Record this request against the quotas that apply; the throttle time (ms, 0: none),
    also written into `body` (see the module docstring)."""
    quotas = ctx.services.client_quotas
    if quotas is None or not quotas.store:
        return 0
    api = int(ctx.header.api_key)
    if api in _EXEMPT:
        return 0
    user, client_id = _user(ctx), ctx.header.client_id or ""
    now = ctx.now_ms()
    ms, fetched = 0, 0
    if api == ApiKey.PRODUCE:
        ms = quotas.produce.record(user, client_id, frame_size, now)
    elif api == ApiKey.FETCH:
        if _is_follower_fetch(request):
            return 0
        fetched = _fetch_bytes(body) if body is not None else 0
        ms = quotas.fetch.record(user, client_id, fetched, now)
    busy = max(0.0, elapsed_s - ctx.parked_s)
    ms = max(ms, quotas.request.record(user, client_id, quotas.percent_seconds(busy), now))
    if ctx.mutation is not None:
        ms = max(ms, ctx.mutation.throttle_ms(now))
    if ms > 0 and api == ApiKey.FETCH and body is not None:
        # Kafka's throttled fetch (for either quota): answered empty, its bytes not counted
        if fetched:
            quotas.fetch.unrecord(user, client_id, fetched, now)
        body["responses"] = []  # type: ignore[index]
    if ms > 0 and body is not None and "throttle_time_ms" in body:
        current = int(body["throttle_time_ms"] or 0)
        body["throttle_time_ms"] = max(current, ms)  # type: ignore[index]
    return ms
