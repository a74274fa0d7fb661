"""Fetch (API key 1): serves v4-18.

Fetch sessions (KIP-227, v7+) serve consumers and followers alike, as Kafka's FetchManager
(`wirebroker.replication.fetch_sessions`; docs/replication.md, "Fetch sessions"): an INITIAL
fetch (epoch 0) closes the session it names and opens one of its partitions when the cache
admits it (a follower's privileged, a consumer's not; else session_id 0 in the answer, a full
fetch); FINAL (-1) closes the session it names and is served sessionless. An incremental one
(epoch > 0) names only partitions whose fetch data changed (plus forgotten_topics_data; a
session left empty is closed and the request served sessionless), every partition of the
session is read, and the answer carries only partitions with records, an error, a diverging
epoch, a preferred read replica or a changed high watermark / log start; those that sent
records move to the end of the session's order. A follower's quiet partition (the follower in
the ISR and at the log end, the high watermark there too, `Partition.quiet_follower_stamp`)
whose stamp has not changed since the last read and whose HW, log start and LSO the follower
has been sent (`_Cached.is_quiet`) is not read again: nothing could be answered for it and its
position could move neither the HW nor the ISR, so only the follower's caught-up time is
refreshed (`ReplicaManager.touch_quiet_follower`): with `__consumer_offsets` a session holds
~17 idle partitions beside a busy one (docs/replication.md, "Quiet session partitions"). An
unknown session, a wrong epoch or a request naming topics otherwise than its session is a
top-level FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH /
FETCH_SESSION_TOPIC_ID_ERROR with no partitions and session_id 0; the session does not move.
rack_id, cluster_id, replica_directory_id and the follower high_watermark (v18) are ignored.
replica_state.replica_epoch (v15+, the follower's broker epoch): older than the broker's
current registration (ClusterView.broker_epoch) -> served, but the fetch is not recorded, so it
neither moves the high watermark nor brings the follower back into the ISR (KIP-903).

Topics are named (v4-12) or addressed by topic_id (v13+): an unknown id gives UNKNOWN_TOPIC_ID
for each of its partitions, an unknown name or partition UNKNOWN_TOPIC_OR_PARTITION, a partition
of a known topic that this broker does not host NOT_LEADER_OR_FOLLOWER. A partition named
twice (in one entry or two entries of its topic; in the forgotten list) is read and answered
once, in the place of its first naming with the fetch data of its last, and consecutive
entries of one topic are answered as one, as Kafka 4.4 reads a Fetch (a map of
topic-partitions; no error): `_named_once`, `fetch_sessions.named_once`.

From v16 a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries
current_leader and the answer the node_endpoints of those leaders (KIP-951,
`handlers._leader_hints`), so a client moves to the new leader without a Metadata request.

Who fetches: replica_id (v4-14) or replica_state.replica_id (v15+) >= 0 is a follower broker,
else a consumer. Both read only from the leader (no KIP-392 follower fetching).

Authorization (with an authorizer, wirebroker.handlers._authz), as Kafka's KafkaApis: a
follower needs CLUSTER_ACTION on the cluster, else every partition it asked is answered
TOPIC_AUTHORIZATION_FAILED (no session is made); a consumer needs READ on each topic, else
its partitions TOPIC_AUTHORIZATION_FAILED (after UNKNOWN_TOPIC_ID, before an unknown name).

Per partition, in this order:
    current_leader_epoch (v9+)   > ours UNKNOWN_LEADER_EPOCH, < ours FENCED_LEADER_EPOCH,
                                 -1 no check
    leadership                   not the leader -> NOT_LEADER_OR_FOLLOWER; a follower fetch from
                                 a broker that is not one of the partition's follower replicas
                                 -> NOT_LEADER_OR_FOLLOWER
    last_fetched_epoch (v12+)    when >= 0 and the log diverges (Kafka's follower truncation check:
                                 our end offset for that epoch is below fetch_offset, or we know
                                 only an older epoch): no records, diverging_epoch set; when we
                                 cannot tell (the epoch is newer than every epoch we know: end
                                 offset undefined) OFFSET_OUT_OF_RANGE, as Kafka, so the follower
                                 compares log ends instead
    fetch_offset                 outside [log start, log end] -> OFFSET_OUT_OF_RANGE
    read                         whole batches from the batch containing fetch_offset (clients skip
                                 the records before it), never a batch at or past the bound:
                                 consumers read up to the high watermark; read_committed
                                 (isolation_level 1) up to the last stable offset (min of the
                                 first offset of the oldest ongoing transaction and the high
                                 watermark) with the aborted transactions overlapping the
                                 returned batches (from the `.txnindex` files); a replica_id >= 0
                                 (replica_state.replica_id from v15) reads up to the log end
                                 offset. A follower's read is a slice of the segment file
                                 where one can be made (`wirebroker.log.file_slice`): the
                                 response goes out with sendfile, the bytes never read here.
    follower state               after a successful first read of a follower fetch (not after a
                                 divergence or an error, not on the re-reads of a long poll, as
                                 Kafka), the leader records the follower's position
                                 (`ReplicaManager.record_follower_fetch`): its fetch_offset is its
                                 log end; the high watermark may advance and the follower may
                                 rejoin the ISR. The response carries the HW as read before that.
    replication throttle         a follower out of the partition's ISR, the partition in the
                                 leader's throttled replicas (leader.replication.throttled.
                                 replicas) and the leader quota exceeded: no records (not read;
                                 nothing towards min_bytes). Once answered, the records sent of
                                 every throttled partition are recorded in the leader quota
                                 (wirebroker.replication.quota; Kafka's ReplicaManager and
                                 KafkaApis rules)
A failed partition has high_watermark, last_stable_offset and log_start_offset -1, empty
records and, as in Kafka, aborted_transactions [] for an unknown topic, topic id or partition
(refused before any read) and null for the errors of the read itself (leader, epoch, offset).
A served partition: high_watermark, last_stable_offset, log_start_offset,
aborted_transactions (a list, maybe empty) for read_committed and null for read_uncommitted,
preferred_read_replica -1.

Size limits (KIP-74): partitions are read in request order; each gets
min(partition_max_bytes, what is left of max_bytes); the first partition that returns data
returns at least one whole batch even when it exceeds both limits, later ones only what fits.

Long poll: the response goes out at once when the bytes gathered reach min_bytes, when any
partition has an error or a diverging epoch, when no partition is requested or when
max_wait_ms <= 0. Otherwise the handler parks this connection only, subscribed to every
requested partition (`Services.fetch_waiters`), and reads again whenever one gets data
(a consumer also when the high watermark advances; a follower, which reads up to the log end,
not), until min_bytes is reached or max_wait_ms passes; then it answers with what there is.
Timing uses trio's clock (so tests run it under MockClock).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._leader_hints import FETCH_HINT_CODES, LeaderHints
from wirebroker.handlers._topics import resolve_entry
from wirebroker.handlers.registry import handler
from wirebroker.log.errors import LogError
from wirebroker.replication.fetch_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchSession,
    FetchSessionError,
    Key,
    group_topics,
    named_once,
)
from wirebroker.replication.partition import READ_COMMITTED
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.fetch import (
        FetchableTopicResponse,
        FetchPartition,
        FetchRequest,
        FetchResponse,
        PartitionData,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.replication.partition import Partition
    from wirebroker.replication.quota import ReplicationQuota

__all__ = ["handle"]

log = logging.getLogger(__name__)

_INT32_MAX = 2**31 - 1


#: Errors Kafka decides before its replica manager reads (the topic or partition is not in its
#: metadata): the partition's answer has an empty aborted_transactions list, not null.
_UNKNOWN_CODES = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    }
)


def _failed(index: int, code: ErrorCode) -> PartitionData:
    return {
        "partition_index": index,
        "error_code": int(code),
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": [] if code in _UNKNOWN_CODES else None,
        "preferred_read_replica": -1,
        "records": b"",
    }


_TOPIC = ResourceType.TOPIC


class _Plan:
    """The request resolved against the cluster view once: (response key, partitions)."""

    def __init__(self, ctx: RequestContext, req: FetchRequest, *, follower: bool) -> None:
        version = ctx.api_version
        self.topics: list[
            tuple[FetchableTopicResponse, str | None, ErrorCode, list[FetchPartition]]
        ] = []
        view = ctx.services.cluster
        for ftopic in req.get("topics") or []:
            # v13+ topics all have an id, v4-12 a name
            naming, info, missing = resolve_entry(
                view, ftopic, by_id=version >= 13, name_key="topic"
            )
            key = cast("FetchableTopicResponse", {**naming, "partitions": []})
            name = info.name if info is not None else None
            asked = name if version >= 13 else str(ftopic.get("topic"))
            # a follower (checked for CLUSTER_ACTION already) reads any topic
            if not follower and asked is not None and not _authz.allowed(ctx, _TOPIC, asked):
                name, missing = None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
            self.topics.append((key, name, missing, list(ftopic.get("partitions") or [])))

    def watch_keys(self) -> list[tuple[str, int]]:
        return [
            (name, int(p.get("partition")))
            for _k, name, _m, parts in self.topics
            if name is not None
            for p in parts
        ]

    def is_empty(self) -> bool:
        return not any(parts for _k, _n, _m, parts in self.topics)


def _read_partition(
    part: Partition,
    pdata: FetchPartition,
    *,
    version: int,
    isolation: int,
    replica_id: int,
    limit: int,
    min_one: bool,
    throttled: bool = False,
) -> tuple[PartitionData, bool]:
    """One partition's response and whether it completes the fetch at once (error/divergence).
    `throttled`: a follower out of the ISR over the leader's replication quota gets no records."""
    index = part.index
    code = part.check_leader(int(pdata.get("current_leader_epoch", -1)))
    if code is ErrorCode.NONE and replica_id >= 0 and replica_id not in part.followers:
        code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    if code is not ErrorCode.NONE:
        return _failed(index, code), True
    fetch_offset = int(pdata.get("fetch_offset"))
    base: PartitionData = {
        "partition_index": index,
        "error_code": 0,
        "high_watermark": part.high_watermark,
        "last_stable_offset": part.last_stable_offset,
        "log_start_offset": part.log_start_offset,
        "aborted_transactions": [] if isolation == READ_COMMITTED else None,
        "preferred_read_replica": -1,
        "records": b"",
    }
    last_fetched_epoch = int(pdata.get("last_fetched_epoch", -1)) if version >= 12 else -1
    if last_fetched_epoch >= 0:
        epoch, end_offset = part.end_offset_for_epoch(last_fetched_epoch)
        if epoch < 0 or end_offset < 0:
            return _failed(index, ErrorCode.OFFSET_OUT_OF_RANGE), True
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            base["diverging_epoch"] = {"epoch": epoch, "end_offset": end_offset}
            return base, True
    if throttled:
        return base, False
    try:
        data = part.read(
            fetch_offset,
            max_bytes=limit,
            isolation_level=isolation,
            from_follower=replica_id >= 0,
            min_one_batch=min_one,
            zero_copy=isolation != READ_COMMITTED,
        )
    except LogError as exc:
        return _failed(index, exc.error_code), True
    base["records"] = data  # type: ignore[typeddict-item]  # bytes, or a FileSlice region
    if isolation == READ_COMMITTED and isinstance(data, bytes) and data:
        base["aborted_transactions"] = [
            {"producer_id": pid, "first_offset": first}
            for pid, first in part.aborted_transactions(fetch_offset, data)
        ]
    return base, False


