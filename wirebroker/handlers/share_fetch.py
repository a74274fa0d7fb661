"""ShareFetch (API key 78, KIP-932): serves v1-2 (Kafka 4.4's range).

A share consumer fetches records *acquired* for it from the share partitions of its group
(`wirebroker.share`): each answered partition carries the record batches holding its acquired
offsets and `acquired_records` (first, last, delivery count). Share sessions
(`wirebroker.share.sessions`, epoch rules there): epoch 0 opens one with the named partitions,
n > 0 adds the named and drops `forgotten_topics_data`, then fetches every partition of the
session; -1 applies the acknowledgements and closes it (the member's records released),
fetching nothing. Session errors are top-level, with no partitions.

Acknowledgements ride on the fetch (`acknowledgement_batches`): applied first, each partition's
outcome in `acknowledge_error_code` (INVALID_REQUEST for malformed batches, INVALID_RECORD_STATE
for offsets not acquired by the member; `handlers._share`).

Acquisition: partitions in session order, rotated by the session epoch so that none starves;
`max_records` and `max_bytes` bound the whole answer (each partition reads at most what is left;
the first partition with data returns at least one batch). share_acquire_mode (v2) 0 is
batch-optimized (whole batches, maybe beyond max_records; acquired ranges split at log batches
once batch_size long), 1 record-limit (exactly).

Long poll: with nothing acquired up to min_bytes, no partition in error and max_wait_ms > 0, the
connection parks on the partitions' fetch waiters (new data, a high watermark advance, records
released) until min_bytes is reached or max_wait_ms passes, as handlers/fetch.py does.

A session closes with the connection that opened it (its records released), as Kafka's. The
group membership of member_id is not checked (Kafka's broker does not check it either on
ShareFetch). A follower answers NOT_LEADER_OR_FOLLOWER with leader hints.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers._leader_hints import LeaderHints
from wirebroker.handlers._share import Key, Resolved, ack_batches, request_error, resolve
from wirebroker.handlers.registry import handler
from wirebroker.share.manager import FetchedPartition, GroupSettings, SharePartitionManager
from wirebroker.share.partition import AckBatch
from wirebroker.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, ShareSessionError

if TYPE_CHECKING:
    from protocol.messages.share_fetch import (
        PartitionData,
        ShareFetchRequest,
        ShareFetchResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle"]

_RECORD_LIMIT = 1


def _error(code: ErrorCode, lock_ms: int = 0) -> ShareFetchResponse:
    return {
        "throttle_time_ms": 0,
        "error_code": int(code),
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": [],
        "node_endpoints": [],
    }


class _Answer:
    """Each partition's answer, by key, in the order they are to be sent."""

    def __init__(self) -> None:
        self.parts: dict[Key, PartitionData] = {}

    def entry(self, key: Key, res: Resolved | None = None) -> PartitionData:
        entry = self.parts.get(key)
        if entry is None:
            entry = self.parts[key] = {
                "partition_index": key[1],
                "error_code": 0,
                "acknowledge_error_code": 0,
                "current_leader": {"leader_id": 0, "leader_epoch": 0},
                "records": b"",
                "acquired_records": [],
            }
        if res is not None and res.error is not ErrorCode.NONE:
            entry["error_code"] = int(res.error)
            entry["current_leader"] = res.current_leader  # type: ignore[typeddict-item]
        return entry

    def topics(self, keys: list[Key]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for key in keys:
            if key not in self.parts:
                continue
            if out and out[-1]["topic_id"] == key[0]:
                out[-1]["partitions"].append(self.parts[key])
            else:
                out.append({"topic_id": key[0], "partitions": [self.parts[key]]})
        return out


def _request_keys(req: ShareFetchRequest) -> tuple[list[Key], dict[Key, list[Any]], list[Key]]:
    """(partitions named, their acknowledgement batches, partitions forgotten)."""
    named: list[Key] = []
    acks: dict[Key, list[Any]] = {}
    for topic in req.get("topics") or []:
        tid = topic["topic_id"]
        for p in topic.get("partitions") or []:
            key = (tid, int(p["partition_index"]))
            if key not in acks:
                named.append(key)
                acks[key] = []
            acks[key].extend(p.get("acknowledgement_batches") or [])
    forgotten = [
        (t["topic_id"], int(i))
        for t in req.get("forgotten_topics_data") or []
        for i in t.get("partitions") or []
    ]
    return named, {k: v for k, v in acks.items() if v}, forgotten


async def acknowledge_all(
    manager: SharePartitionManager,
    answer_entry: Any,
    resolved: dict[Key, Resolved],
    acks: dict[Key, list[Any]],
    *,
    group_id: str,
    member_id: str,
    renew: bool,
    settings: GroupSettings,
    field: str,
) -> None:
    """Apply each partition's acknowledgements; its outcome into `field` of its entry."""
    for key, raw in acks.items():
        res = resolved[key]
        entry = answer_entry(key, res)
        if res.part is None:
            entry[field] = int(res.error)
            continue
        batches: list[AckBatch] | None = ack_batches(raw, renew=renew)
        if batches is None:
            entry[field] = int(ErrorCode.INVALID_REQUEST)
            continue
        code, message = await manager.acknowledge(
            group_id, member_id, res.key[0], res.part, batches, settings
        )
        entry[field] = int(code)
        if code is not ErrorCode.NONE and message is not None:
            entry[field.replace("_code", "_message")] = message


@handler(ApiKey.SHARE_FETCH)
async def handle(ctx: RequestContext, req: ShareFetchRequest) -> ShareFetchResponse:
    manager = ctx.services.share_partitions
    group_id, member_id = req.get("group_id"), req.get("member_id")
    code = request_error(ctx, group_id, member_id)
    if code is not ErrorCode.NONE or manager is None or not member_id:
        return _error(code if code is not ErrorCode.NONE else ErrorCode.COORDINATOR_NOT_AVAILABLE)
    group_id = group_id or ""
    if _renew_with_fetch(req):
        return _error(ErrorCode.INVALID_REQUEST)
    settings = manager.settings(group_id)
    lock_ms = settings.partition.lock_duration_ms
    epoch = int(req["share_session_epoch"])
    named, acks, forgotten = _request_keys(req)
    try:
        session = manager.sessions.for_fetch(
            group_id,
            member_id,
            epoch,
            named,
            forgotten,
            acknowledges=bool(acks),
            now_ms=ctx.now_ms(),
        )
    except ShareSessionError as exc:
        return _error(exc.code)  # acquisition_lock_timeout_ms 0, as Kafka
    if epoch == INITIAL_EPOCH:
        manager.watch_connection(ctx.session, session)
    hints = LeaderHints(ctx.services, ctx.session.listener)
    fetch_keys = [] if epoch == FINAL_EPOCH else list(session.partitions)
    resolved = resolve(ctx, dict.fromkeys([*fetch_keys, *acks]), hints)
    answer = _Answer()
    renew = bool(req.get("is_renew_ack", False))
    await acknowledge_all(
        manager,
        answer.entry,
        resolved,
        acks,
        group_id=group_id,
        member_id=member_id,
        renew=renew,
        settings=settings,
        field="acknowledge_error_code",
    )
    if epoch == FINAL_EPOCH:
        closed = manager.sessions.close(group_id, member_id)
        if closed is not None:
            await manager.release_session(closed)
    else:
        await _fetch(ctx, manager, req, answer, resolved, fetch_keys, member_id, settings)
    order = list(dict.fromkeys([*fetch_keys, *acks]))
    if epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        _drop_quiet(answer, set(acks))
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": answer.topics(order),  # type: ignore[typeddict-item]
        "node_endpoints": hints.node_endpoints(),  # type: ignore[typeddict-item]
    }


