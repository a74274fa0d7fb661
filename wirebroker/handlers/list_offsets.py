"""ListOffsets (API key 2): serves v1-11 (v0's old_style_offsets is not in the schema range).

Special timestamps (Kafka's ListOffsetsRequest constants), per partition, each from the
request version that introduced it (a negative timestamp the version does not know -- -3 below
v7, -4 below v8, -5 below v9, -6 below v11, any other negative value at every version -- is
answered UNSUPPORTED_VERSION before anything else is checked, even the topic, as Kafka 4.4
does):
    -1 LATEST                 the last fetchable offset: the high watermark for consumers
                              (read_committed: the last stable offset, equal to the HW as there
                              are no transactions), the log end offset when replica_id != -1;
                              leader_epoch = the partition's leader epoch
    -2 EARLIEST               the log start offset
    -4 EARLIEST_LOCAL         the same (no tiered storage: local log start = log start)
    -3 MAX_TIMESTAMP (v7+)    offset and timestamp of the record with the largest timestamp
                              (offset -1, timestamp -1 on an empty log)
    -5 LATEST_TIERED (v9+)    offset -1, timestamp -1, leader_epoch -1: Kafka's answer when remote
                              storage is disabled
    -6 EARLIEST_PENDING_UPLOAD (v11) the same as -5 (nothing is pending upload)
    any value >= 0            the first offset whose record timestamp is >= the target;
                              offset -1 / timestamp -1 when there is none below the last
                              fetchable offset.
Timestamps of -1/-2/-4 answers are -1. leader_epoch (v4+) of an offset found in the log is the
latest epoch of the leader-epoch cache (-1 when the log never had data): a single broker writes
every batch with epoch 0, so that is the epoch of the batch holding it.

Errors: unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; current_leader_epoch (v4+)
-> FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (see replication.partition); then a broker that
does not lead the partition (or does not host it) -> NOT_LEADER_OR_FOLLOWER, except for
replica_id -2 (Kafka's debugging consumer, which may read a follower); a partition listed
twice in one request -> INVALID_REQUEST, answered once (Kafka's duplicate-partition check).
Failed partitions answer offset -1, timestamp -1, leader_epoch -1. timeout_ms (v10+) is ignored.

The answer has one entry per topic name (a topic named twice in the request is merged, as
Kafka does) and one per partition, in request order (Kafka lists the partitions that failed
its first checks first; clients match answers by topic and partition).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._topics import answer_partition
from wirebroker.handlers.registry import handler
from wirebroker.replication.partition import READ_COMMITTED
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.list_offsets import (
        ListOffsetsPartition,
        ListOffsetsPartitionResponse,
        ListOffsetsRequest,
        ListOffsetsResponse,
        ListOffsetsTopicResponse,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.replication.partition import Partition

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_PENDING_UPLOAD_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "handle",
]

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6

#: The first request version that knows each special timestamp (Kafka 4.4's answers).
_SPEC_VERSIONS = {
    LATEST_TIMESTAMP: 0,
    EARLIEST_TIMESTAMP: 0,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL_TIMESTAMP: 8,
    LATEST_TIERED_TIMESTAMP: 9,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11,
}

_CONSUMER_REPLICA_ID = -1
_DEBUGGING_REPLICA_ID = -2


def _answer(
    index: int,
    code: ErrorCode = ErrorCode.NONE,
    *,
    offset: int = -1,
    timestamp: int = -1,
    leader_epoch: int = -1,
) -> ListOffsetsPartitionResponse:
    return {
        "partition_index": index,
        "error_code": int(code),
        "timestamp": timestamp,
        "offset": offset,
        "leader_epoch": leader_epoch,
    }


def _lookup(
    part: Partition, target: int, *, isolation: int, from_client: bool
) -> ListOffsetsPartitionResponse:
    index = part.index
    if not from_client:
        last_fetchable = part.log_end_offset
    elif isolation == READ_COMMITTED:
        last_fetchable = part.last_stable_offset
    else:
        last_fetchable = part.high_watermark
    if target == LATEST_TIMESTAMP:
        return _answer(index, offset=last_fetchable, leader_epoch=part.leader_epoch)
    if target in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return _answer(index, offset=part.log_start_offset, leader_epoch=part.latest_epoch)
    if target in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
        return _answer(index)
    if target == MAX_TIMESTAMP:
        timestamp, offset = part.max_timestamp()
        if offset < 0:
            return _answer(index)
    else:
        found = part.offset_for_timestamp(target)
        if found is None:
            return _answer(index)
        offset, timestamp = found
    if offset >= last_fetchable:
        return _answer(index)
    return _answer(index, offset=offset, timestamp=timestamp, leader_epoch=part.latest_epoch)


def spec_known(timestamp: int, version: int) -> bool:
    """A timestamp >= 0 (a time to search), or a special one `version` introduced or follows."""
    return timestamp >= 0 or _SPEC_VERSIONS.get(timestamp, version + 1) <= version


@handler(ApiKey.LIST_OFFSETS)
async def handle(ctx: RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse | None:
    replicas = ctx.services.replicas
    version = ctx.api_version
    replica_id = int(req.get("replica_id", _CONSUMER_REPLICA_ID))
    from_client = replica_id == _CONSUMER_REPLICA_ID
    require_leader = replica_id != _DEBUGGING_REPLICA_ID
    isolation = int(req.get("isolation_level", 0))
    topics_in = list(req.get("topics") or [])
    seen = Counter(
        (t.get("name"), int(p.get("partition_index")))
        for t in topics_in
        for p in t.get("partitions") or []
    )

    def list_offsets(part: Partition, pdata: ListOffsetsPartition) -> ListOffsetsPartitionResponse:
        target = int(pdata.get("timestamp"))
        return _lookup(part, target, isolation=isolation, from_client=from_client)

    denied = _authz.denied_names(ctx, ResourceType.TOPIC, (t.get("name") for t in topics_in))
    by_name: dict[str, list[ListOffsetsPartitionResponse]] = {}
    answered: set[tuple[str, int]] = set()
    for topic in topics_in:
        name = topic.get("name")
        partitions_out = by_name.setdefault(name, [])
        for pdata in topic.get("partitions") or []:
            index = int(pdata.get("partition_index"))
            if (name, index) in answered:
                continue
            answered.add((name, index))
            if name in denied:
                partitions_out.append(_answer(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif seen[(name, index)] > 1:
                partitions_out.append(_answer(index, ErrorCode.INVALID_REQUEST))
            elif not spec_known(int(pdata.get("timestamp")), version):
                partitions_out.append(_answer(index, ErrorCode.UNSUPPORTED_VERSION))
            else:
                partitions_out.append(
                    answer_partition(
                        replicas,
                        name,
                        index,
                        int(pdata.get("current_leader_epoch", -1)),
                        pdata,
                        list_offsets,
                        _answer,
                        require_leader=require_leader,
                    )
                )
    topics_out: list[ListOffsetsTopicResponse] = [
        {"name": name, "partitions": parts} for name, parts in by_name.items()
    ]
    return {"throttle_time_ms": 0, "topics": topics_out}