def _read_all(
    ctx: RequestContext,
    plan: _Plan,
    *,
    version: int,
    isolation: int,
    replica_id: int,
    max_bytes: int,
    first: bool,
    session: FetchSession | None = None,
    skip_quiet: bool = False,
) -> tuple[list[FetchableTopicResponse], int, bool]:
    """Read every requested partition once: (responses, bytes gathered, complete now).
    `first`: the first read of this request (a follower's position is recorded then).
    `session`: the follower's fetch session; a partition read with nothing to send and the
    follower quiet there (`Partition.quiet_follower_stamp`) gets that stamp in its cache
    entry. `skip_quiet` (an incremental fetch): a partition whose stamp is unchanged and whose
    high watermark, log start and last stable offset the follower has been sent
    (`_Cached.is_quiet`) is neither read nor answered, the follower's fetch at the log end
    only refreshes its caught-up time (`ReplicaManager.touch_quiet_follower`, at most every
    `quiet_touch_ms` per partition)."""
    replicas = ctx.services.replicas
    now_ms = ctx.now_ms()
    touch_before = now_ms - replicas.quiet_touch_ms
    quota = replicas.quotas.leader if replica_id >= 0 else None
    remaining = max(0, max_bytes)
    total = 0
    complete = False
    responses: list[FetchableTopicResponse] = []
    cache = session.partitions if session is not None else None
    field = _topic_field(version)
    for key, name, missing, parts in plan.topics:
        out: list[PartitionData] = []
        tkey = key.get(field)
        for pdata in parts:
            index = int(pdata.get("partition"))
            part = replicas.partition(name, index) if name is not None else None
            if part is None:
                code = missing if name is None else replicas.missing_code(name, index)
                out.append(_failed(index, code))
                complete = True
                continue
            cached = cache.get((tkey, index)) if cache is not None else None
            if skip_quiet and cached is not None and cached.quiet is not None:
                stamp = _quiet_stamp(part, replica_id, isolation, pdata)
                if stamp is not None and cached.is_quiet(part, stamp):
                    if replica_id >= 0 and first and cached.recorded_ms <= touch_before:
                        replicas.touch_quiet_follower(part, replica_id, now_ms)
                        cached.recorded_ms = now_ms
                    continue
            limit = max(0, min(int(pdata.get("partition_max_bytes", _INT32_MAX)), remaining))
            presp, done = _read_partition(
                part,
                pdata,
                version=version,
                isolation=isolation,
                replica_id=replica_id,
                limit=limit,
                min_one=total == 0,
                throttled=quota is not None and _throttled(quota, part, replica_id, now_ms),
            )
            if first and replica_id >= 0 and not done:
                _record_follower(ctx, part, replica_id, pdata)
                if cached is not None:
                    cached.recorded_ms = now_ms
            if cached is not None:
                quiet = not done and not presp["records"]
                stamp = _quiet_stamp(part, replica_id, isolation, pdata) if quiet else None
                cached.quiet = None if stamp is None else (part, stamp)
            complete = complete or done
            size = len(presp["records"] or b"")
            total += size
            remaining = max(0, remaining - size)
            out.append(presp)
        responses.append({**key, "partitions": out})
    return responses, total, complete