def _renew_with_fetch(req: ShareFetchRequest) -> bool:
    """KIP-1222: a ShareFetch renewing locks (is_renew_ack) fetches nothing; one asking for
    records too is INVALID_REQUEST (Kafka 4.4)."""
    asked = (req["max_wait_ms"], req["min_bytes"], req["max_bytes"], req["max_records"])
    return bool(req.get("is_renew_ack", False)) and any(int(v) for v in asked)


def _drop_quiet(answer: _Answer, acked: set[Key]) -> None:
    """An incremental answer carries only partitions with records, an error or an
    acknowledgement outcome."""
    for key in list(answer.parts):
        entry = answer.parts[key]
        if not (entry["acquired_records"] or entry["error_code"] or key in acked):
            del answer.parts[key]


async def _fetch(
    ctx: RequestContext,
    manager: SharePartitionManager,
    req: ShareFetchRequest,
    answer: _Answer,
    resolved: dict[Key, Resolved],
    keys: list[Key],
    member_id: str,
    settings: GroupSettings,
) -> None:
    """Acquire from the session's partitions until min_bytes or max_wait_ms (module doc)."""
    group_id = req["group_id"] or ""
    min_bytes = int(req.get("min_bytes", 0))
    max_wait_ms = int(req.get("max_wait_ms", 0))
    deadline = trio.current_time() + max(0, max_wait_ms) / 1000.0
    if keys:
        shift = manager.sessions.get(group_id, member_id)
        turn = (shift.epoch if shift is not None else 0) % len(keys)
        keys = keys[turn:] + keys[:turn]
    for key in keys:
        answer.entry(key, resolved[key])
    waiting = [(r.part.topic, r.part.index) for k in keys if (r := resolved[k]).part is not None]
    while True:
        total, failed = await _acquire_all(manager, req, answer, resolved, keys, settings)
        if (
            total >= min_bytes
            or failed
            or not waiting
            or max_wait_ms <= 0
            or trio.current_time() >= deadline
        ):
            return
        with ctx.services.fetch_waiters.subscribe(waiting, hw=True) as event:
            parked = trio.current_time()
            with trio.move_on_at(deadline):
                await event.wait()
            ctx.parked_s += trio.current_time() - parked


