"""CreatePartitions (key 37), versions 0-3.

Grows topics to `count` partitions (Kafka 4.x ControllerApis.createPartitions +
ReplicationControlManager.createPartitions), per topic:

    name twice in the request     INVALID_REQUEST "Duplicate topic name." (once per name)
    unknown topic                 UNKNOWN_TOPIC_OR_PARTITION, no message
    count == current              INVALID_PARTITIONS "Topic already has 3 partition(s)."
    count < current               INVALID_PARTITIONS "The topic t currently has 3
                                  partition(s); 2 would not be an increase."
    assignments                   one per new partition, else INVALID_REPLICATION_ASSIGNMENT
                                  "Attempted to add 2 additional partition(s), but only 1
                                  assignment(s) were specified."; each list non-empty, only
                                  registered brokers (this node), no repeats, as many replicas
                                  as the topic's replication factor

`validate_only` checks everything and changes nothing. Results: `name`, `error_code`,
`error_message` (null on success). Duplicated names come first, as in Kafka.

Skipped: authorization, controller mutation quotas (throttle_time_ms 0), `timeout_ms`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers._configs import ConfigRequestError, error_of
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.create_partitions import (
        CreatePartitionsRequest,
        CreatePartitionsResponse,
        CreatePartitionsTopic,
        CreatePartitionsTopicResult,
    )


def _check_assignment(replicas: list[int], node_id: int, rf: int) -> None:
    def fail(message: str) -> ConfigRequestError:
        return ConfigRequestError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT, message)

    if not replicas:
        raise fail("The manual partition assignment includes an empty replica list.")
    previous: int | None = None
    for broker in sorted(replicas):
        if broker != node_id:
            raise fail(
                f"The manual partition assignment includes broker {broker}, but no "
                "such broker is registered."
            )
        if broker == previous:
            raise fail(
                f"The manual partition assignment includes the broker {broker} more than once."
            )
        previous = broker
    if len(replicas) != rf:
        raise fail(
            f"The manual partition assignment includes a partition with "
            f"{len(replicas)} replica(s), but this is not consistent with previous "
            f"partitions, which have {rf} replica(s)."
        )


def _grow(ctx: RequestContext, topic: CreatePartitionsTopic, validate_only: bool) -> None:
    services = ctx.services
    name: str = topic["name"]
    count = int(topic["count"])
    info = services.topics.get(name)
    if info is None:
        raise ConfigRequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    current = info.partitions
    if count == current:
        raise ConfigRequestError(
            ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
        )
    if count < current:
        raise ConfigRequestError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {name} currently has {current} partition(s); {count} would not be an "
            "increase.",
        )
    additional = count - current
    assignments: dict[int, list[int]] | None = None
    if topic["assignments"] is not None:
        given = list(topic["assignments"])
        if len(given) != additional:
            raise ConfigRequestError(
                ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(given)} assignment(s) were specified.",
            )
        assignments = {}
        for i, a in enumerate(given):
            replicas = [int(b) for b in a["broker_ids"]]
            _check_assignment(replicas, services.node_id, info.replication_factor)
            assignments[current + i] = replicas
    try:
        services.replicas.create_partitions(
            name,
            count,
            now_ms=ctx.now_ms(),
            validate_only=validate_only,
            assignments=assignments or None,
        )
    except Exception as exc:
        found = error_of(exc)
        if found is None:
            raise
        raise ConfigRequestError(*found) from exc


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
    for topic in topics:
        if counts[topic["name"]] > 1:
            continue
        try:
            _grow(ctx, topic, validate_only)
        except ConfigRequestError as exc:
            results.append(
                {"name": topic["name"], "error_code": exc.error_code, "error_message": exc.message}
            )
            continue
        results.append({"name": topic["name"], "error_code": ErrorCode.NONE, "error_message": None})
    return {"throttle_time_ms": 0, "results": results}