def _quiet_stamp(
    part: Partition, replica_id: int, isolation: int, pdata: FetchPartition
) -> tuple[int, int, int, int] | None:
    """The partition's quiet stamp for this fetcher (None: not quiet): a follower's
    (`Partition.quiet_follower_stamp`) or a consumer's (`Partition.quiet_consumer_stamp`)."""
    if replica_id >= 0:
        return part.quiet_follower_stamp(replica_id)
    return part.quiet_consumer_stamp(int(pdata.get("fetch_offset")), isolation)


def _throttled(quota: ReplicationQuota, part: Partition, replica_id: int, now_ms: int) -> bool:
    """The leader's replication throttle: a throttled partition, a follower out of the ISR,
    the leader quota exceeded (wirebroker.replication.quota)."""
    return (
        quota.throttles_any
        and quota.is_throttled(part.topic, part.index)
        and replica_id not in part.isr
        and quota.exceeded(now_ms)
    )


def _record_follower(
    ctx: RequestContext, part: Partition, replica_id: int, pdata: FetchPartition
) -> None:
    try:
        ctx.services.replicas.record_follower_fetch(
            part,
            replica_id,
            fetch_offset=int(pdata.get("fetch_offset")),
            log_start_offset=int(pdata.get("log_start_offset", -1)),
            now_ms=ctx.now_ms(),
        )
    except Exception:
        log.exception("recording the fetch of follower %d on %s failed", replica_id, part)


