"""OffsetCommit (API key 8): serves v2-10 (v0-1 are not in Kafka 4.x's schema).

Per topic, before the coordinator sees the request (KafkaApis' order):
    v10: topic_id unknown to this broker        UNKNOWN_TOPIC_ID for each of its partitions
    topic name unknown                          UNKNOWN_TOPIC_OR_PARTITION for each partition
    partition index outside the topic           UNKNOWN_TOPIC_OR_PARTITION for that partition
The rest goes to `GroupCoordinatorRuntime.commit_offsets` (skipped when nothing is left, as
Kafka), whose per-partition errors come from the core (`wirebroker.group.offsets_manager`):
generation -1 with no member id is a "simple" commit (admin tools, manual assignment), accepted
while the group is Empty; members commit with their generation
(ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS while
CompletingRebalance, GROUP_ID_NOT_FOUND from v9 for an unknown group with a generation);
OFFSET_METADATA_TOO_LARGE above offset.metadata.max.bytes; COORDINATOR_NOT_AVAILABLE /
NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS as the coordinator's state says. The empty group
id is accepted (Kafka keeps it for backwards compatibility). Offsets are appended to
`__consumer_offsets` (os.write done) and replicated (the partition's high watermark past them)
before the response is sent; not replicated within offsets.commit.timeout.ms:
REQUEST_TIMED_OUT; NOT_ENOUGH_REPLICAS(_AFTER_APPEND): COORDINATOR_NOT_AVAILABLE; the
coordinator's partition lost meanwhile: NOT_COORDINATOR (Kafka's storeOffsets).

Fields: generation_id_or_member_epoch, member_id, group_instance_id (v7+), retention_time_ms
(v2-4; -1 = the broker's offsets.retention.minutes), committed_leader_epoch (v6+),
committed_metadata (null stored as ""). The response lists the topics and partitions in request
order; v10 topics are identified by topic_id (echoed), earlier versions by name.
No group coordinator: COORDINATOR_NOT_AVAILABLE for every partition. Skipped: authorization,
throttling, the consumer protocol's member epochs (KIP-848).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.messages import CommitPartition, CommitRequest, CommitResult, CommitTopic
from wirebroker.handlers import _authz
from wirebroker.handlers._topics import NIL_UUID, resolve_topic
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType

if TYPE_CHECKING:
    from protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitResponse,
        OffsetCommitResponsePartition,
        OffsetCommitResponseTopic,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["commit_errors", "handle"]

_TOPIC_IDS_VERSION = 10
_GROUP_ID_NOT_FOUND_VERSION = 9


def commit_errors(
    version: int, result: CommitResult, *, share: bool = False
) -> dict[tuple[str, int], int]:
    """The coordinator's error per (topic, partition); an unknown group with a generation is
    GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before; a share group (`share`) is
    GROUP_ID_NOT_FOUND at every version (Kafka 4.4's ShareGroup)."""
    out = {}
    for key, error in result.errors().items():
        old = version < _GROUP_ID_NOT_FOUND_VERSION and not share
        if error is ErrorCode.GROUP_ID_NOT_FOUND and old:
            error = ErrorCode.ILLEGAL_GENERATION
        out[key] = int(error)
    return out


@handler(ApiKey.OFFSET_COMMIT)
async def handle(ctx: RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse:
    version = ctx.api_version
    by_id = version >= _TOPIC_IDS_VERSION
    view = ctx.services.cluster
    coordinator = ctx.services.group_coordinator

    # (topic entry index, partition index) -> error decided here
    errors: dict[tuple[int, int], ErrorCode] = {}
    valid: list[CommitTopic] = []
    names: list[str | None] = []
    request_topics = list(req.get("topics") or [])
    group_denied = not _authz.allowed(ctx, ResourceType.GROUP, str(req.get("group_id") or ""))
    for i, topic in enumerate(request_topics):
        partitions = list(topic.get("partitions") or [])
        info, missing = resolve_topic(
            view, by_id=by_id, name=topic.get("name"), topic_id=topic.get("topic_id")
        )
        names.append(info.name if info is not None else None)
        asked = info.name if info is not None else (None if by_id else str(topic.get("name")))
        topic_denied = asked is not None and not _authz.allowed(ctx, ResourceType.TOPIC, asked)
        ok = []
        for p in partitions:
            index = int(p.get("partition_index"))
            if group_denied:
                errors[(i, index)] = ErrorCode.GROUP_AUTHORIZATION_FAILED
            elif topic_denied:
                errors[(i, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None:
                errors[(i, index)] = missing
            elif not 0 <= index < info.partitions:
                errors[(i, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif coordinator is None:
                errors[(i, index)] = ErrorCode.COORDINATOR_NOT_AVAILABLE
            else:
                ok.append(
                    CommitPartition(
                        partition_index=index,
                        committed_offset=int(p.get("committed_offset")),
                        committed_leader_epoch=int(p.get("committed_leader_epoch", -1)),
                        committed_metadata=p.get("committed_metadata"),
                    )
                )
        if ok and info is not None:
            valid.append(CommitTopic(info.name, ok))

    results: dict[tuple[str, int], int] = {}
    if valid and coordinator is not None:
        result = await coordinator.commit_offsets(
            CommitRequest(
                group_id=str(req.get("group_id") or ""),
                topics=valid,
                generation_id=int(req.get("generation_id_or_member_epoch", -1)),
                member_id=str(req.get("member_id") or ""),
                group_instance_id=req.get("group_instance_id") if version >= 7 else None,
                retention_time_ms=int(req.get("retention_time_ms", -1)) if version <= 4 else -1,
                member_epoch_version=version >= 9,
            )
        )
        share = coordinator.is_share_group(str(req.get("group_id") or ""))
        results = commit_errors(version, result, share=share)

    out_topics: list[OffsetCommitResponseTopic] = []
    for i, topic in enumerate(request_topics):
        name = names[i]
        parts: list[OffsetCommitResponsePartition] = []
        for p in topic.get("partitions") or []:
            index = int(p.get("partition_index"))
            code = errors.get((i, index))
            if code is None:
                assert name is not None
                parts.append({"partition_index": index, "error_code": results[(name, index)]})
            else:
                parts.append({"partition_index": index, "error_code": int(code)})
        entry: OffsetCommitResponseTopic = {"partitions": parts}
        if by_id:
            entry["topic_id"] = topic.get("topic_id") or NIL_UUID
        else:
            entry["name"] = topic["name"]  # every topic of a by-name version has one
        out_topics.append(entry)
    return {"throttle_time_ms": 0, "topics": out_topics}