async def _acquire_all(
    manager: SharePartitionManager,
    req: ShareFetchRequest,
    answer: _Answer,
    resolved: dict[Key, Resolved],
    keys: list[Key],
    settings: GroupSettings,
) -> tuple[int, bool]:
    """One pass over the partitions: (bytes acquired, any read failed)."""
    max_bytes = int(req.get("max_bytes", 2**31 - 1))
    records_left = int(req.get("max_records", 500))
    record_limit = int(req.get("share_acquire_mode", 0)) == _RECORD_LIMIT
    total = 0
    failed = False
    for key in keys:
        res = resolved[key]
        if res.part is None:
            continue  # answered with its error already
        if records_left <= 0 or (total and total >= max_bytes):
            break
        got: FetchedPartition = await manager.fetch(
            req["group_id"] or "",
            req["member_id"] or "",
            uuid.UUID(str(key[0])),
            res.part,
            max_bytes=max(1, max_bytes - total),
            max_records=records_left,
            record_limit=record_limit,
            settings=settings,
            batch_size=int(req.get("batch_size", 0)),
        )
        entry = answer.entry(key)
        if got.error is not ErrorCode.NONE:
            entry["error_code"] = int(got.error)
            failed = True
            continue
        if got.acquired:
            entry["records"] = entry["records"] + got.records
            entry["acquired_records"].extend(
                {
                    "first_offset": a.first_offset,
                    "last_offset": a.last_offset,
                    "delivery_count": a.delivery_count,
                }
                for a in got.acquired
            )
            total += len(got.records)
            records_left -= sum(a.last_offset - a.first_offset + 1 for a in got.acquired)
    return total, failed