def _topic_field(version: int) -> str:
    """How a request of `version` names its topics, and so its session keys: by id from v13."""
    return "topic_id" if version >= 13 else "topic"


def _session_error(code: ErrorCode) -> FetchResponse:
    return {"throttle_time_ms": 0, "error_code": int(code), "session_id": 0, "responses": []}


def _named(req: FetchRequest, topic_field: str) -> list[tuple[Key, FetchPartition]]:
    """The request's partitions as (session key, fetch data) pairs."""
    return [
        ((topic.get(topic_field), int(p.get("partition"))), p)
        for topic in req.get("topics") or []
        for p in topic.get("partitions") or []
    ]


def _named_once(req: FetchRequest, version: int) -> FetchRequest:
    """A full or sessionless request as Kafka 4.4 reads it (a map of topic-partitions): a
    partition named twice is read and answered once, in the place of its first naming with
    the fetch data of its last, and consecutive entries of one topic are one entry
    (`named_once`, `group_topics`)."""
    field = _topic_field(version)
    asked = req.get("topics") or []
    if len({t.get(field) for t in asked}) == len(asked) and all(
        len({p["partition"] for p in parts}) == len(parts)
        for parts in (t.get("partitions") or () for t in asked)
    ):
        return req  # each topic and partition once: the usual case, checked in ~40 us per 1,000
    return cast(
        "FetchRequest", {**req, "topics": group_topics(named_once(_named(req, field)), field)}
    )


def _session_for(
    ctx: RequestContext, req: FetchRequest, replica_id: int
) -> tuple[FetchSession | None, bool, FetchRequest]:
    """The request's fetch session (replication/fetch_sessions.py), as Kafka's
    FetchManager.newContext: (the session or None, whether the answer is incremental, the
    request to serve: for an incremental fetch, every partition of the session). A full fetch
    (INITIAL or FINAL) closes the session it names, and INITIAL makes a new one of its
    partitions (a follower's privileged) when the cache admits it; an incremental one that
    leaves its session empty closes it and is served sessionless. Raises FetchSessionError
    when no session can serve it."""
    sessions = ctx.services.fetch_sessions
    version = ctx.api_version
    topic_field = _topic_field(version)
    session_id = int(req.get("session_id", 0))
    epoch = int(req.get("session_epoch", FINAL_EPOCH))
    now_ms = ctx.now_ms()
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != 0:
            sessions.close(session_id)
        if epoch == FINAL_EPOCH:
            return None, False, req
        named = _named(req, topic_field)
        return sessions.maybe_create(replica_id >= 0, version >= 13, named, now_ms), False, req
    forgotten = [
        (topic.get(topic_field), int(index))
        for topic in req.get("forgotten_topics_data") or []
        for index in topic.get("partitions") or []
    ]
    session = sessions.update(
        session_id, epoch, version >= 13, _named(req, topic_field), forgotten, now_ms
    )
    if session is None:
        return None, False, req
    full = cast("FetchRequest", {**req, "topics": session.request_topics(topic_field)})
    return session, True, full


def _session_answer(
    session: FetchSession, incremental: bool, responses: list[FetchableTopicResponse], field: str
) -> list[FetchableTopicResponse]:
    """The partitions the answer carries: all of them (recorded as sent) for a full fetch,
    for an incremental one only those `FetchSession.must_answer` keeps, those with records
    moved to the end of the session's order, runs of one topic made one entry (as Kafka)."""
    if not incremental:
        for topic in responses:
            key = topic.get(field)
            for p in topic["partitions"]:
                session.must_answer((key, p["partition_index"]), p)
        return responses
    out: list[FetchableTopicResponse] = []
    for topic in responses:
        key = topic.get(field)
        kept = []
        for p in topic["partitions"]:
            pkey = (key, p["partition_index"])
            if session.must_answer(pkey, p):
                kept.append(p)
                if p["records"]:
                    session.move_to_end(pkey)
        if not kept:
            continue
        if out and out[-1].get(field) == key:
            out[-1]["partitions"].extend(kept)
        else:
            out.append({**topic, "partitions": kept})
    return out


def _replica(req: FetchRequest, version: int) -> tuple[int, int]:
    """(replica_id, replica_epoch) of the fetcher: -1s for a consumer."""
    if version >= 15:
        state = req.get("replica_state")
        if state is None:
            return -1, -1
        return int(state["replica_id"]), int(state["replica_epoch"])
    return int(req.get("replica_id", -1)), -1


@handler(ApiKey.FETCH)
async def handle(ctx: RequestContext, req: FetchRequest) -> FetchResponse | None:
    version = ctx.api_version
    replica_id, replica_epoch = _replica(req, version)
    session: FetchSession | None = None
    incremental = False
    if replica_id >= 0 and not _authz.cluster(ctx):
        return _follower_refused(ctx, req, replica_id)
    if version >= 7:
        try:
            session, incremental, req = _session_for(ctx, req, replica_id)
        except FetchSessionError as exc:
            return _session_error(exc.code)
    if not incremental:
        req = _named_once(req, version)
    # KIP-903: a follower fetching with an older broker epoch than its registration (a process
    # whose session expired, or an older incarnation) is served but not counted: its position
    # does not move the high watermark and cannot bring it back into the ISR.
    stale = 0 <= replica_epoch < ctx.services.cluster.broker_epoch(replica_id)
    isolation = int(req.get("isolation_level", 0))
    max_bytes = int(req.get("max_bytes", _INT32_MAX))
    min_bytes = int(req.get("min_bytes", 0))
    max_wait_ms = int(req.get("max_wait_ms", 0))

    plan = _Plan(ctx, req, follower=replica_id >= 0)
    deadline = trio.current_time() + max(0, max_wait_ms) / 1000.0
    waiters = ctx.services.fetch_waiters
    first = not stale
    while True:
        responses, total, complete = _read_all(
            ctx,
            plan,
            version=version,
            isolation=isolation,
            replica_id=replica_id,
            max_bytes=max_bytes,
            first=first,
            session=session,
            skip_quiet=incremental,
        )
        first = False
        if (
            complete
            or total >= min_bytes
            or max_wait_ms <= 0
            or plan.is_empty()
            or trio.current_time() >= deadline
        ):
            break
        # No await between the read above and subscribing: no wake-up can be missed.
        # a follower reads up to the log end: an HW advance alone gives it nothing to read
        with waiters.subscribe(plan.watch_keys(), hw=replica_id < 0) as event:
            await _park(ctx, event, deadline)
    if total:
        _count_bytes_out(ctx, plan, responses)
        if replica_id >= 0:
            _record_throttled(ctx, plan, responses)
    endpoints = _leader_hints(ctx, plan, responses) if complete and version >= 16 else None
    field = _topic_field(version)
    body: FetchResponse = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0 if session is None else session.session_id,
        "responses": (
            responses
            if session is None
            else _session_answer(session, incremental, responses, field)
        ),
    }
    if endpoints:
        body["node_endpoints"] = endpoints  # type: ignore[typeddict-item]
    return body


def _follower_refused(ctx: RequestContext, req: FetchRequest, replica_id: int) -> FetchResponse:
    """A follower fetch without CLUSTER_ACTION on the cluster: every partition asked
    TOPIC_AUTHORIZATION_FAILED, no session (Kafka's KafkaApis.handleFetchRequest)."""
    field = _topic_field(ctx.api_version)
    log.info(
        "follower fetch of replica %d refused: %s may not CLUSTER_ACTION the cluster",
        replica_id,
        ctx.session.principal,
    )
    responses = [
        cast(
            "FetchableTopicResponse",
            {
                field: topic.get(field),
                "partitions": [
                    _failed(int(p.get("partition")), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    for p in topic.get("partitions") or []
                ],
            },
        )
        for topic in req.get("topics") or []
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


async def _park(ctx: RequestContext, event: trio.Event, deadline: float) -> None:
    """Wait for data until `deadline`; the time parked is not handling time (the request
    quota, handlers/throttle.py)."""
    parked = trio.current_time()
    with trio.move_on_at(deadline):
        await event.wait()
    ctx.parked_s += trio.current_time() - parked


def _leader_hints(
    ctx: RequestContext, plan: _Plan, responses: list[FetchableTopicResponse]
) -> list[dict[str, Any]]:
    """KIP-951 (v16+, `handlers._leader_hints`): `current_leader` on each partition answered
    NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH; the node endpoints of those leaders."""
    hints: LeaderHints | None = None
    for (_key, name, _missing, _parts), topic in zip(plan.topics, responses, strict=True):
        for presp in topic["partitions"]:
            if presp["error_code"] in FETCH_HINT_CODES:
                hints = hints or LeaderHints(ctx.services, ctx.session.listener)
                presp["current_leader"] = hints.leader_of(name, presp["partition_index"])  # type: ignore[typeddict-item]
    return hints.node_endpoints() if hints is not None else []


def _record_throttled(
    ctx: RequestContext, plan: _Plan, responses: list[FetchableTopicResponse]
) -> None:
    """The leader's replication quota counts the records sent of its throttled partitions,
    whether the follower is in the ISR or not (Kafka's rule; wirebroker.replication.quota)."""
    quota = ctx.services.replicas.quotas.leader
    if not quota.throttles_any:
        return
    size = 0
    for (_key, name, _missing, _parts), topic in zip(plan.topics, responses, strict=True):
        if name is None:
            continue
        for p in topic["partitions"]:
            if p["records"] and quota.is_throttled(name, p["partition_index"]):
                size += len(p["records"] or b"")
    if size:
        quota.record(size, ctx.now_ms())


def _count_bytes_out(
    ctx: RequestContext, plan: _Plan, responses: list[FetchableTopicResponse]
) -> None:
    """Record bytes sent per topic (wirebroker/handlers/stats.py); follower fetches count."""
    stats = ctx.services.stats
    for (_key, name, _missing, _parts), topic in zip(plan.topics, responses, strict=True):
        size = sum(len(p["records"] or b"") for p in topic["partitions"])
        if size and name is not None:
            stats.add_bytes_out(name, size)
